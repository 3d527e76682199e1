"""A sixth provider is one package and its config.yaml: providers/modules.py finds it at call
time, admission selects it and the render renders it, with no other file changed."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.admission.pipeline import admit
from core.model.kinds import ModelDeployment
from core.rendering.assemble import render_model
from kubeio.registry import build_registry
from kubeio.shipped import bundled_versions
from providers.modules import EXPORT, packages, plugins
from tests.support.builders import model_deployment

TOY_INIT = f'''
"""A toy provider: one ConfigMap naming the model."""

from core.model.plugin import Overrides, Provider, UpstreamKind, Watched, Workload
from core.rendering.pods import TEMPLATE_PODS


def render(md, pins, context):
    return [
        {{
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {{"name": md.name, "namespace": md.namespace}},
            "data": {{"model": md.model_id}},
        }}
    ]


def workload_status(md, observed):
    return Workload("Running", "Toy", "always running")


{EXPORT} = Provider(
    "toy",
    Overrides(frozenset(), lambda overrides, at: []),
    render,
    TEMPLATE_PODS,
    Watched((UpstreamKind("", "v1", "configmaps", "ConfigMap"),), workload_status),
)
'''
TOY_CONFIG = """
apiVersion: airunway.ai/v1alpha1
kind: InferenceProviderConfig
metadata:
  name: toy
spec:
  capabilities:
    engines:
      - name: llamacpp
        servingModes: [aggregated]
        apiFormats: [openai-chat]
        gpuSupport: false
        cpuSupport: true
  selectionRules:
    - condition: "spec.engine.type == 'llamacpp'"
      priority: 1000
"""


@pytest.fixture
def toy_folder(tmp_path: Path) -> Iterator[Path]:
    """A folder holding the toy provider package (toy/__init__.py, toy/config.yaml); the
    package is forgotten again afterwards."""
    package = tmp_path / "toy"
    package.mkdir()
    (package / "__init__.py").write_text(textwrap.dedent(TOY_INIT))
    (package / "config.yaml").write_text(TOY_CONFIG)
    yield tmp_path
    sys.modules.pop("providers.toy", None)


def test_the_shipped_packages_are_found_in_name_order() -> None:
    assert [p.provider.name for p in packages()] == ["dynamo", "kaito", "kuberay", "llmd", "vllm"]


def test_a_toy_provider_in_a_folder_on_the_search_path_is_found(toy_folder: Path) -> None:
    assert [p.name for p in plugins([str(toy_folder)])] == [
        "dynamo",
        "kaito",
        "kuberay",
        "llmd",
        "toy",
        "vllm",
    ]
    assert [p.name for p in plugins()] == ["dynamo", "kaito", "kuberay", "llmd", "vllm"]


def test_admission_selects_the_toy_provider_and_the_render_renders_it(toy_folder: Path) -> None:
    registry = build_registry(path=[str(toy_folder)])
    obj = model_deployment("m", engine="llamacpp", model_id="org/model")

    admission = admit(obj, registry=registry)

    assert (admission.allowed, admission.errors, admission.warnings) == (True, (), ())
    assert admission.obj["metadata"]["annotations"]["airunway.ai/provider-selected-reason"] == (
        "auto-selected: rule \"spec.engine.type == 'llamacpp'\" matched at priority 1000, the"
        " highest priority matched among kaito, toy (ties break by name)"
    )
    assert admission.obj["spec"] == {
        "model": {"id": "org/model", "source": "huggingface"},
        "engine": {
            "type": "llamacpp",
            "enablePrefixCaching": True,
            "enforceEager": False,
            "trustRemoteCode": False,
        },
        "serving": {"mode": "aggregated"},
        "scaling": {"replicas": 1},
        "provider": {"name": "toy"},
    }
    md = ModelDeployment(admission.obj)
    assert render_model(md, registry, bundled_versions(), None) == [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "m", "namespace": "ns"},
            "data": {"model": "org/model"},
        }
    ]
