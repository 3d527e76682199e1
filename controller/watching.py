"""The status controller's watches: one kubeio.watch loop per kind (controller/kinds.py), each
reporting to a KindWatch that keeps the cache current and queues the ModelDeployment every
change belongs to (its own key, or the airunway.ai/model-deployment label of an upstream object;
a provider config that changed what selection reads queues them all). A change of what the
gateway registers wakes the gateway sync running in this process. A kind whose CRD is not
installed holds no objects and is listed again later.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import kubernetes
import urllib3

from controller.cache import Cache, ConfigMarks
from controller.kinds import GATEWAY_INPUTS, MODEL_DEPLOYMENTS, PROVIDER_CONFIGS, Kind
from controller.metrics import Metrics
from controller.queue import Queue
from core.rendering.common import LABEL_MODEL_DEPLOYMENT
from kubeio.client import failure
from kubeio.repeats import Repeats
from kubeio.watch import Outcome

log = logging.getLogger(__name__)

WATCH_FAILURES = (kubernetes.client.ApiException, urllib3.exceptions.HTTPError, OSError)


@dataclass(frozen=True, slots=True)
class WatchParts:
    """What every kind's watch writes to."""

    cache: Cache
    queue: Queue
    marks: ConfigMarks
    metrics: Metrics
    throttle: Repeats
    on_gateway_change: Callable[[], None] | None = None


def resync(cache: Cache, queue: Queue) -> None:
    """Queue every cached ModelDeployment (the periodic level-triggered pass)."""
    for md in cache.of_kind(MODEL_DEPLOYMENTS.kind):
        m = md.get("metadata") or {}
        queue.add((str(m.get("namespace") or ""), str(m.get("name"))))


class KindWatch:
    """What the watch loop of one kind reports to (a kubeio.watch.Listener); used by that
    loop's thread only."""

    def __init__(self, kind: Kind, parts: WatchParts) -> None:
        self._kind = kind
        self._parts = parts
        self._generations: dict[tuple[str, str], Any] = {}  # of the gateway's inputs

    def listed(self, items: list[dict[str, Any]]) -> None:
        self._parts.cache.replace(self._kind.kind, items)
        for obj in items:
            self._parts.metrics.event(self._kind.kind)
            self._changed(obj)
            self._gateway_input(obj, "ADDED")

    def changed(self, event: str, obj: dict[str, Any]) -> None:
        self._parts.metrics.event(self._kind.kind)
        meta = obj.get("metadata") or {}
        if event == "DELETED":
            self._parts.cache.drop(
                self._kind.kind, str(meta.get("namespace") or ""), str(meta.get("name"))
            )
        else:
            self._parts.cache.put(self._kind.kind, obj)
        self._changed(obj)
        self._gateway_input(obj, event)

    def ended(self, outcome: Outcome, error: Exception | None) -> None:
        if outcome is Outcome.ENDED:
            return  # ran its course or expired (410 Gone): the loop lists again
        if outcome is Outcome.ABSENT:  # the CRD is not installed: nothing of this kind exists
            self._parts.cache.replace(self._kind.kind, [])
        elif isinstance(error, WATCH_FAILURES):
            self._parts.throttle.warning(f"watching {self._kind.kind}", failure(error))
        else:  # an undecodable event, say: the watch restarts, it never dies
            log.error("status-controller: watching %s", self._kind.kind, exc_info=error)
        self._parts.metrics.restarted(self._kind.kind)

    def waited(self) -> None:
        return None

    def _changed(self, obj: Mapping[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        if self._kind is PROVIDER_CONFIGS:
            # Only a change of what selection and rendering read (spec, annotations) bears on
            # ModelDeployment status; a status write (the health pass's heartbeat) does not.
            if self._parts.marks.note(obj):
                resync(self._parts.cache, self._parts.queue)
            return
        namespace = str(meta.get("namespace") or "")
        if self._kind is MODEL_DEPLOYMENTS:
            self._parts.queue.add((namespace, str(meta.get("name"))))
            return
        owner = (meta.get("labels") or {}).get(LABEL_MODEL_DEPLOYMENT)
        if owner:
            self._parts.queue.add((namespace, str(owner)))

    def _gateway_input(self, obj: Mapping[str, Any], event: str) -> None:
        """Wake the gateway sync when what it registers may have changed."""
        wake = self._parts.on_gateway_change
        if wake is None or self._kind not in GATEWAY_INPUTS:
            return
        meta = obj.get("metadata") or {}
        key = (str(meta.get("namespace") or ""), str(meta.get("name")))
        generation = meta.get("generation")
        if event == "DELETED":
            self._generations.pop(key, None)
        elif self._generations.get(key, object()) == generation:
            return  # a status write: the same generation
        else:
            self._generations[key] = generation
        wake()
