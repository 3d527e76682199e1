"""What a provider's health is read from (the status controller's provider health and the
portal's Providers page): the CRDs the API server serves, and the Ready operator pods per
(namespace, selector) the configs' `airunway.ai/health` annotations name. One function, so the
controller and the page observe the same way and judge with the same core function
(core.status.providers.provider_status)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import kubernetes

from core.status.providers import HealthSpec, Observed, pod_checks
from kubeio.client import failure


def observe(
    client: kubernetes.client.ApiClient,
    specs: Sequence[HealthSpec],
    *,
    timeout: float | None = None,
) -> Observed:
    """The CRDs served and the Ready pods per (namespace, selector) the specs name; a pair the
    API server refuses to list (4xx) is recorded as failed (Observed.failed), not raised; an API
    server that cannot answer (5xx, unreachable) raises."""
    limit: dict[str, Any] = {} if timeout is None else {"_request_timeout": timeout}
    listed = kubernetes.client.ApiextensionsV1Api(client).list_custom_resource_definition(**limit)
    crds = {
        str(c.metadata.name if c.metadata else ""): tuple(
            v.name for v in c.spec.versions if v.served
        )
        for c in listed.items
    }
    pods_api = kubernetes.client.CoreV1Api(client)
    ready: dict[tuple[str, str], int] = {}
    failed: dict[tuple[str, str], str] = {}
    for namespace, selector in pod_checks(specs):
        try:
            pods = (
                pods_api.list_namespaced_pod(namespace, label_selector=selector, **limit)
                if namespace
                else pods_api.list_pod_for_all_namespaces(label_selector=selector, **limit)
            )
        except kubernetes.client.ApiException as err:
            if err.status is None or err.status >= 500:
                raise  # the API server's trouble, not this selector's
            failed[(namespace, selector)] = failure(err)
            continue
        ready[(namespace, selector)] = sum(1 for pod in pods.items if pod_ready(pod))
    return Observed(crds, ready, failed)


def pod_ready(pod: Any) -> bool:
    conditions = (pod.status.conditions or []) if pod.status else []
    return any(c.type == "Ready" and c.status == "True" for c in conditions)
