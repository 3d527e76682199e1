"""The sync's API-server side: list ModelDeployments and ExternalModelProviders, and write each
ExternalModelProvider's status through the status subresource (only when it changed)."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import kubernetes

from core.model.kinds import (
    EMP_GROUP,
    EXTERNAL_MODEL_PROVIDER,
    EXTERNAL_MODEL_PROVIDER_PLURAL,
    GROUP,
    INFERENCE_PROVIDER_CONFIG,
    INFERENCE_PROVIDER_CONFIG_PLURAL,
    MODEL_DEPLOYMENT,
    MODEL_DEPLOYMENT_PLURAL,
    VERSION,
    dig,
)
from gateway.merge import Owner, Plan, owner_of
from gateway.status import ModelResult, invalid_status, provider_status

log = logging.getLogger(__name__)


def list_objects(api: kubernetes.client.ApiClient) -> list[dict[str, Any]]:
    """Every ModelDeployment and ExternalModelProvider in the cluster (all namespaces), and the
    InferenceProviderConfigs (whose capabilities say which name a provider's engine serves)."""
    custom = kubernetes.client.CustomObjectsApi(api)
    objects: list[dict[str, Any]] = []
    for group, plural, kind in (
        (GROUP, MODEL_DEPLOYMENT_PLURAL, MODEL_DEPLOYMENT),
        (EMP_GROUP, EXTERNAL_MODEL_PROVIDER_PLURAL, EXTERNAL_MODEL_PROVIDER),
        (GROUP, INFERENCE_PROVIDER_CONFIG_PLURAL, INFERENCE_PROVIDER_CONFIG),
    ):
        try:
            listed: Any = custom.list_cluster_custom_object(group, VERSION, plural)
        except kubernetes.client.ApiException as err:
            if err.status == 404 and kind != EXTERNAL_MODEL_PROVIDER:
                # The gateway part installs without the runtime part: no such CRD, no objects.
                log.info("gateway-sync: no %s CRD in this cluster", kind)
                continue
            raise
        # List items carry no kind of their own in every client version: set it.
        objects += [{**item, "kind": kind} for item in listed["items"]]
    return objects


def statuses(
    plan: Plan,
    results: Sequence[ModelResult],
    providers: Sequence[Mapping[str, Any]],
    *,
    now: str,
) -> dict[Owner, dict[str, Any]]:
    """The new status of every ExternalModelProvider."""
    by_owner: dict[Owner, list[ModelResult]] = {}
    for result in results:
        by_owner.setdefault(result.owner, []).append(result)
    skipped = {s.owner: s.reason for s in plan.skipped if s.served_name is None}
    out = {}
    for obj in providers:
        owner = owner_of(obj)
        generation = dig(obj, "metadata", "generation")
        generation = generation if isinstance(generation, int) else None
        previous = obj.get("status") if isinstance(obj.get("status"), Mapping) else None
        if owner in skipped:
            out[owner] = invalid_status(
                skipped[owner], generation=generation, previous=previous, now=now
            )
        else:
            out[owner] = provider_status(
                by_owner.get(owner, []), generation=generation, previous=previous, now=now
            )
    return out


def write_statuses(
    api: kubernetes.client.ApiClient,
    new: Mapping[Owner, Mapping[str, Any]],
    providers: Sequence[Mapping[str, Any]],
) -> int:
    """Patch each changed status through the status subresource; the number written."""
    custom = kubernetes.client.CustomObjectsApi(api)
    previous = {owner_of(p): p.get("status") for p in providers}
    written = 0
    for owner in sorted(new):
        if previous.get(owner) == new[owner]:
            continue
        try:
            custom.patch_namespaced_custom_object_status(
                EMP_GROUP,
                VERSION,
                owner.namespace,
                EXTERNAL_MODEL_PROVIDER_PLURAL,
                owner.name,
                {"status": dict(new[owner])},
            )
        except kubernetes.client.ApiException as err:
            if err.status == 404:  # deleted since it was listed
                continue
            raise
        written += 1
        log.info("gateway-sync status %s phase=%s", owner, new[owner]["phase"])
    return written
