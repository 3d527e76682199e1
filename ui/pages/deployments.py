"""Page 3, Deployments (live mode only): the ModelDeployments the signed-in user may read, each
read with the user's own client (ui.cluster.Cluster.as_user), never the portal's rights.

- The list: namespace, name, phase, provider, engine, replicas and the Ready condition; filtered
  by namespace (empty: every namespace, which needs the right to list cluster-wide), phase and
  provider. A user who may not list there sees the API server's refusal, not an empty list.
- The detail: phase, message, replicas, endpoint, the gateway endpoint and the model name to
  send, and every condition the status controller writes; the upstream objects Runway rendered
  for it (by its airunway.ai/model-deployment label) with their own status; the pods that are
  pending and why (their PodScheduled condition and their events); where it came from.
- Where it came from: Runway's renderer stamps no commit on what it writes (only
  `airunway.ai/rendered-from: ModelDeployment/<ns>/<name>` on each upstream object). The commit
  is the GitOps engine's: Flux labels what it applies with its Kustomization
  (kustomize.toolkit.fluxcd.io/name, /namespace), whose status.lastAppliedRevision is the
  commit; Argo CD's tracking annotation names its Application.
- Both fragments are polled by htmx every 3 seconds (hx-trigger="every 3s").
"""

from __future__ import annotations

import functools
import json
import shlex
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import kubernetes
import urllib3
from flask import Blueprint, Response, render_template, request

from core.model.kinds import GROUP, MODEL_DEPLOYMENT_PLURAL, VERSION
from core.rendering.common import ANNOTATION_RENDERED_FROM, LABEL_MODEL_DEPLOYMENT
from core.status.modeldeployment import PHASES
from kubeio.client import api_failure, error_message
from kubeio.upstream import upstream_kinds
from ui.cluster import TIMEOUT
from ui.context import NavItem, cluster, portal, viewer

blueprint = Blueprint("deployments", __name__)
NAV = NavItem("deployments.page", "Deployments", offline=False)
POLL = "every 3s"
MAX_ITEMS = 500  # ModelDeployments listed at most per request
MAX_PENDING = 10  # pending pods whose events are read per detail
MAX_EVENTS = 20  # events shown per pending pod
FAILURES = (kubernetes.client.ApiException, urllib3.exceptions.HTTPError, OSError)
# Services and claims are read through the core API, beside kubeio.upstream.upstream_kinds().
FLUX_NAME = "kustomize.toolkit.fluxcd.io/name"
FLUX_NAMESPACE = "kustomize.toolkit.fluxcd.io/namespace"
ARGO_TRACKING = "argocd.argoproj.io/tracking-id"


class Refused(Exception):
    """The API server refused a read; `message` is its own words (naming the user)."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.status = status  # the HTTP status (0: no answer)


def _read(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except kubernetes.client.ApiException as err:
        raise Refused(error_message(err), err.status or 0) from None
    except (urllib3.exceptions.HTTPError, OSError) as err:
        raise Refused(api_failure(err) or type(err).__name__) from None


def _plain(client: kubernetes.client.ApiClient, obj: Any) -> Any:
    """A typed answer of the kubernetes client as plain JSON data."""
    return client.sanitize_for_serialization(obj)  # type: ignore[no-untyped-call]


def _dig(obj: Mapping[str, Any] | None, *path: str) -> Any:
    for step in path:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(step)
    return obj


@dataclass(frozen=True, slots=True)
class Filters:
    namespace: str = ""
    phase: str = ""
    provider: str = ""

    @classmethod
    def of(cls, args: Mapping[str, str]) -> Filters:
        def one(key: str) -> str:
            return (args.get(key) or "").strip()[:253]

        return cls(one("namespace"), one("phase"), one("provider"))

    def keeps(self, row: Row) -> bool:
        return (not self.phase or row.phase == self.phase) and (
            not self.provider or row.provider == self.provider
        )


@dataclass(frozen=True, slots=True)
class Row:
    namespace: str
    name: str
    phase: str
    provider: str
    engine: str
    replicas: str
    ready: str  # the Ready condition's status and reason
    message: str


def row_of(obj: Mapping[str, Any]) -> Row:
    status = obj.get("status") or {}
    replicas = status.get("replicas") or {}
    ready = next((c for c in status.get("conditions") or () if c.get("type") == "Ready"), None)
    return Row(
        namespace=str(_dig(obj, "metadata", "namespace") or ""),
        name=str(_dig(obj, "metadata", "name") or ""),
        phase=str(status.get("phase") or ""),
        provider=str(
            _dig(status, "provider", "name") or _dig(obj, "spec", "provider", "name") or ""
        ),
        engine=str(_dig(status, "engine", "type") or _dig(obj, "spec", "engine", "type") or ""),
        replicas=f"{replicas.get('ready', 0)}/{replicas.get('desired', 0)}" if replicas else "",
        ready=f"{ready.get('status')} ({ready.get('reason')})" if ready else "",
        message=str(status.get("message") or ""),
    )


@dataclass(frozen=True, slots=True)
class Listing:
    rows: tuple[Row, ...] = ()
    providers: tuple[str, ...] = ()  # seen before the filters, for the provider filter
    refusal: str = ""


def listing(client: kubernetes.client.ApiClient, filters: Filters) -> Listing:
    api = kubernetes.client.CustomObjectsApi(client)
    args = (GROUP, VERSION)
    try:
        if filters.namespace:
            found = _read(
                lambda: api.list_namespaced_custom_object(
                    *args,
                    filters.namespace,
                    MODEL_DEPLOYMENT_PLURAL,
                    limit=MAX_ITEMS,
                    _request_timeout=TIMEOUT,
                )
            )
        else:
            found = _read(
                lambda: api.list_cluster_custom_object(
                    *args, MODEL_DEPLOYMENT_PLURAL, limit=MAX_ITEMS, _request_timeout=TIMEOUT
                )
            )
    except Refused as refused:
        return Listing(refusal=refused.message)
    rows = sorted(
        (row_of(o) for o in found.get("items") or ()), key=lambda r: (r.namespace, r.name)
    )
    providers = tuple(sorted({r.provider for r in rows if r.provider}))
    return Listing(tuple(r for r in rows if filters.keeps(r)), providers)


@dataclass(frozen=True, slots=True)
class Upstream:
    kind: str
    name: str
    summary: str  # its own status in one line
    conditions: tuple[tuple[str, str, str, str], ...] = ()  # (type, status, reason, message)
    rendered_from: str = ""


@dataclass(frozen=True, slots=True)
class PendingPod:
    name: str
    scheduling: str  # the PodScheduled condition's message
    events: tuple[tuple[str, str, str, int], ...] = ()  # (type, reason, message, count)


@dataclass(frozen=True, slots=True)
class Origin:
    rendered: bool  # an upstream object carries Runway's rendered-from annotation
    flux: str = ""  # Kustomization namespace/name
    revision: str = ""  # its status.lastAppliedRevision: the commit
    argo: str = ""  # Argo CD's tracking id
    problem: str = ""


@dataclass(frozen=True, slots=True)
class Detail:
    obj: Mapping[str, Any]
    row: Row
    upstream: tuple[Upstream, ...] = ()
    pending: tuple[PendingPod, ...] = ()
    origin: Origin = Origin(False)
    refusals: tuple[str, ...] = ()  # reads the API server refused (the rest is shown)
    call: str = ""  # a request to the gateway endpoint, to copy

    @property
    def conditions(self) -> list[Mapping[str, Any]]:
        return list(_dig(self.obj, "status", "conditions") or ())


def _conditions(obj: Mapping[str, Any]) -> tuple[tuple[str, str, str, str], ...]:
    found = list(_dig(obj, "status", "conditions") or ())
    for parent in _dig(obj, "status", "parents") or ():
        found += list(parent.get("conditions") or ()) if isinstance(parent, Mapping) else []
    return tuple(
        (
            str(c.get("type")),
            str(c.get("status")),
            str(c.get("reason") or ""),
            str(c.get("message") or ""),
        )
        for c in found
        if isinstance(c, Mapping)
    )


def summary(obj: Mapping[str, Any]) -> str:
    status = obj.get("status") or {}
    desired = _dig(obj, "spec", "replicas")
    if isinstance(desired, int) or "replicas" in status or "readyReplicas" in status:
        wanted = desired if isinstance(desired, int) else status.get("replicas", 0)
        return f"{status.get('readyReplicas', 0)}/{wanted} replicas ready"
    if obj.get("kind") == "PersistentVolumeClaim":
        return str(status.get("phase") or "")
    if obj.get("kind") == "Service":
        return f"{_dig(obj, 'spec', 'type') or 'ClusterIP'} {_dig(obj, 'spec', 'clusterIP') or ''}".strip()
    return str(status.get("phase") or status.get("state") or "")


@dataclass
class _Reader:
    client: kubernetes.client.ApiClient
    namespace: str
    name: str
    refusals: list[str] = field(default_factory=list)

    @property
    def selector(self) -> str:
        return f"{LABEL_MODEL_DEPLOYMENT}={self.name}"

    def upstream(self) -> list[Mapping[str, Any]]:
        custom = kubernetes.client.CustomObjectsApi(self.client)
        core = kubernetes.client.CoreV1Api(self.client)
        found: list[Mapping[str, Any]] = []
        for group, version, plural, kind in upstream_kinds():
            listed = functools.partial(
                custom.list_namespaced_custom_object,
                group,
                version,
                self.namespace,
                plural,
                label_selector=self.selector,
                _request_timeout=TIMEOUT,
            )
            found += [{**o, "kind": kind} for o in self._list(listed)]
        for kind, lister in (
            ("Service", core.list_namespaced_service),
            ("PersistentVolumeClaim", core.list_namespaced_persistent_volume_claim),
        ):
            typed = functools.partial(
                lister, self.namespace, label_selector=self.selector, _request_timeout=TIMEOUT
            )
            found += [{**o, "kind": kind} for o in self._list(self._plainly(typed))]
        return found

    def _plainly(self, call: Callable[[], Any]) -> Callable[[], Any]:
        return lambda: _plain(self.client, call())

    def _list(self, call: Callable[[], Any]) -> list[dict[str, Any]]:
        try:
            return list(_read(call).get("items") or ())
        except Refused as refused:
            if refused.status != 404:  # 404: the kind is not served (its CRD is not installed)
                self.refusals.append(refused.message)
            return []

    def pending(self) -> list[PendingPod]:
        core = kubernetes.client.CoreV1Api(self.client)
        pods = self._list(
            lambda: _plain(
                self.client,
                core.list_namespaced_pod(
                    self.namespace, label_selector=self.selector, _request_timeout=TIMEOUT
                ),
            )
        )
        waiting = [p for p in pods if _dig(p, "status", "phase") == "Pending"][:MAX_PENDING]
        return [self._pending_pod(core, pod) for pod in waiting]

    def _pending_pod(self, core: kubernetes.client.CoreV1Api, pod: Mapping[str, Any]) -> PendingPod:
        name = str(_dig(pod, "metadata", "name"))
        scheduled: Mapping[str, Any] = next(
            (c for c in _dig(pod, "status", "conditions") or () if c.get("type") == "PodScheduled"),
            {},
        )
        events = self._list(
            lambda: _plain(
                self.client,
                core.list_namespaced_event(
                    self.namespace,
                    field_selector=f"involvedObject.kind=Pod,involvedObject.name={name}",
                    _request_timeout=TIMEOUT,
                ),
            )
        )
        events.sort(key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""))
        return PendingPod(
            name,
            str(scheduled.get("message") or scheduled.get("reason") or ""),
            tuple(
                (
                    str(e.get("type")),
                    str(e.get("reason")),
                    str(e.get("message")),
                    int(e.get("count") or 1),
                )
                for e in events[-MAX_EVENTS:]
            ),
        )

    def origin(self, obj: Mapping[str, Any], upstream: Iterable[Mapping[str, Any]]) -> Origin:
        rendered = any(
            ANNOTATION_RENDERED_FROM in (_dig(o, "metadata", "annotations") or {}) for o in upstream
        )
        labels = _dig(obj, "metadata", "labels") or {}
        argo = str((_dig(obj, "metadata", "annotations") or {}).get(ARGO_TRACKING) or "")
        if FLUX_NAME not in labels:
            return Origin(rendered, argo=argo)
        flux_ns, flux_name = (
            str(labels.get(FLUX_NAMESPACE) or self.namespace),
            str(labels[FLUX_NAME]),
        )
        custom = kubernetes.client.CustomObjectsApi(self.client)
        try:
            found = _read(
                lambda: custom.get_namespaced_custom_object(
                    "kustomize.toolkit.fluxcd.io",
                    "v1",
                    flux_ns,
                    "kustomizations",
                    flux_name,
                    _request_timeout=TIMEOUT,
                )
            )
        except Refused as refused:
            return Origin(rendered, f"{flux_ns}/{flux_name}", argo=argo, problem=refused.message)
        revision = str(_dig(found, "status", "lastAppliedRevision") or "")
        return Origin(rendered, f"{flux_ns}/{flux_name}", revision, argo)


def detail(client: kubernetes.client.ApiClient, namespace: str, name: str) -> Detail:
    """Everything the detail shows; Refused when the ModelDeployment itself cannot be read."""
    custom = kubernetes.client.CustomObjectsApi(client)
    obj = _read(
        lambda: custom.get_namespaced_custom_object(
            GROUP, VERSION, namespace, MODEL_DEPLOYMENT_PLURAL, name, _request_timeout=TIMEOUT
        )
    )
    reader = _Reader(client, namespace, name)
    upstream = reader.upstream()
    pending = reader.pending()
    origin = reader.origin(obj, upstream)
    gateway = _dig(obj, "status", "gateway") or {}
    call = ""
    if gateway.get("endpoint") and gateway.get("modelName"):
        body = json.dumps(
            {"model": gateway["modelName"], "messages": [{"role": "user", "content": "Hello"}]}
        )
        call = (
            f"curl -s {shlex.quote(str(gateway['endpoint']).rstrip('/') + '/v1/chat/completions')} "
            f"-H 'Content-Type: application/json' -d {shlex.quote(body)}"
        )
    rows = tuple(
        Upstream(
            str(o.get("kind")),
            str(_dig(o, "metadata", "name")),
            summary(o),
            _conditions(o),
            str((_dig(o, "metadata", "annotations") or {}).get(ANNOTATION_RENDERED_FROM) or ""),
        )
        for o in sorted(
            upstream, key=lambda o: (str(o.get("kind")), str(_dig(o, "metadata", "name")))
        )
    )
    return Detail(obj, row_of(obj), rows, tuple(pending), origin, tuple(reader.refusals), call)


def _live() -> tuple[str, int] | None:
    if portal().cluster is None:
        return render_template(
            "error.html",
            code=404,
            reason="Deployments needs a cluster: run `runway ui` without --offline",
        ), 404
    return None


@blueprint.get("/deployments")
def page() -> tuple[str, int] | str:
    if (offline := _live()) is not None:
        return offline
    filters = Filters.of(request.args)
    found = listing(cluster().as_user(viewer()), filters)
    settings = portal().settings
    return render_template(
        "deployments.html",
        filters=filters,
        listing=found,
        phases=PHASES,
        poll=POLL,
        deploy=settings.actions and settings.apply_as_user,
    )


@blueprint.get("/deployments/list")
def list_fragment() -> tuple[str, int] | str:
    if (offline := _live()) is not None:
        return offline
    filters = Filters.of(request.args)
    found = listing(cluster().as_user(viewer()), filters)
    return render_template("_deployments_list.html", filters=filters, listing=found, poll=POLL)


def _detail(namespace: str, name: str) -> Detail | str:
    try:
        return detail(cluster().as_user(viewer()), namespace, name)
    except Refused as refused:
        return refused.message


@blueprint.get("/deployments/<namespace>/<name>")
def detail_page(namespace: str, name: str) -> tuple[str, int] | str:
    if (offline := _live()) is not None:
        return offline
    found = _detail(namespace, name)
    return render_template(
        "deployments_detail.html", namespace=namespace, name=name, found=found, poll=POLL
    )


@blueprint.get("/deployments/<namespace>/<name>/fragment")
def detail_fragment(namespace: str, name: str) -> tuple[str, int] | str | Response:
    if (offline := _live()) is not None:
        return offline
    found = _detail(namespace, name)
    return render_template(
        "_deployments_detail.html", namespace=namespace, name=name, found=found, poll=POLL
    )
