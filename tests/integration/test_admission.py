"""AdmissionReviews over TLS to the real gunicorn server, compared with `runway validate`: the
JSON form of the Verdict of core.admission.entry.admit_object, which both answer from."""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any

import jsonpatch
import pytest
import yaml

from core.admission.entry import admit_object
from core.selection.configs import ProviderRegistry
from tests.support.builders import external_model_provider, model_deployment, provider_config
from tests.support.paths import EXAMPLES, example_files, example_name
from tests.support.webhook import Webhook, review, start_webhook


def examples() -> list[tuple[str, dict[str, Any]]]:
    return [
        (example_name(p), d)
        for p in example_files()
        for d in yaml.safe_load_all(p.read_text())
        if d
    ]


def decode_patch(response: dict[str, Any]) -> list[dict[str, Any]]:
    if "patch" not in response:
        return []
    assert response["patchType"] == "JSONPatch"
    ops: list[dict[str, Any]] = json.loads(base64.b64decode(response["patch"]))
    return ops


@pytest.mark.parametrize(("name", "obj"), examples(), ids=lambda v: v if isinstance(v, str) else "")
def test_example_through_both_webhooks_matches_runway_validate(
    name: str, obj: dict[str, Any], webhook: Webhook, shipped: ProviderRegistry
) -> None:
    expected = admit_object(obj, registry=shipped).as_json()

    mutation = webhook.admit("/mutate", review(obj, uid=f"m-{name}"))
    if not mutation["allowed"]:  # refused at mutation (no provider can be selected)
        assert expected["allowed"] is False
        assert mutation["status"]["message"] == "; ".join(
            f"{e['field']}: {e['message']}" for e in expected["errors"]
        )
        return
    mutated = jsonpatch.apply_patch(copy.deepcopy(obj), decode_patch(mutation))
    validation = webhook.admit("/validate", review(mutated, uid=f"v-{name}"))

    assert mutation["uid"] == f"m-{name}" and validation["uid"] == f"v-{name}"
    assert mutated == expected["object"]
    assert validation["allowed"] is expected["allowed"]
    assert validation.get("warnings", []) == expected["warnings"]
    if not expected["allowed"]:
        assert validation["status"] == {
            "code": 403,
            "message": "; ".join(f"{e['field']}: {e['message']}" for e in expected["errors"]),
        }


def test_mutating_a_hydrated_object_again_returns_no_patch(
    webhook: Webhook, shipped: ProviderRegistry
) -> None:
    hydrated = admit_object(
        yaml.safe_load((EXAMPLES / "vllm-multi-gpu.yaml").read_text()), registry=shipped
    ).as_json()["object"]

    response = webhook.admit("/mutate", review(hydrated, operation="UPDATE", old=hydrated))

    assert response == {"uid": "uid-1", "allowed": True}


def test_update_keeps_the_selection_and_refuses_a_provider_change(
    webhook: Webhook, shipped: ProviderRegistry
) -> None:
    stored = admit_object(model_deployment(gpu=1), registry=shipped).as_json()["object"]

    sticky = webhook.admit(
        "/mutate", review(model_deployment(gpu=1), operation="UPDATE", old=stored)
    )
    switched = webhook.admit(
        "/validate",
        review(
            model_deployment(gpu=1, provider="kuberay", engine="vllm"),
            operation="UPDATE",
            old=stored,
        ),
    )

    assert jsonpatch.apply_patch(model_deployment(gpu=1), decode_patch(sticky)) == stored
    assert switched["allowed"] is False
    assert switched["status"]["message"].startswith(
        'spec.provider.name: Immutable: is immutable (was "dynamo", now "kuberay")'
    )


def test_dry_run_is_answered_identically(webhook: Webhook) -> None:
    plain = webhook.admit("/mutate", review(model_deployment(gpu=2)))
    dry = webhook.admit("/mutate", review(model_deployment(gpu=2), dryRun=True))

    assert dry == plain


@pytest.mark.parametrize(
    ("document", "path"),
    [
        (
            review(
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}},
                kind=("", "v1", "ConfigMap"),
            ),
            "/mutate",
        ),
        (review(model_deployment(), operation="DELETE"), "/validate"),
        (
            review(
                model_deployment(), operation="UPDATE", old=model_deployment(), subResource="status"
            ),
            "/mutate",
        ),
        (
            review(
                model_deployment(gpu=-3),
                kind=("airunway.ai", "v1alpha1", "InferenceProviderConfig"),
            ),
            "/mutate",
        ),
    ],
    ids=["other-kind", "delete", "status-subresource", "mutate-other-kind"],
)
def test_requests_outside_the_rules_are_allowed_untouched(
    document: dict[str, Any], path: str, webhook: Webhook
) -> None:
    assert webhook.admit(path, document) == {"uid": "uid-1", "allowed": True}


def test_provider_config_with_a_broken_rule_is_denied_naming_it(webhook: Webhook) -> None:
    config = provider_config("dynamo", rules=[("true", 1), ("spec.engine.type ==", 9)])

    response = webhook.admit("/validate-inferenceproviderconfig", review(config))

    assert response == {
        "uid": "uid-1",
        "allowed": False,
        "status": {
            "code": 403,
            "message": "spec.selectionRules[1].condition: Invalid value: line 1, column 20: Syntax error: mismatched input '<EOF>'",
        },
    }


def test_the_served_webhook_checks_engine_flags(webhook: Webhook) -> None:
    owned = model_deployment(
        gpu=1, provider="vllm", engine={"type": "vllm", "extraArgs": ["--port=9000"]}
    )
    other_image = model_deployment(
        gpu=1,
        provider="vllm",
        engine={"type": "vllm", "image": "example.com/vllm:1", "extraArgs": ["--my-patch"]},
    )

    assert webhook.admit("/validate", review(owned)) == {
        "uid": "uid-1",
        "allowed": False,
        "status": {
            "code": 403,
            "message": "spec.engine.extraArgs[0]: Forbidden: --port: Runway owns the server port "
            "(8000): the Service, the probes and the InferencePool target it; it cannot be changed",
        },
    }
    assert webhook.admit("/validate", review(other_image)) == {
        "uid": "uid-1",
        "allowed": True,
        "warnings": [
            "spec.engine.extraArgs[0]: --my-patch is not a flag of vllm 0.33.0; did you mean "
            "--root-path? (not refused: spec.engine.image runs example.com/vllm:1, which the "
            "catalog may not describe)"
        ],
    }


def test_external_provider_with_an_inline_key_is_denied(webhook: Webhook) -> None:
    emp = external_model_provider("p", "gw", credentialsSecretRef=None, apiKey="sk-live-123")

    response = webhook.admit("/validate-externalmodelprovider", review(emp))

    assert response["allowed"] is False
    assert response["status"]["message"] == (
        "spec.apiKey: Forbidden: credentials are never inline; reference a Secret key in spec.credentialsSecretRef"
    )
    assert "sk-live-123" not in json.dumps(response)


def test_health_readiness_and_metrics(webhook: Webhook) -> None:
    webhook.admit("/mutate", review(model_deployment(gpu=2)))

    status, metrics = webhook.request("GET", "/metrics")
    text = metrics.decode()

    assert webhook.request("GET", "/healthz") == (200, b'{"status":"ok"}\n')
    assert webhook.request("GET", "/readyz") == (200, b'{"status":"ready"}\n')
    assert status == 200
    assert "# TYPE runway_admission_requests_total counter" in text
    assert "# TYPE runway_admission_duration_seconds histogram" in text
    assert "# TYPE runway_provider_selection_total counter" in text


def test_a_denial_is_one_log_line_and_an_allowed_admission_one_with_v(
    webhook: Webhook, tmp_path: Path
) -> None:
    """Allowed admissions are logged at DEBUG (`serve -v`), denials at INFO; neither line holds
    the object's contents."""
    secret = "hf_do_not_log_me"
    obj = model_deployment("logged", gpu=1, env=[{"name": "TOKEN", "value": secret}])
    bad = model_deployment("refused", gpu=1, provider="kaito", overrides={"resource": {"count": 4}})

    webhook.admit("/mutate", review(obj, uid="log-uid"))
    webhook.admit("/validate", review(bad, uid="deny-uid"))
    verbose = start_webhook(tmp_path, args=["-v"])
    try:
        verbose.admit("/mutate", review(obj, uid="log-uid"))
    finally:
        assert verbose.stop() == 0

    def lines(server: Webhook, uid: str) -> list[str]:
        return [line for line in server.log_text().splitlines() if f"uid={uid}" in line]

    assert lines(webhook, "log-uid") == []
    (denied,) = lines(webhook, "deny-uid")
    assert " INFO webhook.app admission uid=deny-uid kind=ModelDeployment op=CREATE " in denied
    assert "obj=ns/refused allowed=False patch=False" in denied
    (allowed,) = lines(verbose, "log-uid")
    assert " DEBUG webhook.app admission uid=log-uid kind=ModelDeployment op=CREATE " in allowed
    assert "obj=ns/logged allowed=True patch=True" in allowed
    assert secret not in webhook.log_text() + verbose.log_text()


def test_examples_cover_every_file(webhook: Webhook) -> None:
    assert len(examples()) == len(example_files()) == 21
