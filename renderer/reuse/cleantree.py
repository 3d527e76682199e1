"""The output folder as the render cache last saw it, vouched for by git instead of a scan.

A render compares each output folder with its render cache entry; by default it stats every
file of the tree (a scan: 36,689 files and 10,021 folders for 10,000 ModelDeployments, 0.16 s
here) and reads the folders whose Stats changed. When the cache was saved right after a commit
(RenderCache.tree), and now `git status` finds nothing in the folder (nothing staged, changed,
deleted, untracked or ignored: git's index is the stat cache, and git compares by content what a
stat cannot settle) and HEAD holds that same tree there, every file holds what the cache was
saved against. The tree is then listed from git's index (`git ls-files`) and each file takes the
Stat its cache entry recorded, so the render reads and stats nothing it does not render. Git
starts as soon as the render holds the repository and works while Runway reads its sources.

What git's stat cache cannot see, this cannot either (renderer.reuse.stamp says what that is);
`runway render --full` compares every file by content.
"""

from __future__ import annotations

import functools
import re
import subprocess
from collections.abc import Callable

from renderer.git.disk import DiskTree
from renderer.git.runner import Repo
from renderer.git.safefs import Folders, plain_parts
from renderer.git.writer import Stat, stat_of
from renderer.output.shard import Namespaces
from renderer.reuse.rendercache import RenderCache, unpacked

# An index entry of `git ls-files -s -z` that is not a plain file (a link, a submodule).
_NOT_PLAIN = re.compile(r"(?:^|\0)(?!100644 |100755 )[^\0]")
_PATH = re.compile(r"\t([^\0]*)\0")

Git = Callable[[], subprocess.CompletedProcess[str]]


class CleanCheck:
    """Git asked, now, whether `subdir` is clean and what HEAD holds there; `tree` answers."""

    def __init__(self, repo: Repo, subdir: str, *, held: bool = False) -> None:
        self._repo, self._subdir = repo, subdir
        plain_parts(subdir)
        # No optional locks: git may start before the render holds the repository, and a
        # render must find no index.lock of a live git when it takes it (renderer.git.locks).
        # `held`: the caller holds the repository and waits for git (`settle`) before it lets
        # go: git may refresh its index, so that the next status is not slower for it.
        status = repo.start(
            *(() if held else ("--no-optional-locks",)),
            *("status", "--porcelain", "-z", "--untracked-files=all", "--ignored", "--", subdir),
            check=False,
        )
        head = repo.start("rev-parse", "-q", "--verify", f"HEAD:{subdir}", check=False)
        self._status, self._head = functools.cache(status), functools.cache(head)

    def settle(self) -> None:
        """Git done."""
        self._status()
        self._head()

    def clean_tree(self) -> str | None:
        """HEAD's tree at `subdir` when the index and the work tree hold exactly it there:
        nothing staged, changed, deleted, untracked or ignored; else None."""
        changed, head = self._status(), self._head()
        if changed.returncode != 0 or changed.stdout or head.returncode != 0:
            return None
        return head.stdout.strip()

    def tree(self, cache: RenderCache | None, part: Namespaces | None = None) -> DiskTree | None:
        """The tree under `subdir` (as Repo.scan gives it) when git vouches for it as `cache`
        saw it; None: scan it. With `part`, only its namespaces' files, the files at the top and
        each namespace's kustomization (what a render of `part` reads: renderer.output.shard)."""
        changed, head = self._status(), self._head()
        if cache is None or cache.tree is None:
            return None
        top = f"{self._subdir.strip('/')}/"
        pathspecs = (
            [f":(glob){top}*", f":(glob){top}*/kustomization.yaml"]
            + [f":(literal){top}{name}/" for name in sorted(part.names)]
            if part is not None
            else [self._subdir]
        )
        files = self._repo.git("ls-files", "-s", "-z", "--", *pathspecs, check=False)
        repo, subdir = self._repo, self._subdir
        with Folders(repo.work) as folders:  # a link on the way: refused, as a scan refuses it
            if folders.fd(subdir, create=False) is None:
                return None
        if changed.returncode != 0 or changed.stdout or files.returncode != 0:
            return None
        if head.returncode != 0 or head.stdout.strip() != cache.tree:
            return None
        if _NOT_PLAIN.search(files.stdout) is not None:
            return None
        entries = cache.entries if part is None else cache.entries_in(part.owns)
        known: dict[str, Stat] = {
            f"{folder}/{name}": stat
            for folder, entry in entries.items()
            for name, stat in (unpacked(entry.stats) if entry.stats else ())
        }
        root = repo.work / subdir
        skip = len(subdir.strip("/")) + 1
        stats: dict[str, Stat] = {}
        # git lists its index in the order of the paths' bytes: UTF-8's order is the code
        # points', so this is the path order a scan gives
        for path in _PATH.findall(files.stdout):
            relative = path[skip:]
            found = known.get(relative)
            # a file no entry recorded (the kustomizations, the record, a kept folder): stat'ed
            stats[relative] = found if found is not None else stat_of(root / relative)
        return DiskTree(root, stats)
