"""The Flask application: `create_app(settings)`; gunicorn runs 'webhook.app:create_app()'.

Endpoints: POST /mutate and /validate (ModelDeployment), POST /validate-inferenceproviderconfig,
POST /validate-externalmodelprovider, GET /healthz, /readyz (ready once provider configs are
loaded and not stale, see webhook/source.py) and /metrics (Prometheus text, the whole server's:
webhook/metrics.py).
"""

from __future__ import annotations

import functools
import logging
import os
import time
from collections.abc import Mapping
from typing import Any

from flask import Blueprint, Flask, Response, jsonify, request
from werkzeug.exceptions import HTTPException

from core.model.destinations import NO_DESTINATIONS, Destinations
from kubeio.client import api_client
from kubeio.registry import load_registry
from kubeio.shipped import bundled_flag_catalogs
from webhook.access import ClusterAccess, SecretAccess
from webhook.handlers import (
    Answer,
    Handler,
    mutate_model_deployment,
    validate_external_provider,
    validate_model_deployment,
    validate_provider_config,
)
from webhook.logfields import field
from webhook.metrics import CONTENT_TYPE, Metrics
from webhook.responses import BAD_REQUEST, compact_json, denied, review
from webhook.review import AdmissionRequest, Undecodable, decode_review
from webhook.settings import Settings
from webhook.source import ClusterSource, ProviderSource, StaticSource, WatchObserver

log = logging.getLogger(__name__)
ROUTES: dict[str, Handler] = {
    "/mutate": mutate_model_deployment,
    "/validate": validate_model_deployment,
    "/validate-inferenceproviderconfig": validate_provider_config,
    "/validate-externalmodelprovider": validate_external_provider,
}
UNAVAILABLE = 503


def source_for(settings: Settings, *, observer: WatchObserver | None = None) -> ProviderSource:
    """Directories or the shipped configs (static), or a watch of the cluster."""
    if settings.in_cluster or settings.kubeconfig:
        path, in_cluster = settings.kubeconfig, settings.in_cluster
        return ClusterSource(
            lambda: api_client(path, in_cluster=in_cluster),
            stale_seconds=settings.stale_seconds,
            flags=bundled_flag_catalogs(),
            observer=observer,
        )
    return StaticSource(load_registry(settings.providers or None))


def access_for(settings: Settings) -> SecretAccess | None:
    """SubjectAccessReviews through the cluster the webhook watches; None without one (a static
    provider source: then the Secret's consent label is the only guard, docs/security.md)."""
    if settings.in_cluster or settings.kubeconfig:
        path, in_cluster = settings.kubeconfig, settings.in_cluster
        return ClusterAccess(lambda: api_client(path, in_cluster=in_cluster))
    return None


def admission_routes(
    source: ProviderSource,
    metrics: Metrics,
    *,
    destinations: Destinations = NO_DESTINATIONS,
    access: SecretAccess | None = None,
    replaced: Mapping[str, Handler] | None = None,
) -> Blueprint:
    """`replaced`: handlers in place of ROUTES' by path (bench.webhook's fixed-answer row)."""
    routes = Blueprint("admission", __name__)
    handlers = dict(ROUTES)
    handlers["/validate-externalmodelprovider"] = functools.partial(
        validate_external_provider, destinations=destinations, access=access
    )
    handlers.update(replaced or {})

    def view(path: str, handler: Handler) -> Any:
        def admit_view() -> Response:
            started = time.perf_counter()
            decoded = decode_review(_body(), request.content_type)
            if isinstance(decoded, Undecodable):
                log.info("admission rejected path=%s reason=%s", path, field(decoded.message))
                metrics.failed(BAD_REQUEST)
                if decoded.uid is None:
                    return _error(BAD_REQUEST, decoded.message)
                return jsonify(review(denied(decoded.uid, decoded.message, code=BAD_REQUEST)))
            answer = _answer(decoded, handler, source)
            seconds = time.perf_counter() - started
            _account(decoded, answer, metrics, seconds)
            return _json(review(answer.response))

        admit_view.__name__ = f"admit_{path.strip('/').replace('-', '_')}"
        return admit_view

    for path, handler in handlers.items():
        routes.add_url_rule(path, view_func=view(path, handler), methods=["POST"])
    return routes


def _body() -> bytes:
    """The request's body. With a Content-Length within the app's limit, one read of that many
    bytes from the server's stream (gunicorn frames it by that length): werkzeug's stream,
    limited by MAX_CONTENT_LENGTH, read it in pieces until a read past its end: 34 µs of its
    thread's CPU under load against the floor's 19, and 0.048 ms of server CPU per request in
    an A/B (bench/RESULTS.md). Otherwise as werkzeug reads it:
    past the limit a 413 (answered as a 400), a chunked body up to the limit."""
    length, limit = request.content_length, request.max_content_length
    stream = request.environ.get("wsgi.input")
    if length is not None and limit is not None and length <= limit and stream is not None:
        data: bytes = stream.read(length)
        return data
    return request.get_data(cache=False)


def _answer(req: AdmissionRequest, handler: Handler, source: ProviderSource) -> Answer:
    registry = source.current()
    if registry is None:
        return Answer(
            denied(
                req["uid"], "provider configurations are not loaded yet; retry", code=UNAVAILABLE
            )
        )
    try:
        return handler(req, registry)
    # The webhook's one catch-all: whatever went wrong, the API server gets a denial (fail
    # closed) and the user a message, never a stack trace; the traceback goes to the log.
    except Exception:
        log.exception("admission failed uid=%s", field(req["uid"]))
        return Answer(denied(req["uid"], "internal error; see webhook logs", code=500))


def _account(req: AdmissionRequest, answer: Answer, metrics: Metrics, seconds: float) -> None:
    response = answer.response
    kind, op = req["kind"]["kind"], req["operation"]
    metrics.observe(
        group=req["kind"]["group"],
        kind=kind,
        operation=op,
        allowed=response["allowed"],
        seconds=seconds,
    )
    code = response.get("status", {}).get("code")
    if not response["allowed"] and code in (500, UNAVAILABLE):
        metrics.failed(code)
    if answer.provider and answer.selection and not req.get("dryRun"):
        metrics.selected(provider=answer.provider, how=answer.selection)
    # A denial is worth a line; an allowed admission is one of thousands (every apply and every
    # GitOps sync), counted by the metrics and logged with -v. Writing it at INFO cost as much
    # CPU as the admission itself under load: 8 connections' threads queued on the log lock.
    level = logging.DEBUG if response["allowed"] else logging.INFO
    if not log.isEnabledFor(level):
        return  # the fields are read and escaped only for a line that is written
    obj = req.get("object") or {}
    metadata = obj.get("metadata")
    meta: dict[str, Any] = metadata if isinstance(metadata, dict) else {}
    log.log(
        level,
        "admission uid=%s kind=%s op=%s obj=%s/%s allowed=%s patch=%s ms=%.1f",
        field(req["uid"]),
        field(kind),
        op,
        field(meta.get("namespace", "")),
        field(meta.get("name", "")),
        response["allowed"],
        "patch" in response,
        seconds * 1000,
    )


def _json(body: Any) -> Response:
    """An AdmissionReview as JSON: compact, keys in the order they were set (the API server
    reads it by name; Flask's jsonify would sort every key first)."""
    return Response(compact_json(body), mimetype="application/json")


def health_routes(source: ProviderSource, metrics: Metrics) -> Blueprint:
    routes = Blueprint("health", __name__)

    @routes.get("/healthz")
    def healthz() -> Response:
        return jsonify(status="ok")

    @routes.get("/readyz")
    def readyz() -> tuple[Response, int]:
        ready = source.is_ready()
        metrics.source_ready(ready)
        if not ready:
            return jsonify(status="provider configurations not loaded or stale"), UNAVAILABLE
        if not metrics.every_worker_ready():
            return jsonify(status="another worker's provider configurations are not loaded"), (
                UNAVAILABLE
            )
        return jsonify(status="ready"), 200

    @routes.get("/metrics")
    def metrics_view() -> Response:
        metrics.source_ready(source.is_ready())
        return Response(metrics.render(), content_type=CONTENT_TYPE)

    return routes


def _error(code: int, message: str) -> Response:
    response = jsonify(error=message)
    response.status_code = code
    return response


def _drain(stream: Any, length: int | None, limit: int) -> None:
    """Read and drop an unread request body (up to `limit` bytes), so the client, still sending,
    receives the answer instead of a connection reset."""
    if stream is None or length is None or length > limit:
        return
    remaining = length
    while remaining > 0:
        chunk = stream.read(min(remaining, 1 << 16))
        if not chunk:
            return
        remaining -= len(chunk)


def create_app(
    settings: Settings | None = None,
    *,
    source: ProviderSource | None = None,
    replaced: Mapping[str, Handler] | None = None,
) -> Flask:
    """The webhook app; with no settings, from RUNWAY_* variables (what gunicorn workers do).
    `replaced`: handlers in place of the shipped ones, by path (bench.webhook)."""
    settings = settings if settings is not None else Settings.from_env(os.environ)
    metrics = Metrics(multiprocess_dir=settings.metrics_dir, certificate=settings.cert)
    source = source if source is not None else source_for(settings, observer=metrics)
    metrics.source_ready(source.is_ready())
    app = Flask("runway-webhook")
    app.config["MAX_CONTENT_LENGTH"] = settings.max_body_bytes
    app.register_blueprint(
        admission_routes(
            source,
            metrics,
            destinations=settings.destinations(),
            access=access_for(settings),
            replaced=replaced,
        )
    )
    app.register_blueprint(health_routes(source, metrics))

    @app.errorhandler(HTTPException)
    def http_error(err: HTTPException) -> Response:
        code = err.code or 500
        if code == 413:  # oversized body: answered like any unusable request
            _drain(
                request.environ.get("wsgi.input"),
                request.content_length,
                4 * settings.max_body_bytes,
            )
            return _error(BAD_REQUEST, f"request body larger than {settings.max_body_bytes} bytes")
        return _error(code, err.description or err.name)

    source.start()
    return app
