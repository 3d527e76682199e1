"""`make fuzz` area "sources": one rule for every command that reads sources (issue #40 class 7).

Two classes, each against real files in a scratch folder and the real commands (in process):
- names: generated file and folder names, most not UTF-8, beside a ModelDeployment: `validate`
  and `render --check` answer 2 with one line naming the path (its bytes escaped) for a YAML
  file whose path is not UTF-8, and read the sources as usual (0 or 1) otherwise (a UTF-8
  path, or a file no command reads); never a traceback;
- kinds: generated apiVersions and kinds, Runway's groups among them: `validate` and `render`
  make the same decision (kubeio.sources.is_runway_kind): a kind of another group skipped with
  the same note, an unknown kind of Runway's groups exit 2 with the same line, none of them
  taking more than KIND_SECONDS.
Bounded in count (CASES each) and in time (SECONDS for the area).
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from cli.main import main
from core.model.kinds import EMP_GROUP, GROUP
from kubeio.sources import RUNWAY_KINDS, SKIPPED
from kubeio.yamlio import dump
from tests.fuzzing import Report
from tests.support.builders import model_deployment

CASES = 60  # each class: real commands (validate ~20 ms, render ~0.1-0.3 s) at most this many
SECONDS = 120.0  # the whole area; cases past it are not started
KIND_SECONDS = 5.0  # one validate and one render of a two-document source, at the most
NOT_UTF8 = "the name is not UTF-8 text; Runway reads sources only under UTF-8 names (rename it)"


def run(examples: int) -> Report:
    report = Report("sources")
    deadline = time.monotonic() + SECONDS
    with tempfile.TemporaryDirectory(prefix="runway-fuzz-sources-") as scratch:
        root = Path(scratch)
        _names(report, min(examples, CASES), root, deadline)
        _kinds(report, min(examples, CASES), root, deadline)
    return report


def _drive(strategy: st.SearchStrategy[Any], count: int, each: Callable[[Any], None]) -> None:
    settings(
        max_examples=count,
        phases=[Phase.generate],
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )(given(strategy)(each))()


def _command(*argv: str) -> tuple[int | str, str, str]:
    """`runway ARGV` in process: (exit status, stdout, stderr), or ("traceback", name, "")."""
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(argv))
    except Exception as exc:  # the rule broken: reported as a failure, never raised
        return "traceback", type(exc).__name__, ""
    return code, out.getvalue(), err.getvalue()


def _fresh(root: Path) -> Path:
    """A scratch case folder holding `src/model.yaml`, a ModelDeployment that renders."""
    case = root / "case"
    shutil.rmtree(case, ignore_errors=True)
    src = case / "src"
    src.mkdir(parents=True)
    (src / "model.yaml").write_text(dump(model_deployment("m", "team", gpu=1)))
    return src


def _escaped(path: bytes) -> str:
    text = path.decode("utf-8", "backslashreplace")
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


def _utf8(name: bytes) -> bool:
    try:
        name.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


NAMES = st.tuples(
    st.binary(min_size=1, max_size=16)
    .map(lambda b: b.replace(b"/", b"_").replace(b"\0", b"_"))
    .filter(lambda b: b not in (b".", b"..")),
    st.booleans(),
    st.sampled_from([b".yaml", b".yml", b""]),
)


def _names(report: Report, count: int, root: Path, deadline: float) -> None:
    refused = 0
    # --check compares with a repository and creates none: one render makes it.
    _command("render", str(_fresh(root)), "--repo", str(root / "r"))

    def each(case: tuple[bytes, bool, bytes]) -> None:
        nonlocal refused
        name, folder, suffix = case
        if time.monotonic() > deadline:
            return
        report.cases += 1
        src = _fresh(root)
        entry = os.fsencode(src) + b"/" + name + suffix
        if folder:
            os.mkdir(entry)
            entry += b"/more.yaml"
        Path(os.fsdecode(entry)).write_bytes(b"# nothing\n")
        bad = not _utf8(name) and (folder or suffix != b"")
        for argv in (
            ("validate", "-R", str(src)),
            ("render", "-R", str(src), "--repo", str(root / "r")),
        ):
            code, _, err = _command(*argv, *(("--check",) if argv[0] == "render" else ()))
            if bad and (code, err) != (2, f"runway: {_escaped(entry)}: {NOT_UTF8}\n"):
                report.failures.append(f"names: {argv[0]} of {name!r}: {code} {err[:200]!r}")
            elif not bad and code not in (0, 1):
                report.failures.append(f"names: {argv[0]} of UTF-8 {name!r}: {code} {err[:200]!r}")
        refused += bad

    _drive(NAMES, count, each)
    report.numbers["names_not_utf8"] = refused


KINDS = st.tuples(
    st.sampled_from([GROUP, EMP_GROUP, "", "apps", "example.com", "airunway.ai.example.com"]),
    st.sampled_from(["v1", "v1alpha1", "v9beta9"]),
    st.one_of(
        st.sampled_from([k for kinds in RUNWAY_KINDS.values() for k in kinds]),
        st.sampled_from(["ConfigMap", "ModelDeploymnet", "ModelDeploymentList", "X"]),
        st.text(st.characters(codec="ascii", categories=["L", "N"]), min_size=1, max_size=300),
    ),
)


def _kinds(report: Report, count: int, root: Path, deadline: float) -> None:
    skipped = refused = 0
    slowest = 0.0

    def each(case: tuple[str, str, str]) -> None:
        nonlocal skipped, refused, slowest
        group, version, kind = case
        if time.monotonic() > deadline or kind in RUNWAY_KINDS.get(group, ()):
            return  # a kind Runway reads: admission's and rendering's story, not this class's
        report.cases += 1
        src = _fresh(root)
        api_version = f"{group}/{version}" if group else version
        obj = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}}
        (src / "a.yaml").write_text(dump(obj))
        started = time.monotonic()
        validated = _command("validate", str(src))
        rendered = _command("render", str(src), "--repo", str(root / "case" / "repo"))
        slowest = max(slowest, time.monotonic() - started)
        where = f"{src / 'a.yaml'} (document 1)"
        if group in RUNWAY_KINDS:
            refused += 1
            same = (
                validated == rendered
                and validated[0] == 2
                and validated[2].startswith(f"runway: {where}: ")
            )
        else:
            skipped += 1
            note = f"skipped {kind}/x ({where}): {SKIPPED}"
            same = (validated[0], validated[1].splitlines()[:1]) == (0, [note]) and (
                rendered[0],
                rendered[2],
            ) == (0, f"runway: {note}\n")
        if not same:
            report.failures.append(
                f"kinds: {api_version} {kind[:40]}: validate {validated[0]} "
                f"{validated[2][:120]!r}, render {rendered[0]} {rendered[2][:120]!r}"
            )

    _drive(KINDS, count, each)
    report.numbers.update(kinds_skipped=skipped, kinds_refused=refused)
    report.numbers["kinds_slowest_s"] = round(slowest, 3)
    if slowest > KIND_SECONDS:
        report.failures.append(f"kinds: a validate and render took {slowest:.1f} s")
