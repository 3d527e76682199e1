"""kubeio.client turns the cluster's failures into the core's Unavailable with one line: an API
error's status and reason (never its body), a configuration error's first line; inside
cluster_calls and a client's `with` block alike, and anything else passes unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest
from kubernetes.client import ApiException, Configuration
from kubernetes.config import ConfigException

from core.fields.errors import Unavailable
from kubeio.client import Client, api_client, cluster_calls, unavailable


def test_an_api_error_is_its_status_and_reason_without_the_body() -> None:
    err = ApiException(status=403, reason="Forbidden")
    err.body = '{"message": "secret detail"}'

    assert str(unavailable(err)) == "API server answered 403 Forbidden"


def test_a_configuration_error_is_its_first_line() -> None:
    err = ConfigException("Invalid kube-config file. No configuration found.\nsecond line")

    assert str(unavailable(err)) == "Invalid kube-config file. No configuration found."


def test_cluster_calls_raise_unavailable_chained_to_the_cause() -> None:
    cause = ApiException(status=500, reason="Internal Server Error")
    with pytest.raises(Unavailable) as raised, cluster_calls():
        raise cause

    assert (str(raised.value), raised.value.__cause__) == (
        "API server answered 500 Internal Server Error",
        cause,
    )


def test_a_clients_with_block_raises_unavailable() -> None:
    with pytest.raises(Unavailable) as raised, Client(Configuration()):
        raise ApiException(status=404, reason="Not Found")

    assert str(raised.value) == "API server answered 404 Not Found"


def test_other_errors_pass_unchanged() -> None:
    with pytest.raises(KeyError) as raised, cluster_calls():
        raise KeyError("a bug")

    assert raised.value.args == ("a bug",)


def test_a_kubeconfig_that_cannot_be_used_is_unavailable_and_still_a_config_exception(
    tmp_path: Path,
) -> None:
    missing = tmp_path / "missing"

    with pytest.raises(Unavailable) as raised:
        api_client(str(missing), context="x")

    assert isinstance(raised.value, ConfigException)
    assert (type(raised.value).__name__, str(raised.value)) == (
        "ConfigException",
        f"kubeconfig {missing}, context x: no such file",
    )
