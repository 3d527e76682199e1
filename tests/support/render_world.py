"""Real repositories for the rules of ownership and of the user's work tree (issue #40, items 1,
4 and 5), shared by their integration tests and the `make fuzz` area "render".

- `push_retry_problems`: a user's GitOps clone with uncommitted work (edited tracked files,
  staged new files, untracked files, outside the output folder) renders with `--push` while
  another clone has pushed first; the push is rejected and retried. Answers every way the rule
  "a render never changes anything outside rendered/, and reports the commit the remote holds"
  was broken.
- `ownership_problems`: sources in several folders rendered into one repository, then a render
  of a subset of the folders after random edits (a folder claiming another's model, a file
  removed); answers every output recorded for a source outside the subset that changed.
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cli.main import main
from kubeio.yamlio import dump_all
from tests.support.builders import model_deployment

IDENTITY = ("-c", "user.name=other", "-c", "user.email=other@example.com")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *IDENTITY, *args], cwd=repo, capture_output=True, text=True, check=True, timeout=60
    ).stdout


def render(*argv: str) -> tuple[int, dict[str, Any]]:
    """`runway render -R ... -o json` in process (the sources' folders with every folder under
    them, as the team folders lie): the exit status and the JSON report."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(["render", "-R", *argv, "-o", "json"])
    text = out.getvalue()
    return code, json.loads(text) if text.strip() else {}


def models(path: Path, names: Sequence[tuple[str, str]], gpu: int = 1) -> None:
    """A source file of ModelDeployments, (namespace, name) each."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        dump_all(
            [
                model_deployment(name, ns, gpu=gpu, provider="vllm", engine="vllm")
                for ns, name in names
            ]
        )
    )


@dataclass(frozen=True)
class Dirt:
    """The user's uncommitted work, each a path outside rendered/ -> its text."""

    edited: Mapping[str, str]  # tracked (committed as "base\n"), then edited
    staged: Mapping[str, str]  # new files, staged
    untracked: Mapping[str, str]


def _snapshot(repo: Path, dirt: Dirt) -> tuple[str, str, dict[str, bytes | None]]:
    """What a render must leave alone: the index entries and the status outside rendered/,
    and the bytes of every file of the user's."""
    outside = ["--", ".", ":(exclude)rendered"]
    entries = git(repo, "ls-files", "-s", *outside)
    status = git(repo, "status", "--porcelain=v1", "-uall", *outside)
    names = [*dirt.edited, *dirt.staged, *dirt.untracked, "notes.md"]
    files = {n: (repo / n).read_bytes() if (repo / n).exists() else None for n in set(names)}
    return entries, status, dict(sorted(files.items()))


def push_retry_problems(scratch: Path, dirt: Dirt, *, remote_outside: bool) -> list[str]:
    """The scenario of issue #40 items 4 and 5 (see the module doc); `remote_outside`: the
    other clone pushed a change outside rendered/ (else a render of other models)."""
    sources, remote, user, other = (scratch / n for n in ("src", "remote.git", "user", "other"))
    models(sources / "a.yaml", [("models", "a")])
    git(scratch, "init", "-q", "--bare", "-b", "main", str(remote))
    user.mkdir()
    git(user, "init", "-q", "-b", "main")
    (user / "notes.md").write_text("notes\n")
    for name in dirt.edited:
        (user / name).parent.mkdir(parents=True, exist_ok=True)
        (user / name).write_text("base\n")
    git(user, "add", "-A")
    git(user, "commit", "-q", "-m", "the user's files")
    git(user, "remote", "add", "origin", str(remote))
    first, _ = render(str(sources), "--repo", str(user), "--push", "origin")
    git(scratch, "clone", "-q", str(remote), str(other))
    if remote_outside:
        (other / "elsewhere.txt").write_text("another clone's\n")
        git(other, "add", "elsewhere.txt")
        git(other, "commit", "-q", "-m", "another clone's file")
        git(other, "push", "-q", "origin", "HEAD:main")
    else:
        models(scratch / "src-other" / "b.yaml", [("others", "b")])
        render(str(scratch / "src-other"), "--repo", str(other), "--push", "origin")
    for group in (dirt.edited, dirt.staged, dirt.untracked):
        for name, text in group.items():
            (user / name).parent.mkdir(parents=True, exist_ok=True)
            (user / name).write_text(text)
    (user / "notes.md").write_text("notes, edited\n")
    if dirt.staged:
        git(user, "add", "--", *dirt.staged)
    before = _snapshot(user, dirt)
    models(sources / "c.yaml", [("models", "c")])

    code, report = render(str(sources), "--repo", str(user), "--push", "origin")

    problems = []
    head = git(remote, "rev-parse", "main").strip()
    if (first, code) != (0, 0):
        problems.append(f"renders exited {first} and {code}")
    if report.get("commit") != head:
        problems.append(f"reported commit {report.get('commit')}, the remote holds {head}")
    after = _snapshot(user, dirt)
    for what, was, now in zip(("index entries", "status", "files"), before, after, strict=True):
        if was != now:
            problems.append(f"{what} outside rendered/ changed: {was!r} -> {now!r}")
    held = git(remote, "ls-tree", "-r", "--name-only", "main", "rendered").split()
    expected = {"rendered/models/a/kustomization.yaml", "rendered/models/c/kustomization.yaml"}
    if not remote_outside:
        expected.add("rendered/others/b/kustomization.yaml")
    if not expected <= set(held):
        problems.append(f"the remote misses {sorted(expected - set(held))}")
    if remote_outside and git(remote, "show", "main:elsewhere.txt") != "another clone's\n":
        problems.append("the other clone's file is not on the remote")
    differs = subprocess.run(
        ["git", "diff", "--quiet", head, "--", "rendered"], cwd=user, check=False, timeout=60
    )
    if differs.returncode != 0:
        problems.append("the output folder is not what was pushed")
    return problems


@dataclass(frozen=True)
class Edits:
    """Edits of teams' source folders (src/t<i>/) between a render of everything and a render
    of `subset`: `claims` (i, j): team i adds a file defining team j's model, with other args;
    `changes`: teams whose own model changes; `deletes`: teams whose model file goes."""

    teams: int
    subset: frozenset[int]
    claims: tuple[tuple[int, int], ...] = ()
    changes: frozenset[int] = frozenset()
    deletes: frozenset[int] = frozenset()


def _outputs(repo: Path) -> tuple[dict[str, str], dict[str, dict[str, bytes]]]:
    """The record (folder -> source) and every folder's files."""
    root = repo / "rendered"
    record_file = root / "runway-sources.json"
    record = json.loads(record_file.read_text())["sources"] if record_file.is_file() else {}
    folders: dict[str, dict[str, bytes]] = {}
    for path in sorted(root.rglob("*")):
        parts = path.relative_to(root).parts
        if path.is_file() and len(parts) == 3:
            folders.setdefault(f"{parts[0]}/{parts[1]}", {})[parts[2]] = path.read_bytes()
    return record, folders


def ownership_problems(scratch: Path, edits: Edits) -> list[str]:
    """Render every team's folder, make `edits`, render the folders of `edits.subset` only;
    answer each output recorded for a source outside the subset (a file that still exists) that
    the second render changed, and its record."""
    src, repo = scratch / "src", scratch / "gitops"
    for team in range(edits.teams):
        models(src / f"t{team}" / "model.yaml", [(f"t{team}", "m")])
        models(src / f"t{team}" / "keep.yaml", [(f"t{team}", "keep")])  # never empty
    first, _ = render(str(src), "--repo", str(repo), "--commit")
    for team, victim in edits.claims:
        models(src / f"t{team}" / f"zz-{victim}.yaml", [(f"t{victim}", "m")], gpu=2)
    for team in edits.changes:
        models(src / f"t{team}" / "model.yaml", [(f"t{team}", "m")], gpu=4)
    for team in edits.deletes:
        (src / f"t{team}" / "model.yaml").unlink()
    record, before = _outputs(repo)
    roots = [str(src / f"t{team}") for team in sorted(edits.subset)]
    second, _ = render(*roots, "--repo", str(repo), "--commit", "--max-removals", "100")
    record_after, after = _outputs(repo)
    problems = [] if first == 0 and second in (0, 1) else [f"renders exited {first}, {second}"]
    inside = tuple(f"{root}/" for root in roots)
    for key, owner in sorted(record.items()):
        if owner.startswith(inside) or not Path(owner).exists():
            continue  # the subset's own, or nobody's now: the render may change it
        if before.get(key) != after.get(key):
            problems.append(f"{key} (of {owner}) changed by a render of {roots}")
        if record_after.get(key) != owner:
            problems.append(f"{key}: recorded {record_after.get(key)}, was {owner}")
    return problems
