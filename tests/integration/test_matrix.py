"""The render matrix: every provider x engine x serving mode x GPU/CPU x gateway on/off x storage
on/off that admission allows renders, passes the strict upstream check and the cross-object
invariants (render_one runs both), and launches engines only with catalogued flags.

Needs the upstream CRDs `make cluster` fetches (the strict check); like the other render tests,
it fails in CI when they are missing.
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from providers.admission import admit
from providers.flags import catalog_name, unknown_flags
from providers.gateway import GatewayTarget
from providers.invariants import check_invariants
from providers.model import ModelDeployment
from providers.registry import ProviderRegistry
from renderer.render import HYDRATED_FILE, render_one
from renderer.sources import bundled_flag_catalogs, bundled_versions
from renderer.strict import Schemas
from tests.cluster.build import cache_dir
from tests.support.builders import shipped_registry

PINS = bundled_versions()
CATALOGS = bundled_flag_catalogs()
TARGET = GatewayTarget("inference", "gateways")
STORAGE = [
    {"name": "cache", "purpose": "modelCache", "size": "50Gi"},
    {"name": "data", "claimName": "existing-data", "mountPath": "/data"},
]


def cases(registry: ProviderRegistry) -> list[tuple[str, dict[str, Any]]]:
    """(id, ModelDeployment) for every combination the shipped configs declare."""
    out = []
    for config in registry.configs.values():
        for engine, capability in sorted(config.engines.items()):
            devices = [d for d, ok in (("gpu", capability.gpu), ("cpu", capability.cpu)) if ok]
            for mode, device, gateway, storage in itertools.product(
                sorted(capability.serving_modes), devices, (False, True), (False, True)
            ):
                ident = "-".join(
                    [config.name, engine, mode, device]
                    + (["gw"] if gateway else [])
                    + (["pvc"] if storage else [])
                )
                out.append(
                    (ident, _deployment(config.name, engine, mode, device, gateway, storage))
                )
    return out


def _deployment(
    provider: str, engine: str, mode: str, device: str, gateway: bool, storage: bool
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "model": {"id": "org/model"},
        "provider": {"name": provider},
        "engine": {"type": engine},
        "serving": {"mode": mode},
    }
    if engine == "llamacpp":  # KAITO runs the user's llama.cpp image; there is no default
        spec["engine"]["image"] = "ghcr.io/kaito-project/aikit/llama3.2:1b"
    if mode == "disaggregated":
        spec["scaling"] = {
            "prefill": {"replicas": 1, "gpu": {"count": 2}},
            "decode": {"replicas": 1, "gpu": {"count": 1}},
        }
    elif device == "gpu":
        spec["resources"] = {"gpu": {"count": 2}}
    else:
        spec["resources"] = {"cpu": "4", "memory": "8Gi"}
    if gateway:
        spec["gateway"] = {"enabled": True}
    if storage:
        spec["model"]["storage"] = {"volumes": [dict(v) for v in STORAGE]}
    name = f"{provider}-{engine}-{mode[:3]}-{device}"
    return {
        "apiVersion": "airunway.ai/v1alpha1",
        "kind": "ModelDeployment",
        "metadata": {"name": name, "namespace": "matrix"},
        "spec": spec,
    }


@pytest.fixture(scope="module")
def schemas() -> Schemas:
    path = cache_dir(dict(os.environ)) / "crds"
    if not path.is_dir():
        message = f"upstream CRDs not in {path}: run `make cluster`"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return Schemas.from_directories([str(Path(path))])


SHIPPED = shipped_registry()
CASES = cases(SHIPPED)


def test_the_matrix_covers_every_declared_combination() -> None:
    ids = [ident for ident, _ in CASES]
    assert len(ids) == len(set(ids)) == 52  # what the shipped configs declare (2x2 per engine mode)
    providers = {ident.split("-", 1)[0] for ident in ids}
    assert providers == {"dynamo", "kaito", "kuberay", "llmd", "vllm"}
    assert {i for i in ids if "disaggregated" in i and "gw" in i and "pvc" in i} >= {
        "dynamo-vllm-disaggregated-gpu-gw-pvc",
        "dynamo-sglang-disaggregated-gpu-gw-pvc",
        "llmd-vllm-disaggregated-gpu-gw-pvc",
    }
    assert "kaito-llamacpp-aggregated-cpu-gw-pvc" in ids


@pytest.mark.parametrize(("ident", "obj"), CASES, ids=[ident for ident, _ in CASES])
def test_every_admitted_case_renders_strictly_and_fits_together(
    ident: str, obj: dict[str, Any], schemas: Schemas
) -> None:
    admission = admit(obj, registry=SHIPPED)
    assert admission.errors == (), ident

    result = render_one(
        obj, previous=None, registry=SHIPPED, schemas=schemas, pins=PINS, gateway=TARGET
    )

    assert result.error is None, result.error
    objects = [
        yaml.safe_load(text)
        for name, text in sorted(result.files.items())
        if name not in (HYDRATED_FILE, "kustomization.yaml")
    ]
    md = ModelDeployment(yaml.safe_load(result.files[HYDRATED_FILE]))
    assert check_invariants(md, objects) == []
    name = catalog_name(md.provider_name, md.engine_type)
    if name is not None:
        for args in _engine_args(objects):
            assert unknown_flags(args, CATALOGS[name]) == []


def _engine_args(objects: list[dict[str, Any]]) -> list[list[str]]:
    out = []
    for obj in objects:
        if obj["kind"] == "Deployment":
            out += [
                c["args"]
                for c in obj["spec"]["template"]["spec"]["containers"]
                if c["name"] == "vllm"
            ]
        elif obj["kind"] == "DynamoGraphDeployment":
            out += [
                s["extraPodSpec"]["mainContainer"]["args"]
                for s in obj["spec"]["services"].values()
                if s["componentType"] == "worker"
            ]
    return out
