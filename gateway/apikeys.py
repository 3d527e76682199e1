"""Where provider API keys come from: the Secrets ExternalModelProviders reference, read through the
API server or (for local runs) from a directory of Secret manifests. Values are returned to the
sync and nowhere else; errors name the Secret and key, never a value.

Credentials only by consent (issue #40, item 2): through the API server, a Secret is read only
if its owner labelled it `gateway.tokenfactory.mirantis.com/litellm-credential: "true"` (as Argo
CD reads only Secrets labelled argocd.argoproj.io/secret-type). The sync never asks for another:
it lists with that label selector and a metadata.name field selector, so the API server never
sends it an unlabelled Secret, and an unlabelled one is reported exactly like a missing one (the
provider's owner learns nothing about Secrets it was not given). RBAC cannot grant `list` for
labelled Secrets only; kustomize/gateway/rbac.yaml says what it grants. Secret manifests from
files (--secrets-dir) are the operator's own and need no label.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import kubernetes

from core.model.kinds import dig
from gateway.merge import SecretRef
from kubeio.objects import object_key

CONSENT_LABEL = "gateway.tokenfactory.mirantis.com/litellm-credential"
CONSENT_SELECTOR = f"{CONSENT_LABEL}=true"
# A Secret's name (DNS-1123 subdomain): anything else is never put in a field selector.
_SECRET_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


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
    """Labelled Secrets read through the API server (the sync's ServiceAccount may `list`
    Secrets, and asks only for the one labelled Secret of that name)."""

    api: kubernetes.client.ApiClient

    def value(self, ref: SecretRef) -> str:
        if len(ref.name) > 253 or not _SECRET_NAME.fullmatch(ref.name):
            raise SecretUnavailable(f"{_where(ref)}: not a Secret name")
        core = kubernetes.client.CoreV1Api(self.api)
        try:
            listed = core.list_namespaced_secret(
                ref.namespace,
                field_selector=f"metadata.name={ref.name}",
                label_selector=CONSENT_SELECTOR,
            )
        except kubernetes.client.ApiException as err:
            if err.status == 403:
                raise SecretUnavailable(f"{_where(ref)}: reading it is forbidden") from None
            if isinstance(err.status, int) and 400 <= err.status < 500:
                raise SecretUnavailable(
                    f"{_where(ref)}: the API server answered {err.status}"
                ) from None
            raise
        secrets = [s for s in listed.items or () if s.metadata and s.metadata.name == ref.name]
        if not secrets:
            raise SecretUnavailable(
                f"{_where(ref)} not found, or not labelled {CONSENT_SELECTOR} (a Secret is sent "
                "to LiteLLM only when its owner labels it so)"
            )
        return _decode(ref, secrets[0].data or {}, {})


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
