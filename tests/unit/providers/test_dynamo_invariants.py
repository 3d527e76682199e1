"""Dynamo's serving containers (its graph's worker services) under the core's GPU and served-name
invariants: the provider says where they are, the core checks them as a Deployment's."""

from __future__ import annotations

import copy
from typing import Any

from core.admission.pipeline import admit
from core.model.kinds import ModelDeployment
from core.rendering.assemble import render_model
from core.rendering.inferencegateway import GatewayTarget
from core.rendering.invariants import check_invariants
from kubeio.registry import build_registry
from kubeio.shipped import bundled_versions
from tests.support.builders import model_deployment

SHIPPED = build_registry()


def rendered(obj: dict[str, Any]) -> tuple[ModelDeployment, list[dict[str, Any]]]:
    admission = admit(obj, registry=SHIPPED)
    assert admission.errors == ()
    md = ModelDeployment(admission.obj)
    target = GatewayTarget("inference", "gateways")
    return md, render_model(md, SHIPPED, bundled_versions(), target)


def test_a_worker_service_asking_for_more_gpus_than_its_parallelism_is_named() -> None:
    md, objects = rendered(model_deployment(gpu=2, provider="dynamo", engine="vllm"))
    graph = copy.deepcopy(objects)
    (dgd,) = [o for o in graph if o["kind"] == "DynamoGraphDeployment"]
    dgd["spec"]["services"]["VllmWorker"]["resources"]["limits"]["gpu"] = "4"

    assert check_invariants(md, objects, SHIPPED) == []
    assert check_invariants(md, graph, SHIPPED) == [
        "DynamoGraphDeployment/m spec.services.VllmWorker.resources.limits.gpu requests 4 GPUs"
        " but DynamoGraphDeployment/m spec.services.VllmWorker.extraPodSpec.mainContainer.args"
        " run tensor parallel 2 x pipeline parallel 1 = 2"
    ]


def test_a_route_matching_another_name_than_the_workers_serve_is_named() -> None:
    obj = model_deployment(gpu=1, provider="dynamo", engine="vllm", gateway={"enabled": True})
    md, objects = rendered(obj)
    routed = copy.deepcopy(objects)
    (route,) = [o for o in routed if o["kind"] == "HTTPRoute"]
    route["spec"]["rules"][0]["matches"][0]["headers"][0]["value"] = "other"

    assert check_invariants(md, objects, SHIPPED) == []
    assert check_invariants(md, routed, SHIPPED) == [
        "HTTPRoute/m spec.rules[0].matches[0].headers[0].value is other but"
        " DynamoGraphDeployment/m spec.services.VllmWorker.extraPodSpec.mainContainer.args"
        " serve org/model"
    ]
