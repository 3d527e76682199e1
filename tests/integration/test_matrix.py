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
from kubeio.shipped import bundled_flag_catalogs, bundled_versions
from renderer.render import HYDRATED_FILE, render_one
from renderer.schemapack import load_pack
from renderer.strict import Schemas
from tests.support.builders import shipped_registry
from tests.support.matrix import cases, engine_args, launched_catalogs

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
    # what the shipped configs declare (2x2 per engine mode), and the two Dynamo mocker cases
    assert len(ids) == len(set(ids)) == 54
    assert ids[-2:] == ["dynamo-vllm-aggregated-mocker", "dynamo-vllm-disaggregated-mocker"]
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
