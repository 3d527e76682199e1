"""The one Kubernetes client factory: in a pod, the pod's service account; else a kubeconfig."""

from __future__ import annotations

import json
import os
from typing import Any

import kubernetes


def api_client(
    kubeconfig: str | None = None, *, in_cluster: bool = False, context: str | None = None
) -> kubernetes.client.ApiClient:
    """A client for the API server. `in_cluster`, or no kubeconfig and no context given inside
    a pod (KUBERNETES_SERVICE_HOST set), uses the service account; otherwise `kubeconfig` (None:
    the default ~/.kube/config or $KUBECONFIG) at `context` (None: its current context)."""
    if in_cluster or (
        kubeconfig is None and context is None and "KUBERNETES_SERVICE_HOST" in os.environ
    ):
        configuration = kubernetes.client.Configuration()
        kubernetes.config.load_incluster_config(client_configuration=configuration)
        return kubernetes.client.ApiClient(configuration)
    client: kubernetes.client.ApiClient = kubernetes.config.new_client_from_config(
        config_file=kubeconfig, context=context
    )
    return client


def error_message(err: Any) -> str:
    """The API server's own message in a refused request's Status body (the kubernetes
    client's ApiException or the dynamic client's DynamicApiError), else the error's summary."""
    try:
        return str(json.loads(getattr(err, "body", None) or "{}")["message"])
    except (ValueError, KeyError, TypeError):
        return str(err.summary() if hasattr(err, "summary") else err)
