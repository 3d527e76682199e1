"""Issue #40, item 6: one provider config's bad health annotation is that config's problem only.

A generated set of configs, some with selectors the API server would refuse to parse, some with
selectors the (stand-in) server refuses anyway, some whose status write is refused: one health
pass gives every other config its status and heartbeat. Before, the first refused pod list
(`provider health: (400)`) ended the pass, and no config got a heartbeat again."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.kinds import PROVIDER_CONFIGS
from controller.metrics import Metrics
from controller.observe import Observer, ObserveSettings
from tests.support.healthapi import Refusals, health_api

NOW = dt.datetime(2026, 12, 7, 4, 0, tzinfo=dt.UTC)
GOOD = ["app=op", "app in (a, b)", "!legacy", "tier notin (x),app", "app.kubernetes.io/name==op"]
UNPARSEABLE = ["app in (a, b", "app in (a, b", "a b", "=x", "a>z", "-a=b", "a,,b"]
REFUSED = ["refused=1", "refused=2"]  # parseable; the stand-in server answers 400 anyway
KINDS = st.sampled_from(["good", "unparseable", "refused"])


def config(name: str, selectors: list[str]) -> dict[str, Any]:
    health = {"operatorPods": [{"namespace": "ops", "selectors": selectors}]} if selectors else {}
    return {
        "apiVersion": "airunway.ai/v1alpha1",
        "kind": "InferenceProviderConfig",
        "metadata": {
            "name": name,
            "generation": 1,
            "annotations": {"airunway.ai/health": json.dumps(health)},
        },
        "spec": {"capabilities": {"engines": []}},
    }


@st.composite
def configs(draw: st.DrawFn) -> tuple[list[dict[str, Any]], dict[str, str], frozenset[str]]:
    """Configs, the kind of each (good, unparseable, refused), and those whose write fails."""
    kinds = draw(st.lists(KINDS, min_size=1, max_size=8))
    out, kind_of = [], {}
    for i, kind in enumerate(kinds):
        pool = {"good": GOOD, "unparseable": UNPARSEABLE, "refused": REFUSED}[kind]
        selectors = draw(st.lists(st.sampled_from(GOOD), max_size=2))
        selectors.insert(draw(st.integers(0, len(selectors))), draw(st.sampled_from(pool)))
        out.append(config(f"c{i}", selectors))
        kind_of[f"c{i}"] = kind
    writes = draw(st.sets(st.sampled_from(sorted(kind_of)), max_size=2))
    return out, kind_of, frozenset(writes)


def pass_once(objects: list[dict[str, Any]], refusals: Refusals) -> dict[str, dict[str, Any]]:
    """One health pass of a real Observer against the stand-in; the statuses written."""
    with health_api(refusals) as server:
        api = server.client()
        observer = Observer(api, ObserveSettings(), Metrics(), lambda: True, clock=lambda: NOW)
        observer.cache.replace(PROVIDER_CONFIGS.kind, objects)
        try:
            observer.check_providers(api, version="v", heartbeat=60)
        finally:
            api.close()
    return refusals.written


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(configs())
def test_every_config_but_the_refused_writes_gets_its_heartbeat(
    case: tuple[list[dict[str, Any]], dict[str, str], frozenset[str]],
) -> None:
    objects, kind_of, refused_writes = case
    written = pass_once(objects, Refusals(frozenset(REFUSED), refused_writes))

    reasons = {
        "good": "OperatorNotReady",  # no operator pod runs on the stand-in
        "unparseable": "HealthAnnotationInvalid",
        "refused": "OperatorCheckFailed",
    }
    assert {
        name: (status["lastHeartbeat"], status["conditions"][0]["reason"])
        for name, status in written.items()
    } == {
        name: ("2026-12-07T04:00:00Z", reasons[kind])
        for name, kind in kind_of.items()
        if name not in refused_writes
    }


def test_the_reported_selector_fails_its_own_config_only() -> None:
    objects = [config("bad", ["app in (a, b"]), config("good", []), config("new", ["app=op"])]
    written = pass_once(objects, Refusals())

    assert {n: (s["ready"], s["conditions"][0]["reason"]) for n, s in written.items()} == {
        "bad": (False, "HealthAnnotationInvalid"),
        "good": (True, "UpstreamReady"),
        "new": (False, "OperatorNotReady"),
    }
    assert written["bad"]["conditions"][0]["message"] == (
        "airunway.ai/health: operatorPods[0].selectors[0] is not a label selector the API "
        "server accepts: unable to parse requirement: found '', expected: ',' or ')'"
    )
