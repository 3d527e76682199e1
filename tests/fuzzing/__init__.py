"""`make fuzz` classes beyond generated AdmissionReviews: one module per area.

Each area module exposes `run(examples: int) -> Report`: it generates `examples` hostile cases
of its class (bounded in count and time, loopback only), checks the rule the class protects on
each, and returns what it counted. `tests/fuzz.py` runs every module in AREAS, prints each
report, and fails when any report has a failure.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Report:
    """One area's answer: cases tried, the cases that broke the rule, and measured figures."""

    name: str
    cases: int = 0
    failures: list[str] = field(default_factory=list)  # one line per broken case, no secrets
    numbers: dict[str, float] = field(default_factory=dict)  # e.g. {"p99_ms": 12.0}

    def line(self) -> str:
        figures = ", ".join(f"{k} {v:g}" for k, v in sorted(self.numbers.items()))
        return f"{self.name}: {self.cases} cases, {len(self.failures)} failures" + (
            f" ({figures})" if figures else ""
        )


# Area modules, imported by tests/fuzz.py: add yours here as `from tests.fuzzing import area`
# in tests/fuzz.py's AREAS tuple.
