"""Credentials in every string position, keys included (issue #18, item 15 and class 7): the
object is denied, and neither the denial (the webhook's AdmissionReview answer), the webhook's
log, nor the render (its error and any file) contains the credential."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from flask.testing import FlaskClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.admission.pipeline import admit
from core.checks.credentials import HINT, find_credentials, redact
from core.fields.errors import Reason
from kubeio.shipped import bundled_versions
from renderer.output.render import RenderContext, render_one
from renderer.output.schemapack import load_pack
from renderer.output.strict import Schemas
from tests.support.builders import model_deployment, shipped_registry
from tests.support.hostile_gateway import CREDENTIALS, POSITIONS, plant, rich
from tests.support.webhook import review
from webhook.app import create_app
from webhook.settings import Settings

REGISTRY = shipped_registry()
PINS = bundled_versions()
BOUNDED = settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@pytest.fixture(scope="module")
def client() -> Iterator[FlaskClient]:
    yield create_app(Settings()).test_client()


@pytest.fixture(scope="module")
def schemas() -> Schemas:
    return Schemas.from_pack(load_pack())


def test_the_positions_cover_keys_and_values() -> None:
    assert (len(POSITIONS) > 20, {k for _, k in POSITIONS}) == (True, {True, False})


@BOUNDED
@given(token=CREDENTIALS, where=st.sampled_from(POSITIONS))
def test_a_credential_anywhere_is_denied_and_never_repeated(
    token: str,
    where: tuple[tuple[Any, ...], bool],
    client: FlaskClient,
    schemas: Schemas,
    caplog: pytest.LogCaptureFixture,
) -> None:
    obj = rich()
    plant(obj, where, token)
    caplog.clear()

    with caplog.at_level(logging.DEBUG):
        answers = [
            client.post(path, data=json.dumps(review(obj)), content_type="application/json")
            for path in ("/mutate", "/validate")
        ]
    rendered = render_one(obj, previous=None, context=RenderContext(REGISTRY, schemas, PINS))

    validated = answers[1].get_json()["response"]
    assert (validated["allowed"], rendered.files) == (False, {})
    said = [a.get_data(as_text=True) for a in answers] + [caplog.text, str(rendered.error)]
    said += list(rendered.warnings)
    assert [token in text for text in said] == [False] * len(said)


@pytest.mark.parametrize(
    ("env", "path"),
    [
        (
            [
                {
                    "name": "AWS_SECRET_ACCESS_KEY",
                    "value": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                }
            ],
            "spec.env[0].value",
        ),
        (
            [{"name": "CACHE_URL", "value": "redis://:hunter2hunter2@cache:6379/0"}],
            "spec.env[0].value",
        ),
    ],
    ids=["aws-secret-access-key", "redis-empty-user"],
)
def test_the_detector_gaps_of_issue_18_are_closed(env: list[dict[str, str]], path: str) -> None:
    obj = model_deployment(gpu=1, engine="vllm", provider="vllm", env=env)

    result = admit(obj, registry=REGISTRY)

    assert [(e.path, e.reason) for e in result.errors] == [(path, Reason.FORBIDDEN)]


def test_a_token_as_an_engine_args_key_is_refused_without_being_named() -> None:
    token = "hf_" + "aB3" * 12
    obj = model_deployment(gpu=1, engine="vllm", provider="vllm")
    obj["spec"]["engine"]["args"] = {token: "1"}

    result = admit(obj, registry=REGISTRY)

    assert [str(e) for e in result.errors] == [
        "spec.engine.args[<credential>]: Forbidden: a key looks like a Hugging Face token "
        f"(hf_...); {HINT}"
    ]


def test_a_key_credential_is_found_by_the_renderer_scan_without_its_text() -> None:
    token = "sk-proj-1" + "Ab1x" * 8
    errors = find_credentials({"args": {token: "x"}, "env": {"n": token}})

    assert [(e.path, token in e.detail) for e in errors] == [
        ("args[<credential>]", False),
        ("env.n", False),
    ]


def test_redact_blanks_every_credential_in_a_message() -> None:
    message = "flag --hf_" + "aB3" * 12 + " and redis://:pw123456@cache are unknown"

    assert redact(message) == "flag --<redacted> and <redacted>cache are unknown"
