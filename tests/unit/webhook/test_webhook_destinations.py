"""The webhook's ExternalModelProvider check names the same destinations as gateway-sync: public
ones, plus those an operator allows (RUNWAY_ALLOW_DESTINATIONS / `serve --allow-destination`);
a cloud metadata service never (issue #18, class 6)."""

from __future__ import annotations

import json

import pytest

from core.model.destinations import PUBLIC
from tests.support.builders import external_model_provider
from tests.support.webhook import review
from webhook.app import create_app
from webhook.settings import Settings, SettingsError

PATH = "/validate-externalmodelprovider"


def _answer(settings: Settings, base_url: str) -> tuple[bool, str]:
    client = create_app(settings).test_client()
    document = review(external_model_provider(baseURL=base_url))
    answer = client.post(PATH, data=json.dumps(document), content_type="application/json")
    response = answer.get_json()["response"]
    return response["allowed"], response.get("status", {}).get("message", "")


def test_allowed_destinations_are_read_from_the_environment() -> None:
    env = {"RUNWAY_ALLOW_DESTINATIONS": " 10.0.0.0/8, vllm.models.svc.cluster.local ,"}

    assert Settings.from_env(env).allow_destinations == (
        "10.0.0.0/8",
        "vllm.models.svc.cluster.local",
    )
    assert Settings.from_env(env).to_env()["RUNWAY_ALLOW_DESTINATIONS"] == (
        "10.0.0.0/8,vllm.models.svc.cluster.local"
    )


def test_an_unusable_allowed_destination_stops_startup_naming_it() -> None:
    with pytest.raises(SettingsError) as raised:
        Settings.from_env({"RUNWAY_ALLOW_DESTINATIONS": "10.0.0.0/8,a b"})

    assert str(raised.value) == (
        "RUNWAY_ALLOW_DESTINATIONS: 'a b' is neither a host name nor a CIDR"
    )


def test_an_internal_base_url_is_admitted_only_where_the_operator_allows_it() -> None:
    allowing = Settings(allow_destinations=("10.0.0.0/8", "vllm.models.svc.cluster.local"))

    assert [
        _answer(settings, url)[0]
        for settings, url in [
            (Settings(), "http://10.1.2.3/v1"),
            (allowing, "http://10.1.2.3/v1"),
            (allowing, "http://vllm.models.svc.cluster.local:8000/v1"),
            (allowing, "http://192.168.0.1/v1"),
            (allowing, "https://api.openai.com/v1"),
        ]
    ] == [False, True, True, False, True]


def test_no_allowed_destination_admits_a_metadata_service() -> None:
    everything = Settings(allow_destinations=("0.0.0.0/0", "::/0", "metadata.google.internal"))

    allowed, message = _answer(everything, "http://169.254.169.254/latest/meta-data")

    assert allowed is False
    assert message == (
        'spec.baseURL: Forbidden: host "169.254.169.254" is a link-local address (cloud '
        f"metadata services); {PUBLIC}"
    )
