"""create_app(replaced=...): a handler in place of a shipped one, by path, behind the same view
(decoding, metrics, answer); the others stay (bench.webhook's fixed-answer row uses it)."""

from __future__ import annotations

from typing import Any

from tests.support.builders import model_deployment
from tests.support.webhook import review
from webhook.app import create_app
from webhook.handlers import Answer
from webhook.responses import allowed
from webhook.review import AdmissionRequest
from webhook.settings import Settings


def _fixed(req: AdmissionRequest, registry: Any) -> Answer:
    return Answer(allowed(req["uid"], ["fixed"]))


def test_a_replaced_path_answers_with_the_given_handler_and_the_others_do_not() -> None:
    client = create_app(Settings(), replaced={"/mutate": _fixed}).test_client()
    document = review(model_deployment(gpu=1), uid="u-1")

    replaced = client.post("/mutate", json=document).get_json()["response"]
    shipped = client.post("/validate", json=document).get_json()["response"]

    assert replaced == {"uid": "u-1", "allowed": True, "warnings": ["fixed"]}
    assert shipped["uid"] == "u-1" and shipped.get("warnings") != ["fixed"]
