"""Which InferenceProviderConfigs the portal shows and weighs: offline those of the -f folders,
else the ones Runway ships; live the cluster's, listed with the portal's own client (configs are
cluster-scoped facts, not a tenant's: kustomize/ui grants list on them)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import kubernetes

from core.fields.errors import SourceError
from core.model.kinds import (
    GROUP,
    INFERENCE_PROVIDER_CONFIG,
    INFERENCE_PROVIDER_CONFIG_PLURAL,
    VERSION,
)
from kubeio.client import api_failure
from kubeio.shipped import bundled_config_objects
from kubeio.sources import read_documents
from ui.cluster import TIMEOUT
from ui.context import cluster, portal


@dataclass(frozen=True, slots=True)
class Configs:
    """The configs the page shows, where they came from, and why none could be read."""

    objects: tuple[Mapping[str, Any], ...]
    origin: str
    problem: str = ""


def configs() -> Configs:
    settings = portal().settings
    if settings.live:
        return cluster_configs()
    try:
        docs = read_documents(settings.sources)
    except SourceError as err:
        return Configs((), "", f"the source folders could not be read: {err}")
    found = tuple(d.obj for d in docs if d.obj.get("kind") == INFERENCE_PROVIDER_CONFIG)
    if found:
        return Configs(found, f"the source folders ({', '.join(settings.sources)})")
    return Configs(tuple(bundled_config_objects()), "the configs Runway ships")


def cluster_configs() -> Configs:
    """The cluster's InferenceProviderConfigs, listed with the portal's own client."""
    api = kubernetes.client.CustomObjectsApi(cluster().own())
    try:
        listed: Any = api.list_cluster_custom_object(
            GROUP, VERSION, INFERENCE_PROVIDER_CONFIG_PLURAL, _request_timeout=TIMEOUT
        )
    except Exception as err:
        failure = api_failure(err)
        if failure is None:
            raise
        return Configs((), "the cluster", f"the configs could not be listed: {failure}")
    items = tuple({**item, "kind": INFERENCE_PROVIDER_CONFIG} for item in listed["items"])
    return Configs(items, "the cluster")
