"""`runway render --check -o junit|sarif` (issue #45, CI formats): a finding per object not
rendered (at its source document's line), per removal held back (at its output folder) and per
out-of-date file (at its path), valid against each format's schema, with --check's exit codes;
with --diff the report goes to stderr, as the text report does."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from cli.exits import Exit
from cli.main import main
from tests.support.ciformats import REFUSED, WHY, junit_errors, sarif_errors
from tests.support.paths import EXAMPLES


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv), env={})
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory with a Git repository `gitops` and `src/` holding one object render
    takes (cpu.yaml) and one it refuses (refused.yaml)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "no-global-gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    subprocess.run(["git", "init", "-q", "gitops"], check=True, timeout=60)
    (tmp_path / "src").mkdir()
    shutil.copy(EXAMPLES / "cpu-llamacpp.yaml", tmp_path / "src" / "cpu.yaml")
    (tmp_path / "src" / "refused.yaml").write_text("---\n" + REFUSED)
    return tmp_path


def findings(sarif: str) -> list[tuple[str, str, int | None, str]]:
    """(rule, file, line, message) of each result of a SARIF log."""
    rows = []
    for result in json.loads(sarif)["runs"][0]["results"]:
        (location,) = result["locations"]
        physical = location["physicalLocation"]
        line = physical.get("region", {}).get("startLine")
        uri = physical["artifactLocation"]["uri"]
        rows.append((result["ruleId"], uri, line, result["message"]["text"]))
    return rows


OUT_OF_DATE = [
    "rendered/kustomization.yaml",
    "rendered/models/kustomization.yaml",
    "rendered/models/llama-cpu/kustomization.yaml",
    "rendered/models/llama-cpu/modeldeployment.yaml",
    "rendered/models/llama-cpu/workspace-llama-cpu.yaml",
    "rendered/runway-sources.json",
]


def test_check_reports_refused_objects_and_out_of_date_files(
    sources: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sarif = run(capsys, "render", "src", "--repo", "gitops", "--check", "-o", "sarif")
    junit = run(capsys, "render", "src", "--repo", "gitops", "--check", "-o", "junit")

    assert sarif[0] == junit[0] == Exit.CHECK_REJECTED
    assert sarif_errors(sarif[1]) == []
    assert junit_errors(junit[1]) == []
    assert findings(sarif[1]) == [
        (
            "out-of-date",
            f"gitops/{path}",
            None,
            f"{path}: added: out of date (render would write it)",
        )
        for path in OUT_OF_DATE
    ] + [
        ("not-rendered", "src/refused.yaml", 2, f"ModelDeployment models/refused: {WHY}"),
    ]
    assert junit[1].count("<testcase ") == 8  # llama-cpu passes, and one per finding
    assert junit[1].count("<failure ") == 7


def test_up_to_date_tree_has_no_findings_and_check_exits_0(
    sources: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (sources / "src" / "refused.yaml").unlink()
    assert run(capsys, "render", "src", "--repo", "gitops", "--commit")[0] == Exit.OK

    code, out, _ = run(capsys, "render", "src", "--repo", "gitops", "--check", "-o", "sarif")

    assert code == Exit.OK
    assert sarif_errors(out) == []
    assert findings(out) == []


def test_held_back_removal_is_a_finding_at_its_folder(
    sources: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cpu = (sources / "src" / "cpu.yaml").read_text()
    (sources / "src" / "refused.yaml").write_text(cpu.replace("name: llama-cpu", "name: other"))
    assert run(capsys, "render", "src", "--repo", "gitops", "--commit")[0] == Exit.OK
    (sources / "src" / "cpu.yaml").unlink()  # its source is gone: a removal

    code, out, _ = run(
        capsys, "render", "src", "--repo", "gitops", "--check", "--max-removals", "0", "-o", "sarif"
    )

    assert code == Exit.CHECK_REJECTED
    assert sarif_errors(out) == []
    assert [row for row in findings(out) if row[0] == "removal-held-back"] == [
        (
            "removal-held-back",
            "gitops/rendered/models/llama-cpu",
            None,
            "folder rendered/models/llama-cpu: not removed: 1 removals exceed --max-removals 0; "
            "pass --max-removals 1 to make them",
        )
    ]


def test_diff_writes_the_report_to_stderr_and_quiet_refuses_the_ci_formats(
    sources: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    diff = run(capsys, "render", "src", "--repo", "gitops", "--diff", "-o", "junit")
    check = run(capsys, "render", "src", "--repo", "gitops", "--check", "-o", "junit")
    quiet = run(capsys, "render", "src", "--repo", "gitops", "--check", "-q", "-o", "sarif")

    assert diff[0] == Exit.CHECK_REJECTED
    assert diff[1].startswith("diff --git a/rendered/kustomization.yaml")
    assert diff[2] == check[1]
    assert quiet == (
        Exit.USAGE,
        "",
        "runway: -q/--quiet: prints the text summary; -o json and -o yaml print the whole report\n",
    )
