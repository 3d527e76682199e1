"""The strict Prometheus text reader (tests/support/promtext.py) the burst bench reads
kube-apiserver's /metrics with, and the deltas and bucket quantiles it computes."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.promtext import (
    Histogram,
    PromTextError,
    counter_deltas,
    histogram_deltas,
    parse,
)

BEFORE = """\
# HELP apiserver_admission_webhook_admission_duration_seconds [STABLE] Admission webhook latency
# TYPE apiserver_admission_webhook_admission_duration_seconds histogram
apiserver_admission_webhook_admission_duration_seconds_bucket{name="m.x",operation="CREATE",rejected="false",type="admit",le="0.005"} 1
apiserver_admission_webhook_admission_duration_seconds_bucket{name="m.x",operation="CREATE",rejected="false",type="admit",le="0.025"} 2
apiserver_admission_webhook_admission_duration_seconds_bucket{name="m.x",operation="CREATE",rejected="false",type="admit",le="0.1"} 2
apiserver_admission_webhook_admission_duration_seconds_bucket{name="m.x",operation="CREATE",rejected="false",type="admit",le="+Inf"} 2
apiserver_admission_webhook_admission_duration_seconds_sum{name="m.x",operation="CREATE",rejected="false",type="admit"} 0.02
apiserver_admission_webhook_admission_duration_seconds_count{name="m.x",operation="CREATE",rejected="false",type="admit"} 2
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",verb="POST"} 10
apiserver_request_total{code="429",verb="POST"} 1
# a free comment
apiserver_request_total{code="500",verb="GET",note="a \\"quoted\\" \\\\ back\\nslash"} 3 1700000000000
"""

AFTER = """\
# TYPE apiserver_admission_webhook_admission_duration_seconds histogram
apiserver_admission_webhook_admission_duration_seconds_bucket{name="m.x",operation="CREATE",rejected="false",type="admit",le="0.005"} 1
apiserver_admission_webhook_admission_duration_seconds_bucket{name="m.x",operation="CREATE",rejected="false",type="admit",le="0.025"} 52
apiserver_admission_webhook_admission_duration_seconds_bucket{name="m.x",operation="CREATE",rejected="false",type="admit",le="0.1"} 102
apiserver_admission_webhook_admission_duration_seconds_bucket{name="m.x",operation="CREATE",rejected="false",type="admit",le="+Inf"} 102
apiserver_admission_webhook_admission_duration_seconds_sum{name="m.x",operation="CREATE",rejected="false",type="admit"} 4.02
apiserver_admission_webhook_admission_duration_seconds_count{name="m.x",operation="CREATE",rejected="false",type="admit"} 102
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",verb="POST"} 310
apiserver_request_total{code="429",verb="POST"} 1
apiserver_request_total{code="429",verb="GET"} 4
apiserver_request_total{code="500",verb="GET",note="a \\"quoted\\" \\\\ back\\nslash"} 3 1700000000000
"""

SERIES = (
    ("name", "m.x"),
    ("operation", "CREATE"),
    ("rejected", "false"),
    ("type", "admit"),
)


def test_a_scrape_reads_every_series_with_its_labels_unescaped() -> None:
    scrape = parse(BEFORE)

    assert scrape.types == {
        "apiserver_admission_webhook_admission_duration_seconds": "histogram",
        "apiserver_request_total": "counter",
    }
    assert scrape.select("apiserver_request_total") == {
        (("code", "201"), ("verb", "POST")): 10.0,
        (("code", "429"), ("verb", "POST")): 1.0,
        (("code", "500"), ("note", 'a "quoted" \\ back\nslash'), ("verb", "GET")): 3.0,
    }
    assert scrape.select("apiserver_request_total", code="429") == {
        (("code", "429"), ("verb", "POST")): 1.0
    }


def test_histogram_delta_counts_only_the_new_observations_and_estimates_quantiles() -> None:
    deltas = histogram_deltas(
        parse(BEFORE), parse(AFTER), "apiserver_admission_webhook_admission_duration_seconds"
    )

    assert {k: (h.count, round(h.total, 9), h.buckets) for k, h in deltas.items()} == {
        SERIES: (100.0, 4.0, ((0.005, 0.0), (0.025, 50.0), (0.1, 100.0), (math.inf, 100.0)))
    }
    # p50: the 50th observation is the last of the (0.005, 0.025] bucket; p99 interpolates
    # 49/50 of the way through (0.025, 0.1].
    assert deltas[SERIES].quantile(0.5) == pytest.approx(0.025)
    assert deltas[SERIES].quantile(0.99) == pytest.approx(0.025 + 0.075 * 49 / 50)


def test_counter_delta_sums_over_the_labels_not_kept() -> None:
    assert counter_deltas(parse(BEFORE), parse(AFTER), "apiserver_request_total", ("code",)) == {
        (("code", "201"),): 300.0,
        (("code", "429"),): 4.0,
    }


def test_quantile_in_the_inf_bucket_is_the_largest_finite_bound() -> None:
    histogram = Histogram(count=4, total=40, buckets=((1.0, 1), (5.0, 2), (math.inf, 4)))

    assert histogram.quantile(0.99) == 5.0
    assert math.isnan(Histogram(0, 0, ()).quantile(0.5))


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("foo 1 2 3\n", "line 1: not a sample (name{labels} value [timestamp]): 'foo 1 2 3'"),
        ("foo abc\n", "line 1: value 'abc' is not a number: 'foo abc'"),
        ("foo{a=b} 1\n", "line 1: bad label set at 'a=b': 'foo{a=b} 1'"),
        ('foo{a="1",a="2"} 1\n', 'line 1: label a repeated: \'foo{a="1",a="2"} 1\''),
        ('foo{a="1"b="2"} 1\n', 'line 1: bad label set at \'a="1"b="2"\': \'foo{a="1"b="2"} 1\''),
        ("foo 1\nfoo 2\n", "line 2: series foo{} repeated: 'foo 2'"),
        (
            "# TYPE foo counter\n# TYPE foo gauge\n",
            "line 2: second # TYPE for foo: '# TYPE foo gauge'",
        ),
        ("# TYPE foo widget\n", "line 1: unknown type 'widget': '# TYPE foo widget'"),
        (
            'foo_bucket{le="1"} 1\n# TYPE foo histogram\n',
            "line 2: # TYPE for foo after its samples: '# TYPE foo histogram'",
        ),
        (
            "# TYPE foo histogram\nfoo_bucket 1\n",
            "line 2: histogram bucket without an le label: 'foo_bucket 1'",
        ),
        ("# TYPE\n", "line 1: # TYPE without a metric name: '# TYPE'"),
    ],
    ids=[
        "two-values",
        "not-a-number",
        "unquoted-label",
        "repeated-label",
        "missing-comma",
        "repeated-series",
        "second-type",
        "unknown-type",
        "type-after-samples",
        "bucket-without-le",
        "type-without-name",
    ],
)
def test_a_line_that_is_not_the_format_is_refused_by_number(text: str, error: str) -> None:
    with pytest.raises(PromTextError) as raised:
        parse(text)

    assert str(raised.value) == error


@pytest.mark.parametrize(
    ("buckets", "count", "error"),
    [
        ('foo_bucket{le="1"} 3\nfoo_bucket{le="+Inf"} 2\n', 2, "foo{}: bucket counts decrease"),
        ('foo_bucket{le="1"} 2\n', 2, "foo{}: no +Inf bucket"),
        (
            'foo_bucket{le="1"} 2\nfoo_bucket{le="+Inf"} 2\n',
            3,
            "foo{}: +Inf bucket 2.0 != _count 3.0",
        ),
    ],
    ids=["decreasing", "no-inf", "count-differs"],
)
def test_a_histogram_that_does_not_add_up_is_refused(buckets: str, count: int, error: str) -> None:
    text = f"# TYPE foo histogram\n{buckets}foo_sum 1\nfoo_count {count}\n"

    with pytest.raises(PromTextError) as raised:
        parse(text)

    assert str(raised.value) == error


@given(st.text(st.characters(codec="utf-8"), max_size=200))
def test_any_text_is_read_or_refused_with_a_promtext_error(text: str) -> None:
    try:
        scrape = parse(text)
    except PromTextError as err:
        assert str(err)
    else:
        assert all(isinstance(v, float) for v in scrape.samples.values())


LABEL_VALUES = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=20)


@given(
    st.dictionaries(
        st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True),
        LABEL_VALUES,
        max_size=4,
    ),
    st.floats(allow_nan=False),
)
def test_a_written_series_reads_back_as_written(labels: dict[str, str], value: float) -> None:
    def escaped(text: str) -> str:
        return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")

    body = ",".join(f'{k}="{escaped(v)}"' for k, v in labels.items())
    number = {math.inf: "+Inf", -math.inf: "-Inf"}.get(value, repr(value))

    scrape = parse(f"# TYPE metric gauge\nmetric{{{body}}} {number}\n")

    assert scrape.samples == {("metric", tuple(sorted(labels.items()))): value}
