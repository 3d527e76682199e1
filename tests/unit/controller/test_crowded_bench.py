"""The crowded-cluster bench's parts that need no cluster (bench/crowded.py, bench/plot.py): the
SVG writer is deterministic and well-formed, its ticks cover the data, the bench reads the
controller's /metrics, /proc/PID/status and /proc/PID/stat and turns samples into rates and a
CSV; and the controller's cache holds objects compacted (shared keys and short strings, no
managedFields, the same content) and says what it holds (controller/cache.py, metrics.py)."""

from __future__ import annotations

import itertools
import json
import math
import os
import sys
import xml.etree.ElementTree as ET
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench.crowded import Sample, csv_of, parse_metrics, plot_of, rates
from bench.plot import Panel, Series, render, ticks
from bench.procfs import cpu_of, rss_of
from controller.cache import SHORT, Cache, compact, held
from controller.metrics import Metrics

SVG = "{http://www.w3.org/2000/svg}"


def _samples() -> list[Sample]:
    return [
        Sample(
            0.5 * i,
            50.0 + i,
            float(10 - i),
            (("Deployment", 100.0 * i), ("ModelDeployment", 40.0 * i)),
        )
        for i in range(6)
    ]


def test_the_plot_is_the_same_text_for_the_same_samples_and_well_formed() -> None:
    first, again = (
        plot_of(_samples(), "crowded (2026-12-08)"),
        plot_of(_samples(), "crowded (2026-12-08)"),
    )
    root = ET.fromstring(first)
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert first == again
    assert root.tag == f"{SVG}svg"
    assert len(list(root.iter(f"{SVG}polyline"))) == 4  # RSS, two event rates, queue depth
    assert "target 300" in texts
    for label in (
        "crowded (2026-12-08)",
        "RSS (MB)",
        "events / s",
        "keys queued",
        "seconds since the controller started",
    ):
        assert label in texts


def test_a_title_with_markup_is_escaped() -> None:
    text = render("a <b> & c", "x", [Panel("p", "y", (Series("s<1>", ((0.0, 1.0), (1.0, 2.0))),))])
    texts = [t.text for t in ET.fromstring(text).iter(f"{SVG}text")]
    assert (texts[0], texts[-2]) == ("a <b> & c", "s<1>")


def test_a_plot_of_no_samples_still_renders() -> None:
    root = ET.fromstring(plot_of([], "empty"))
    assert [p.get("points") for p in root.iter(f"{SVG}polyline")] == []


@given(
    st.floats(min_value=-1e9, max_value=1e9, allow_nan=False),
    st.floats(min_value=0, max_value=1e9, allow_nan=False),
)
def test_ticks_cover_the_range_in_round_steps(low: float, span: float) -> None:
    high = low + span
    got = ticks(low, high)
    steps = {round(b - a, 6) for a, b in itertools.pairwise(got)}
    assert got[0] <= low and got[-1] >= high
    assert 2 <= len(got) <= 12
    assert len({round(s / 10 ** math.floor(math.log10(s)), 6) for s in steps if s > 0}) <= 1


def test_ticks_refuse_an_infinite_range() -> None:
    with pytest.raises(ValueError, match="not finite"):
        ticks(0.0, math.inf)


def test_the_bench_reads_the_controllers_metrics() -> None:
    metrics = Metrics()
    for _ in range(3):
        metrics.event("Deployment")
    text = metrics.render(queue_depth=7, cached={"Deployment": 2, "ModelDeployment": 1})
    got = parse_metrics(text)
    assert (
        got[("runway_status_watch_events_total", "Deployment")],
        got[("runway_status_watch_events_total", "HTTPRoute")],
        got[("runway_status_queue_depth", "")],
        got[("runway_status_cached_objects", "Deployment")],
        got[("runway_status_cached_objects", "ExternalModelProvider")],
    ) == (3.0, 0.0, 7.0, 2.0, 0.0)


@given(st.text(max_size=300))
def test_any_text_parses_to_numbers_or_nothing(text: str) -> None:
    got = parse_metrics(text)
    assert all(isinstance(v, float) for v in got.values())


def test_rss_comes_from_the_status_file_and_a_file_without_it_is_named() -> None:
    status = "Name:\tpython\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\nThreads:\t9\n"
    assert rss_of(status) == (100.0, 200.0)
    with pytest.raises(ValueError, match="VmRSS or VmHWM"):
        rss_of("Name:\tzombie\n")


def test_rates_and_csv_of_the_samples() -> None:
    samples = _samples()
    assert rates(samples, "Deployment")[:2] == ((0.5, 200.0), (1.0, 200.0))
    lines = csv_of(samples[:2]).splitlines()
    assert lines == [
        "seconds,rss_mb,queue_depth,events_Deployment,events_ModelDeployment",
        "0.00,50.0,10,0,0",
        "0.50,51.0,9,100,40",
    ]


def test_the_cache_holds_objects_without_managed_fields_and_counts_them() -> None:
    cache = Cache()
    deployment = {
        "metadata": {"name": "a", "namespace": "ns", "managedFields": [{"manager": "kubectl"}]},
        "status": {"readyReplicas": 1},
    }
    cache.put("Deployment", deployment)
    cache.replace("ModelDeployment", [{"metadata": {"name": "m", "namespace": "ns"}}])
    held = cache.get("Deployment", "ns", "a") or {}
    assert (held, cache.keys(), cache.counts()) == (
        {"metadata": {"name": "a", "namespace": "ns"}, "status": {"readyReplicas": 1}},
        [("Deployment", "ns", "a"), ("ModelDeployment", "ns", "m")],
        {"Deployment": 1, "ModelDeployment": 1},
    )


def test_held_objects_share_their_keys_and_short_strings_and_keep_their_content() -> None:
    def decoded(name: str) -> dict[str, Any]:  # two objects decoded apart, as two watch events
        return json.loads(
            json.dumps(
                {
                    "metadata": {"name": name, "namespace": "team-a", "managedFields": [{}]},
                    "status": {"conditions": [{"type": "Available", "status": "True"}]},
                    "spec": {"note": "n" * (SHORT + 1)},
                }
            )
        )

    a, b = held(decoded("a")), held(decoded("b"))
    first, second = (
        next(iter(a["status"]["conditions"][0])),
        next(iter(b["status"]["conditions"][0])),
    )
    assert a == {**decoded("a"), "metadata": {"name": "a", "namespace": "team-a"}}
    assert first is second and a["metadata"]["namespace"] is b["metadata"]["namespace"]
    assert a["spec"]["note"] is not b["spec"]["note"]  # a long string is held as it came


def test_an_object_too_deep_to_walk_is_held_as_it_came() -> None:
    deep: dict[str, Any] = {}
    inner = deep
    for _ in range(sys.getrecursionlimit() + 10):
        inner["x"] = {}
        inner = inner["x"]
    obj = {"metadata": {"name": "deep", "namespace": "ns"}, "spec": deep}
    assert held(obj) is obj


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=80),
        lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4),
        max_leaves=30,
    )
)
def test_compacting_keeps_any_decoded_json_equal(value: Any) -> None:
    assert compact(value) == value


def test_cpu_seconds_come_from_the_stat_file_and_a_short_one_is_named() -> None:
    ticks_per_second = os.sysconf("SC_CLK_TCK")
    stat = (
        f"42 (run way) S 1 42 42 0 -1 4194560 1 0 0 0 {3 * ticks_per_second} {ticks_per_second} 0 0"
    )
    assert cpu_of(stat) == 4.0
    with pytest.raises(ValueError, match="too few fields"):
        cpu_of("42 (x) S 1")
