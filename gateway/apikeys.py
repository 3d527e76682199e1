"""Where provider API keys come from: the Secrets ExternalModelProviders reference, read through the
API server or (for local runs) from a directory of Secret manifests. Values are returned to the
sync and nowhere else; errors name the Secret and key, never a value."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import kubernetes

from core.model.kinds import dig
from gateway.merge import SecretRef
from kubeio.objects import object_key


class SecretUnavailable(Exception):
    """The referenced Secret or key cannot be read; the message names them, never a value."""


class SecretSource(Protocol):
    def value(self, ref: SecretRef) -> str: ...


def _where(ref: SecretRef) -> str:
    return f"Secret {object_key(ref.namespace, ref.name)}"


def _decode(ref: SecretRef, data: Mapping[str, Any], string_data: Mapping[str, Any]) -> str:
    if isinstance(string_data.get(ref.key), str):
        return str(string_data[ref.key])
    encoded = data.get(ref.key)
    if not isinstance(encoded, str):
        raise SecretUnavailable(f"{_where(ref)} has no key {ref.key}")
    try:
        return base64.b64decode(encoded, validate=True).decode("utf-8").strip()
    except (binascii.Error, UnicodeDecodeError) as err:
        raise SecretUnavailable(f"{_where(ref)} key {ref.key} is not base64 UTF-8 text") from err


@dataclass
class ClusterSecrets:
    """Secrets read through the API server (the sync's ServiceAccount may `get` Secrets)."""

    api: kubernetes.client.ApiClient

    def value(self, ref: SecretRef) -> str:
        core = kubernetes.client.CoreV1Api(self.api)
        try:
            secret = core.read_namespaced_secret(ref.name, ref.namespace)
        except kubernetes.client.ApiException as err:
            if err.status == 404:
                raise SecretUnavailable(f"{_where(ref)} not found") from None
            if err.status == 403:
                raise SecretUnavailable(f"{_where(ref)}: reading it is forbidden") from None
            raise
        return _decode(ref, secret.data or {}, {})


@dataclass
class FileSecrets:
    """Secret manifests (kind: Secret, data or stringData) from files, for local runs and tests."""

    objects: Iterable[Mapping[str, Any]]
    _index: dict[str, Mapping[str, Any]] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        for obj in self.objects:
            if obj.get("kind") == "Secret":
                namespace = dig(obj, "metadata", "namespace")
                key = object_key(
                    str(namespace) if namespace else None, str(dig(obj, "metadata", "name"))
                )
                self._index[key] = obj

    def value(self, ref: SecretRef) -> str:
        secret = self._index.get(object_key(ref.namespace, ref.name))
        if secret is None:
            raise SecretUnavailable(f"{_where(ref)} not found")
        data = secret.get("data")
        strings = secret.get("stringData")
        return _decode(
            ref,
            data if isinstance(data, Mapping) else {},
            strings if isinstance(strings, Mapping) else {},
        )
