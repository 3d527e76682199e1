"""The one list-watch loop of the edges: the webhook's InferenceProviderConfigs
(webhook/source.py) and every kind the status controller caches (controller/watching.py).

One round lists the kind, hands the items to the listener, then watches from the list's
resourceVersion and hands it each event. The round ends when the watch ran its course (the
server closes it after `watch_seconds`), when the server answers 410 Gone (the resourceVersion
expired) or when a list or watch fails; the next round lists again. With `resume` (the status
controller's), after a watch that ran its course the next round watches on from the last
resourceVersion it saw (an event's or a bookmark's, which the server sends while the selected
objects stay quiet) as client-go's reflector does: 10,000 objects are not listed and queued
again every `watch_seconds`; only 410 Gone or a failure lists again. A list is read in pages of
`page` objects (limit and continue: one consistent snapshot, never the whole kind in one answer).
A metadata-only kind (Watched.metadata_only) is listed and watched as PartialObjectMetadata, as
controller-runtime's metadata informers ask: the API server sends each object's metadata alone.
`keep` turns each listed object and each event's object into what the listener is handed, as it
is decoded (client-go's informer transform: a page is freed before the next one is read). A watch silent GRACE_SECONDS
past its server-side timeout counts as failed (a frozen API server keeps the connection open and
sends nothing). A failed round waits before the next one: `retry_seconds`, doubling per failure in
a row up to `retry_most`, stretched by up to `jitter` of itself (kubeio.backoff.Backoff); so does
a watch the server ended sooner than `retry_seconds` after the round began (never a busy loop of
lists), while a watch that ran its course lists again at once. A kind the API server does not
serve (404: its CRD is not installed) waits `absent_seconds`. The loop ends when `stop` is set;
no error ends it: each round's outcome goes to the listener, which decides what to log and count.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

import kubernetes

from kubeio.backoff import Backoff

CONNECT_SECONDS = 10.0  # to open a list's or a watch's connection
GRACE_SECONDS = 30.0  # a watch silent this long past its server-side timeout is dead
GONE = 410  # the watch's resourceVersion is too old: list again, a normal end
ABSENT = 404  # the API server serves no such kind
ROUNDS = "rounds"  # the one key of a loop's backoff
PAGE = 500  # objects per page of a list (client-go's informers list in pages of 500 too)
# The Accept headers of a metadata-only list and watch (meta.k8s.io/v1 PartialObjectMetadata).
METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
METADATA_WATCH = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"


class Outcome(StrEnum):
    """How one round (a list and its watch) ended."""

    ENDED = "ended"  # the watch ran its course, was stopped or expired (410 Gone)
    FAILED = "failed"  # the client, the list or the watch failed
    ABSENT = "absent"  # the kind is not served (its CRD is not installed)


@dataclass(frozen=True, slots=True)
class Watched:
    """What is listed and watched: a resource's plural, in one namespace or all, the objects
    matching `label_selector` only, whole or their metadata alone."""

    group: str
    version: str
    plural: str
    namespace: str | None = None  # None: every namespace (or a cluster-scoped kind)
    label_selector: str | None = None
    metadata_only: bool = False  # PartialObjectMetadata: no spec, no status


@dataclass(frozen=True, slots=True)
class WatchTiming:
    """How long a round's requests may take, and how long the loop waits between rounds."""

    watch_seconds: int = 300  # the server closes a watch after this (timeoutSeconds)
    list_seconds: float = 60.0  # a list not answered by then failed
    retry_seconds: float = 2.0  # the first wait after a failed round
    retry_most: float = 0.0  # the longest wait after failures in a row (below retry_seconds: it)
    jitter: float = 0.0  # each wait stretched by up to this fraction of itself
    absent_seconds: float = 30.0  # before a kind that is not served is listed again
    page: int = PAGE  # objects per page of a list
    resume: bool = False  # after a watch that ran its course, watch on without a list


class Listener(Protocol):
    """What the loop reports to (its owner's cache, metrics and log)."""

    def listed(self, items: list[dict[str, Any]]) -> None:
        """A list answered: every object of the kind now (a fresh start)."""

    def changed(self, event: str, obj: dict[str, Any]) -> None:
        """A watch event: ADDED, MODIFIED or DELETED, and its object (never a bookmark)."""

    def ended(self, outcome: Outcome, error: Exception | None) -> None:
        """A round ended; `error` says why when it failed or the kind is absent."""

    def waited(self) -> None:
        """The wait before the next round is over (or `stop` was set during it)."""


def watch(
    connect: Callable[[], kubernetes.client.ApiClient],
    watched: Watched,
    listener: Listener,
    stop: threading.Event,
    timing: WatchTiming,
    *,
    clock: Callable[[], float] = time.monotonic,
    keep: Callable[[dict[str, Any]], dict[str, Any]] = dict,
) -> None:
    """List and watch `watched` in rounds until `stop` is set (see the module docstring);
    `connect` gives each round its client, `keep` makes each object what the listener gets."""
    backoff = backoff_of(timing)
    version: str | None = None  # where the next round watches on from; None: it lists first
    while not stop.is_set():
        started = clock()
        outcome, error, version = _round(
            connect, _Round(watched, listener, stop, timing, keep), version
        )
        version = version if timing.resume else None
        listener.ended(outcome, error)
        wait = pause(outcome, clock() - started, backoff, timing)
        if wait is not None:
            stop.wait(wait)
            listener.waited()


def backoff_of(timing: WatchTiming) -> Backoff:
    """The backoff of one loop's failed rounds."""
    return Backoff(
        timing.retry_seconds, max(timing.retry_most, timing.retry_seconds), jitter=timing.jitter
    )


def pause(outcome: Outcome, ran: float, backoff: Backoff, timing: WatchTiming) -> float | None:
    """Seconds to wait after a round that ended with `outcome` after `ran` seconds (None: list
    again at once), counting failures in a row in `backoff`."""
    if outcome is Outcome.ENDED and ran >= timing.retry_seconds:
        backoff.succeed(ROUNDS)
        return None
    if outcome is Outcome.ABSENT:
        backoff.succeed(ROUNDS)
        return timing.absent_seconds
    return backoff.fail(ROUNDS)[1]


@dataclass(frozen=True, slots=True)
class _Round:
    watched: Watched
    listener: Listener
    stop: threading.Event
    timing: WatchTiming
    keep: Callable[[dict[str, Any]], dict[str, Any]]


def _round(
    connect: Callable[[], kubernetes.client.ApiClient], this: _Round, version: str | None
) -> tuple[Outcome, Exception | None, str | None]:
    """How the round ended, why, and the resourceVersion to watch on from (None: list)."""
    watched, listener, stop, timing = this.watched, this.listener, this.stop, this.timing
    try:
        api = kubernetes.client.CustomObjectsApi(connect())
        if version is None:
            items, version = _paged(api, watched, timing, this.keep)
            listener.listed(items)
            del items  # the listener holds what it keeps
        for event in _events(api, watched, version, stop, timing):
            kind = str(event.get("type"))
            if kind == "ERROR":  # an error the client did not raise: list again
                return Outcome.ENDED, None, None
            obj = dict(event.get("object") or {})
            seen = (obj.get("metadata") or {}).get("resourceVersion")
            if kind != "BOOKMARK":
                listener.changed(kind, this.keep(obj))
            version = str(seen) if seen else version
    except kubernetes.client.ApiException as err:
        if err.status == GONE:
            return Outcome.ENDED, None, None
        return (Outcome.ABSENT if err.status == ABSENT else Outcome.FAILED), err, None
    except Exception as err:  # a watch thread's boundary: the loop restarts, it never dies
        return Outcome.FAILED, err, None
    return Outcome.ENDED, None, version


def _paged(
    api: kubernetes.client.CustomObjectsApi,
    watched: Watched,
    timing: WatchTiming,
    keep: Callable[[dict[str, Any]], dict[str, Any]],
) -> tuple[list[dict[str, Any]], str | None]:
    """Every object of `watched`, read a page at a time, and the list's resourceVersion."""
    items: list[dict[str, Any]] = []
    token: str | None = None
    while True:
        page: dict[str, Any] = {"limit": timing.page}
        if token:
            page["_continue"] = token
        listed = _list(
            api, watched, _request_timeout=(CONNECT_SECONDS, timing.list_seconds), **page
        )
        items += (keep(dict(item)) for item in listed.get("items") or ())
        meta = listed.get("metadata") or {}
        token = meta.get("continue") or None
        if token is None:
            return items, meta.get("resourceVersion")


def _list(api: kubernetes.client.CustomObjectsApi, watched: Watched, **kwargs: Any) -> Any:
    """The list of `watched` (with watch=True from Watch.stream, its event stream)."""
    if watched.label_selector:
        kwargs["label_selector"] = watched.label_selector
    if watched.metadata_only:
        kwargs["_headers"] = {"Accept": METADATA_WATCH if kwargs.get("watch") else METADATA_LIST}
    if watched.namespace:
        return api.list_namespaced_custom_object(
            watched.group, watched.version, watched.namespace, watched.plural, **kwargs
        )
    return api.list_cluster_custom_object(watched.group, watched.version, watched.plural, **kwargs)


def _events(
    api: kubernetes.client.CustomObjectsApi,
    watched: Watched,
    version: str | None,
    stop: threading.Event,
    timing: WatchTiming,
) -> Iterator[dict[str, Any]]:
    # The kubernetes client is untyped (pyproject.toml lists the modules that may call it freely).
    watcher = kubernetes.watch.Watch()  # type: ignore[no-untyped-call]
    try:
        for event in watcher.stream(  # type: ignore[no-untyped-call]
            _list,
            api,
            watched,
            resource_version=version,
            allow_watch_bookmarks=True,
            timeout_seconds=timing.watch_seconds,
            _request_timeout=(CONNECT_SECONDS, timing.watch_seconds + GRACE_SECONDS),
        ):
            if stop.is_set():
                return
            yield event
    finally:
        watcher.stop()  # type: ignore[no-untyped-call]
