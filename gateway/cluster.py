"""The sync's API-server side: list ModelDeployments and ExternalModelProviders, and write each
ExternalModelProvider's status through the status subresource (only when it changed).

Each status is written on its own (issue #40, item 8): a write the API server refuses (any 4xx or
5xx, e.g. a 500 for an object past etcd's size limit) is logged, backs that object off (1, 2, 4
... seconds, at most 300: kubeio.backoff.Backoff's defaults) and never stops the writes of the others or fails the pass.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import kubernetes

from core.model.kinds import (
    EXTERNAL_MODEL_PROVIDERS,
    INFERENCE_PROVIDER_CONFIGS,
    MODEL_DEPLOYMENTS,
    dig,
)
from gateway.merge import GATEWAY, Owner, Plan, owner_of
from gateway.status import ModelResult, invalid_status, provider_status
from kubeio.backoff import Backoff

log = logging.getLogger(__name__)


def list_objects(api: kubernetes.client.ApiClient) -> list[dict[str, Any]]:
    """Every ModelDeployment and ExternalModelProvider in the cluster (all namespaces), the
    InferenceProviderConfigs (whose capabilities say which name a provider's engine serves) and
    the Gateways."""
    custom = kubernetes.client.CustomObjectsApi(api)
    objects: list[dict[str, Any]] = []
    for resource in (MODEL_DEPLOYMENTS, EXTERNAL_MODEL_PROVIDERS, INFERENCE_PROVIDER_CONFIGS):
        group, version, plural, kind = resource
        try:
            listed: Any = custom.list_cluster_custom_object(group, version, plural)
        except kubernetes.client.ApiException as err:
            if err.status == 404 and resource is not EXTERNAL_MODEL_PROVIDERS:
                # The gateway part installs without the runtime part: no such CRD, no objects.
                log.info("gateway-sync: no %s CRD in this cluster", kind)
                continue
            raise
        # List items carry no kind of their own in every client version: set it.
        objects += [{**item, "kind": kind} for item in listed["items"]]
    return objects + _gateways(custom)


def _gateways(custom: kubernetes.client.CustomObjectsApi) -> list[dict[str, Any]]:
    """Every Gateway (a model's own Gateway says its address in its status); none when the
    cluster has no Gateway API, or when this account may not list Gateways (then a model with
    a Gateway of its own is skipped, with the reason, and every other model is synced)."""
    group, version, plural, kind = GATEWAY
    try:
        listed: Any = custom.list_cluster_custom_object(group, version, plural)
    except kubernetes.client.ApiException as err:
        if err.status == 403:
            log.warning("gateway-sync: may not list Gateways (kustomize/gateway/rbac.yaml)")
        if err.status in (403, 404):
            return []
        raise
    return [{**item, "kind": kind, "apiVersion": f"{group}/{version}"} for item in listed["items"]]


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


@dataclass(frozen=True, slots=True)
class Writes:
    """What one pass did with the statuses: written, refused now, and waiting out a backoff."""

    written: tuple[Owner, ...] = ()
    refused: tuple[Owner, ...] = ()
    deferred: tuple[Owner, ...] = ()


def write_statuses(
    api: kubernetes.client.ApiClient,
    new: Mapping[Owner, Mapping[str, Any]],
    providers: Sequence[Mapping[str, Any]],
    backoff: Backoff | None = None,
) -> Writes:
    """Patch each changed status through the status subresource, each on its own."""
    custom = kubernetes.client.CustomObjectsApi(api)
    backoff = backoff or Backoff()
    previous = {owner_of(p): p.get("status") for p in providers}
    written, refused, deferred = [], [], []
    for owner in sorted(new):
        if previous.get(owner) == new[owner]:
            backoff.succeed(owner)
            continue
        if not backoff.due(owner):
            deferred.append(owner)
            continue
        try:
            custom.patch_namespaced_custom_object_status(
                EXTERNAL_MODEL_PROVIDERS.group,
                EXTERNAL_MODEL_PROVIDERS.version,
                owner.namespace,
                EXTERNAL_MODEL_PROVIDERS.plural,
                owner.name,
                {"status": dict(new[owner])},
            )
        except kubernetes.client.ApiException as err:
            if err.status == 404:  # deleted since it was listed
                backoff.succeed(owner)
                continue
            if not isinstance(err.status, int) or not 400 <= err.status < 600:
                raise
            _refused(owner, err, *backoff.fail(owner))
            refused.append(owner)
            continue
        backoff.succeed(owner)
        written.append(owner)
        log.info("gateway-sync status %s phase=%s", owner, new[owner]["phase"])
    return Writes(tuple(written), tuple(refused), tuple(deferred))


def _refused(owner: Owner, err: kubernetes.client.ApiException, count: int, wait: float) -> None:
    """One line per refusal (never the answer's body, which can quote the status); the first of
    a run at WARNING, the rest at INFO."""
    log.log(
        logging.WARNING if count == 1 else logging.INFO,
        "gateway-sync status %s: the API server refused the write (%s %s, %d in a row); "
        "the other objects go on, this one is tried again in %g s",
        owner,
        err.status,
        err.reason,
        count,
        wait,
    )
