"""Test users of the real API server: ServiceAccounts whose tokens come from the TokenRequest
API (the API server authenticates them; RBAC is on), each granted exactly the Roles a test gives
it. The portal's tests send these tokens as the sign-in proxy would."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tests.support.cluster import Cluster


@dataclass(frozen=True, slots=True)
class User:
    namespace: str
    name: str
    token: str

    @property
    def username(self) -> str:
        return f"system:serviceaccount:{self.namespace}:{self.name}"


def make_user(cluster: Cluster, namespace: str, name: str) -> User:
    cluster.kubectl("create", "serviceaccount", name, "-n", namespace)
    token = cluster.kubectl(
        "create", "token", name, "-n", namespace, "--duration=1h"
    ).stdout.strip()
    return User(namespace, name, token)


def grant(
    cluster: Cluster,
    user: User,
    namespace: str,
    *,
    verbs: Sequence[str],
    resources: Sequence[str],
    group: str,
    role: str,
) -> None:
    """A Role in `namespace` with `verbs` on `group`'s `resources`, bound to `user`."""
    cluster.kubectl(
        "create",
        "role",
        role,
        "-n",
        namespace,
        f"--verb={','.join(verbs)}",
        *(f"--resource={r}.{group}" if group else f"--resource={r}" for r in resources),
    )
    cluster.kubectl(
        "create",
        "rolebinding",
        role,
        "-n",
        namespace,
        f"--role={role}",
        f"--serviceaccount={user.namespace}:{user.name}",
    )


# What a reader of a namespace's deployments needs (the kustomize/ui docs give tenants the same).
READS = (
    "modeldeployments.airunway.ai",
    "deployments.apps",
    "dynamographdeployments.nvidia.com",
    "workspaces.kaito.sh",
    "rayservices.ray.io",
    "leaderworkersets.leaderworkerset.x-k8s.io",
    "inferencepools.inference.networking.k8s.io",
    "httproutes.gateway.networking.k8s.io",
    "services",
    "persistentvolumeclaims",
    "pods",
    "events",
)


def grant_all(
    kube: Cluster, user: User, ns: str, role: str, verbs: Sequence[str], resources: Sequence[str]
) -> None:
    """A Role in `ns` with `verbs` on `resources` (resource.group, or a core resource)."""
    kube.kubectl(
        "create",
        "role",
        role,
        "-n",
        ns,
        f"--verb={','.join(verbs)}",
        *(f"--resource={r}" for r in resources),
    )
    kube.kubectl(
        "create",
        "rolebinding",
        role,
        "-n",
        ns,
        f"--role={role}",
        f"--serviceaccount={user.namespace}:{user.name}",
    )
