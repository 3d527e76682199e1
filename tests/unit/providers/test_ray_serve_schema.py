"""Every serveConfigV2 Runway renders, validated by Ray's own schema classes at RAY_VERSION
(the `ray` test extra, installed without vLLM).

ServeDeploySchema is what Ray's dashboard validates a RayService's serve config against, and
LLMConfig what ray.serve.llm's builders validate each model config against. The builders'
argument classes (LLMServingArgs, PDServingArgs) cannot be imported without vLLM or SGLang (their
modules import the OpenAI protocol models), so their two extra rules, one model id for prefill
and decode and a kv_transfer_config on both, are asserted here directly.
"""

from __future__ import annotations

from typing import Any

import pytest
import ray
import yaml
from pydantic import ValidationError
from ray.llm._internal.serve.core.configs.llm_config import LLMConfig
from ray.serve.schema import ServeDeploySchema

from providers import kuberay
from providers.admission import admit
from providers.model import ModelDeployment
from renderer.sources import bundled_versions
from tests.conftest import EXAMPLES
from tests.support.builders import shipped_registry
from tests.support.rayservices import kuberay_cases

PINS = bundled_versions()
CASES = kuberay_cases(EXAMPLES)


def serve_config(doc: dict[str, Any]) -> dict[str, Any]:
    admission = admit(doc, registry=shipped_registry())
    assert admission.errors == ()
    (service,) = kuberay.render(ModelDeployment(admission.obj), PINS)
    # The operator reads serveConfigV2 as YAML and hands the dashboard the parsed document.
    config: dict[str, Any] = yaml.safe_load(service["spec"]["serveConfigV2"])
    return config


def llm_configs(app: dict[str, Any]) -> list[dict[str, Any]]:
    args = app["args"]
    if app["import_path"] == "ray.serve.llm:build_pd_openai_app":
        return [args["prefill_config"], args["decode_config"]]
    configs: list[dict[str, Any]] = args["llm_configs"]
    return configs


def test_the_installed_ray_is_the_pinned_one() -> None:
    assert ray.__version__ == PINS.ray


@pytest.mark.parametrize(("case", "doc"), CASES, ids=[c for c, _ in CASES])
def test_every_rendered_serve_config_passes_rays_schemas(case: str, doc: dict[str, Any]) -> None:
    config = serve_config(doc)

    deploy = ServeDeploySchema.model_validate(config)
    assert [a.name for a in deploy.applications] == ["llm"]
    (app,) = config["applications"]
    validated = [LLMConfig.model_validate(c) for c in llm_configs(app)]
    assert len({c.model_id for c in validated}) == 1
    if app["import_path"] == "ray.serve.llm:build_pd_openai_app":
        assert [c.engine_kwargs.get("kv_transfer_config") is not None for c in validated] == [
            True,
            True,
        ]


def test_rays_schemas_refuse_what_ray_would_refuse() -> None:
    # The check is not vacuous: Ray's classes refuse a bad import path and inverted autoscaling.
    config = serve_config(CASES[-1][1])
    config["applications"][0]["import_path"] = "build_pd_openai_app"
    config_args = config["applications"][0]["args"]["decode_config"]
    config_args["deployment_config"]["autoscaling_config"]["min_replicas"] = 3

    with pytest.raises(ValidationError) as deploy_error:
        ServeDeploySchema.model_validate(config)
    with pytest.raises(ValidationError) as llm_error:
        LLMConfig.model_validate(config_args)

    assert [e["loc"] for e in deploy_error.value.errors()] == [("applications", 0, "import_path")]
    assert [e["loc"] for e in llm_error.value.errors()] == [("deployment_config",)]
