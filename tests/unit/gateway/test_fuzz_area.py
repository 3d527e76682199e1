"""The `make fuzz` area of the gateway classes runs and counts what it tried (a few examples
here; `make fuzz` runs thousands)."""

from __future__ import annotations

from tests.fuzzing import gateway


def test_the_gateway_fuzz_area_finds_nothing_in_a_short_run() -> None:
    report = gateway.run(40)

    assert (report.name, report.cases, report.failures) == ("gateway", 40, [])
