"""`runway render` as GitOps users drive it (issue #23): `--check` names the files, `--diff`
shows what would change (a diff `git apply` takes, coloured only on a terminal without
NO_COLOR), `-f` and Lists as sources, standard input refused by name, and the commit author
taken from the flags, else the repository's git user, else Runway's own."""

from __future__ import annotations

import io
import json
import os
import re
import select
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from cli.exits import Exit
from cli.main import main
from cli.render import Progress
from renderer.git.runner import FALLBACK_IDENTITY, Repo
from tests.support.paths import EXAMPLES

SOURCE = "vllm-direct-explicit.yaml"  # Direct vLLM: a Deployment and a Service
FILES = [
    "models/phi-direct/deployment-phi-direct.yaml",
    "models/phi-direct/modeldeployment.yaml",
]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv), env={})
    out, err = capsys.readouterr()
    return code, out, err


def git(repo: Path, *args: str, stdin: str | None = None) -> str:
    return subprocess.run(
        ["git", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        input=stdin,
    ).stdout


@pytest.fixture
def isolated_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No global or system git configuration: only what a test sets in its repository."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "no-global-gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for name in (
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def rendered(tmp_path: Path, capsys: pytest.CaptureFixture[str], isolated_git: None) -> Path:
    """A repository holding the committed render of SOURCE, whose source then changes."""
    source = tmp_path / "models" / "phi.yaml"
    source.parent.mkdir()
    shutil.copy(EXAMPLES / SOURCE, source)
    repo = tmp_path / "gitops"
    assert run(capsys, "render", str(source.parent), "--repo", str(repo), "--commit")[0] == 0
    source.write_text(source.read_text().replace('max-num-seqs: "64"', 'max-num-seqs: "128"'))
    return repo


def test_check_lists_the_files_that_would_change(
    rendered: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(
        capsys, "render", str(tmp_path / "models"), "--repo", str(rendered), "--check"
    )

    assert code == Exit.PARTIAL
    assert out.splitlines() == [
        "models/phi-direct: rendered: vllm on vllm, 4 files",
        "schema apps/v1 Deployment: Kubernetes 1.37 (kubernetes-validate)",
        "schema v1 Service: Kubernetes 1.37 (kubernetes-validate)",
        *(f"changed: rendered/{path}" for path in FILES),
        "1 rendered (0 unchanged since the last render), 0 failed; files: 0 added, 2 changed, 0 removed",
    ]


@pytest.mark.parametrize("path", ["rendered", "rendered/"], ids=["plain", "slash"])
def test_check_names_the_same_paths_in_text_and_json(
    path: str, rendered: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue #45 item 7: by their path in the repository in both forms (what `--diff`, git
    and a CI annotation name), however --path is spelled."""
    argv = ["render", str(tmp_path / "models"), "--repo", str(rendered), "--check", "--path", path]

    text = run(capsys, *argv)
    as_json = run(capsys, *argv, "-o", "json")

    listed = [line for line in text[1].splitlines() if line.startswith("changed: ")]
    assert (text[0], listed) == (Exit.PARTIAL, [f"changed: rendered/{p}" for p in FILES])
    assert (as_json[0], json.loads(as_json[1])["changes"]) == (
        Exit.PARTIAL,
        {"added": [], "changed": [f"rendered/{p}" for p in FILES], "removed": []},
    )


def test_diff_is_what_a_render_would_write_and_git_applies_it(
    rendered: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(rendered, copy)
    head = git(rendered, "rev-parse", "HEAD")

    code, diff, err = run(
        capsys, "render", str(tmp_path / "models"), "--repo", str(rendered), "--diff"
    )

    assert code == Exit.PARTIAL
    assert [line for line in diff.splitlines() if line.startswith("diff --git")] == [
        f"diff --git a/rendered/{path} b/rendered/{path}" for path in FILES
    ]
    assert [line for line in diff.splitlines() if line[:1] in "+-" and "'" in line] == [
        "-        - '64'",
        "+        - '128'",
        "-      max-num-seqs: '64'",
        "+      max-num-seqs: '128'",
    ]
    assert "\033[" not in diff
    assert err.splitlines()[-1].endswith("files: 0 added, 2 changed, 0 removed")
    assert (git(rendered, "rev-parse", "HEAD"), git(rendered, "status", "--porcelain")) == (
        head,
        "",
    )  # --diff writes nothing
    git(copy, "apply", "-", stdin=diff)
    run(capsys, "render", str(tmp_path / "models"), "--repo", str(rendered))
    trees = []
    for repo in (copy, rendered):
        # runway.metadata names the command that wrote the folder: the render rewrites it, the
        # diff (a --diff run's command would be wrong there) leaves it as it was
        git(repo, "add", "-A", "--", ".", ":(exclude)**/runway.metadata")
        trees.append(git(repo, "write-tree"))
    assert trees[0] == trees[1]


def test_quiet_diff_prints_the_diff_and_only_the_summary(
    rendered: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["render", str(tmp_path / "models"), "--repo", str(rendered), "--diff"]

    code, diff, err = run(capsys, *argv, "-q")

    assert (code, diff) == (Exit.PARTIAL, run(capsys, *argv)[1])
    assert err == (
        "1 rendered (0 unchanged since the last render), 0 failed; files: 0 added, 2 changed, "
        "0 removed\n"
    )


def test_diff_with_json_output_is_a_usage_error(
    rendered: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(
        capsys, "render", str(tmp_path / "models"), "--repo", str(rendered), "--diff", "-o", "json"
    ) == (
        Exit.USAGE,
        "",
        "runway: --diff: prints a unified diff; -o json and -o yaml go with --check\n",
    )


@pytest.mark.parametrize(
    ("terminal", "env", "coloured"),
    [
        (True, {}, True),
        (True, {"NO_COLOR": "1"}, False),
        (False, {}, False),
        (True, {"NO_COLOR": ""}, True),
    ],
    ids=["terminal", "terminal-no-color", "pipe", "terminal-empty-no-color"],
)
def test_diff_is_coloured_only_on_a_terminal_without_no_color(
    terminal: bool,
    env: dict[str, str],
    coloured: bool,
    rendered: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    argv = ["render", str(tmp_path / "models"), "--repo", str(rendered), "--diff"]
    if terminal:
        leader, follower = os.openpty()  # a real terminal device, so isatty() is the real answer
        with os.fdopen(follower, "w", encoding="utf-8") as out, os.fdopen(leader, "rb", 0) as tty:
            monkeypatch.setattr("sys.stdout", out)
            code = main(argv, env=env)
            out.flush()
            text = _drain(tty)
    else:
        piped = io.StringIO()
        monkeypatch.setattr("sys.stdout", piped)
        code = main(argv, env=env)
        text = piped.getvalue()

    assert code == Exit.PARTIAL
    assert ("\033[31m-        - '64'\033[0m" in text) is coloured
    assert ("-        - '64'" in text.replace("\r\n", "\n")) is True


def _drain(reader: io.BufferedReader | io.FileIO) -> str:
    """What was written to the terminal so far (the writer has flushed)."""
    chunks = []
    while select.select([reader], [], [], 0)[0]:
        chunk = reader.read(65536)
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks).decode()


def test_sources_from_filename_flags_and_lists(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], isolated_git: None
) -> None:
    direct = yaml.safe_load((EXAMPLES / SOURCE).read_text())
    other = yaml.safe_load((EXAMPLES / SOURCE).read_text()) | {
        "metadata": {"name": "phi-other", "namespace": "models"}
    }
    listed = tmp_path / "list.yaml"
    listed.write_text(
        yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [direct, other]})
    )

    code, out, _ = run(capsys, "render", "-f", str(listed), "--repo", str(tmp_path / "gitops"))

    assert code == Exit.OK
    assert out.splitlines()[:2] == [
        "models/phi-direct: rendered: vllm on vllm, 4 files",
        "models/phi-other: rendered: vllm on vllm, 4 files",
    ]


def test_standard_input_is_refused_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "render", "-", "--repo", str(tmp_path / "gitops")) == (
        Exit.USAGE,
        "",
        "runway: -: render records the path of every source (what a later render may remove); "
        "standard input has none: name files or directories\n",
    )


@pytest.mark.parametrize(
    ("configured", "flags", "author", "committer"),
    [
        ({}, [], "runway <runway@localhost>", "runway <runway@localhost>"),
        (
            {"user.name": "Ops Bot", "user.email": "ops@example.com"},
            [],
            "Ops Bot <ops@example.com>",
            "Ops Bot <ops@example.com>",
        ),
        ({"user.name": "Ops Bot"}, [], "Ops Bot <runway@localhost>", "Ops Bot <runway@localhost>"),
        (
            {"user.email": "ops@example.com"},
            [],
            "runway <ops@example.com>",
            "runway <ops@example.com>",
        ),
        ({"User.Name": "Ops Bot"}, [], "Ops Bot <runway@localhost>", "Ops Bot <runway@localhost>"),
        (
            {"user.name": "Ops Bot", "user.email": "ops@example.com"},
            ["--author-name", "Ana", "--author-email", "ana@example.com"],
            "Ana <ana@example.com>",
            "Ops Bot <ops@example.com>",
        ),
        (
            {},
            ["--author-name", "Ana", "--author-email", "ana@example.com"],
            "Ana <ana@example.com>",
            "runway <runway@localhost>",
        ),
    ],
    ids=[
        "nobody-configured",
        "repository-user",
        "repository-name-only",
        "repository-email-only",
        "written-in-other-case",
        "flags",
        "flags-no-config",
    ],
)
def test_the_commit_author_is_the_flags_else_the_repository_user_else_runway(
    configured: dict[str, str],
    flags: list[str],
    author: str,
    committer: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    isolated_git: None,
) -> None:
    repo = tmp_path / "gitops"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    for key, value in configured.items():
        git(repo, "config", key, value)

    code, _, _ = run(
        capsys, "render", str(EXAMPLES / SOURCE), "--repo", str(repo), "--commit", *flags
    )

    assert code == Exit.OK
    assert git(repo, "log", "-1", "--format=%an <%ae>|%cn <%ce>").strip() == f"{author}|{committer}"


@pytest.mark.parametrize(
    "flags",
    [
        ["--author-name", "Ana"],
        ["--author-email", "a@x"],
        ["--author-name", "A <b>", "--author-email", "a@x"],
    ],
    ids=["name-only", "email-only", "angle-brackets"],
)
def test_half_an_author_is_a_usage_error(
    flags: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(
        capsys, "render", str(EXAMPLES / SOURCE), "--repo", str(tmp_path / "g"), *flags
    )

    assert (code, out) == (Exit.USAGE, "")
    assert err.endswith(": give both --author-name and --author-email, neither holding < or >\n")


def test_yaml_report_is_the_json_report(
    rendered: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["render", str(tmp_path / "models"), "--repo", str(rendered), "--check"]

    as_json = run(capsys, *argv, "-o", "json")
    as_yaml = run(capsys, *argv, "-o", "yaml")

    assert as_json[0] == as_yaml[0] == Exit.PARTIAL
    assert yaml.safe_load(as_yaml[1]) == json.loads(as_json[1])


def _sources(folder: Path, count: int) -> Path:
    folder.mkdir()
    base = yaml.safe_load((EXAMPLES / SOURCE).read_text())
    for i in range(count):
        obj = base | {"metadata": {"name": f"phi-{i}", "namespace": "models"}}
        (folder / f"phi-{i}.yaml").write_text(yaml.safe_dump(obj))
    return folder


@pytest.mark.parametrize("terminal", [True, False], ids=["terminal", "pipe"])
def test_progress_is_shown_on_a_terminal_only(
    terminal: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated_git: None
) -> None:
    sources = str(_sources(tmp_path / "models", 3))
    argv = ["render", sources, "--repo", str(tmp_path / "gitops")]
    leader, follower = os.openpty()
    with os.fdopen(follower, "w", encoding="utf-8") as tty, os.fdopen(leader, "rb", 0) as reader:
        monkeypatch.setattr("sys.stderr", tty if terminal else io.StringIO())
        monkeypatch.setattr("sys.stdout", io.StringIO())
        first = main(argv, env={})
        tty.flush()
        shown = _drain(reader)
        again = main(argv, env={})  # nothing changed: nothing to render, nothing shown
        tty.flush()
        shown_again = _drain(reader)

    assert (first, again) == (Exit.OK, Exit.OK)
    expected = "".join(f"\rrendering {i}/3 ModelDeployments" for i in (1, 2, 3)) + "\r\n"
    assert (shown, shown_again) == ((expected if terminal else ""), "")


def test_progress_is_rewritten_about_every_hundredth() -> None:
    out = io.StringIO()
    progress = Progress(out)

    for done in range(1, 251):
        progress(done, 250)

    assert out.getvalue() == (
        "".join(f"\rrendering {i}/250 ModelDeployments" for i in range(2, 251, 2)) + "\n"
    )


def test_a_configured_value_holding_a_newline_sets_only_its_own_key(
    tmp_path: Path, isolated_git: None
) -> None:
    """user.name is unset: the line after the newline in user.email names no key."""
    work = tmp_path / "gitops"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    git(work, "config", "user.email", "ops@example.com\nuser.name Mallory")

    repo = Repo.open_or_init(work)

    assert repo.identity == ("-c", f"user.name={FALLBACK_IDENTITY[0]}")


def test_failed_objects_are_not_counted_as_unchanged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], isolated_git: None
) -> None:
    """Issue #45 item 10: a failure taken from the last render is a failure, not unchanged, in
    the summary and in `unchanged` of -o json (`reused` still counts every result taken), both
    when the stamp answers (nothing changed) and when another object renders again."""
    models = tmp_path / "models"
    models.mkdir()
    shutil.copy(EXAMPLES / SOURCE, models / "phi.yaml")
    shutil.copy(EXAMPLES / "rejected" / "vllm-without-gpu.yaml", models / "cpu.yaml")
    argv = ["render", str(models), "--repo", str(tmp_path / "gitops"), "--commit"]
    summaries, counts = [], []
    for edit in (False, False, True):
        if edit:
            phi = models / "phi.yaml"
            phi.write_text(phi.read_text().replace('max-num-seqs: "64"', 'max-num-seqs: "128"'))
        code, out, _ = run(capsys, *argv)
        assert code == Exit.PARTIAL
        summaries.append(re.sub(r"; commit \w+", "", out.splitlines()[-1]))
        counts.append(tuple(json.loads(run(capsys, *argv, "-o", "json")[1])[k] for k in KEYS))

    assert summaries == [
        "1 rendered (0 unchanged since the last render), 1 failed; files: 8 added, 0 changed, 0 removed"
        + FAILED,
        "1 rendered (1 unchanged since the last render), 1 failed; files: 0 added, 0 changed, 0 removed"
        + FAILED,
        "1 rendered (0 unchanged since the last render), 1 failed; files: 0 added, 2 changed, 0 removed"
        + FAILED,
    ]
    assert counts == [(2, 1), (2, 1), (2, 1)]  # -o json runs after each: nothing changed then


KEYS = ("reused", "unchanged")
FAILED = "; not rendered: models/rejected-vllm-cpu"


@pytest.mark.parametrize("rejected", [False, True], ids=["too-many", "failure"])
def test_quiet_prints_the_summary_naming_what_went_wrong(
    rejected: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str], isolated_git: None
) -> None:
    """Issue #45 item 9: removals held back (past --max-removals, or by a failure) and the
    objects not rendered are named in the summary, the last line; -q prints only that line."""
    models = _sources(tmp_path / "models", 3)
    repo = str(tmp_path / "gitops")
    assert run(capsys, "render", str(models), "--repo", repo, "--commit")[0] == Exit.OK
    for i in (1, 2):
        (models / f"phi-{i}.yaml").unlink()
    if rejected:
        shutil.copy(EXAMPLES / "rejected" / "vllm-without-gpu.yaml", models / "cpu.yaml")
    argv = ["render", str(models), "--repo", repo, "--check", "--max-removals", "1"]

    quiet = run(capsys, *argv, "-q")
    loud = run(capsys, *argv)

    held = "models/phi-1, models/phi-2"
    why = (
        "the render had 1 failure: a render with a failure removes nothing"
        if rejected
        else "2 removals exceed --max-removals 1; pass --max-removals 2 to make them"
    )
    line = (
        f"1 rendered (1 unchanged since the last render), {int(rejected)} failed; files: "
        "0 added, 0 changed, 0 removed"
        + (FAILED if rejected else "")
        + f"; removals held back: 2 ({why})"
    )
    assert quiet == (Exit.CHECK_REJECTED, line + "\n", "")
    assert (loud[0], loud[1].splitlines()[-1]) == (Exit.CHECK_REJECTED, line)
    assert f"not removed: {why}: {held}" in loud[1].splitlines()


def test_quiet_goes_with_text_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["render", str(EXAMPLES / SOURCE), "--repo", str(tmp_path / "g"), "-q", "-o", "json"]

    assert run(capsys, *argv) == (
        Exit.USAGE,
        "",
        "runway: -q/--quiet: prints the text summary; -o json and -o yaml print the whole report\n",
    )


def test_push_names_the_remote_the_branch_and_the_commit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], isolated_git: None
) -> None:
    """Issue #45 item 8: a repository on `master` pushed to the remote's `main` (the --branch
    default) says so; pushed again to `master` (nothing changed: the stamp answers), it does
    not. -o json has the same under "pushed"."""
    remote, repo = tmp_path / "remote.git", tmp_path / "gitops"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(tmp_path, "init", "-q", "-b", "master", str(repo))
    git(repo, "remote", "add", "origin", str(remote))
    argv = ["render", str(EXAMPLES / SOURCE), "--repo", str(repo), "--push", "origin"]

    first = run(capsys, *argv)
    head = git(repo, "rev-parse", "HEAD").strip()
    again = run(capsys, *argv, "--branch", "master", "-o", "json")

    assert (first[0], first[1].splitlines()[-1]) == (
        Exit.OK,
        "1 rendered (0 unchanged since the last render), 0 failed; files: 8 added, 0 changed, "
        f"0 removed; commit {head[:12]} pushed to origin, branch main (the local branch is master)",
    )
    assert git(remote, "rev-parse", "main", "master").split() == [head, head]
    assert (again[0], json.loads(again[1])["pushed"]) == (
        Exit.OK,
        {"branch": "master", "commit": head, "local": "master", "remote": "origin"},
    )
