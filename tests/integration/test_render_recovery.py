"""A killed render always recovers, exit codes match `render --help`, and one bad object never
takes the others down.

The kills are real: `runway render --commit` runs in its own process group and gets SIGKILL while
its git holds `.git/index.lock`. To land the kill there every time (not by luck of timing), a
git clean filter (during `git add`) or a pre-commit hook (during `git commit`) announces itself
with a file and then waits; both run while git holds the index lock.
"""

from __future__ import annotations

import decimal
import fcntl
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import renderer.output.render
import renderer.output.tree
from cli.main import main
from kubeio.registry import build_registry
from kubeio.shipped import bundled_config_objects, bundled_versions
from kubeio.yamlio import dump, dump_all
from renderer.git import locks
from renderer.git.runner import Repo
from renderer.output.render import RenderContext, render_guarded
from renderer.output.schemapack import load_pack
from renderer.output.strict import Schemas
from tests.support.builders import model_deployment
from tests.support.wait import wait_until

RUNWAY = str(Path(sys.executable).parent / "runway")
TOKEN = "hf_" + "aB3" * 12  # the shape of a Hugging Face token, not a real one


def git(repo: Path, *args: str, check: bool = True) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=check, timeout=60
    ).stdout


def sources(folder: Path, count: int) -> Path:
    folder.mkdir(exist_ok=True)
    (folder / "mds.yaml").write_text(
        dump_all(
            [
                model_deployment(f"m{i}", "models", gpu=1, provider="vllm", engine="vllm")
                for i in range(count)
            ]
        )
    )
    return folder


def render_cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [RUNWAY, "render", *argv], capture_output=True, text=True, timeout=300, check=False
    )


def wait_for(path: Path, proc: subprocess.Popen[str]) -> None:
    """Until `path` exists; the render must still be running meanwhile."""

    def appeared() -> bool:
        assert proc.poll() is None, proc.communicate()
        return path.exists()

    wait_until(appeared, timeout=120, interval=0.05, what=f"{path} to appear")


STALL = "touch {mark} && exec sleep 300"


@pytest.mark.parametrize("where", ["add", "commit"])
def test_a_render_killed_while_git_holds_the_index_lock_is_recovered_by_the_next(
    where: str, tmp_path: Path
) -> None:
    repo, mark = tmp_path / "gitops", tmp_path / "stalled"
    src = sources(tmp_path / "src", 2)
    assert render_cli(str(src), "--repo", str(repo), "--commit").returncode == 0
    head = git(repo, "rev-parse", "HEAD")
    (src / "more.yaml").write_text(
        dump(model_deployment("extra", "models", gpu=1, provider="vllm", engine="vllm"))
    )
    if where == "add":
        (repo / ".git/info").mkdir(exist_ok=True)
        # only the new object's files: git status (which a render asks first) never hashes them
        (repo / ".git/info/attributes").write_text("rendered/models/extra/*.yaml filter=stall\n")
        git(repo, "config", "filter.stall.clean", STALL.format(mark=mark))
    else:  # git commit holds HEAD.lock and the branch's lock while this hook runs "prepared"
        hook = repo / ".git/hooks/reference-transaction"
        hook.write_text(f'#!/bin/sh\nif [ "$1" = prepared ]; then {STALL.format(mark=mark)}; fi\n')
        hook.chmod(0o755)
    proc = subprocess.Popen(
        [RUNWAY, "render", str(src), "--repo", str(repo), "--commit"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    wait_for(mark, proc)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    left = locks.git_locks(Repo(repo))  # what every later render used to trip on
    assert left == (
        [repo / ".git/index.lock"]
        if where == "add"
        else [repo / ".git/HEAD.lock", repo / ".git/refs/heads/main.lock"]
    )
    assert git(repo, "rev-parse", "HEAD") == head
    (repo / ".git/info/attributes").unlink(missing_ok=True)
    (repo / ".git/hooks/reference-transaction").unlink(missing_ok=True)

    again = render_cli(str(src), "--repo", str(repo), "--commit")

    assert (again.returncode, again.stderr) == (
        0,
        "".join(f"WARNING renderer.gitops removing {p} left by a killed render\n" for p in left),
    )
    assert locks.git_locks(Repo(repo)) == []
    assert git(repo, "log", "--format=%s") == (
        "runway render: 5 added, 2 changed, 0 removed\n"  # with runway-sources.json
        "runway render: 13 added, 0 changed, 0 removed\n"
    )
    assert git(repo, "status", "--porcelain") == ""
    git(repo, "fsck", "--strict")


def test_a_lock_held_by_a_running_git_or_left_by_another_git_is_never_removed(
    tmp_path: Path,
) -> None:
    repo, mark = tmp_path / "gitops", tmp_path / "stalled"
    src = sources(tmp_path / "src", 1)
    assert render_cli(str(src), "--repo", str(repo), "--commit").returncode == 0
    (repo / ".git/info").mkdir(exist_ok=True)
    (repo / ".git/info/attributes").write_text("NOTES filter=stall\n")
    git(repo, "config", "filter.stall.clean", STALL.format(mark=mark))
    (repo / "NOTES").write_text("a person's work\n")
    person = subprocess.Popen(  # git add holds the index lock while the clean filter runs
        ["git", "add", "NOTES"],
        cwd=repo,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    wait_for(mark, person)
    lock = repo / ".git/index.lock"

    while_running = render_cli(str(src), "--repo", str(repo), "--commit")
    os.killpg(person.pid, signal.SIGKILL)
    person.communicate(timeout=60)
    after_it_died = render_cli(str(src), "--repo", str(repo), "--commit")

    assert while_running.returncode == 4
    assert while_running.stderr.startswith(
        f"runway: {lock} is held: git is running in this repository (pid "
    )
    assert after_it_died.returncode == 4
    assert after_it_died.stderr == (
        f"runway: {lock} exists but no Runway render left it: a git command outside Runway was interrupted here; check the repository, then remove the file\n"
    )
    assert lock.exists()


def test_another_render_running_and_git_failures_exit_4(tmp_path: Path) -> None:
    repo = tmp_path / "gitops"
    src = sources(tmp_path / "src", 1)
    assert render_cli(str(src), "--repo", str(repo)).returncode == 0

    with (repo / ".git/runway.lock").open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        busy = render_cli(str(src), "--repo", str(repo))
    pushed = render_cli(str(src), "--repo", str(repo), "--push", str(tmp_path / "nowhere"))

    assert (busy.returncode, busy.stderr) == (
        4,
        f"runway: {repo}: another render is running in this repository\n",
    )
    assert pushed.returncode == 4
    assert pushed.stderr.startswith("runway: git push failed: ")


@pytest.mark.parametrize(
    ("raised", "described"),
    [
        (decimal.Overflow(), "decimal.Overflow"),
        (
            RecursionError("maximum recursion depth exceeded"),
            "RecursionError: maximum recursion depth exceeded",
        ),
        (KeyError("x"), "KeyError: 'x'"),
        (MemoryError(), "MemoryError"),
    ],
    ids=["decimal-overflow", "recursion", "key-error", "memory"],
)
def test_any_exception_while_rendering_one_object_fails_only_that_object(
    raised: Exception, described: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No input is certain to raise once the validators are hardened, so the one exception is
    # made to happen; the guard must hold for every exception type.
    original = renderer.output.render.render_one

    def flaky(obj: Any, **kwargs: Any) -> Any:
        if obj["metadata"]["name"] == "bad":
            raise raised
        return original(obj, **kwargs)

    monkeypatch.setattr(renderer.output.render, "render_one", flaky)
    context = RenderContext(
        build_registry(bundled_config_objects(), flags={}),
        Schemas.from_pack(load_pack()),
        bundled_versions(),
    )

    results = [
        render_guarded(
            model_deployment(n, "ns", gpu=1, provider="vllm", engine="vllm"),
            previous=None,
            context=context,
        )
        for n in ("bad", "good")
    ]

    assert (results[0].key, results[0].error, results[0].files) == (
        "ns/bad",
        f"could not be rendered: {described} (details: -vv)",
        {},
    )
    assert results[1].error is None and "deployment-good.yaml" in results[1].files


def test_a_huge_quantity_fails_its_object_only_and_never_prints_a_traceback(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    huge = model_deployment("huge", "models", gpu=1, provider="vllm", engine="vllm")
    huge["spec"]["resources"]["memory"] = "1e1000000"
    (src / "mds.yaml").write_text(
        dump_all([huge, model_deployment("fine", "models", gpu=1, provider="vllm", engine="vllm")])
    )

    done = render_cli(str(src), "--repo", str(tmp_path / "gitops"))

    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "models/fine: rendered: vllm on vllm, 4 files"
    assert lines[1].startswith("models/huge: not rendered (previous output kept): ")
    assert lines[-1].startswith("1 rendered (0 unchanged since the last render), 1 failed; ")


def test_a_credential_in_an_object_is_never_written_to_git(tmp_path: Path) -> None:
    src, repo = tmp_path / "src", tmp_path / "gitops"
    src.mkdir()
    leaky = model_deployment(
        "leaky",
        "models",
        gpu=1,
        provider="vllm",
        engine={"type": "vllm", "extraArgs": [f"--hf-token={TOKEN}"]},
    )
    (src / "mds.yaml").write_text(
        dump_all([leaky, model_deployment("fine", "models", gpu=1, provider="vllm", engine="vllm")])
    )

    done = render_cli(str(src), "--repo", str(repo), "--commit")

    assert done.returncode == 1
    assert (
        # admission refuses it first (the render scan behind it is the next test's subject)
        "models/leaky: not rendered (previous output kept): spec.engine.extraArgs[0]: Forbidden: "
        "looks like a Hugging Face token (hf_...); put the value in a Secret and reference it "
        "(env[].valueFrom.secretKeyRef), never inline\n" in done.stdout
    )
    assert TOKEN not in done.stdout + done.stderr
    assert TOKEN not in git(repo, "log", "-p", "--all")
    assert not (repo / "rendered/models/leaky").exists()


def test_the_last_guard_refuses_a_credential_in_any_file_about_to_be_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Rendering refuses such objects itself; to reach the guard behind it, one render leaks.
    src, repo = sources(tmp_path / "src", 1), tmp_path / "gitops"
    monkeypatch.setattr(renderer.output.render, "dump", lambda obj: dump(obj) + f"# {TOKEN}\n")
    monkeypatch.setattr(renderer.output.tree, "dump", lambda obj: dump(obj) + f"# {TOKEN}\n")

    code = main(["render", str(src), "--repo", str(repo), "--commit"])

    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith(
        "runway: kustomization.yaml: looks like a Hugging Face token (hf_...); refusing to write it into Git"
    )
    assert TOKEN not in err
    assert not (repo / "rendered").exists()
    assert git(repo, "log", check=False) == ""


def pool_workers(pid: int) -> list[int]:
    """The render's forked workers: its children running its own command line (not git)."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
        return [int(c) for c in children if Path(f"/proc/{c}/cmdline").read_bytes() == command]
    except OSError:
        return []


def alive(pid: int) -> bool:
    """Running, not a zombie waiting to be reaped."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_render_killed_while_its_pool_renders_leaves_the_repository_to_the_next(
    tmp_path: Path,
) -> None:
    """Only the render is killed (a CI job's timeout), not its process group: its pool's
    workers die with it, and the next render takes the lock they had inherited."""
    assert len(os.sched_getaffinity(0)) >= 2, "a render starts its pool only with 2 cores or more"
    repo = tmp_path / "gitops"
    src = sources(tmp_path / "src", 2000)
    render = subprocess.Popen(
        [RUNWAY, "render", str(src), "--repo", str(repo), "--commit"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    workers = wait_until(lambda: pool_workers(render.pid), timeout=60, what="the render's pool")
    render.send_signal(signal.SIGKILL)
    render.wait(timeout=30)
    with locks.locked(Repo(repo)):  # at once, as a render started right then asks for it
        orphans = [w for w in workers if alive(w)]
    after = render_cli(str(src), "--repo", str(repo), "--commit")

    assert render.returncode == -signal.SIGKILL
    assert workers and orphans == []
    assert (after.returncode, after.stderr) == (0, "")
    assert git(repo, "status", "--porcelain") == ""
    assert len(git(repo, "ls-tree", "-d", "--name-only", "HEAD:rendered/models").split()) == 2000
