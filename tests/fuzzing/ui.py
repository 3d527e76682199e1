"""The portal under hostile requests (issue #41, "Every input the pages take goes through the
same bounded readers"), for `make fuzz` and, with fewer examples, the unit tier.

Every route of an offline portal (static files aside) is asked with generated query strings
and, for those that take POST, generated form bodies that carry a valid CSRF token: the field
names are the ones the pages' own forms use (read from the rendered pages), plus generated ones;
the values are generated text, YAML-looking text, huge numbers and deep nesting. The rule: an
answer is never a 5xx or a traceback, and comes within ANSWER_SECONDS.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.fuzzing import Report
from tests.support.paths import EXAMPLES
from ui import security
from ui.app import create_app
from ui.settings import Mode, UiSettings

ANSWER_SECONDS = 5.0
KEY = b"f" * 32
FIELD = re.compile(r'name="([A-Za-z0-9_.\-\[\]]{1,64})"')
YAMLISH = st.sampled_from(
    [
        "",
        "a: [",
        "{{{{",
        "- - - -",
        "&a [*a, *a]",
        "apiVersion: airunway.ai/v1alpha1\nkind: ModelDeployment\nmetadata: {name: x}\nspec: 7",
        "kind: ExternalModelProvider\nspec: {models: [{id: 1}]}",
        "!!python/object:os.system ls",
        "x: " + "[" * 200 + "]" * 200,
        "9" * 400,
    ]
)
VALUES = st.one_of(st.text(max_size=200), YAMLISH, st.integers().map(str))


def portal(folder: Path) -> Flask:
    return create_app(UiSettings(mode=Mode.OFFLINE, sources=(str(folder),), secret_key=KEY))


def routes(app: Flask) -> list[tuple[str, set[str]]]:
    """Every route without parameters in its path (those with one get a generated value)."""
    found = []
    for rule in app.url_map.iter_rules():
        if rule.endpoint == "static":
            continue
        path = re.sub(r"<[^>]+>", "x", rule.rule)
        found.append((path, set(rule.methods or ()) & {"GET", "POST"}))
    return sorted(found, key=lambda r: r[0])


def field_names(client: FlaskClient, paths: list[str]) -> list[str]:
    names: set[str] = {"yaml", "name", "namespace"}
    for path in paths:
        names |= set(FIELD.findall(client.get(path).get_data(as_text=True)))
    return sorted(names - {security.CSRF_FIELD})


def check_routes(examples: int, report: Report) -> None:
    with tempfile.TemporaryDirectory(prefix="runway-ui-fuzz-") as tmp:
        folder = Path(tmp) / "examples"
        shutil.copytree(EXAMPLES, folder)
        app = portal(folder)
        client = app.test_client()
        client.get("/about")
        cookie = client.get_cookie(security.COOKIE)
        assert cookie is not None
        token = security.csrf_token(KEY, cookie.value)
        table = routes(app)
        names = field_names(client, [p for p, m in table if "GET" in m])
        slowest = [0.0]

        def ask(method: str, path: str, data: dict[str, str]) -> None:
            report.cases += 1
            started = time.perf_counter()
            headers = {"Sec-Fetch-Site": "same-origin", security.CSRF_HEADER: token}
            if method == "GET":
                answer = client.get(path, query_string=data, headers=headers)
            else:
                answer = client.post(path, data=data, headers=headers)
            took = time.perf_counter() - started
            slowest[0] = max(slowest[0], took)
            body = answer.get_data(as_text=True)
            if answer.status_code >= 500 or "Traceback" in body or took > ANSWER_SECONDS:
                report.failures.append(
                    f"{method} {path} {sorted(data)}: {answer.status_code} in {took:.2f} s"
                )

        forms = st.dictionaries(st.sampled_from(names) | st.text(max_size=8), VALUES, max_size=6)
        per_route = max(1, examples // max(1, len(table)))
        for path, methods in table:
            for method in sorted(methods):
                _each(forms, per_route, _asking(ask, method, path))
        report.numbers["slowest_ms"] = round(slowest[0] * 1000, 1)
        report.numbers["routes"] = len(table)


def _asking(
    ask: Callable[[str, str, dict[str, str]], None], method: str, path: str
) -> Callable[[dict[str, str]], None]:
    def check(data: dict[str, str]) -> None:
        ask(method, path, data)

    return check


def _each(strategy: st.SearchStrategy[Any], count: int, check: Callable[[Any], None]) -> None:
    settings(
        max_examples=count,
        phases=[Phase.generate],
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )(given(strategy)(check))()


def run(examples: int) -> Report:
    report = Report("ui")
    check_routes(examples, report)
    return report
