"""The live tier: rendered workloads really roll out (tests/support/live.py).

Each case renders ModelDeployments with `runway render`, applies the tree with `runway apply` to
a cluster that runs kube-controller-manager, kube-scheduler and KWOK's fake GPU nodes, and reads
back what the cluster made of it: every Deployment Available, each pod's GPU request against the
node it landed on, the EndpointSlices of every Service, the live pods an InferencePool's selector
matches, and the claims the pods mount. KWOK runs no containers: a Ready pod here means it was
scheduled with every object it needs, not that vLLM serves.

Dynamo and KAITO are not in this tier: the Go module proxy serves neither operator
(github.com/ai-dynamo/dynamo/deploy/operator and github.com/kaito-project/kaito answer 403), so
their pods are never made here; their renders keep the static invariants (tests/unit) instead.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from cli.main import main
from kubeio.yamlio import dump
from renderer.apply import folders
from tests.support.builders import disaggregated
from tests.support.cluster import Cluster
from tests.support.live import persistent_volume, user_claim
from tests.support.paths import EXAMPLES
from tests.support.rollout import (
    Placed,
    claims_of_pods,
    endpoint_pods,
    placements,
    selected_pods,
    serving_pods,
    wait_rolled_out,
)
from tests.support.wait import wait_until

INSTANCE_TYPE = "node.kubernetes.io/instance-type"
ENDPOINTS_TIMEOUT = 60  # seconds for the EndpointSlice controller to follow pod readiness


def example(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((EXAMPLES / name).read_text())
    return doc


def direct_on_instance_type() -> dict[str, Any]:
    """Direct vLLM, pinned to an instance type, with a claim Runway manages (a size)."""
    doc = example("vllm-direct-explicit.yaml")
    doc["spec"]["nodeSelector"] = {INSTANCE_TYPE: "p5.48xlarge"}
    doc["spec"]["model"]["storage"]["volumes"] = [
        {"name": "cache", "size": "50Gi", "purpose": "modelCache"}
    ]
    return doc


def llmd_disaggregated() -> dict[str, Any]:
    doc = disaggregated("mistral-pd", prefill_gpu=2, decode_gpu=1)
    doc["spec"]["model"]["id"] = "mistralai/Mistral-7B-Instruct-v0.3"
    doc["spec"]["provider"] = {"name": "llmd"}
    doc["spec"]["scaling"]["decode"]["replicas"] = 2
    doc["spec"]["gateway"] = {"enabled": True}
    return doc


@dataclass(frozen=True, slots=True)
class Case:
    source: dict[str, Any]
    gpus: dict[str, int]  # Deployment name -> the GPUs each of its pods must request
    replicas: dict[str, int]
    # PersistentVolumes the cluster administrator provides (static provisioning: no
    # provisioner runs here), and claims the user created before (the example's cache claim).
    volumes: tuple[str, ...] = ()
    user_claims: tuple[str, ...] = ()


CASES = {
    "vllm-direct": Case(
        example("vllm-direct-explicit.yaml"),
        {"phi-direct": 1},
        {"phi-direct": 1},
        volumes=("100Gi",),
        user_claims=("shared-model-cache",),
    ),
    "vllm-direct-instance-type": Case(
        direct_on_instance_type(), {"phi-direct": 1}, {"phi-direct": 1}, volumes=("100Gi",)
    ),
    "llmd-gateway": Case(
        example("llmd-explicit.yaml"),
        {"mistral-llmd": 2, "mistral-llmd-epp": 0},
        {"mistral-llmd": 1, "mistral-llmd-epp": 1},
    ),
    "llmd-disaggregated-gateway": Case(
        llmd_disaggregated(),
        {"mistral-pd-decode": 1, "mistral-pd-prefill": 2, "mistral-pd-epp": 0},
        {"mistral-pd-decode": 2, "mistral-pd-prefill": 1, "mistral-pd-epp": 1},
    ),
}


@dataclass(frozen=True, slots=True)
class RolledOut:
    cluster: Cluster
    namespace: str
    case: Case
    rendered: list[dict[str, Any]]
    pods: list[Placed]

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [o for o in self.rendered if o["kind"] == kind]


def render(source: dict[str, Any], namespace: str, work: Path) -> Path:
    sources, repo = work / "sources", work / "repo"
    sources.mkdir(parents=True)
    doc = source | {"metadata": source["metadata"] | {"namespace": namespace}}
    (sources / "md.yaml").write_text(dump(doc))
    code = main(
        ["render", str(sources), "--repo", str(repo), "--gateway", "gateways/inference", "--istio"]
    )
    assert code == 0
    return repo / "rendered"


@pytest.fixture(scope="module", params=sorted(CASES), ids=sorted(CASES))
def rolled_out(
    request: pytest.FixtureRequest,
    live_cluster: Cluster,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[RolledOut]:
    case = CASES[request.param]
    namespace = f"live-{uuid.uuid4().hex[:8]}"
    live_cluster.kubectl("create", "namespace", namespace)
    volumes = [persistent_volume(f"{namespace}-{i}", s) for i, s in enumerate(case.volumes)]
    for obj in [*volumes, *(user_claim(c, namespace) for c in case.user_claims)]:
        live_cluster.apply_manifests(dump(obj))
    rendered = render(case.source, namespace, tmp_path_factory.mktemp(request.param))
    code = main(["apply", str(rendered), "--kubeconfig", str(live_cluster.kubeconfig)])
    assert code == 0
    objects = [o for _, objs in folders(rendered) for o in objs]
    deployments = [o["metadata"]["name"] for o in objects if o["kind"] == "Deployment"]
    wait_rolled_out(live_cluster, namespace, deployments)
    yield RolledOut(live_cluster, namespace, case, objects, placements(live_cluster, namespace))
    live_cluster.kubectl("delete", "namespace", namespace, "--wait=false")
    for volume in volumes:
        live_cluster.kubectl("delete", "persistentvolume", volume["metadata"]["name"], check=False)


def test_every_rendered_deployment_rolls_out_to_ready_pods(rolled_out: RolledOut) -> None:
    deployments = sorted(d["metadata"]["name"] for d in rolled_out.of_kind("Deployment"))
    counts = {name: 0 for name in deployments}
    for placed in rolled_out.pods:
        counts[placed.deployment] += 1

    assert deployments == sorted(rolled_out.case.replicas)
    assert counts == rolled_out.case.replicas
    assert [(p.pod, p.ready, bool(p.ip)) for p in rolled_out.pods] == [
        (p.pod, True, True) for p in rolled_out.pods
    ]


def test_gpu_pods_request_their_gpus_and_land_on_gpu_nodes_and_no_other_pod_does(
    rolled_out: RolledOut,
) -> None:
    wanted = rolled_out.case.gpus
    # Each pod asks for exactly the GPUs its ModelDeployment gives it: a GPU workload without
    # a GPU request would be scheduled anywhere and fail at start, with nothing to see here.
    assert [(p.pod, p.gpus_requested) for p in rolled_out.pods] == [
        (p.pod, wanted[p.deployment]) for p in rolled_out.pods
    ]
    # GPU pods fit the node they are on; CPU-only pods (the EPP) stay off the GPU nodes.
    assert [(p.pod, p.node_gpus >= p.gpus_requested, p.node_gpus > 0) for p in rolled_out.pods] == [
        (p.pod, True, p.gpus_requested > 0) for p in rolled_out.pods
    ]


def test_pods_land_only_on_nodes_with_the_labels_the_render_selects(
    rolled_out: RolledOut, live_cluster: Cluster
) -> None:
    selectors = {
        d["metadata"]["name"]: d["spec"]["template"]["spec"].get("nodeSelector", {})
        for d in rolled_out.of_kind("Deployment")
    }
    labels = {
        n["metadata"]["name"]: n["metadata"]["labels"]
        for n in yaml.safe_load(live_cluster.kubectl("get", "nodes", "-o", "json").stdout)["items"]
    }
    asked = rolled_out.case.source["spec"].get("nodeSelector", {})

    for placed in rolled_out.pods:
        wanted = selectors[placed.deployment]
        assert {k: labels[placed.node].get(k) for k in wanted} == wanted, placed
    if asked:
        serving = [p for p in rolled_out.pods if p.gpus_requested]
        assert [selectors[p.deployment] for p in serving] == [asked] * len(serving)


def test_each_service_lists_exactly_the_ready_pods_of_its_deployment(
    rolled_out: RolledOut,
) -> None:
    for service in rolled_out.of_kind("Service"):
        name = service["metadata"]["name"]
        owned = {p.pod: True for p in rolled_out.pods if p.deployment == name}
        assert owned, f"no Deployment named like Service {name}"

        def listed(name: str = name, owned: dict[str, bool] = owned) -> bool:
            return endpoint_pods(rolled_out.cluster, rolled_out.namespace, name) == owned

        # The EndpointSlice controller follows a pod's readiness a moment after the rollout
        # sees it: wait (bounded) for it to catch up, then assert the whole answer.
        with contextlib.suppress(TimeoutError):
            wait_until(listed, timeout=ENDPOINTS_TIMEOUT, interval=0.5, what=f"{name}'s endpoints")
        assert endpoint_pods(rolled_out.cluster, rolled_out.namespace, name) == owned, name


def test_each_inference_pool_selects_exactly_the_live_serving_pods(rolled_out: RolledOut) -> None:
    pools = rolled_out.of_kind("InferencePool")
    gateway = rolled_out.case.source["spec"].get("gateway", {}).get("enabled", False)
    assert len(pools) == (1 if gateway else 0)
    for pool in pools:
        ports = [p["number"] for p in pool["spec"]["targetPorts"]]
        serving = serving_pods(rolled_out.cluster, rolled_out.namespace, ports)
        epp = [p.pod for p in rolled_out.pods if p.deployment.endswith("-epp")]
        matched = selected_pods(rolled_out.cluster, rolled_out.namespace, pool["spec"]["selector"])

        assert serving == sorted(p.pod for p in rolled_out.pods if p.gpus_requested)
        assert matched == serving
        assert [p for p in epp if p in matched] == []


def test_every_claim_a_pod_mounts_exists_and_is_bound(rolled_out: RolledOut) -> None:
    claims = claims_of_pods(rolled_out.cluster, rolled_out.namespace)
    rendered = [c["metadata"]["name"] for c in rolled_out.of_kind("PersistentVolumeClaim")]

    assert claims == {name: "Bound" for name in claims}
    assert sorted(claims) == sorted([*rendered, *rolled_out.case.user_claims])
    assert len(claims) == len(rolled_out.case.volumes)


def test_the_pool_check_catches_a_selector_that_matches_the_epp(rolled_out: RolledOut) -> None:
    """The check above can fail: a pool selecting on the label the EPP's pods share with
    nothing that serves matches the EPP pod and misses every serving pod."""
    pools = rolled_out.of_kind("InferencePool")
    if not pools:
        assert rolled_out.case.source["spec"].get("gateway") is None
        return
    md = rolled_out.case.source["metadata"]["name"]
    wrong = {"matchLabels": {"app.kubernetes.io/instance": md}}
    epp = sorted(p.pod for p in rolled_out.pods if p.deployment.endswith("-epp"))
    ports = [p["number"] for p in pools[0]["spec"]["targetPorts"]]

    assert selected_pods(rolled_out.cluster, rolled_out.namespace, wrong) == epp
    assert serving_pods(rolled_out.cluster, rolled_out.namespace, ports) != epp
