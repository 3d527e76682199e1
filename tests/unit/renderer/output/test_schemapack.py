"""The schema pack (renderer/output/schemas/): what it holds, that it agrees with the pins, that
`make schemas` is deterministic, and that rendering really checks against it."""

from __future__ import annotations

import collections
import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from core.rendering.inferencegateway import GatewayTarget
from core.selection.configs import ProviderRegistry
from kubeio.shipped import bundled_versions
from renderer.output.builtin import BUILTIN_API_VERSIONS
from renderer.output.render import RenderContext, render_many
from renderer.output.schemapack import load_pack
from renderer.output.strict import Schemas
from tests.support.paths import EXAMPLES, ROOT
from tools import schemapack

PACK = ROOT / "renderer" / "output" / "schemas"
GATEWAY = GatewayTarget("inference", "gateways", istio=True)


def admitted_examples() -> list[dict[str, Any]]:
    return [
        doc
        for path in sorted(EXAMPLES.glob("*.yaml"))
        for doc in yaml.safe_load_all(path.read_text())
        if doc
    ]


def with_gateway(obj: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["metadata"]["name"] += "-gw"
    out["spec"]["gateway"] = {"enabled": True}
    return out


def extensions(schema: Any, counts: collections.Counter[str] | None = None) -> dict[str, int]:
    """How often each x-kubernetes-* key occurs in a schema (or anything nested in it)."""
    counts = collections.Counter() if counts is None else counts
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key.startswith("x-kubernetes-"):
                counts[key] += 1
            extensions(value, counts)
    elif isinstance(schema, list):
        for item in schema:
            extensions(item, counts)
    return dict(sorted(counts.items()))


def description_keywords(schema: Any, at: str = "") -> list[str]:
    """Where a schema node still has a `description` keyword (a property named so is fine)."""
    if not isinstance(schema, dict):
        return []
    found = [at] if "description" in schema else []
    for name, sub in (schema.get("properties") or {}).items():
        found += description_keywords(sub, f"{at}.{name}")
    for key in ("items", "additionalProperties", "not"):
        found += description_keywords(schema.get(key), f"{at}[{key}]")
    for key in ("allOf", "anyOf", "oneOf"):
        for index, sub in enumerate(schema.get(key) or ()):
            found += description_keywords(sub, f"{at}.{key}[{index}]")
    return found


def test_the_pack_holds_every_upstream_kind_runway_renders() -> None:
    summary = [
        (
            entry.file,
            entry.crd["spec"]["group"],
            entry.crd["spec"]["names"]["kind"],
            entry.crd["spec"]["scope"],
            [
                (v["name"], v["served"], v["storage"], sorted(v.get("subresources") or {}))
                for v in entry.crd["spec"]["versions"]
            ],
        )
        for entry in load_pack()
    ]

    status = ["status"]
    assert summary == [
        ("applications.argoproj.io.json", "argoproj.io", "Application", "Namespaced",
         [("v1alpha1", True, True, [])]),
        ("destinationrules.networking.istio.io.json", "networking.istio.io", "DestinationRule", "Namespaced",
         [("v1", True, True, status), ("v1alpha3", True, False, status), ("v1beta1", True, False, status)]),
        ("dynamographdeployments.nvidia.com.json", "nvidia.com", "DynamoGraphDeployment", "Namespaced",
         [("v1alpha1", True, True, status)]),
        ("gateways.gateway.networking.k8s.io.json", "gateway.networking.k8s.io", "Gateway", "Namespaced",
         [("v1", True, True, status), ("v1beta1", True, False, status)]),
        ("helmreleases.helm.toolkit.fluxcd.io.json", "helm.toolkit.fluxcd.io", "HelmRelease", "Namespaced",
         [("v2", True, True, status)]),
        ("helmrepositories.source.toolkit.fluxcd.io.json", "source.toolkit.fluxcd.io", "HelmRepository",
         "Namespaced", [("v1", True, True, status)]),
        ("httproutes.gateway.networking.k8s.io.json", "gateway.networking.k8s.io", "HTTPRoute", "Namespaced",
         [("v1", True, True, status), ("v1beta1", True, False, status)]),
        ("inferenceobjectives.inference.networking.x-k8s.io.json", "inference.networking.x-k8s.io",
         "InferenceObjective", "Namespaced", [("v1alpha2", True, True, status)]),
        ("inferencepools.inference.networking.k8s.io.json", "inference.networking.k8s.io", "InferencePool",
         "Namespaced", [("v1", True, True, status)]),
        ("rayclusters.ray.io.json", "ray.io", "RayCluster", "Namespaced",
         [("v1", True, True, status), ("v1alpha1", True, False, status)]),
        ("rayservices.ray.io.json", "ray.io", "RayService", "Namespaced",
         [("v1", True, True, status), ("v1alpha1", True, False, status)]),
        ("referencegrants.gateway.networking.k8s.io.json", "gateway.networking.k8s.io", "ReferenceGrant",
         "Namespaced", [("v1", True, False, []), ("v1beta1", True, True, [])]),
        ("workspaces.kaito.sh.json", "kaito.sh", "Workspace", "Namespaced",
         [("v1alpha1", True, False, status), ("v1beta1", True, True, status)]),
    ]  # fmt: skip


def test_the_pack_agrees_with_the_version_pins_kind_by_kind() -> None:
    pins = bundled_versions().as_env()

    sources = {entry.crd["spec"]["names"]["kind"]: dict(entry.source) for entry in load_pack()}
    agreed = {
        kind: (s["upstream"], s["pin"], s["pinned"] == pins[s["pin"]], s["version"])
        for kind, s in sources.items()
    }

    assert agreed == {
        "Application": ("Argo CD", "ARGOCD_VERSION", True, pins["ARGOCD_VERSION"]),
        "DestinationRule": ("Istio", "ISTIO_VERSION", True, f"v{pins['ISTIO_VERSION']}"),
        # Not the v1.1.1 tag: the CRD file comes from the release/1.1 branch point (docs/rendering.md).
        "DynamoGraphDeployment": ("Dynamo", "DYNAMO_VERSION", True, "main@01a4b6d6d"),
        "Gateway": ("Gateway API", "GATEWAY_API_VERSION", True, pins["GATEWAY_API_VERSION"]),
        "HelmRelease": ("Flux helm-controller", "FLUX_HELM_CONTROLLER_VERSION", True, pins["FLUX_HELM_CONTROLLER_VERSION"]),
        "HelmRepository": ("Flux source-controller", "FLUX_SOURCE_CONTROLLER_VERSION", True, pins["FLUX_SOURCE_CONTROLLER_VERSION"]),
        "HTTPRoute": ("Gateway API", "GATEWAY_API_VERSION", True, pins["GATEWAY_API_VERSION"]),
        "InferenceObjective": ("Gateway API Inference Extension", "GAIE_VERSION", True, pins["GAIE_VERSION"]),
        "InferencePool": ("Gateway API Inference Extension", "GAIE_VERSION", True, pins["GAIE_VERSION"]),
        "RayCluster": ("KubeRay", "KUBERAY_VERSION", True, f"v{pins['KUBERAY_VERSION']}"),
        "RayService": ("KubeRay", "KUBERAY_VERSION", True, f"v{pins['KUBERAY_VERSION']}"),
        "ReferenceGrant": ("Gateway API", "GATEWAY_API_VERSION", True, pins["GATEWAY_API_VERSION"]),
        "Workspace": ("KAITO", "KAITO_VERSION", True, f"v{pins['KAITO_VERSION']}"),
    }  # fmt: skip
    assert sources["Workspace"]["commit"] == "c673cadc60c1ed8e9d2cf7614e3a5fab4d2f987f"
    assert sources["DynamoGraphDeployment"]["commit"] == "01a4b6d6ddd5b0173f0d110040d1f2cccf759bf9"
    assert sources["RayService"]["module"] == "github.com/ray-project/kuberay/ray-operator"
    assert sources["RayService"]["file"] == "config/crd/bases/ray.io_rayservices.yaml"
    assert sources["HelmRelease"]["module"] == "github.com/fluxcd/helm-controller"
    assert (
        sources["HelmRelease"]["file"]
        == "config/crd/bases/helm.toolkit.fluxcd.io_helmreleases.yaml"
    )
    assert sources["Application"]["file"] == "manifests/crds/application-crd.yaml"


def test_the_pack_keeps_every_kubernetes_extension_and_no_description_text() -> None:
    by_kind = {entry.crd["spec"]["names"]["kind"]: entry.crd for entry in load_pack()}

    leftover = {
        kind: [
            where
            for version in crd["spec"]["versions"]
            for where in description_keywords(version["schema"]["openAPIV3Schema"])
        ]
        for kind, crd in by_kind.items()
    }

    assert leftover == {kind: [] for kind in by_kind}
    # Counted in the upstream files (KAITO v0.10.0, Dynamo 01a4b6d6d), descriptions included.
    assert extensions(by_kind["Workspace"]["spec"]) == {
        "x-kubernetes-list-type": 4,
        "x-kubernetes-map-type": 2,
        "x-kubernetes-preserve-unknown-fields": 8,
    }
    assert extensions(by_kind["DynamoGraphDeployment"]["spec"]) == {
        "x-kubernetes-int-or-string": 81,
        "x-kubernetes-list-map-keys": 30,
        "x-kubernetes-list-type": 184,
        "x-kubernetes-map-type": 79,
        "x-kubernetes-preserve-unknown-fields": 2,
        "x-kubernetes-validations": 3,
    }
    # A property *named* description is a field, not prose: it stays.
    metrics = by_kind["Workspace"]["spec"]["versions"][1]["schema"]["openAPIV3Schema"]
    for key in ("status", "performance", "metrics"):
        metrics = metrics["properties"][key]
    assert "description" in metrics["additionalProperties"]["properties"]


def test_strip_removes_description_keywords_but_not_fields_or_data() -> None:
    schema = {
        "description": "prose",
        "type": "object",
        "properties": {
            "description": {"type": "string", "description": "prose"},
            "list": {"type": "array", "items": {"description": "prose", "type": "string"}},
            "map": {"additionalProperties": {"description": "prose", "type": "integer"}},
            "either": {"anyOf": [{"description": "prose", "type": "integer"}]},
        },
        "default": {"description": "a default value is data"},
        "x-kubernetes-validations": [{"rule": "self.a == 1", "message": "kept"}],
    }

    assert schemapack.strip_schema(schema) == {
        "type": "object",
        "properties": {
            "description": {"type": "string"},
            "list": {"type": "array", "items": {"type": "string"}},
            "map": {"additionalProperties": {"type": "integer"}},
            "either": {"anyOf": [{"type": "integer"}]},
        },
        "default": {"description": "a default value is data"},
        "x-kubernetes-validations": [{"rule": "self.a == 1", "message": "kept"}],
    }


def test_make_schemas_twice_gives_the_same_bytes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`make schemas` builds from what it fetched; a pack is valid input, so two runs from the
    committed pack must reproduce it byte for byte (sorted keys, stable names, no stale files)."""
    first, second = tmp_path / "first", tmp_path / "second"
    second.mkdir()
    (second / "stale.json").write_text("{}\n")

    codes = [
        schemapack.main(["--inputs", str(PACK), "--out", str(first)]),
        schemapack.main(["--inputs", str(first), "--out", str(second)]),
    ]

    def contents(folder: Path) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}

    assert codes == [0, 0]
    assert contents(first) == contents(second) == contents(PACK)
    size = sum(len(b) for b in contents(PACK).values())
    assert capsys.readouterr().out.splitlines() == [
        f"schemas: 13 CRDs, {size} bytes in {first}",
        f"schemas: 13 CRDs, {size} bytes in {second}",
    ]


def test_a_pin_the_generator_has_no_source_for_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pins = (ROOT / "core" / "model" / "versions.env").read_text()
    bumped = tmp_path / "versions.env"
    bumped.write_text(pins.replace("KAITO_VERSION=0.10.0", "KAITO_VERSION=0.11.0"))

    code = schemapack.main(
        ["--upstream-crds", str(tmp_path), "--versions", str(bumped), "--out", str(tmp_path)]
    )

    assert code == 1
    assert capsys.readouterr().err == (
        "schemas: KAITO_VERSION=0.11.0, but the KAITO CRD source known to tools/schemapack.py "
        "is for 0.10.0: add the CRD of 0.11.0 to --upstream-crds and update DIRECTORY_SOURCES\n"
    )


def test_every_example_renders_strictly_against_the_shipped_pack(shipped: ProviderRegistry) -> None:
    """The pack is what render checks against: delete a field the renderers emit from a pack
    file and this test fails, naming the field."""
    schemas = Schemas.from_pack(load_pack())
    objects = admitted_examples()
    objects += [with_gateway(o) for o in objects]

    results = render_many(
        objects,
        previous={},
        context=RenderContext(shipped, schemas, bundled_versions(), GATEWAY),
    )

    assert {r.key: r.error for r in results} == {r.key: None for r in results}
    assert len(results) == len(objects) == 28
    assert sorted(
        k for k in schemas.used_sources() if k.split()[0] not in BUILTIN_API_VERSIONS
    ) == [
        "gateway.networking.k8s.io/v1 HTTPRoute",
        "inference.networking.k8s.io/v1 InferencePool",
        "kaito.sh/v1beta1 Workspace",
        "networking.istio.io/v1 DestinationRule",
        "nvidia.com/v1alpha1 DynamoGraphDeployment",
        "ray.io/v1 RayService",
    ]


@pytest.mark.parametrize(
    ("kind", "path", "field"),
    [
        ("Workspace", ("inference", "preset"), "inference.preset"),
        (
            "DynamoGraphDeployment",
            ("spec", "services", "*", "extraPodSpec"),
            "spec.services.Frontend.extraPodSpec",
        ),
        ("RayService", ("spec", "serveConfigV2"), "spec.serveConfigV2"),
    ],
    ids=["kaito", "dynamo", "kuberay"],
)
def test_a_field_removed_from_a_pack_schema_is_named_by_the_check(
    kind: str, path: tuple[str, ...], field: str, shipped: ProviderRegistry
) -> None:
    entries = load_pack()
    (entry,) = [e for e in entries if e.crd["spec"]["names"]["kind"] == kind]
    narrower = copy.deepcopy(dict(entry.crd))
    for version in narrower["spec"]["versions"]:
        node = version["schema"]["openAPIV3Schema"]
        for key in path[:-1]:
            node = node["additionalProperties"] if key == "*" else node["properties"][key]
        del node["properties"][path[-1]]
    schemas = Schemas.from_pack(entries).overridden_by(Schemas.from_crds([("narrower", narrower)]))
    example = {
        "Workspace": "kaito-overrides.yaml",
        "DynamoGraphDeployment": "vllm-1gpu.yaml",
        "RayService": "vllm-multi-gpu.yaml",
    }[kind]

    (result,) = render_many(
        [yaml.safe_load((EXAMPLES / example).read_text())],
        previous={},
        context=RenderContext(shipped, schemas, bundled_versions()),
    )

    assert result.error is not None
    assert result.error.startswith(f"IncompatibleUpstream: {field}: {kind}/")
    assert f"schema from narrower): {field}: Unknown field: not declared in the schema" in (
        result.error
    )
