"""Rendered YAML is written as people write Kubernetes YAML: no anchors and no aliases (issue #23
item 6: `httpGet: &id001` ... `*id001`), in every file of every case of the render matrix, the
KAITO cases and the examples, and each file parses to exactly the objects that were rendered."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
import yaml

from core.admission.pipeline import admit
from core.model.kinds import ModelDeployment
from core.rendering.assemble import render_model
from core.rendering.inferencegateway import GatewayTarget
from kubeio.shipped import bundled_versions
from kubeio.sources import parse_documents
from renderer.output.folders import HYDRATED_FILE, kustomization
from renderer.output.render import RenderContext, render_one
from renderer.output.schemapack import load_pack
from renderer.output.strict import Schemas
from tests.support.builders import shipped_registry
from tests.support.matrix import cases, kaito_cases
from tests.support.paths import EXAMPLES, example_name

PINS = bundled_versions()
TARGET = GatewayTarget("inference", "gateways")
SHIPPED = shipped_registry()
CASES = (
    cases(SHIPPED)
    + [(c.ident, c.obj) for c in kaito_cases() if c.auto_provisioning]
    + [
        (example_name(path), doc.obj)
        for path in sorted(EXAMPLES.glob("*.yaml"))
        for doc in parse_documents(path.read_text(), str(path))
    ]
)


@pytest.fixture(scope="module")
def schemas() -> Schemas:
    return Schemas.from_pack(load_pack())


def _events_with_anchors(text: str) -> list[str]:
    """Every alias, and every node that carries an anchor, as the YAML parser sees them."""
    return [
        repr(event)
        for event in yaml.parse(text, Loader=yaml.CSafeLoader)
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None
    ]


def _expected_files(obj: Mapping[str, Any]) -> dict[str, Any]:
    """file name -> the object rendered into it, computed again from the same inputs."""
    hydrated = admit(obj, registry=SHIPPED).obj
    objects = render_model(ModelDeployment(hydrated), SHIPPED, PINS, TARGET)
    files: dict[str, Any] = {HYDRATED_FILE: hydrated}
    for rendered in objects:
        files[f"{rendered['kind'].lower()}-{rendered['metadata']['name']}.yaml"] = rendered
    files["kustomization.yaml"] = kustomization(sorted(files))
    return files


@pytest.mark.parametrize(("ident", "obj"), CASES, ids=[ident for ident, _ in CASES])
def test_rendered_files_have_no_anchors_and_parse_to_the_rendered_objects(
    ident: str, obj: dict[str, Any], schemas: Schemas
) -> None:
    result = render_one(obj, previous=None, context=RenderContext(SHIPPED, schemas, PINS, TARGET))
    assert result.error is None, (ident, result.error)
    again = render_one(obj, previous=None, context=RenderContext(SHIPPED, schemas, PINS, TARGET))

    assert {n: ("&id" in t, "*id" in t) for n, t in result.files.items()} == {
        n: (False, False) for n in result.files
    }
    assert {n: _events_with_anchors(t) for n, t in result.files.items()} == {
        n: [] for n in result.files
    }
    assert {n: yaml.safe_load(t) for n, t in result.files.items()} == _expected_files(obj)
    assert dict(again.files) == dict(result.files)  # byte for byte, render after render
