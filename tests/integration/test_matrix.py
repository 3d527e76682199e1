"""The render matrix: every provider x engine x serving mode x GPU/CPU x gateway on/off x storage
on/off that admission allows renders, passes the strict upstream check and the cross-object
invariants (render_one runs both), and launches engines only with catalogued flags.

Needs the upstream CRDs `make cluster` fetches (the strict check); like the other render tests,
it fails in CI when they are missing.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from core.admission.pipeline import admit
from core.checks.flags import unknown_flags
from core.model.kinds import ModelDeployment
from core.rendering.inferencegateway import GatewayTarget
from core.rendering.invariants import check_invariants
from core.selection.configs import ProviderRegistry
from kubeio.shipped import bundled_flag_catalogs, bundled_versions
from renderer.output.folders import HYDRATED_FILE
from renderer.output.render import RenderContext, render_one
from renderer.output.schemapack import load_pack
from renderer.output.strict import Schemas
from tests.support.builders import shipped_registry
from tests.support.matrix import (
    KaitoCase,
    byo_registry,
    cases,
    engine_args,
    kaito_cases,
    launched_catalogs,
)

PINS = bundled_versions()
CATALOGS = bundled_flag_catalogs()
TARGET = GatewayTarget("inference", "gateways")


@pytest.fixture(scope="module")
def schemas() -> Schemas:
    """Runway's schema pack, as `runway render` uses it by default."""
    return Schemas.from_pack(load_pack())


SHIPPED = shipped_registry()
CASES = cases(SHIPPED)


def test_the_matrix_covers_every_declared_combination() -> None:
    ids = [ident for ident, _ in CASES]
    # what the shipped configs declare (2x2 per engine mode, less KAITO presets with storage,
    # which KAITO cannot mount), the two Dynamo mocker cases, a replica across two nodes per GPU
    # engine and mode of each provider offering multi-node (llm-d's disaggregated refused), and
    # per GPU engine aggregated again with the gateway and the cache
    multinode = [i for i in ids if "-pp2" in i]
    assert len(ids) == len(set(ids)) == 56 + len(multinode)
    assert ids[56 - 2 : 56] == [
        "dynamo-vllm-aggregated-mocker",
        "dynamo-vllm-disaggregated-mocker",
    ]
    assert {i for i in multinode if i.startswith("dynamo-") and i.endswith("-pp2")} == {
        f"dynamo-{engine}-{mode}-gpu-pp2"
        for engine in ("vllm", "sglang", "trtllm")
        for mode in ("aggregated", "disaggregated")
    }
    assert {i for i in multinode if i.startswith("kuberay-")} == {
        "kuberay-vllm-aggregated-gpu-pp2",
        "kuberay-vllm-disaggregated-gpu-pp2",
        "kuberay-vllm-aggregated-gpu-pp2-gw-pvc",
    }
    providers = {ident.split("-", 1)[0] for ident in ids}
    assert providers == {"dynamo", "kaito", "kuberay", "llmd", "vllm"}
    assert {i for i in ids if "disaggregated" in i and "gw" in i and "pvc" in i} >= {
        "dynamo-vllm-disaggregated-gpu-gw-pvc",
        "dynamo-sglang-disaggregated-gpu-gw-pvc",
        "llmd-vllm-disaggregated-gpu-gw-pvc",
    }
    assert "kaito-llamacpp-aggregated-cpu-gw-pvc" in ids
    assert [i for i in multinode if not i.startswith("dynamo-")] == [
        "kuberay-vllm-aggregated-gpu-pp2",
        "kuberay-vllm-disaggregated-gpu-pp2",
        "llmd-vllm-aggregated-gpu-pp2",
        "vllm-vllm-aggregated-gpu-pp2",
        "kuberay-vllm-aggregated-gpu-pp2-gw-pvc",
        "llmd-vllm-aggregated-gpu-pp2-gw-pvc",
        "vllm-vllm-aggregated-gpu-pp2-gw-pvc",
    ]
    assert [i for i in multinode if i.endswith("-pp2-gw-pvc")] == [
        f"{provider}-{engine}-aggregated-gpu-pp2-gw-pvc"
        for provider, engine in (
            ("dynamo", "sglang"), ("dynamo", "trtllm"), ("dynamo", "vllm"),
            ("kuberay", "vllm"), ("llmd", "vllm"), ("vllm", "vllm"),
        )
    ]  # fmt: skip


def rendered(
    obj: dict[str, Any], schemas: Schemas, registry: ProviderRegistry | None = None
) -> tuple[ModelDeployment, list[Any]]:
    """The hydrated ModelDeployment and the objects a render writes for `obj` (with the shipped
    configs unless `registry` is given), asserting it rendered without an error."""
    context = RenderContext(registry or SHIPPED, schemas, PINS, TARGET)
    result = render_one(obj, previous=None, context=context)
    assert result.error is None, result.error
    objects = [
        yaml.safe_load(text)
        for name, text in sorted(result.files.items())
        if name not in (HYDRATED_FILE, "kustomization.yaml")
    ]
    return ModelDeployment(yaml.safe_load(result.files[HYDRATED_FILE])), objects


@pytest.mark.parametrize(("ident", "obj"), CASES, ids=[ident for ident, _ in CASES])
def test_every_admitted_case_renders_strictly_and_fits_together(
    ident: str, obj: dict[str, Any], schemas: Schemas
) -> None:
    admission = admit(obj, registry=SHIPPED)
    assert admission.errors == (), ident

    md, objects = rendered(obj, schemas)
    assert check_invariants(md, objects, SHIPPED) == []
    launched = engine_args(objects)
    if SHIPPED.runs_test_backend(md):  # every worker runs the mocker, and nothing else takes flags
        (graph,) = [o for o in objects if o["kind"] == "DynamoGraphDeployment"]
        services = graph["spec"]["services"].values()
        workers = [s for s in services if s["componentType"] == "worker"]
        assert [name for name, _ in launched] == ["dynamo-mocker"] * len(workers)
    for name, args in launched:
        assert name in launched_catalogs(md)
        assert unknown_flags(args, CATALOGS[name]) == []


KAITO = kaito_cases()


def test_the_kaito_cases_cover_both_installs_and_every_kind_of_model() -> None:
    assert [c.ident for c in KAITO] == [
        f"kaito-{kind}-{install}"
        for install in ("nap", "byo")
        for kind in (
            "in-image",
            "gated",
            "generated",
            "direct-cpu",
            "direct-gpu",
            "built-cpu",
            "built-gpu",
            "premade-cpu",
            "premade-gpu",
        )
    ]


@pytest.mark.parametrize("case", KAITO, ids=[c.ident for c in KAITO])
def test_kaito_workspaces_are_what_that_kaito_admits_and_the_route_matches_its_name(
    case: KaitoCase, schemas: Schemas
) -> None:
    registry = SHIPPED if case.auto_provisioning else byo_registry()
    admission = admit(case.obj, registry=registry)
    assert admission.errors == (), case.ident

    md, written = rendered(case.obj, schemas, registry)
    objects = {(o["kind"], o["metadata"]["name"]): o for o in written}
    workspace = objects[("Workspace", case.ident)]
    gpus = (case.obj["spec"].get("resources") or {}).get("gpu", {}).get("count", 0)
    gpu = {"nvidia.com/gpu.present": "true"} if gpus else {}
    expected_resource: dict[str, Any] = {"count": 1}
    if case.instance_type:
        expected_resource["instanceType"] = case.instance_type
    expected_resource["labelSelector"] = {"matchLabels": {"kubernetes.io/os": "linux", **gpu}}
    assert workspace["resource"] == expected_resource
    preset = workspace["inference"].get("preset")
    if preset is not None:
        options = {"presetOptions": {"modelAccessSecret": case.access_secret}}
        assert preset == {
            "name": case.obj["spec"]["model"]["id"],
            **(options if case.access_secret else {}),
        }
    else:
        assert case.access_secret is None
    route = objects[("HTTPRoute", case.ident)]
    (rule,) = route["spec"]["rules"]
    (match,) = rule["matches"]
    assert [h["value"] for h in match["headers"]] == [case.served]
    assert check_invariants(md, list(objects.values()), registry) == []


def _own_refs(ident: str, obj: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """A gateway case with a Gateway of the model's own, and (where Runway renders the pool)
    with a pool of its own too (spec.gateway.gatewayRef / poolRef)."""
    found = []
    for key, ref in (("gatewayRef", "team-gateway"), ("poolRef", "team-pool")):
        if key == "poolRef" and ident.startswith("dynamo-"):
            continue  # Dynamo's operator makes the pool: refused (core/checks/gateway.py)
        case = yaml.safe_load(yaml.safe_dump(obj))
        case["spec"]["gateway"][key] = {"name": ref}
        found.append((f"{ident}-{key}", case))
    return found


OWN_REFS = [
    own
    for ident, obj in CASES
    if (obj["spec"].get("gateway") or {}).get("enabled") is True and not ident.endswith("-mocker")
    for own in _own_refs(ident, obj)
]


def test_the_own_refs_cover_every_gateway_case() -> None:
    assert {i.split("-", 1)[0] for i, _ in OWN_REFS} == {
        "dynamo",
        "kaito",
        "kuberay",
        "llmd",
        "vllm",
    }
    assert len([i for i, _ in OWN_REFS if i.endswith("gatewayRef")]) > len(
        [i for i, _ in OWN_REFS if i.endswith("poolRef")]
    )


@pytest.mark.parametrize(("ident", "obj"), OWN_REFS, ids=[ident for ident, _ in OWN_REFS])
def test_a_gateway_or_pool_of_the_models_own_renders_strictly_and_routes_there(
    ident: str, obj: dict[str, Any], schemas: Schemas
) -> None:
    assert admit(obj, registry=SHIPPED).errors == (), ident

    md, objects = rendered(obj, schemas)
    assert check_invariants(md, objects, SHIPPED) == []
    (route,) = [o for o in objects if o["kind"] == "HTTPRoute"]
    (parent,) = route["spec"]["parentRefs"]
    (backend,) = route["spec"]["rules"][0]["backendRefs"]
    kinds = {o["kind"] for o in objects}
    if ident.endswith("gatewayRef"):
        assert (parent["name"], parent["namespace"]) == ("team-gateway", md.namespace)
    else:
        assert (parent["name"], parent["namespace"]) == (TARGET.name, TARGET.namespace)
        assert backend["name"] == "team-pool" and "namespace" not in backend
        assert kinds.isdisjoint({"InferencePool", "ClusterRole", "ClusterRoleBinding"})


def engine_pod_specs(obj: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(where, pod spec) of every pod an object templates that runs an engine: Deployments but
    the endpoint picker's, LeaderWorkerSets' leaders and workers, RayServices' head and workers."""
    kind, name, spec = obj["kind"], obj["metadata"]["name"], obj.get("spec") or {}
    if kind == "Deployment" and not name.endswith("-epp"):
        return [(f"Deployment/{name}", spec["template"]["spec"])]
    if kind == "LeaderWorkerSet":
        templates = spec["leaderWorkerTemplate"]
        found = [(f"LeaderWorkerSet/{name} workers", templates["workerTemplate"]["spec"])]
        if "leaderTemplate" in templates:
            found.append((f"LeaderWorkerSet/{name} leader", templates["leaderTemplate"]["spec"]))
        return found
    if kind == "RayService":
        cluster = spec["rayClusterConfig"]
        found = [(f"RayService/{name} head", cluster["headGroupSpec"]["template"]["spec"])]
        for group in cluster.get("workerGroupSpecs") or []:
            found.append((f"RayService/{name} {group['groupName']}", group["template"]["spec"]))
        return found
    return []


@pytest.mark.parametrize(("ident", "obj"), CASES, ids=[ident for ident, _ in CASES])
def test_every_engine_pod_runway_writes_turns_service_links_off(
    ident: str, obj: dict[str, Any], schemas: Schemas
) -> None:
    """A Service named `vllm` in the namespace would give vLLM VLLM_PORT=tcp://IP:PORT, on which
    it stops (tests/serving/test_service_links.py): every engine pod Runway's own renderers write
    says enableServiceLinks: false. Dynamo's and KAITO's pods are their operators' (docs/checks.md)."""
    _, objects = rendered(obj, schemas)
    pods = [found for o in objects for found in engine_pod_specs(o)]
    if ident.split("-", 1)[0] in ("vllm", "llmd", "kuberay"):
        assert pods
    assert [where for where, pod in pods if pod.get("enableServiceLinks") is not False] == []
