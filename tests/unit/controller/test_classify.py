"""The bounds of the IncompatibleUpstream classification (controller/classify.py) and the
delayed queue that waits for them (controller/queue.py Queue.later).

The dry run itself is replaced here by a recorder (`Recorded._dry_run`): these tests are about
when the controller asks, under a clock the test moves, which no real API server can be
made to show. `answer_asked` is what the prober's own thread runs; the tests call it where
the thread would. What the real API server answers, and what the status says then, runs in
tests/e2e/test_status_controller.py and tests/e2e/test_flux.py."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import kubernetes
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.classify import Prober, ProbeSettings
from controller.queue import Queue
from core.admission.pipeline import admit
from core.model.kinds import ModelDeployment
from core.model.plugin import Workload
from core.status.incompatible import incompatible_message, is_builtin
from core.status.modeldeployment import model_deployment_status
from kubeio.shipped import bundled_versions
from tests.support.builders import model_deployment, shipped_registry
from tests.support.wait import wait_until


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Recorded(Prober):
    """A prober whose dry run records what it would send and answers `refuse`."""

    def __init__(self, clock: Clock, probe: ProbeSettings, refuse: str | None) -> None:
        self.answered: list[tuple[str, str]] = []
        super().__init__(
            kubernetes.client.ApiClient(),
            probe,
            bundled_versions(),
            clock=clock,
            on_answer=self.answered.append,
        )
        self.sent: list[tuple[float, str, str]] = []
        self.refuse = refuse
        self._now = clock

    def _dry_run(self, md: ModelDeployment, obj: Mapping[str, Any], ref: str) -> str | None:
        self.sent.append((self._now(), f"{md.namespace}/{md.name}", ref))
        return self.refuse


def admitted(name: str, generation: int = 1) -> ModelDeployment:
    obj = dict(
        admit(
            model_deployment(name, "ns", provider="vllm", engine="vllm", gpu=1),
            registry=shipped_registry(),
        ).obj
    )
    obj["metadata"] = {**obj["metadata"], "uid": f"uid-{name}", "generation": generation}
    return ModelDeployment(obj)


def watched(api_version: str, kind: str) -> bool:
    return (api_version, kind) == ("apps/v1", "Deployment")


def test_a_refused_object_fails_the_model_only_after_the_grace_and_names_no_builtin_field() -> None:
    clock = Clock()
    prober = Recorded(clock, ProbeSettings(grace=10, every=60, per_minute=30), "spec.x")
    registry, md = shipped_registry(), admitted("m")

    early = prober.check(md, registry, {}, watched)
    clock.now += 10
    asked = prober.check(md, registry, {}, watched)
    ran = prober.answer_asked()
    failed, again = prober.check(md, registry, {}, watched)

    assert (early, asked, ran, prober.answered) == ((None, 10.0), (None, None), 1, [("ns", "m")])
    assert prober.sent == [(1010.0, "ns/m", "Deployment/m")]
    assert again == 60.0
    assert failed == Workload(
        "Failed",
        "IncompatibleUpstream",
        "Deployment/m: the installed upstream does not declare a field; "
        "upgrade the upstream or Runway's pin",
        created=False,
    )
    status = model_deployment_status(md, failed, gateway=None, now="2026-12-02T10:00:00Z")
    assert status["phase"] == "Failed"
    assert [(c["type"], c["status"], c["reason"]) for c in status["conditions"]] == [
        ("Validated", "True", "ValidationPassed"),
        ("EngineSelected", "True", "ExplicitSelection"),
        ("ProviderSelected", "True", "ExplicitSelection"),
        ("ResourceCreated", "False", "IncompatibleUpstream"),
        ("Ready", "False", "IncompatibleUpstream"),
        ("Stalled", "True", "IncompatibleUpstream"),
    ]


def test_a_passing_dry_run_leaves_the_model_pending_and_an_object_seen_starts_a_new_grace() -> None:
    clock = Clock()
    prober = Recorded(clock, ProbeSettings(grace=5, every=60, per_minute=30), None)
    registry, md = shipped_registry(), admitted("m")

    prober.check(md, registry, {}, watched)
    clock.now += 5
    prober.check(md, registry, {}, watched)
    prober.answer_asked()
    passed = prober.check(md, registry, {}, watched)
    prober.forget(("ns", "m"))
    clock.now += 1
    regraced = prober.check(md, registry, {}, watched)

    assert passed == (None, 60.0)
    assert regraced == (None, 5.0)
    assert len(prober.sent) == 1


def test_an_object_the_controller_sees_or_does_not_watch_is_never_dry_run() -> None:
    clock = Clock()
    prober = Recorded(clock, ProbeSettings(grace=0, every=60, per_minute=30), "spec.x")
    registry, md = shipped_registry(), admitted("m")

    prober.check(md, registry, {"Deployment/m": {}}, watched)
    prober.answer_asked()
    seen = prober.check(md, registry, {"Deployment/m": {}}, watched)
    prober.forget(("ns", "m"))
    prober.check(md, registry, {}, lambda api_version, kind: False)
    prober.answer_asked()
    unwatched = prober.check(md, registry, {}, lambda api_version, kind: False)

    assert (seen, unwatched, prober.sent) == ((None, 60.0), (None, 60.0), [])


def test_the_message_names_the_field_of_a_custom_kind_and_summarises_a_builtin_one() -> None:
    assert [
        is_builtin(v) for v in ("v1", "apps/v1", "batch/v1", "ray.io/v1", "kaito.sh/v1beta1")
    ] == [
        True,
        True,
        True,
        False,
        False,
    ]
    assert incompatible_message("RayService/m", "spec.serveConfigV2", builtin=False) == (
        "RayService/m: the installed upstream does not declare field spec.serveConfigV2; "
        "upgrade the upstream or Runway's pin"
    )
    assert "a field;" in incompatible_message("Deployment/m", "spec.x", builtin=True)


STEPS = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", "c", "d"]),
        st.sampled_from([1, 2]),  # the model's generation
        st.floats(min_value=0, max_value=30),  # seconds before this check
        st.booleans(),  # the object appeared (forget) before this check
    ),
    max_size=60,
)


@settings(max_examples=60, deadline=None)
@given(STEPS, st.integers(min_value=1, max_value=4), st.sampled_from([None, "spec.x"]))
def test_dry_runs_respect_the_grace_the_interval_and_the_budget_for_any_sequence(
    steps: list[tuple[str, int, float, bool]], per_minute: int, refuse: str | None
) -> None:
    clock = Clock()
    probe = ProbeSettings(grace=10, every=60, per_minute=per_minute)
    prober = Recorded(clock, probe, refuse)
    registry = shipped_registry()
    models = {(n, g): admitted(n, g) for n in "abcd" for g in (1, 2)}
    missing_since: dict[str, tuple[int, float]] = {}
    last_sent: dict[tuple[str, int], float] = {}
    for name, generation, wait, appeared in steps:
        clock.now += wait
        if appeared:
            prober.forget(("ns", name))
            missing_since.pop(name, None)
            last_sent = {k: v for k, v in last_sent.items() if k[0] != name}
        if missing_since.get(name, (None,))[0] != generation:  # a new generation: a new grace
            missing_since[name] = (generation, clock.now)
            last_sent = {k: v for k, v in last_sent.items() if k[0] != name}
        before = len(prober.sent)
        workload, again = prober.check(models[(name, generation)], registry, {}, watched)
        if again is None:  # asked: the prober's thread answers, the worker asks once more
            assert prober.answer_asked() == 1 and prober.answered[-1] == ("ns", name)
            workload, again = prober.check(models[(name, generation)], registry, {}, watched)
        if len(prober.sent) > before:  # sent now: only after the grace of this generation
            assert clock.now - missing_since[name][1] >= probe.grace
            previous = last_sent.get((name, generation))
            assert previous is None or clock.now - previous >= probe.every
            last_sent[(name, generation)] = clock.now
        assert again is not None and again > 0  # a missing object is always asked about again
        assert (workload is not None) <= (refuse is not None)

    times = [t for t, _, _ in prober.sent]
    # never more than per_minute dry runs in any 60 s window
    assert all(sum(1 for u in times if t <= u < t + 60) <= per_minute for t in times)


def test_a_delayed_key_is_taken_when_due_and_the_earliest_ask_wins() -> None:
    clock = Clock()
    queue = Queue(clock=clock)
    queue.later(("ns", "a"), 30)
    queue.later(("ns", "a"), 10)
    queue.later(("ns", "b"), 20)

    first = queue.take(timeout=0)
    clock.now += 10
    second = queue.take(timeout=0)
    clock.now += 10
    third = queue.take(timeout=0)
    clock.now += 100
    fourth = queue.take(timeout=0)

    assert (first, second, third, fourth) == (None, ("ns", "a"), ("ns", "b"), None)


class Blocking(Recorded):
    """A dry run that waits until the test lets it answer (or fails as the network would)."""

    def __init__(self, clock: Clock, probe: ProbeSettings, refuse: str | None) -> None:
        super().__init__(clock, probe, refuse)
        self.started, self.release = threading.Event(), threading.Event()
        self.fail = False

    def _dry_run(self, md: ModelDeployment, obj: Mapping[str, Any], ref: str) -> str | None:
        self.started.set()
        self.release.wait(timeout=10)
        if self.fail:
            raise ConnectionError("connection refused")
        return super()._dry_run(md, obj, ref)


def test_the_worker_never_waits_for_a_dry_run_and_a_failed_one_is_asked_again() -> None:
    clock = Clock()
    prober = Blocking(clock, ProbeSettings(grace=0, every=60, per_minute=30), "spec.x")
    registry, md = shipped_registry(), admitted("m")
    stop = threading.Event()
    thread = threading.Thread(target=prober.run, args=(stop,), daemon=True)
    thread.start()
    try:
        asked = prober.check(md, registry, {}, watched)
        assert prober.started.wait(timeout=10)
        while_probing = prober.check(md, registry, {}, watched)  # returns: no second ask
        prober.release.set()
        wait_until(lambda: prober.answered, timeout=10, what="the answer")
        refused = prober.check(md, registry, {}, watched)
        prober.fail, prober.release = True, threading.Event()
        prober.started.clear()
        clock.now += 60
        again = prober.check(md, registry, {}, watched)
        assert prober.started.wait(timeout=10)
        prober.release.set()
        wait_until(lambda: len(prober.answered) == 2, timeout=10, what="the failed answer")
        after_failure = prober.check(md, registry, {}, watched)
    finally:
        stop.set()
        thread.join(timeout=10)

    assert (asked, while_probing, again) == ((None, None), (None, None), (refused[0], None))
    assert refused[0] is not None and refused[0].reason == "IncompatibleUpstream"
    assert len(prober.sent) == 1  # the failed one raised before recording
    assert after_failure == (None, 60.0)  # no answer is not a refusal: Pending, asked again
    assert prober.answered == [("ns", "m"), ("ns", "m")] and not thread.is_alive()
