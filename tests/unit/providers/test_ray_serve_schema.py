"""Every serveConfigV2 Runway renders, validated by Ray Serve's own schema classes at
RAY_VERSION (the `ray[serve]` test extra, installed without vLLM).

ServeDeploySchema is what Ray's dashboard validates a RayService's serve config against, and
DeploymentConfig is what ray.serve.llm's LLMConfig validates each model's deployment_config with.
LLMConfig itself is not imported: its module imports boto3, and botocore's python-dateutil<3
would hold back the kubernetes client Runway runs on. The builders' argument classes
(LLMServingArgs, PDServingArgs) need vLLM or SGLang. So the rest of what they check (one model
id for prefill and decode, a kv_transfer_config on both, the model_loading_config) is asserted
here directly; a multi-node config's placement_group_config is validated by Ray's own
PlacementGroupConfig (ray/llm/_internal/common/placement.py, pydantic alone).
"""

from __future__ import annotations

from typing import Any

import pytest
import ray
import yaml
from pydantic import ValidationError
from ray.llm._internal.common.placement import PlacementGroupConfig
from ray.serve._private.config import DeploymentConfig
from ray.serve.schema import ServeDeploySchema

from core.admission.pipeline import admit
from core.model.kinds import ModelDeployment
from core.model.plugin import ProviderContext
from kubeio.shipped import bundled_versions
from providers.kuberay import PROVIDER as KUBERAY
from tests.support.builders import shipped_registry
from tests.support.paths import EXAMPLES
from tests.support.rayservices import kuberay_cases

PINS = bundled_versions()
CASES = kuberay_cases(EXAMPLES)
PD_BUILDER = "ray.serve.llm:build_pd_openai_app"
# LLMConfig's fields that Runway writes (ray/llm/_internal/serve/core/configs/llm_config.py).
LLM_CONFIG_KEYS = {"deployment_config", "engine_kwargs", "model_loading_config"}


def serve_config(doc: dict[str, Any]) -> dict[str, Any]:
    admission = admit(doc, registry=shipped_registry())
    assert admission.errors == ()
    service, *_claims = KUBERAY.render(
        ModelDeployment(admission.obj), PINS, ProviderContext("kuberay")
    )
    # The operator reads serveConfigV2 as YAML and hands the dashboard the parsed document.
    config: dict[str, Any] = yaml.safe_load(service["spec"]["serveConfigV2"])
    return config


def llm_configs(app: dict[str, Any]) -> list[dict[str, Any]]:
    args = app["args"]
    if app["import_path"] == PD_BUILDER:
        assert sorted(args) == ["decode_config", "prefill_config"]
        return [args["prefill_config"], args["decode_config"]]
    assert sorted(args) == ["llm_configs"]
    configs: list[dict[str, Any]] = args["llm_configs"]
    return configs


def test_the_installed_ray_is_the_pinned_one() -> None:
    assert ray.__version__ == PINS.pin("ray")


@pytest.mark.parametrize(("case", "doc"), CASES, ids=[c for c, _ in CASES])
def test_every_rendered_serve_config_passes_rays_schemas(case: str, doc: dict[str, Any]) -> None:
    config = serve_config(doc)

    deploy = ServeDeploySchema.model_validate(config)
    assert [a.name for a in deploy.applications] == ["llm"]
    (app,) = config["applications"]
    configs = llm_configs(app)
    for llm in configs:
        # a replica across nodes also says how Ray places its vLLM workers
        placed = "pipeline_parallel_size" in llm["engine_kwargs"]
        assert set(llm) == LLM_CONFIG_KEYS | ({"placement_group_config"} if placed else set())
        DeploymentConfig(**llm["deployment_config"])
        if placed:  # what VLLMEngineConfig validates it with (vllm_models.py:71-78)
            PlacementGroupConfig(**llm["placement_group_config"])
        assert sorted(llm["model_loading_config"]) == ["model_id", "model_source"]
    assert len({c["model_loading_config"]["model_id"] for c in configs}) == 1
    if app["import_path"] == PD_BUILDER:
        assert [c["engine_kwargs"].get("kv_transfer_config") is not None for c in configs] == [
            True,
            True,
        ]


def test_rays_schemas_refuse_what_ray_would_refuse() -> None:
    # The check is not vacuous: Ray's classes refuse a bad import path and inverted autoscaling.
    config = serve_config(CASES[-1][1])
    config["applications"][0]["import_path"] = "build_pd_openai_app"
    decode = config["applications"][0]["args"]["decode_config"]
    decode["deployment_config"]["autoscaling_config"]["min_replicas"] = 3

    with pytest.raises(ValidationError) as deploy_error:
        ServeDeploySchema.model_validate(config)
    with pytest.raises(ValidationError) as replicas_error:
        DeploymentConfig(**decode["deployment_config"])

    assert [e["loc"] for e in deploy_error.value.errors()] == [("applications", 0, "import_path")]
    assert [e["loc"] for e in replicas_error.value.errors()] == [("autoscaling_config",)]
