"""Request values in logs and metrics (issue #18, class 5): one bounded log line per admission,
metric labels from fixed sets, /metrics parseable whatever the requests held."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest
from flask.testing import FlaskClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from kubeio.serverlogs import LOG_FORMAT
from tests.support.builders import model_deployment
from tests.support.webhook import review
from webhook.app import create_app
from webhook.logfields import FIELD_CHARS, field
from webhook.metrics import KINDS, OPERATIONS, OTHER, Metrics
from webhook.settings import Settings

BOUNDED = settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
ANY_TEXT = st.text(st.characters(codec="utf-8"), max_size=600)
LINE_BREAKS = ("\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")
KIND_LABELS = sorted({kind for _, kind in KINDS} | {OTHER})


@pytest.fixture(scope="module")
def client() -> Iterator[FlaskClient]:
    yield create_app(Settings()).test_client()


@pytest.fixture
def log_lines() -> Iterator[io.StringIO]:
    """What webhook.app logs, formatted as `runway serve` writes it."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    logger = logging.getLogger("webhook.app")
    logger.addHandler(handler)
    previous = logger.level
    logger.setLevel(logging.DEBUG)  # allowed admissions are logged at DEBUG (`serve -v`)
    try:
        yield stream
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)


def _logged(stream: io.StringIO) -> list[str]:
    text = stream.getvalue()
    stream.seek(0)
    stream.truncate()
    return text.splitlines()  # splits at every line break a log reader might honour


@BOUNDED
@given(value=ANY_TEXT)
def test_a_field_is_one_printable_token_of_bounded_size(value: str) -> None:
    written = field(value)
    quoted = written.startswith('"')
    inner = written[1:-1] if quoted else written

    assert written.isprintable()
    assert len(inner) <= FIELD_CHARS + len(f"...[{len(value)}chars]") + inner.count('\\"')
    assert quoted == any(c in inner for c in ' "=')  # one token for a key=value reader
    assert '"' not in inner.replace('\\"', "")  # every quote inside is escaped
    if len(value) <= FIELD_CHARS // 10:  # not cut: the escapes decode back to the value exactly
        assert inner.encode("latin-1", "backslashreplace").decode("unicode_escape") == value


def test_a_field_is_cut_with_its_length() -> None:
    assert field("u" * 2 * 1024 * 1024) == "u" * FIELD_CHARS + "...[2097152chars]"
    assert field("a\r\nb\\") == "a\\r\\nb\\\\"
    assert field('a b="c"') == '"a b=\\"c\\""'
    assert field("\u2028\x1b[31m") == "\\u2028\\x1b[31m"


@BOUNDED
@given(uid=ANY_TEXT, name=ANY_TEXT, namespace=ANY_TEXT)
def test_each_admission_writes_exactly_one_log_line(
    uid: str, name: str, namespace: str, client: FlaskClient, log_lines: io.StringIO
) -> None:
    document = review(model_deployment(name="m"), uid=uid or "u")
    document["request"]["object"]["metadata"] = {"name": name, "namespace": namespace}

    client.post("/validate", data=json.dumps(document), content_type="application/json")

    [line] = _logged(log_lines)
    assert f" uid={field(uid or 'u')} kind=ModelDeployment op=CREATE " in line
    assert f" obj={field(namespace)}/{field(name)} allowed=" in line
    assert len(line) < 2000


def test_a_forged_log_line_and_a_2_mib_uid_stay_one_short_line(
    client: FlaskClient, log_lines: io.StringIO
) -> None:
    for uid in ("u\r\n2026-12-01 00:00:00,000 INFO webhook.app admission uid=forged", "u" * 2**21):
        document = review(model_deployment(), uid=uid)
        client.post("/validate", data=json.dumps(document), content_type="application/json")

    lines = _logged(log_lines)
    assert [line.split(" webhook.app ", 1)[1].split(" op=", 1)[0] for line in lines] == [
        'admission uid="u\\r\\n2026-12-01 00:00:00,000 INFO webhook.app admission uid=forged"'
        " kind=ModelDeployment",
        f"admission uid={'u' * FIELD_CHARS}...[2097152chars] kind=ModelDeployment",
    ]


def _series(text: str) -> dict[str, list[dict[str, str]]]:
    """Every sample's labels by metric family; raises if the text is not the Prometheus format."""
    return {
        family.name: [sample.labels for sample in family.samples]
        for family in text_string_to_metric_families(text)
    }


KIND_SHAPES = st.one_of(ANY_TEXT, st.sampled_from([kind for _, kind in sorted(KINDS)]))
GROUPS = st.one_of(ANY_TEXT, st.sampled_from(sorted({group for group, _ in KINDS})))


@BOUNDED
@given(kinds=st.lists(st.tuples(GROUPS, KIND_SHAPES, st.sampled_from(sorted(OPERATIONS)))))
def test_metrics_stay_parseable_and_bounded_whatever_the_kinds(
    kinds: list[tuple[str, str, str]],
) -> None:
    metrics = Metrics()
    for group, kind, operation in kinds:
        metrics.observe(group=group, kind=kind, operation=operation, allowed=True, seconds=0.001)
        metrics.observe(group=group, kind=kind, operation=operation, allowed=False, seconds=0.2)

    requests = _series(metrics.render())["runway_admission_requests"]
    labels = {(s["kind"], s["operation"], s["allowed"]) for s in requests}
    assert labels == {
        (kind if (group, kind) in KINDS else OTHER, operation, allowed)
        for group, kind, operation in kinds
        for allowed in ("true", "false")
    }
    assert {kind for kind, _, _ in labels} <= set(KIND_LABELS)


def test_a_kind_with_a_quote_and_a_newline_forges_no_sample() -> None:
    client = create_app(Settings()).test_client()  # its own metrics
    forged = 'x"} 1\nrunway_admission_requests_total{kind="forged'
    for kind in (forged, "k" * 2 * 1024 * 1024):
        document = review(model_deployment(), operation="DELETE", kind=("", "v1", kind), uid="u")
        document["request"]["object"] = None
        assert client.post("/validate", json=document).status_code == 200

    metrics = client.get("/metrics").get_data(as_text=True)
    assert _series(metrics)["runway_admission_requests"] == [
        {"kind": OTHER, "operation": "DELETE", "allowed": "true"}
    ]
    assert len(metrics) < 2000
