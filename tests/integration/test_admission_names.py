"""The served webhook applies the name rule the renderer applies (core/model/names.py)."""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import jsonpatch

from tests.support.builders import external_model_provider, model_deployment
from tests.support.webhook import Webhook, review


def test_the_webhook_denies_a_name_the_api_server_or_a_child_would_refuse(
    webhook: Webhook,
) -> None:
    obj = model_deployment("a" * 62, "Models", gpu=1, provider="llmd", engine="vllm")
    obj["spec"]["gateway"] = {"enabled": True}
    mutation = webhook.admit("/mutate", review(obj))
    mutated = jsonpatch.apply_patch(copy.deepcopy(obj), _decoded(mutation))

    response = webhook.admit("/validate", review(mutated))

    assert response["allowed"] is False
    assert response["status"] == {
        "code": 403,
        "message": "metadata.name: Invalid value: must be at most 59 characters, not 62 (the "
        "generated <name>-epp must fit in 63); metadata.namespace: Invalid value: must be an RFC "
        "1123 label: lower-case letters, digits and '-', starting and ending with a letter or digit",
    }


def test_the_webhook_denies_an_external_model_provider_named_like_a_path(
    webhook: Webhook,
) -> None:
    emp = external_model_provider("x", "gw")
    emp["metadata"]["name"] = "../.."

    response = webhook.admit("/validate-externalmodelprovider", review(emp))

    assert response["allowed"] is False
    assert response["status"]["message"] == (
        "metadata.name: Invalid value: must be an RFC 1123 subdomain: dot-separated RFC 1123 "
        "labels: lower-case letters, digits and '-'"
    )


def _decoded(response: dict[str, Any]) -> list[dict[str, Any]]:
    ops: list[dict[str, Any]] = json.loads(base64.b64decode(response.get("patch", "W10=")))
    return ops
