"""The securityContext Runway writes in every pod it templates, per provider and kind of pod, over
the whole render matrix (tests/support/matrix.py) and the KAITO cases, and the Pod Security level
each provider declares. The API server's own Pod Security admission judges the same pods in
tests/e2e/test_pod_security.py."""

from __future__ import annotations

import json
from typing import Any

from core.model.plugin import PodSecurityLevel
from providers.modules import plugins
from tests.support.podsecurity import PICKER, security_contexts, written

# What Runway writes for an image that runs as root, and for one that runs as a numeric non-root
# user (core/rendering/podsecurity.py): (the pod's securityContext, every container's).
ROOT = ({"seccompProfile": {"type": "RuntimeDefault"}}, {"allowPrivilegeEscalation": False})
NON_ROOT = (
    {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
    {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
)
# KAITO's rootless BuildKit Job (providers/kaito/build.py): the user BuildKit's image runs as, and
# the profiles it needs Unconfined; nothing for the pod.
BUILDKIT = (
    None,
    {"runAsUser": 1000, "runAsGroup": 1000},
    {
        "seccompProfile": {"type": "Unconfined"},
        "appArmorProfile": {"type": "Unconfined"},
        "runAsUser": 1000,
        "runAsGroup": 1000,
    },
)


def _key(data: Any) -> str:
    return json.dumps(data, sort_keys=True)


def test_every_pod_gets_the_security_context_its_image_allows() -> None:
    shapes: dict[tuple[str, str], set[str]] = {}
    for found in written():
        template = found.template
        pod, containers = security_contexts(template.spec)
        what = "picker" if found.declared is PICKER else template.kind
        if template.kind == "Job":
            shape = _key((pod, *[sc for _, sc in containers]))
        else:
            shape = _key((pod, *sorted({_key(sc) for _, sc in containers})))
        shapes.setdefault((found.provider.name, what), set()).add(shape)

    root = _key((ROOT[0], _key(ROOT[1])))
    non_root = _key((NON_ROOT[0], _key(NON_ROOT[1])))
    assert shapes == {
        ("dynamo", "DynamoGraphDeployment"): {root},
        ("kaito", "Job"): {_key(BUILDKIT)},
        ("kaito", "Workspace"): {root},
        ("kaito", "picker"): {non_root},
        ("kuberay", "RayService"): {non_root},
        ("kuberay", "picker"): {non_root},
        ("llmd", "Deployment"): {root},
        ("llmd", "LeaderWorkerSet"): {root},
        ("llmd", "picker"): {non_root},
        ("vllm", "Deployment"): {root},
        ("vllm", "LeaderWorkerSet"): {root},
        ("vllm", "picker"): {non_root},
    }


def test_each_provider_declares_its_level_and_what_restricted_refuses() -> None:
    declared = {
        p.name: (
            p.pod_security.level,
            p.pod_security.refused,
            {kind: (d.level, d.refused) for kind, d in p.pod_security.apart.items()},
        )
        for p in plugins()
    }

    root = ("unrestricted capabilities", "runAsNonRoot != true")
    assert declared == {
        "dynamo": (PodSecurityLevel.BASELINE, root, {}),
        "kaito": (
            PodSecurityLevel.BASELINE,
            root,
            {
                "Job": (
                    PodSecurityLevel.PRIVILEGED,
                    ("forbidden AppArmor profile", "seccompProfile"),
                )
            },
        ),
        "kuberay": (PodSecurityLevel.RESTRICTED, (), {}),
        "llmd": (PodSecurityLevel.BASELINE, root, {}),
        "vllm": (PodSecurityLevel.BASELINE, root, {}),
    }
    # Below restricted, a provider says why, and names the upstream source that says so.
    assert [
        p.name
        for p in plugins()
        for d in (p.pod_security, *p.pod_security.apart.values())
        if (d.level != PodSecurityLevel.RESTRICTED) != bool(d.reason)
    ] == []
