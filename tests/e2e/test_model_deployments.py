"""Runway's own CRDs on a real API server: strict apply, and hydrated objects round-trip unchanged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from core.admission.hydrate import hydrate
from core.selection.configs import ProviderRegistry
from tests.support.builders import external_model_provider
from tests.support.cluster import Cluster
from tests.support.paths import EXAMPLES


def allowed_examples() -> list[tuple[str, dict[str, Any]]]:
    return [
        (p.name, doc)
        for p in sorted(EXAMPLES.glob("*.yaml"))  # examples/rejected/ holds the others
        for doc in yaml.safe_load_all(p.read_text())
        if doc
    ]


def in_namespace(obj: dict[str, Any], namespace: str) -> dict[str, Any]:
    return obj | {"metadata": obj["metadata"] | {"namespace": namespace}}


def test_api_server_accepts_an_example_model_deployment(cluster: Cluster, namespace: str) -> None:
    source = in_namespace(yaml.safe_load((EXAMPLES / "vllm-1gpu.yaml").read_text()), namespace)

    done = cluster.strict_apply(source)
    stored = json.loads(
        cluster.kubectl("get", "modeldeployment", "qwen-7b", "-n", namespace, "-o", "json").stdout
    )

    assert (done.returncode, done.stderr) == (0, "")
    assert stored["spec"]["model"] == {
        "id": "Qwen/Qwen2.5-7B-Instruct",
        "servedName": "qwen-7b",
        "source": "huggingface",
    }
    assert stored["spec"]["resources"]["gpu"] == {"count": 1, "type": "nvidia.com/gpu"}
    assert stored["spec"]["engine"] == {
        "contextLength": 32768,
        "enablePrefixCaching": True,
        "enforceEager": False,
        "trustRemoteCode": False,
    }


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        (("model", "idd"), "x", "spec.model.idd"),
        (("resources", "gpu", "cuont"), 1, "spec.resources.gpu.cuont"),
    ],
    ids=["model", "nested"],
)
def test_api_server_rejects_an_unknown_field_under_strict_apply(
    path: tuple[str, ...], value: Any, field: str, cluster: Cluster, namespace: str
) -> None:
    obj = in_namespace(yaml.safe_load((EXAMPLES / "vllm-1gpu.yaml").read_text()), namespace)
    node = obj["spec"]
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value

    done = cluster.strict_apply(obj)

    assert done.returncode != 0
    assert (
        f".{field}: field not declared in schema" in done.stderr
        or f'unknown field "{field}"' in done.stderr
    )


@pytest.mark.parametrize(
    ("name", "obj"), allowed_examples(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_hydrated_object_is_stored_exactly_as_rendered(
    name: str, obj: dict[str, Any], cluster: Cluster, namespace: str, shipped: ProviderRegistry
) -> None:
    """Zero drift: the API server's own defaulting adds nothing to a hydrated ModelDeployment."""
    hydrated = in_namespace(hydrate(obj, registry=shipped).obj, namespace)

    done = cluster.strict_apply(hydrated)
    kind_name = f"modeldeployment/{hydrated['metadata']['name']}"
    stored = json.loads(cluster.kubectl("get", kind_name, "-n", namespace, "-o", "json").stdout)

    assert (done.returncode, done.stderr) == (0, "")
    assert stored["spec"] == hydrated["spec"]
    assert stored["metadata"]["annotations"] == hydrated["metadata"]["annotations"]


def test_provider_config_and_external_provider_kinds_are_served(
    cluster: Cluster, namespace: str
) -> None:
    shipped_config = yaml.safe_load(
        (Path(__file__).parents[2] / "providers" / "kaito" / "config.yaml").read_text()
    )
    emp = external_model_provider("openai", namespace, credentialsSecretRef={"name": "openai-key"})

    for obj in (shipped_config, emp):
        done = cluster.strict_apply(obj)
        assert (done.returncode, done.stderr) == (0, "")
    stored = json.loads(
        cluster.kubectl("get", "emp", "openai", "-n", namespace, "-o", "json").stdout
    )
    assert stored["spec"]["credentialsSecretRef"] == {"name": "openai-key", "key": "apiKey"}
    assert stored["spec"]["models"] == [{"servedName": "gpt-x", "mode": "chat"}]
