"""IncompatibleUpstream in GitOps mode: why a ModelDeployment's upstream object is missing.

Flux and Argo CD dry-run every object of a revision before they apply any: when the installed
upstream CRD is older than Runway's pin, the dry run refuses and nothing of that revision is
applied. A ModelDeployment already in the cluster then lacks the objects the GitOps engine
could not (re)create, for example after its upstream CRD was reinstalled at an older version,
which deletes every object of that CRD. The status mapping sees only "does not exist yet".

So, once a model's primary object has been missing for `grace` seconds, the controller renders
the stored (admitted) ModelDeployment with the same core the renderer uses and sends each
missing object of a kind it watches to the API server as a create with dryRun=All and
fieldValidation=Strict: nothing is ever written. A refusal the core classifies as an upstream
schema mismatch (core.schema.upstream) turns the model Failed with reason IncompatibleUpstream
(core.status.incompatible). Any other answer leaves it Pending: the objects may simply not be
applied yet. The answer is kept for the model's generation and asked again every `every`
seconds while the object stays missing, so upgrading the CRD recovers the model with no touch:
the next probe passes (Pending), and the GitOps engine's next sync creates the object.

Bounded: at most `per_minute` dry runs a minute across all models (the rest wait their turn),
each a single request with the client's timeout. The dry runs run on the prober's own thread
(`run`): the worker that writes status never waits for one. `check` only asks; when the answer
is in, `on_answer(key)` queues the model again and the next `check` returns it.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import kubernetes
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import DynamicApiError, ResourceNotFoundError

from core.model.kinds import ModelDeployment, dig
from core.model.plugin import Workload
from core.model.versions import Versions
from core.rendering.assemble import render_model
from core.schema.upstream import classify_write_error
from core.selection.configs import ProviderRegistry
from core.status.incompatible import incompatible_workload, is_builtin
from kubeio.client import error_message

log = logging.getLogger(__name__)
FIELD_MANAGER = "runway-status-dry-run"


@dataclass(frozen=True, slots=True)
class ProbeSettings:
    grace: float = 10.0  # seconds an object is missing before its model is probed
    every: float = 60.0  # seconds between probes of one model while its object stays missing
    per_minute: int = 30  # dry runs a minute, across every model
    timeout: float = 10.0  # seconds for one dry run


@dataclass(frozen=True, slots=True)
class _Answer:
    uid: str
    generation: Any
    at: float
    workload: Workload | None  # the IncompatibleUpstream workload, or None: nothing refused


@dataclass(frozen=True, slots=True)
class _Ask:
    md: ModelDeployment
    registry: ProviderRegistry
    observed: Mapping[str, Mapping[str, Any]]
    watched: Callable[[str, str], bool]


class Prober:
    """Dry runs of a model's missing objects, remembered per model and generation."""

    def __init__(
        self,
        api: kubernetes.client.ApiClient,
        settings: ProbeSettings,
        pins: Versions,
        *,
        clock: Callable[[], float] = time.monotonic,
        on_probe: Callable[[bool], None] = lambda refused: None,
        on_answer: Callable[[tuple[str, str]], None] = lambda key: None,
    ) -> None:
        self._on_probe = on_probe
        self._on_answer = on_answer
        self._api = api
        self._settings = settings
        self._pins = pins
        self._clock = clock
        self._lock = threading.Lock()
        self._dynamic: DynamicClient | None = None  # discovery at the first probe, not before
        self._missing: dict[tuple[str, str], tuple[str, Any, float]] = {}
        self._answers: dict[tuple[str, str], _Answer] = {}
        self._sent: collections.deque[float] = collections.deque()
        self._asked: dict[tuple[str, str], _Ask] = {}  # waiting for the prober's thread
        self._probing: set[tuple[str, str]] = set()  # on the prober's thread now
        self._wake = threading.Event()

    def forget(self, key: tuple[str, str]) -> None:
        """The model's objects exist (or it is gone): a later absence starts a new grace."""
        with self._lock:
            self._missing.pop(key, None)
            self._answers.pop(key, None)
            self._asked.pop(key, None)

    def check(
        self,
        md: ModelDeployment,
        registry: ProviderRegistry,
        observed: Mapping[str, Mapping[str, Any]],
        watched: Callable[[str, str], bool],
    ) -> tuple[Workload | None, float | None]:
        """(the IncompatibleUpstream workload of `md` as last answered, or None; seconds after
        which to ask again, or None when a dry run was asked for: its answer calls
        `on_answer`). `md`'s primary object is missing; `watched(apiVersion, kind)` says which
        rendered kinds the controller watches (the only ones it can see missing)."""
        key = (md.namespace, md.name)
        uid = str(dig(md.obj, "metadata", "uid") or "")
        generation = dig(md.obj, "metadata", "generation")
        now = self._clock()
        with self._lock:
            since = self._missing.get(key)
            if since is None or since[:2] != (uid, generation):
                since = (uid, generation, now)
                self._missing[key] = since
            answer = self._answers.get(key)
            if answer is not None and (answer.uid, answer.generation) != (uid, generation):
                answer = None
            waited = now - since[2]
            if waited < self._settings.grace:
                return None, self._settings.grace - waited
            held = answer.workload if answer is not None else None
            if answer is not None and now - answer.at < self._settings.every:
                return held, self._settings.every - (now - answer.at)
            if key in self._asked:  # not started yet: it runs with the newest object
                self._asked[key] = _Ask(md, registry, dict(observed), watched)
                return held, None
            if key in self._probing:  # its answer names the generation it probed
                return held, None
            while self._sent and now - self._sent[0] >= 60.0:
                self._sent.popleft()
            if len(self._sent) >= self._settings.per_minute:
                return held, 60.0 - (now - self._sent[0])
            self._sent.append(now)
            self._asked[key] = _Ask(md, registry, dict(observed), watched)
        self._wake.set()
        return held, None

    def run(self, stop: threading.Event) -> None:
        """The prober's thread: answer what `check` asked until `stop`."""
        while not stop.is_set():
            if self._wake.wait(timeout=0.5):
                self._wake.clear()
                self.answer_asked()

    def answer_asked(self) -> int:
        """Run every asked dry run now, one model at a time; how many ran."""
        done = 0
        while True:
            with self._lock:
                if not self._asked:
                    return done
                key = next(iter(self._asked))
                ask = self._asked.pop(key)
                self._probing.add(key)
            try:
                workload = self._probe(ask.md, ask.registry, ask.observed, ask.watched)
            except Exception as err:  # the API server unreachable, a timeout: ask again later
                log.warning("status-controller: %s/%s: dry run failed: %s", *key, err)
                workload = None
            finally:
                with self._lock:
                    self._probing.discard(key)
            uid = str(dig(ask.md.obj, "metadata", "uid") or "")
            generation = dig(ask.md.obj, "metadata", "generation")
            with self._lock:
                if key in self._missing:  # not forgotten (created or gone) meanwhile
                    self._answers[key] = _Answer(uid, generation, self._clock(), workload)
            self._on_probe(workload is not None)
            self._on_answer(key)
            done += 1

    def _probe(
        self,
        md: ModelDeployment,
        registry: ProviderRegistry,
        observed: Mapping[str, Mapping[str, Any]],
        watched: Callable[[str, str], bool],
    ) -> Workload | None:
        try:
            objects = render_model(md, registry, self._pins, None)
        except Exception:  # an object the core cannot render has no upstream to blame
            log.exception("status-controller: %s/%s: rendering to classify", md.namespace, md.name)
            return None
        for obj in objects:
            ref = f"{obj.get('kind')}/{dig(obj, 'metadata', 'name')}"
            if ref in observed or not watched(str(obj.get("apiVersion")), str(obj.get("kind"))):
                continue
            field = self._dry_run(md, obj, ref)
            if field is not None:
                builtin = is_builtin(str(obj.get("apiVersion")))
                return incompatible_workload(ref, field or None, builtin=builtin)
        return None

    def _dry_run(self, md: ModelDeployment, obj: Mapping[str, Any], ref: str) -> str | None:
        """The field the API server refuses in `obj` (possibly ''), or None when it does not
        refuse it for an upstream-schema reason. A create with dryRun=All: never written."""
        if self._dynamic is None:
            self._dynamic = DynamicClient(self._api)
        try:
            resource = self._dynamic.resources.get(
                api_version=str(obj["apiVersion"]), kind=str(obj["kind"])
            )
            resource.create(
                body=dict(obj),
                namespace=md.namespace,
                query_params=[
                    ("dryRun", "All"),
                    ("fieldValidation", "Strict"),
                    ("fieldManager", FIELD_MANAGER),
                ],
                _request_timeout=self._settings.timeout,
            )
        except ResourceNotFoundError:
            return None  # the CRD is not installed: provider health says so
        except DynamicApiError as err:
            message = error_message(err)
            classified = classify_write_error(message)
            if classified is None:
                log.info("status-controller: dry run of %s refused: %s", ref, message[:500])
                return None
            log.warning(
                "status-controller: %s/%s: %s refused, field=%s",
                md.namespace,
                md.name,
                ref,
                classified.field,
            )
            return classified.field
        return None
