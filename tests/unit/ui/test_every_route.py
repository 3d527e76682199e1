"""Every route of the offline portal under generated queries and forms (tests/fuzzing/ui.py,
`make fuzz` runs it with more examples): never a 5xx, a traceback, or a slow answer."""

from __future__ import annotations

from tests.fuzzing.ui import run


def test_no_route_fails_on_generated_input() -> None:
    report = run(200)
    assert report.failures == []
    assert report.cases >= report.numbers["routes"]
