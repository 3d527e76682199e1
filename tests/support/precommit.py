"""pre-commit itself (the pinned package, `python -m pre_commit`) running this checkout's hooks
(.pre-commit-hooks.yaml) as a user's repository would.

pre-commit clones a hook repository at a commit and installs it with pip into an environment of
its own, kept in its store (PRE_COMMIT_HOME) for that repository and commit. The hook repository
here is a snapshot of this checkout's work tree (tracked files, and new ones Git does not ignore;
tests/ and docs/, which the installed package does not hold, left out) committed with fixed
dates into .cache/pre-commit/source.git: the same tree is the same commit, so the environment is
built once and reused until the snapshot changes (in CI, a clean clone: once per run). Building
it is pip installing Runway and its dependencies (about 390 MB): 22 s on an idle 2-core machine
with pip's cache warm from `make install`, 50 to 120 s while other tests load the machine. Its
store is .cache/pre-commit/home-TREE; the stores of older snapshots are removed then, so the
cache holds one environment.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tests.support.paths import ROOT

CACHE = ROOT / ".cache" / "pre-commit"
FIXED_DATE = "2000-01-01T00:00:00Z"
LEFT_OUT = [":(exclude)tests", ":(exclude)docs"]


@dataclass(frozen=True)
class HookRepository:
    """The snapshot's repository, its commit, and the pre-commit store to use with it."""

    url: str
    rev: str
    home: Path


def git_env() -> dict[str, str]:
    """Git without the user's or the system's configuration, with a fixed identity and date."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_CONFIG_NOSYSTEM="1",
        GIT_AUTHOR_NAME="runway tests",
        GIT_AUTHOR_EMAIL="tests@runway.invalid",
        GIT_COMMITTER_NAME="runway tests",
        GIT_COMMITTER_EMAIL="tests@runway.invalid",
        GIT_AUTHOR_DATE=FIXED_DATE,
        GIT_COMMITTER_DATE=FIXED_DATE,
    )
    return env


def git(*argv: str, env: Mapping[str, str] | None = None) -> str:
    done = subprocess.run(
        ["git", *argv],
        cwd=ROOT,
        env=dict(env or git_env()),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout.strip()


def hook_repository() -> HookRepository:
    """This checkout's work tree as a commit pre-commit can clone (see the module's doc)."""
    source = CACHE / "source.git"
    if not (source / "HEAD").exists():
        git("init", "--quiet", "--bare", str(source))
    env = {**git_env(), "GIT_INDEX_FILE": str(CACHE / "source.index")}
    where = [f"--git-dir={source}", f"--work-tree={ROOT}"]
    git(*where, "read-tree", "--empty", env=env)
    git(*where, "add", "--all", "--", ".", *LEFT_OUT, env=env)
    tree = git(*where, "write-tree", env=env)
    commit = git(*where, "commit-tree", tree, "-m", "this checkout's work tree", env=env)
    git(*where, "update-ref", "refs/heads/main", commit, env=env)
    home = CACHE / f"home-{tree[:12]}"
    for old in CACHE.glob("home-*"):
        if old != home:
            shutil.rmtree(old)
    return HookRepository(str(source), commit, home)


def pre_commit(
    project: Path, home: Path, *argv: str, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """`pre-commit ARGV` in `project` with the store `home`, without colours, and without a
    PYTHONPATH (the hooks run what pre-commit installed, not this checkout's modules)."""
    env = {k: v for k, v in git_env().items() if k != "PYTHONPATH"}
    env.update(PRE_COMMIT_HOME=str(home), PRE_COMMIT_COLOR="never", NO_COLOR="1")
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", *argv],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
