"""AI Runway's own webhook tests, replayed through Runway's admission: every ModelDeployment
AI Runway's `modeldeployment_webhook_test.go` gives its validating webhook (ValidateCreate,
ValidateUpdate), with the decision AI Runway's webhook made on it, is admitted by Runway with the
shipped provider configs. Where the two decide differently, the reason must be one of the
deliberate differences below, and docs/airunway.md must list each with the number of test
objects whose decision it changes, as this replay counts them.

tests/data/airunway/webhook_tests.json holds the objects and AI Runway's decisions; its `source`
says where they come from and how they were recorded."""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from core.admission.pipeline import admit
from core.selection.configs import ProviderRegistry
from tests.support.paths import ROOT

RECORDED = json.loads((ROOT / "tests" / "data" / "airunway" / "webhook_tests.json").read_text())
PAGE = ROOT / "docs" / "airunway.md"
# How docs/airunway.md lists a difference that changes decisions: `**Name** (N of AI Runway's
# test objects)`.
LISTED = re.compile(r"\*\*(.+?)\*\* \((\d+) of AI Runway's test objects\)")


@dataclass(frozen=True)
class Difference:
    """A deliberate difference: its name in docs/airunway.md, and the error that shows it: one
    Runway gives (field and part of the message) or, when Runway allows, the one AI Runway gave."""

    name: str
    field: str
    message: str
    runway_allows: bool = False

    def explains(self, case: dict[str, Any], errors: tuple[Any, ...]) -> bool:
        if self.runway_allows:
            theirs = case.get("error", "")
            return not errors and theirs.startswith(f"{self.field}:") and self.message in theirs
        return any(e.path == self.field and self.message in str(e) for e in errors)


DELIBERATE = (
    Difference("A llama.cpp model must name its GGUF file", "spec.model.id", "names no GGUF file"),
    Difference("A name of at most 63 characters", "metadata.name", "must be at most 63 characters"),
    Difference(
        "Dynamo runs TRT-LLM disaggregated",
        "spec.serving.mode",
        "provider dynamo does not support disaggregated mode for engine trtllm",
        runway_allows=True,
    ),
)


def replayed(registry: ProviderRegistry) -> tuple[Counter[str], list[str]]:
    """How many recorded decisions each deliberate difference changes, and the changed decisions
    none of them explains."""
    changed: Counter[str] = Counter()
    unexplained = []
    for case in RECORDED["cases"]:
        errors = admit(case["object"], old=case.get("old"), registry=registry).errors
        if (not errors) == case["allowed"]:
            continue
        reasons = {d.name for d in DELIBERATE if d.explains(case, errors)}
        changed.update(reasons)
        if not reasons:
            verdict = "; ".join(str(e) for e in errors) or "allowed"
            unexplained.append(f"{case['test']}: AI Runway {case['allowed']}, Runway {verdict}")
    return changed, unexplained


def test_the_recording_holds_ai_runways_webhook_test_objects() -> None:
    cases = RECORDED["cases"]

    assert len(cases) >= 60
    assert {case["operation"] for case in cases} == {"CREATE", "UPDATE"}
    assert all(("old" in case) == (case["operation"] == "UPDATE") for case in cases)


def test_runway_decides_as_ai_runway_except_for_the_listed_differences(
    shipped: ProviderRegistry,
) -> None:
    changed, unexplained = replayed(shipped)

    assert unexplained == []
    assert dict(LISTED.findall(PAGE.read_text())) == {
        d.name: str(changed[d.name]) for d in DELIBERATE
    }


def test_a_difference_missing_from_the_page_is_found() -> None:
    page = PAGE.read_text()
    first = DELIBERATE[0].name

    assert f"**{first}**" in page
    assert first not in dict(LISTED.findall(page.replace(f"**{first}**", first)))
