"""Pod Security, judged by the API server's own Pod Security admission: every pod template the
render matrix writes (tests/support/podsecurity.py written()), created as a Pod with a server-side
dry run, is admitted in a namespace that enforces the level its provider declares
(core/model/plugin.py PodSecurity), and, below restricted, refused in a namespace that enforces
the next stricter level, with exactly the violations the declaration names (so its reason stays
true). Each namespace pins enforce-version to the API server's own version."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import kubernetes
import pytest
from kubernetes.client.exceptions import ApiException

from core.model.plugin import PodSecurityLevel
from tests.support.cluster import Cluster
from tests.support.podsecurity import Written, written

LABEL = "pod-security.kubernetes.io"
STRICTER = {
    PodSecurityLevel.PRIVILEGED: PodSecurityLevel.BASELINE,
    PodSecurityLevel.BASELINE: PodSecurityLevel.RESTRICTED,
}
WRITTEN = written()
POD = "pod-security-check"


@pytest.fixture(scope="module")
def version(api: kubernetes.client.ApiClient) -> str:
    """The API server's version as enforce-version takes it (v<major>.<minor>)."""
    info = kubernetes.client.VersionApi(api).get_code()
    return f"v{info.major}.{info.minor.rstrip('+')}"


@pytest.fixture(scope="module")
def enforcing(cluster: Cluster, version: str) -> Iterator[dict[PodSecurityLevel, str]]:
    """A namespace per level, enforcing it at the API server's version, with the default service
    account a Pod is admitted under (no controller-manager here creates it)."""
    names = {level: f"psa-{level}-{uuid.uuid4().hex[:8]}" for level in PodSecurityLevel}
    for level, name in names.items():
        cluster.kubectl("create", "namespace", name)
        cluster.kubectl(
            "label",
            "namespace",
            name,
            f"{LABEL}/enforce={level}",
            f"{LABEL}/enforce-version={version}",
        )
        cluster.kubectl("create", "serviceaccount", "default", "-n", name)
    yield names
    for name in names.values():
        cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)


def violations(message: str) -> list[str]:
    """The checks a Pod Security denial names, in its order: `... violates PodSecurity
    "restricted:v1.37": <check> (<detail>), <check> (<detail>)`."""
    _, _, listed = message.partition('": ')
    checks, depth, current = [], 0, ""
    for char in listed:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            checks.append(current)
            current = ""
        else:
            current += char
    checks.append(current)
    return [check.strip().split(" (", 1)[0] for check in checks if check.strip()]


def _create(api: kubernetes.client.ApiClient, found: Written, namespace: str) -> None:
    pod = found.template.pod(POD, namespace)
    # The client sends a dict unchanged: the rendered template, as it is.
    core = kubernetes.client.CoreV1Api(api)
    core.create_namespaced_pod(namespace, pod, dry_run="All")  # type: ignore[arg-type]


@pytest.mark.parametrize("found", WRITTEN, ids=[f"{w.ident}:{w.template.where}" for w in WRITTEN])
def test_every_rendered_pod_meets_the_level_its_provider_declares(
    found: Written,
    api: kubernetes.client.ApiClient,
    enforcing: dict[PodSecurityLevel, str],
    version: str,
) -> None:
    declared = found.declared

    _create(api, found, enforcing[declared.level])  # admitted, or ApiException fails the test

    stricter = STRICTER.get(declared.level)
    if stricter is None:
        return
    with pytest.raises(ApiException) as refused:
        _create(api, found, enforcing[stricter])
    status = json.loads(refused.value.body or "{}")
    message = str(status["message"])
    assert (refused.value.status, status["reason"]) == (403, "Forbidden"), message
    assert message.startswith(
        f'pods "{POD}" is forbidden: violates PodSecurity "{stricter}:{version}": '
    ), message
    assert sorted(violations(message)) == sorted(declared.refused), message


def test_the_matrix_writes_pods_for_every_provider_and_level() -> None:
    assert sorted({(w.provider.name, str(w.declared.level)) for w in WRITTEN}) == [
        ("dynamo", "baseline"),
        ("kaito", "baseline"),
        ("kaito", "privileged"),
        ("kaito", "restricted"),
        ("kuberay", "restricted"),
        ("llmd", "baseline"),
        ("llmd", "restricted"),
        ("vllm", "baseline"),
        ("vllm", "restricted"),
    ]
