"""The commit of a render: the three ways of making it, and its message.

History changes only by a commit (an atomic ref update), so HEAD is never a partial tree. The
plain way is `git add` + `git commit`. When git found the output folder clean before the render,
only the paths the render wrote and removed are staged (`git update-index`) and, with no hook and
no signing in the way, the commit is written from HEAD's trees and those changes without reading
the index again (renderer.git.gittrees). A render that wrote BULK files or more commits through
`git fast-import`, its blobs written by parallel processes (renderer.git.bulk).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from renderer.git.bulk import Blobs, commit_with_blobs
from renderer.git.gittrees import (
    folders_of,
    mktree_input,
    new_trees,
    parse_tree,
    staged,
    staged_changes,
)
from renderer.git.runner import LOG_NAME, GitError, Repo

BULK = 1000  # files written by one render from which the commit goes through git fast-import
DIFF_CACHED = ("diff", "--cached", "--raw", "--no-renames", "--no-abbrev", "-z")
# Paths of one render compared by name (_stage_touched), as arguments well within the
# kernel's limit on their length (2 MiB with the environment); beyond, the whole index is.
PATHSPEC_LIMIT, PATHSPEC_BYTES = 500, 256 * 1024
DETAIL_LIMIT = 200  # a commit message lists files up to this many, then counts per namespace
# The hooks `git commit` runs (reference-transaction runs for `git update-ref` too).
COMMIT_HOOKS = ("pre-commit", "prepare-commit-msg", "commit-msg", "post-commit")
log = logging.getLogger(LOG_NAME)


def commit(
    repo: Repo,
    subdir: str,
    written: int = 0,
    texts: Mapping[str, str] | None = None,
    touched: Sequence[str] | None = None,
    *,
    trailers: str = "",
    streamed: tuple[Blobs, Sequence[str]] | None = None,
) -> str | None:
    """Commit the rendered tree; None (and no commit) when nothing changed since HEAD.
    `git add` rehashes only files whose stat changed, so only written files are staged;
    changes staged by an earlier render that failed to commit are committed too. The
    message goes on standard input (no argument-length limit). When this render wrote
    `written` >= BULK files, the commit is made by `git fast-import` (see _fast_import);
    `texts` (path in `subdir` -> text) may hold what files were just written with, so they
    are not read back. `touched` (paths in `subdir`): what this render wrote and removed,
    when git found `subdir` clean before (renderer.reuse.cleantree); only they are staged, by
    `git update-index`, instead of `git add` looking at every file (10,000 ModelDeployments,
    one changed: 0.11 s -> 0.01 s). `trailers` end the message (renderer.git.provenance).
    `streamed`: the blobs a BlobSink took as the files were written (renderer.git.bulk), and
    the paths (in `subdir`) written, in order, whose places are the blobs' marks: fast-import
    names them, neither read back nor sent again."""
    if written >= BULK:
        changes = _unstaged_changes(repo, subdir)
        if changes is not None:
            if not changes:
                return None
            return _fast_import(repo, subdir, changes, texts or {}, trailers, streamed=streamed)
    if touched is None:
        repo.git("add", "-A", "--", subdir)
        raw = repo.git(*DIFF_CACHED).stdout
    elif not touched:
        return None  # git found `subdir` clean, and this render wrote nothing there
    else:
        raw = _stage_touched(repo, subdir, touched)
    listed = staged_changes(raw)
    if listed is None:
        raise GitError(f"git diff --cached: unexpected output {raw[:80]!r}")
    names = [f"{s}\t{p}" for s, p in listed]
    inside = subdir.strip("/") + "/"
    entries = [e for e in names if e.split("\t", 1)[1].startswith(inside)]
    if not entries:
        return None
    # Only when something outside the tree is staged (by a person): the slower form that
    # commits just `subdir`.
    only = ["--", subdir] if len(entries) < len(names) else []
    message = commit_message(entries, subdir, trailers)
    if touched is not None and not only and _plain_commits(repo):
        return _commit_index(repo, message, raw)
    repo.git("commit", "-q", "-F", "-", *only, stdin=message)
    return repo.git("rev-parse", "HEAD").stdout.strip()


def _stage_touched(repo: Repo, subdir: str, touched: Sequence[str]) -> str:
    """Stage `touched` (paths in `subdir`, which git found clean before this render) and
    answer `git diff --cached --raw` of the index. Inside `subdir` only those paths can
    differ from HEAD, so git compares only them (comparing the whole index with HEAD's tree
    took 30-40 ms of 10,000 ModelDeployments, one changed), and is asked separately about
    anything staged outside `subdir` (by a person: then the commit takes only `subdir`).
    Beyond PATHSPEC_LIMIT paths (or PATHSPEC_BYTES) git compares the whole index."""
    top = subdir.strip("/")
    # Started first: git reads either index, and this one's entries outside are the same.
    outside = repo.start("--no-optional-locks", *DIFF_CACHED, "--", f":(exclude,literal){top}")
    paths = "".join(f"{top}/{path}\0" for path in touched)
    repo.git("update-index", "--add", "--remove", "-z", "--stdin", stdin=paths)
    pathspecs = [f":(literal){top}/{path}" for path in touched]
    if len(pathspecs) > PATHSPEC_LIMIT or sum(map(len, pathspecs)) > PATHSPEC_BYTES:
        outside()
        return repo.git(*DIFF_CACHED).stdout
    inside = repo.git(*DIFF_CACHED, "--", *pathspecs).stdout
    return inside + outside().stdout


def _plain_commits(repo: Repo) -> bool:
    """Whether `git commit` would do nothing here but write the index's tree and a commit
    of it: no hook it runs, no signing (then _commit_index makes the same commit)."""
    hooks = repo.start("rev-parse", "--git-path", "hooks")
    signing = repo.git("config", "--type=bool", "--get", "commit.gpgSign", check=False)
    if signing.stdout.strip() == "true":
        return False
    folder = repo.work / hooks().stdout.strip()
    return not any(os.access(folder / name, os.X_OK) for name in COMMIT_HOOKS)


def _commit_index(repo: Repo, message: str, raw: str) -> str:
    """The commit `git commit -F -` makes of the index (the message needs none of its
    clean-up: no comment lines, no trailing spaces), without refreshing the index from the
    work tree first (36,689 files stat'ed: 0.055 against 0.01 s): the index holds exactly
    what this render staged over HEAD. `raw`: `git diff --cached --raw` (the index's tree
    is worked out from it: renderer.git.gittrees)."""
    head = repo.head() or ""
    tree = (index_tree(repo, raw) if head else None) or repo.git("write-tree").stdout.strip()
    before = ["-p", head] if head else []
    made = repo.git("commit-tree", tree, *before, "-F", "-", stdin=message).stdout.strip()
    subject = message.split("\n", 1)[0]
    reflog = f"commit: {subject}" if head else f"commit (initial): {subject}"
    repo.git("update-ref", "-m", reflog, "HEAD", made, head or "0" * len(made))
    return made


def index_tree(repo: Repo, raw: str) -> str | None:
    """The tree `git write-tree` would write, made from HEAD's trees and the staged changes
    `raw` (`git diff --cached --raw`) without reading or writing the index; None when that
    cannot be told here (renderer.git.gittrees): then write-tree."""
    changes = staged(raw)
    widths = {len(c.before) for c in changes or ()}
    algorithm = {40: "sha1", 64: "sha256"}.get(widths.pop()) if len(widths) == 1 else None
    if not changes or algorithm is None:
        return None
    folders = folders_of(changes)
    requests = "".join(f"HEAD:{folder}\n" if folder else "HEAD^{tree}\n" for folder in folders)
    found = _trees(repo.output("cat-file", "--batch", stdin=requests), len(folders))
    if found is None:
        return None
    width = {"sha1": 20, "sha256": 32}[algorithm]
    head = {f: parse_tree(t, width) for f, t in zip(folders, found, strict=True) if t is not None}
    top, written = new_trees(head, changes, algorithm)
    made = repo.git("mktree", "--batch", stdin=mktree_input([t for t, _ in written]))
    if made.stdout.split() != [oid for _, oid in written]:
        log.warning("git mktree made other trees than worked out; using git write-tree")
        return None
    return top


def _unstaged_changes(repo: Repo, subdir: str) -> dict[str, str] | None:
    """path -> A, M or D: how the work tree's `subdir` differs from the index, when the
    index is HEAD (nothing staged) on a branch; None (use git add) otherwise, or when a path
    cannot be written in fast-import's unquoted form."""
    if repo.git("diff", "--cached", "--quiet", check=False).returncode != 0:
        return None
    if repo.git("symbolic-ref", "-q", "HEAD", check=False).returncode != 0:
        return None  # a detached HEAD
    listed = repo.git("ls-files", "-z", "-t", "-o", "-m", "-d", "--exclude-standard", "--", subdir)
    changes: dict[str, str] = {}
    for item in listed.stdout.split("\0"):
        tag, _, path = item.partition(" ")
        if path and changes.get(path) != "D":  # a deleted file is listed as changed too
            changes[path] = {"?": "A", "C": "M", "R": "D"}.get(tag, "M")
    if any("\n" in p or p.startswith('"') for p in changes):
        return None
    return changes


def _fast_import(
    repo: Repo,
    subdir: str,
    changes: Mapping[str, str],
    texts: Mapping[str, str],
    trailers: str = "",
    *,
    streamed: tuple[Blobs, Sequence[str]] | None = None,
) -> str:
    """The commit `commit` makes, written by `git fast-import` as packs instead of one
    loose object per file by `git add` (renderer.git.bulk). The commit is HEAD with `changes`
    as the work tree holds them; the index is then reset to it (nothing else was staged). A
    path whose blob was `streamed` is named by its mark; any other is sent now."""
    branch = repo.git("symbolic-ref", "-q", "HEAD").stdout.strip()
    parent = repo.head()
    idents = dict(
        line.split("=", 1)
        for line in repo.git("var", "-l").stdout.splitlines()
        if line.startswith(("GIT_AUTHOR_IDENT=", "GIT_COMMITTER_IDENT="))
    )
    listed = [f"{changes[p]}\t{p}" for p in sorted(changes)]
    message = commit_message(listed, subdir, trailers).encode()
    header = [
        f"commit {branch}\n".encode(),
        f"author {idents['GIT_AUTHOR_IDENT']}\n".encode(),
        f"committer {idents['GIT_COMMITTER_IDENT']}\n".encode(),
        b"data %d\n" % len(message),
        message,
    ]
    if parent is not None:
        header.append(f"from {parent}\n".encode())
    files: list[tuple[str, str, bytes]] = []
    marked: list[tuple[str, int]] = []
    marks = _marks(streamed)
    top = f"{subdir.strip('/')}/"
    for path in sorted(changes):
        if changes[path] != "D":
            relative = path.removeprefix(top)
            mark = marks.get(relative) if path.startswith(top) else None
            if mark is not None:
                marked.append((path, mark))
                continue
            known = texts.get(relative)
            mode, data = (
                ("100644", known.encode()) if known is not None else _blob(repo.work / path)
            )
            files.append((path, mode, data))
    del marks
    removed = [p for p in sorted(changes) if changes[p] == "D"]
    blobs = (streamed[0], marked) if streamed is not None else None
    commit_with_blobs(repo.git_dir, repo.start, header, files, removed, streamed=blobs)
    repo.git("reset", "-q")  # the index as HEAD now is (nothing was staged), refreshed
    head: str = repo.git("rev-parse", "HEAD").stdout.strip()
    return head


def _marks(streamed: tuple[Blobs, Sequence[str]] | None) -> dict[str, int]:
    """Each path written (in `subdir`) -> the mark of the blob it holds, its last write's; not
    a path removed after it was written."""
    if streamed is None:
        return {}
    blobs, written = streamed
    marks: dict[str, int] = {}
    for mark, path in enumerate(written, start=1):
        if mark in blobs:
            marks[path] = mark
        else:
            marks.pop(path, None)
    return marks


def _trees(out: bytes, count: int) -> list[bytes | None] | None:
    """The contents `git cat-file --batch` gave for `count` trees asked for (None for a path
    HEAD has no folder at: missing, or a file); None when the answer is not understood."""
    found: list[bytes | None] = []
    at = 0
    for _ in range(count):
        end = out.find(b"\n", at)
        if end < 0:
            return None
        header = out[at:end].split(b" ")
        if header[-1] == b"missing":
            found.append(None)
            at = end + 1
            continue
        if len(header) != 3 or not header[2].isdigit():
            return None
        size = int(header[2])
        found.append(out[end + 1 : end + 1 + size] if header[1] == b"tree" else None)
        at = end + 1 + size + 1
    return found if at == len(out) else None


def commit_message(name_status: list[str], subdir: str, trailers: str = "") -> str:
    """ "runway render: N added, N changed, N removed", then one "A|M|D path" line per file, or
    for a large change (over DETAIL_LIMIT files) one line of counts per namespace; then, as the
    last paragraph, `trailers` (renderer.git.provenance), if any."""
    words = {"A": "added", "M": "changed", "D": "removed"}
    counts = dict.fromkeys(words.values(), 0)
    per_namespace: dict[str, dict[str, int]] = {}
    lines = []
    for entry in name_status:
        status, path = entry.split("\t", 1)
        word = words.get(status[0], "changed")
        counts[word] += 1
        relative = path.removeprefix(subdir.rstrip("/") + "/")
        namespace = relative.split("/", 1)[0] if "/" in relative else "(top)"
        per_namespace.setdefault(namespace, dict.fromkeys(words.values(), 0))[word] += 1
        lines.append(f"{status[0]} {relative}")
    summary = ", ".join(f"{n} {word}" for word, n in counts.items())
    if len(lines) > DETAIL_LIMIT:
        lines = [
            f"{namespace}: " + ", ".join(f"{n} {word}" for word, n in namespace_counts.items())
            for namespace, namespace_counts in sorted(per_namespace.items())
        ]
    end = f"\n{trailers}" if trailers else ""
    return f"runway render: {summary}\n\n" + "\n".join(lines) + "\n" + end


def _blob(path: Path) -> tuple[str, bytes]:
    """A file's git mode and content (a symbolic link's content is its target)."""
    if path.is_symlink():
        return "120000", os.readlink(path).encode()
    mode = "100755" if os.access(path, os.X_OK) else "100644"
    return mode, path.read_bytes()
