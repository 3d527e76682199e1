"""Per-object isolation in the status controller (issue #40, class 4), for `make fuzz`.

* Replica counts: DynamoGraphDeployment services and RayService worker groups with generated
  int64 counts; the ModelDeployment status must pass the CRD's status schema, int32 formats
  included (a status past int32 is refused whole by the API server).
* Health selectors: generated sets of provider configs, some with selectors Runway's parser
  refuses, some the (stand-in) API server refuses, some whose status write it refuses; one
  health pass must give every other config its status and heartbeat.
* Refused writes: six models whose status writes the stand-in refuses (422) and one that it
  accepts, queued behind them; the figure is how long the good one waits (it used to be 11.8 to
  13.5 s: a 2 s sleep per failure), and none of the refused ones may be tried twice first.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from controller.kinds import MODEL_DEPLOYMENTS, PROVIDER_CONFIGS
from controller.metrics import Metrics
from controller.observe import Observer, ObserveSettings
from core.admission.pipeline import admit
from core.model.kinds import ModelDeployment
from core.status.modeldeployment import model_deployment_status
from providers.modules import plugins
from tests.fuzzing import Report
from tests.support.builders import model_deployment, shipped_registry
from tests.support.healthapi import Refusals, health_api
from tests.support.statusschema import schema_errors
from tests.support.wait import wait_until

INT64 = st.integers(-(2**63), 2**63 - 1)
COUNTS = st.lists(st.tuples(INT64, INT64, INT64), min_size=1, max_size=6)
GOOD = ["app=op", "app in (a, b)", "!legacy", "tier notin (x),app"]
UNPARSEABLE = ["app in (a, b", "a b", "=x", "a>z", "-a=b", "a,,b", "x.y/z/w=1"]
REFUSED = ["refused=1", "refused=2"]
NOW = "2026-12-07T04:00:00Z"


def _each(strategy: st.SearchStrategy[Any], count: int, check: Callable[[Any], None]) -> None:
    run = settings(
        max_examples=count,
        phases=[Phase.generate],
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )(given(strategy)(check))
    run()


def replica_counts(examples: int, report: Report) -> None:
    by_name = {p.name: p for p in plugins()}
    dynamo = ModelDeployment(
        model_deployment(
            "m", "ns", provider="dynamo", engine="vllm", resources={"gpu": {"count": 1}}
        )
    )

    def check(services: list[tuple[int, int, int]]) -> None:
        report.cases += 1
        graph = {
            "status": {
                "state": "successful",
                "services": {
                    f"S{i}": {"replicas": r, "readyReplicas": ready, "availableReplicas": a}
                    for i, (r, ready, a) in enumerate(services)
                },
            }
        }
        workload = by_name["dynamo"].watched.workload_status(
            dynamo, {"DynamoGraphDeployment/m": graph}
        )
        errors = schema_errors(model_deployment_status(dynamo, workload, gateway=None, now=NOW))
        if errors:
            report.failures.append(f"replica counts {services[:2]}: {errors[0]}")

    _each(COUNTS, examples, check)


def _config(name: str, selectors: list[str]) -> dict[str, Any]:
    health = {"operatorPods": [{"namespace": "ops", "selectors": selectors}]}
    return {
        "apiVersion": "airunway.ai/v1alpha1",
        "kind": "InferenceProviderConfig",
        "metadata": {"name": name, "annotations": {"airunway.ai/health": json.dumps(health)}},
        "spec": {"capabilities": {"engines": []}},
    }


CONFIG_SETS = st.lists(
    st.sampled_from(GOOD + UNPARSEABLE + REFUSED), min_size=1, max_size=8
).flatmap(lambda chosen: st.tuples(st.just(chosen), st.sets(st.integers(0, len(chosen) - 1))))


def health_isolation(examples: int, report: Report) -> None:
    def check(case: tuple[list[str], set[int]]) -> None:
        report.cases += 1
        selectors, refused_writes = case
        objects = [_config(f"c{i}", [s]) for i, s in enumerate(selectors)]
        refusals = Refusals(frozenset(REFUSED), frozenset(f"c{i}" for i in refused_writes))
        with health_api(refusals) as server:
            api = server.client()
            observer = Observer(api, ObserveSettings(), Metrics(), lambda: True)
            observer.cache.replace(PROVIDER_CONFIGS.kind, objects)
            try:
                observer.check_providers(api, version="v", heartbeat=60)
            except Exception as err:  # a pass that ends is the failure this class looks for
                report.failures.append(f"health pass ended: {type(err).__name__}: {err}"[:200])
                return
            finally:
                api.close()
        missing = {f"c{i}" for i in range(len(selectors)) if i not in refused_writes}
        missing -= set(refusals.written)
        if missing:
            report.failures.append(f"no heartbeat for {sorted(missing)} of {selectors}")

    _each(CONFIG_SETS, examples, check)


def refused_writes(report: Report) -> None:
    """Six refused models, then one good: seconds until the good one's status is written."""
    names = [f"bad{i}" for i in range(6)]
    refusals = Refusals(writes=frozenset(names))
    stop = threading.Event()
    with health_api(refusals) as server:
        api = server.client()
        observer = Observer(api, ObserveSettings(), Metrics(), lambda: True)
        stored = []
        for name in [*names, "good"]:
            obj = model_deployment(name, "ns", provider="vllm", engine="vllm", gpu=1)
            admitted = dict(admit(obj, registry=shipped_registry()).obj)
            admitted["metadata"] = {**admitted["metadata"], "generation": 1}
            stored.append(admitted)
        observer.cache.replace(MODEL_DEPLOYMENTS.kind, stored)
        thread = threading.Thread(target=observer.work, args=(stop,), daemon=True)
        thread.start()
        try:
            for name in names:
                observer.queue.add(("ns", name))
            queued = time.monotonic()
            observer.queue.add(("ns", "good"))
            wait_until(lambda: "good" in refusals.written, timeout=60, what="the good model")
            report.numbers["unrelated_model_ms"] = round((time.monotonic() - queued) * 1000, 1)
        finally:
            stop.set()
            thread.join(timeout=10)
            api.close()
    report.cases += 1
    with refusals.lock:
        first = next(t for t, n in refusals.attempts if n == "good")
        early = [n for t, n in refusals.attempts if t < first]
    if any(early.count(n) > 1 for n in names):
        report.failures.append(f"a refused model was retried before the good one: {early}")


def run(examples: int) -> Report:
    report = Report("status (replica counts, health selectors, refused writes)")
    quiet = logging.getLogger("controller")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # the refusals are the point here, not news
    try:
        replica_counts(examples, report)
        health_isolation(max(examples // 10, 1), report)
        refused_writes(report)
    finally:
        quiet.setLevel(level)
    return report
