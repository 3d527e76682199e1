"""The one Kubernetes client factory: in a pod, the pod's service account; else a kubeconfig."""

from __future__ import annotations

import os

import kubernetes


def api_client(
    kubeconfig: str | None = None, *, in_cluster: bool = False
) -> kubernetes.client.ApiClient:
    """A client for the API server. `in_cluster`, or no kubeconfig given inside a pod
    (KUBERNETES_SERVICE_HOST set), uses the service account; otherwise `kubeconfig` (None: the
    default ~/.kube/config or $KUBECONFIG)."""
    if in_cluster or (kubeconfig is None and "KUBERNETES_SERVICE_HOST" in os.environ):
        configuration = kubernetes.client.Configuration()
        kubernetes.config.load_incluster_config(client_configuration=configuration)
        return kubernetes.client.ApiClient(configuration)
    client: kubernetes.client.ApiClient = kubernetes.config.new_client_from_config(
        config_file=kubeconfig
    )
    return client
