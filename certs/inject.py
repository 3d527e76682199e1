"""Put the CA bundle into the webhook configurations, by server-side apply with our own manager."""

from __future__ import annotations

import base64
import logging
from collections.abc import Sequence
from pathlib import Path

import kubernetes
from cryptography import x509

from certs.errors import BundleError

log = logging.getLogger(__name__)
FIELD_MANAGER = "runway-certs"
API_VERSION = "admissionregistration.k8s.io/v1"


def check_targets(*, mutating: Sequence[str], validating: Sequence[str]) -> None:
    """At least one configuration to inject into, named before anything is contacted."""
    if not mutating and not validating:
        raise BundleError(
            "--mutating/--validating",
            "name at least one webhook configuration to set the caBundle on "
            "(--mutating NAME, --validating NAME; repeatable)",
        )


def read_ca_bundle(path: str) -> bytes:
    """The PEM file `--ca` names; it must hold at least one certificate."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise BundleError("--ca", f"{path}: no such file") from None
    except IsADirectoryError:
        raise BundleError("--ca", f"{path}: is a directory (give DIR/ca.crt)") from None
    try:
        found = x509.load_pem_x509_certificates(data)
    except ValueError:
        found = []
    if not found:
        raise BundleError("--ca", f"{path}: holds no PEM certificate")
    return data


def inject_ca_bundle(
    client: kubernetes.client.ApiClient,
    ca_pem: bytes,
    *,
    mutating: Sequence[str] = (),
    validating: Sequence[str] = (),
) -> list[str]:
    """Set clientConfig.caBundle on every webhook of the named configurations; returns what changed.

    Only caBundle is applied, so the rest of each configuration stays with whoever applied it
    (kubectl, Argo CD, Flux); conflicts on caBundle are forced, since this manager owns it.
    """
    api = kubernetes.client.AdmissionregistrationV1Api(client)
    bundle = base64.b64encode(ca_pem).decode()
    done: list[str] = []
    kinds = (
        (
            "MutatingWebhookConfiguration",
            mutating,
            api.read_mutating_webhook_configuration,
            api.patch_mutating_webhook_configuration,
        ),
        (
            "ValidatingWebhookConfiguration",
            validating,
            api.read_validating_webhook_configuration,
            api.patch_validating_webhook_configuration,
        ),
    )
    for kind, names, read, patch in kinds:
        for name in names:
            current = read(name)
            body = {
                "apiVersion": API_VERSION,
                "kind": kind,
                "metadata": {"name": name},
                "webhooks": [
                    {"name": hook.name, "clientConfig": {"caBundle": bundle}}
                    for hook in current.webhooks or []
                ],
            }
            patch(
                name,
                body,
                field_manager=FIELD_MANAGER,
                force=True,
                field_validation="Strict",
                _content_type="application/apply-patch+yaml",
            )
            log.info(
                "caBundle injected kind=%s name=%s webhooks=%d", kind, name, len(body["webhooks"])
            )
            done.append(f"{kind}/{name}")
    return done
