"""How a real API server refuses unknown fields, per write path, and the classifier built on it.

Observed on kube-apiserver v1.37 (KUBERNETES_VERSION): the seed's three forms hold exactly.
  custom resource create, fieldValidation=Strict  -> 400  strict decoding error: unknown field "spec.bogus"
  custom resource merge patch, Strict             -> 422  strict decoding error: unknown field "spec.bogus"
  server-side apply of a Deployment               -> 500  ... .spec.bogus: field not declared in schema
"""

from __future__ import annotations

import json
from typing import Any

import kubernetes
import pytest

from core.fields.errors import IncompatibleUpstream
from core.schema.upstream import classify_write_error
from tests.support.builders import model_deployment

GROUP, VERSION, PLURAL = "airunway.ai", "v1alpha1", "modeldeployments"


def refusal(call: Any) -> tuple[int, str]:
    """Run an API call that must fail; its HTTP status and the Status message."""
    with pytest.raises(kubernetes.client.ApiException) as info:
        call()
    message: str = json.loads(info.value.body or "{}")["message"]
    return info.value.status, message


def custom_objects(api: kubernetes.client.ApiClient) -> kubernetes.client.CustomObjectsApi:
    return kubernetes.client.CustomObjectsApi(api)


def test_create_of_a_custom_resource_with_an_unknown_field(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    body = model_deployment("create", namespace, gpu=1)
    body["spec"]["bogus"] = True

    status, message = refusal(
        lambda: custom_objects(api).create_namespaced_custom_object(
            GROUP,
            VERSION,
            namespace,
            PLURAL,
            body,
            field_validation="Strict",
            _content_type="application/json",
        )
    )

    assert status == 400
    assert message.startswith(
        'ModelDeployment in version "v1alpha1" cannot be handled as a ModelDeployment: strict decoding error: unknown field "spec.bogus"'
    )
    classified = classify_write_error(message)
    assert classified is not None and classified.field == "spec.bogus"


def test_merge_patch_of_a_custom_resource_with_an_unknown_field(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    custom_objects(api).create_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, model_deployment("patched", namespace, gpu=1)
    )

    status, message = refusal(
        lambda: custom_objects(api).patch_namespaced_custom_object(
            GROUP,
            VERSION,
            namespace,
            PLURAL,
            "patched",
            {"spec": {"model": {"revision": "main"}}},
            field_validation="Strict",
            _content_type="application/merge-patch+json",
        )
    )

    assert status == 422
    assert 'strict decoding error: unknown field "spec.model.revision"' in message
    classified = classify_write_error(message)
    assert classified is not None and classified.field == "spec.model.revision"


def test_server_side_apply_of_a_deployment_with_an_unknown_field(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": namespace},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {
                            "name": "web",
                            "image": "registry.example.com/web:1",
                            "imagePulPolicy": "Always",
                        }
                    ]
                },
            },
        },
    }

    status, message = refusal(
        lambda: kubernetes.client.AppsV1Api(api).patch_namespaced_deployment(
            "web",
            namespace,
            deployment,
            field_manager="runway",
            force=True,
            field_validation="Strict",
            _content_type="application/apply-patch+yaml",
        )
    )

    assert status == 500
    assert message.endswith(
        '.spec.template.spec.containers[name="web"].imagePulPolicy: field not declared in schema'
    )
    classified = classify_write_error(message)
    assert classified is not None
    assert classified.field == 'spec.template.spec.containers[name="web"].imagePulPolicy'


def test_server_side_apply_rejects_unknown_fields_even_with_validation_ignored(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web2", "namespace": namespace},
        "spec": {
            "selector": {"matchLabels": {"a": "b"}},
            "replica": 2,
            "template": {
                "metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [{"name": "c", "image": "i"}]},
            },
        },
    }

    status, message = refusal(
        lambda: kubernetes.client.AppsV1Api(api).patch_namespaced_deployment(
            "web2",
            namespace,
            deployment,
            field_manager="runway",
            force=True,
            field_validation="Ignore",
            _content_type="application/apply-patch+yaml",
        )
    )

    assert status == 500
    assert isinstance(classify_write_error(message), IncompatibleUpstream)


def test_ordinary_validation_failures_are_not_incompatible_upstream(
    api: kubernetes.client.ApiClient, namespace: str
) -> None:
    negative = model_deployment("negative", namespace, gpu=1, scaling={"replicas": -1})
    wrong_type = model_deployment("wrongtype", namespace, gpu=1, scaling={"replicas": "two"})
    route = {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": "bad-path", "namespace": namespace},
        "spec": {
            "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": "no-leading-slash"}}]}]
        },
    }

    refusals = [
        refusal(
            lambda body=body: custom_objects(api).create_namespaced_custom_object(
                GROUP, VERSION, namespace, PLURAL, body, field_validation="Strict"
            )
        )
        for body in (negative, wrong_type)
    ]
    refusals.append(
        refusal(
            lambda: custom_objects(api).create_namespaced_custom_object(
                "gateway.networking.k8s.io",
                "v1",
                namespace,
                "httproutes",
                route,
                field_validation="Strict",
            )
        )
    )

    assert [status for status, _ in refusals] == [422, 422, 422]
    assert (
        "spec.scaling.replicas: Invalid value: -1: spec.scaling.replicas in body should be greater than or equal to 0"
        in refusals[0][1]
    )
    assert (
        'spec.scaling.replicas: Invalid value: "string": spec.scaling.replicas in body must be of type integer: "string"'
        in refusals[1][1]
    )
    assert "must be an absolute path" in refusals[2][1]
    assert [classify_write_error(message) for _, message in refusals] == [None, None, None]
