"""The entry points of the gateway flow: `plan_sources` (gateway-plan: the desired LiteLLM model
list from files, offline), `sync_once` (one gateway-sync pass) and `sync_loop` (a pass every
interval, and at once when woken by a watch, until stopped, outliving an outage of LiteLLM or
the API server with backoff).

One pass: read the objects (the cluster, or files with Secrets from a directory, read again every
pass so a rotated key is seen) -> plan (the merge, with the one provider registry) -> reconcile
into LiteLLM -> write ExternalModelProvider status (cluster only). The CLI builds the settings,
prints the reports and maps them to exit codes.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

import kubernetes
import urllib3

from core.model.destinations import NO_DESTINATIONS, Destinations
from core.model.kinds import INFERENCE_PROVIDER_CONFIG
from core.selection.configs import ProviderRegistry
from gateway.apikeys import ClusterSecrets, FileSecrets, SecretSource
from gateway.cluster import list_objects, statuses, write_statuses
from gateway.litellm import LiteLLM, LiteLLMUnavailable
from gateway.merge import Plan, gateway_urls, is_gateway, plan, split
from gateway.status import ModelResult, RegistrationOutcome
from gateway.sync import Syncer
from kubeio.backoff import Backoff
from kubeio.client import api_client
from kubeio.registry import build_registry
from kubeio.shipped import bundled_versions
from kubeio.sources import is_runway_kind, read_documents, skip_note

log = logging.getLogger(__name__)

DEBOUNCE = 0.2  # seconds a woken loop waits for the rest of a burst of changes
PASS = "pass"  # the one key of the loop's own backoff (failed passes in a row)
# What a loop pass may meet and survive: LiteLLM or the API server unreachable or answering
# errors. The next pass retries.
PASS_FAILURES = (
    LiteLLMUnavailable,
    kubernetes.client.ApiException,
    urllib3.exceptions.HTTPError,
    OSError,
)


@dataclass(frozen=True, slots=True)
class PlanSettings:
    """What the merge needs besides the objects."""

    providers: tuple[str, ...] = ()  # directories of InferenceProviderConfigs (else the objects')
    gateway_url: str | None = None  # for ModelDeployments with spec.gateway.enabled
    destinations: Destinations = NO_DESTINATIONS  # internal hosts base URLs may name anyway


@dataclass(frozen=True, slots=True)
class SyncSettings:
    """One gateway-sync: where LiteLLM is, where the objects come from, how long to wait."""

    litellm_url: str
    master_key: str = field(repr=False)
    planning: PlanSettings = field(default_factory=PlanSettings)
    sources: tuple[str, ...] = ()  # files instead of the cluster
    recursive: bool = True  # the sources' folders with every folder under them (-R)
    secrets_dir: str | None = None  # Secret manifests, with sources
    kubeconfig: str | None = None  # None: in-cluster, else ~/.kube/config
    context: str | None = None  # the kubeconfig context (None: its current one)
    confirm_timeout: float = 10.0
    interval: float = 30.0


@dataclass(frozen=True, slots=True)
class SyncReport:
    """One pass: the plan it reconciled and the outcome of every model and conflicting claim."""

    plan: Plan
    results: tuple[ModelResult, ...]

    @property
    def is_ready(self) -> bool:
        """Every model Ready, no conflict and no invalid object."""
        registered = all(r.outcome == RegistrationOutcome.REGISTERED for r in self.results)
        return registered and self.plan.is_clean


@dataclass(frozen=True, slots=True)
class Connection:
    """What passes of one sync share: the Syncer (its memory of keys sent) and the API client
    (None: objects come from files)."""

    syncer: Syncer
    api: kubernetes.client.ApiClient | None
    backoff: Backoff = field(default_factory=Backoff)  # of refused status writes, per object


def read_objects(
    paths: Sequence[str], *, stdin: TextIO | None = None, recursive: bool = True
) -> tuple[list[dict[str, Any]], list[str]]:
    """The objects in files and directories (`-`: `stdin`; which files: kubeio.sources.
    yaml_files, with `recursive`), by the one rule of kinds every
    command follows (kubeio.sources.is_runway_kind): an unknown kind of Runway's groups is an
    error, a kind of another group is left out with a note, the one every command prints
    (Secrets are read, as before, and Gateways: a model's own Gateway says its address)."""
    objects, notes = [], []
    for doc in read_documents(paths, stdin=stdin, recursive=recursive):
        if doc.obj.get("kind") == "Secret" or is_runway_kind(doc) or is_gateway(doc.obj):
            objects.append(doc.obj)
        else:
            notes.append(skip_note(doc))
    return objects, notes


def plan_objects(objects: Sequence[Mapping[str, Any]], settings: PlanSettings) -> Plan:
    """The desired model list of `objects`, with the one registry builder's registry."""
    deployments, providers = split(objects)
    return plan(
        deployments,
        providers,
        registry=_registry(objects, settings.providers),
        pins=bundled_versions(),
        gateway_url=settings.gateway_url,
        destinations=settings.destinations,
        gateways=gateway_urls([o for o in objects if is_gateway(o)]),
    )


def plan_sources(
    sources: Sequence[str],
    settings: PlanSettings,
    *,
    stdin: TextIO | None = None,
    recursive: bool = True,
) -> tuple[Plan, list[str]]:
    """gateway-plan: the plan of the objects in files (`-`: `stdin`; folders with every folder
    under them when `recursive`; no cluster, no LiteLLM), and a note for each source document
    of another API group, left out."""
    objects, notes = read_objects(sources, stdin=stdin, recursive=recursive)
    return plan_objects(objects, settings), notes


def _registry(objects: Sequence[Mapping[str, Any]], dirs: Sequence[str]) -> ProviderRegistry:
    """The InferenceProviderConfigs of `dirs`, else those among `objects`, else the shipped ones,
    with the flag catalogs (without them the merge admitted engine args that the webhook,
    `validate` and `render` deny, and registered the model in LiteLLM)."""
    if dirs:
        objects, _ = read_objects(dirs)  # the notes are the sources' own, printed once
    configs = [o for o in objects if o.get("kind") == INFERENCE_PROVIDER_CONFIG]
    return build_registry(configs or None)


def connect(settings: SyncSettings) -> Connection:
    """The LiteLLM client, and the API client unless the objects come from files."""
    litellm = LiteLLM(settings.litellm_url, settings.master_key)
    if settings.sources:
        api = None
        secrets: SecretSource = _file_secrets(settings.secrets_dir)
    else:
        api = api_client(settings.kubeconfig, context=settings.context)
        secrets = ClusterSecrets(api)
    # A loop's passes trust the View of LiteLLM for one interval: a pass a change wakes writes
    # and confirms what changed, the resync lists LiteLLM again (gateway.view).
    syncer = Syncer(
        litellm, secrets, confirm_timeout=settings.confirm_timeout, relist=settings.interval
    )
    return Connection(syncer, api)


def sync_once(settings: SyncSettings, connection: Connection | None = None) -> SyncReport:
    """One pass (over `connection`, kept across the passes of a loop; a new one by default)."""
    connection = connection or connect(settings)
    api = connection.api
    if api is None:  # files are read again every pass, Secrets included (rotation)
        objects, notes = read_objects(settings.sources, recursive=settings.recursive)
        for note in notes:
            log.info("gateway-sync %s", note)
        connection.syncer.secrets = _file_secrets(settings.secrets_dir)
    else:
        objects = list_objects(api)
    result = plan_objects(objects, settings.planning)
    results = connection.syncer.reconcile(result)
    if api is not None:
        providers = split(objects)[1]
        new = statuses(result, results, providers, now=_now())
        write_statuses(api, new, providers, connection.backoff)
    return SyncReport(result, tuple(results))


@dataclass(frozen=True, slots=True)
class FailedPass:
    """A pass of the loop that could not finish (LiteLLM or the API server unreachable)."""

    reason: str


def sync_loop(
    settings: SyncSettings,
    *,
    stop: threading.Event,
    report: Callable[[SyncReport], None],
    wake: threading.Event | None = None,
    leading: Callable[[], bool] = lambda: True,
) -> SyncReport | FailedPass | None:
    """Passes until `stop` is set, each report handed to `report`; the last pass's report,
    FailedPass when the last pass failed, None when stopped before any pass ran.

    A pass runs every `settings.interval` seconds (the resync) and, when `wake` is given, as soon
    as `wake` is set (a watch saw a change; a burst of changes within DEBOUNCE seconds is one
    pass). A failed pass (see PASS_FAILURES) is logged in one line and retried after 1, 2, 4 ...
    seconds, at most `interval`. While `leading()` is false (another replica holds the Lease)
    no pass runs. Whoever sets `stop` sets `wake` too, so that the loop ends at once."""
    connection = connect(settings)
    last: SyncReport | FailedPass | None = None
    passes = Backoff(1.0, settings.interval)  # failed passes in a row
    retry = 0.0
    while not stop.is_set():
        if leading():
            try:
                last = sync_once(settings, connection)
                report(last)  # inside: a failed write of the report is a failed pass, as ever
                passes.succeed(PASS)
            except PASS_FAILURES as err:
                log.warning("gateway-sync pass failed: %s", _first_line(err))
                last = FailedPass(_first_line(err))
                retry = passes.fail(PASS)[1]
        # A status the API server refused is tried again when its backoff ends, not only at the
        # resync or the next change (the connection's kubeio.backoff.Backoff).
        due = connection.backoff.next_in()
        interval = settings.interval if due is None else min(settings.interval, max(due, 0.1))
        if passes.count(PASS):
            stop.wait(min(interval, retry))
        elif wake is None:
            stop.wait(interval)
        elif wake.wait(interval):
            wake.clear()
            stop.wait(DEBOUNCE)
            wake.clear()
    return last


def _file_secrets(directory: str | None) -> FileSecrets:
    docs = read_documents([directory]) if directory else []
    return FileSecrets([d.obj for d in docs])


def _now() -> str:
    return dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _first_line(err: BaseException) -> str:
    if isinstance(err, kubernetes.client.ApiException):
        return f"API server answered {err.status} {err.reason}"
    return (str(err).splitlines() or [type(err).__name__])[0]
