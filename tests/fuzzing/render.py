"""`make fuzz` area "render": hostile names and paths, links, and YAML aliases against the renderer.

Three classes, each checking the rule it protects:
- names: generated names and namespaces through admission; every admitted one renders objects
  whose names, namespaces and label values the API server accepts (core/model/names.py);
- paths and links: real renders into real Git repositories with hostile names and links planted
  in the tree or the sources; nothing outside the repository changes (renderer/git/safefs.py);
- aliases: generated nested-alias documents; refused exactly when they expand past the bound,
  and the slowest answer is reported (kubeio/sources.py);
- ownership across roots: a render of a generated subset of team folders after generated edits
  (claims of another team's model, changes, removals) never changes an output recorded for a
  source outside the subset that still exists (renderer/output/ownership.py);
- push retries with a dirty work tree: another clone pushes first, the user's clone has edited,
  staged and untracked files outside rendered/; the retry leaves them (and the index entries)
  byte for byte, and the report names the commit the remote holds (renderer/git/push.py).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from core.admission.pipeline import admit
from core.fields.errors import SourceError
from core.selection.configs import ProviderRegistry
from kubeio.registry import build_registry
from kubeio.shipped import bundled_config_objects
from kubeio.sources import parse_documents
from kubeio.yamlio import MAX_EXPANDED
from tests.fuzzing import Report
from tests.support.hostile_render import CASES, laughs, laughs_nodes, outside_changes
from tests.support.names import NAMES, SHAPES, kubernetes_problems, rendered, shaped
from tests.support.render_world import Dirt, Edits, ownership_problems, push_retry_problems

RENDER_CASES = 10  # real renders (1-3 s each, three renders and a commit): at most this many
OWNERSHIP_CASES = 8  # two real renders each (about 1-2 s)
RETRY_CASES = 5  # four renders, a clone and pushes each (about 3-5 s)
TEAMS = 3
NAME_CASES = 1_000  # admissions and renders in process (about 10 ms each)


def run(examples: int) -> Report:
    report = Report("render")
    registry = build_registry(bundled_config_objects())
    _names(report, min(examples, NAME_CASES), registry)
    _aliases(report, min(examples, NAME_CASES))
    _links(report, max(1, min(examples // 100, RENDER_CASES)))
    _ownership(report, max(1, min(examples // 100, OWNERSHIP_CASES)))
    _retries(report, max(1, min(examples // 200, RETRY_CASES)))
    return report


def _drive(strategy: st.SearchStrategy[Any], count: int, each: Callable[[Any], None]) -> None:
    settings(
        max_examples=count,
        phases=[Phase.generate],
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )(given(strategy)(each))()


def _names(report: Report, count: int, registry: ProviderRegistry) -> None:
    admitted = 0

    def each(case: tuple[str, str, dict[str, Any]]) -> None:
        nonlocal admitted
        name, namespace, shape = case
        report.cases += 1
        obj = shaped(name, namespace, shape)
        if not admit(obj, registry=registry).allowed:
            return
        admitted += 1
        problems = [p for o in rendered(obj, registry) for p in kubernetes_problems(o)]
        if problems:
            report.failures.append(f"names: {name!r} in {namespace!r} renders {problems[:3]}")

    _drive(st.tuples(NAMES, st.one_of(st.just("models"), NAMES), SHAPES), count, each)
    report.numbers["names_admitted"] = admitted


def _aliases(report: Report, count: int) -> None:
    slowest = 0.0
    refused = 0

    def each(shape: tuple[int, int]) -> None:
        nonlocal slowest, refused
        depth, width = shape
        report.cases += 1
        start = time.perf_counter()
        try:
            list(parse_documents(laughs(depth, width), "laughs.yaml"))
            said_no = False
        except SourceError:
            said_no = True
        slowest = max(slowest, time.perf_counter() - start)
        refused += said_no
        if said_no != (laughs_nodes(depth, width) > MAX_EXPANDED):
            report.failures.append(f"aliases: depth {depth} width {width}: refused={said_no}")

    _drive(st.tuples(st.integers(1, 30), st.integers(1, 30)), count, each)
    report.numbers["aliases_refused"] = refused
    report.numbers["aliases_slowest_ms"] = round(slowest * 1000, 1)


def _links(report: Report, count: int) -> None:
    def each(case: Any) -> None:
        report.cases += 1
        with tempfile.TemporaryDirectory() as scratch:
            changed = outside_changes(case, Path(scratch))
        if changed:
            report.failures.append(f"paths: {case} changed {changed[:3]} outside the repository")

    _drive(CASES, count, each)
    report.numbers["render_cases"] = count


@st.composite
def _edits(draw: st.DrawFn) -> Edits:
    teams = st.sampled_from(range(TEAMS))
    subset = draw(st.frozensets(teams, min_size=1, max_size=TEAMS - 1))
    pairs = st.tuples(teams, teams).filter(lambda pair: pair[0] != pair[1])
    claims = tuple(draw(st.lists(pairs, max_size=3, unique=True)))
    return Edits(TEAMS, subset, claims, draw(st.frozensets(teams)), draw(st.frozensets(teams)))


def _ownership(report: Report, count: int) -> None:
    def each(edits: Edits) -> None:
        report.cases += 1
        with tempfile.TemporaryDirectory() as scratch:
            problems = ownership_problems(Path(scratch), edits)
        report.failures += [f"ownership: {edits}: {p}" for p in problems[:3]]

    _drive(_edits(), count, each)
    report.numbers["ownership_cases"] = count


_FILES = st.dictionaries(
    st.sampled_from(["a.md", "docs/b.txt", "src/c.yaml", "ü.txt", "rendered.txt"]),
    st.text(st.characters(codec="utf-8", exclude_characters="\r"), max_size=30),
    max_size=2,
)


def _retries(report: Report, count: int) -> None:
    def each(case: tuple[dict[str, str], dict[str, str], dict[str, str], bool]) -> None:
        edited, staged, untracked, outside = case
        staged = {k: v for k, v in staged.items() if k not in edited}
        untracked = {k: v for k, v in untracked.items() if k not in edited and k not in staged}
        report.cases += 1
        with tempfile.TemporaryDirectory() as scratch:
            dirt = Dirt(edited, staged, untracked)
            problems = push_retry_problems(Path(scratch), dirt, remote_outside=outside)
        report.failures += [f"push retry: {case}: {p}" for p in problems[:3]]

    _drive(st.tuples(_FILES, _FILES, _FILES, st.booleans()), count, each)
    report.numbers["push_retry_cases"] = count
