"""Put the CA bundle into the webhook configurations, by server-side apply with our own manager."""

from __future__ import annotations

import base64
import logging
from collections.abc import Sequence

import kubernetes

log = logging.getLogger(__name__)
FIELD_MANAGER = "runway-certs"
API_VERSION = "admissionregistration.k8s.io/v1"


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
