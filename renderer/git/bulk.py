"""A commit of many files through `git fast-import`: the blobs written by parallel processes,
each into a pack of its own, then the commit that names them by mark.

A first render of 10,000 ModelDeployments writes 36,688 files. `git add` + `git commit` took
6.8 CPU-s and left 192 MB of loose objects (which also set off `git gc --auto`). One fast-import
of everything took 1.5-1.6 s, most of it looking for deltas between unrelated blobs; without
deltas (`--depth=0`) 1.0 s, and split across BLOB_PROCESSES processes 0.36-0.42 s of wall time,
with the commit (trees only) 0.2 s: 13-15 MB of packs either way.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from renderer.git.runner import Fed, Repo, Start

# The machine's cores; more cost more start-up than they save. Fewer when this process may run on
# fewer (a CI runner's cgroup, `taskset`).
BLOB_PROCESSES = 2
# Packs always: below fastimport.unpackLimit (100 objects) fast-import writes loose objects, as a
# commit of the trees alone often is.
FAST_IMPORT = ("-c", "fastimport.unpackLimit=0", "fast-import", "--quiet", "--done")


class BlobSink:
    """The blobs of a render's files, sent to one `git fast-import` as each file is written
    (renderer.git.writer), so that a commit of many files needs neither their texts kept nor
    read back: git packs them on another core while the render goes on. Each blob is named by
    the mark the writer gives it (its place in the writer's list of paths, from 1); close()
    ends the pack and answers the Blobs a commit names them by (commit_with_blobs)."""

    def __init__(self, repo: Repo) -> None:
        self._marks = repo.git_dir / "runway-marks-streamed"
        self._fed: Fed | None = repo.feed(
            *FAST_IMPORT, "--depth=0", f"--export-marks={self._marks}"
        )
        self._sent = bytearray()  # 1 at each mark sent (a byte a mark: no path kept)

    def add(self, mark: int, data: bytes) -> None:
        if self._fed is None:
            raise ValueError("the blob sink is closed")
        self._fed.write(b"blob\nmark :%d\ndata %d\n" % (mark, len(data)))
        self._fed.write(data)
        self._fed.write(b"\n")
        if mark >= len(self._sent):
            self._sent.extend(bytes(mark + 1 - len(self._sent)))
        self._sent[mark] = 1

    def close(self) -> Blobs:
        """The pack finished: the marks of the blobs sent (in a file in .git, gone after the
        commit), or None when none was."""
        fed, self._fed = self._fed, None
        if fed is None:
            raise ValueError("the blob sink is closed")
        fed.write(b"done\n")
        fed.close()
        return Blobs(self._marks, bytes(self._sent))

    def abort(self) -> None:
        """Ended unfinished (the render failed): no pack, no marks."""
        if self._fed is not None:
            self._fed.abort()
            self._fed = None
        self._marks.unlink(missing_ok=True)


class Blobs:
    """Blobs already in the repository, sent by a BlobSink: the file of their marks, and the
    marks given (a commit names a path's blob by its mark)."""

    def __init__(self, marks: Path, sent: bytes) -> None:
        self.marks, self._sent = marks, sent

    @property
    def last(self) -> int:
        """The largest mark sent (0: none)."""
        return max(len(self._sent) - 1, 0)

    def __contains__(self, mark: object) -> bool:
        return isinstance(mark, int) and 0 < mark < len(self._sent) and self._sent[mark] == 1


def commit_with_blobs(
    git_dir: Path,
    start: Start,
    header: Sequence[bytes],
    files: Sequence[tuple[str, str, bytes]],
    removed: Sequence[str],
    *,
    streamed: tuple[Blobs, Sequence[tuple[str, int]]] | None = None,
) -> None:
    """One commit: `header` (fast-import's commit, author, committer, message and from
    commands), each of `files` (path, mode, bytes) as it is, and `removed` gone. `git_dir`:
    the repository's .git, where fast-import's marks are kept meanwhile; `start`: how git is
    started in it (Repo.start). `streamed`: blobs a BlobSink sent already, and the paths
    (path, mark) that hold them in the commit (as 100644 files)."""
    # the streamed blobs' marks are 1..offset, those of `files` above
    offset = streamed[0].last if streamed is not None else 0
    parts = _split(len(files), min(BLOB_PROCESSES, len(os.sched_getaffinity(0))))
    marks = [git_dir / f"runway-marks-{i}" for i in range(len(parts))]
    if streamed is not None:
        marks.append(streamed[0].marks)
    try:
        streams = [
            b"".join(
                piece
                for k in range(first, stop)
                for piece in (
                    b"blob\nmark :%d\ndata %d\n" % (offset + k + 1, len(files[k][2])),
                    files[k][2],
                    b"\n",
                )
            )
            + b"done\n"
            for first, stop in parts
        ]
        started: list[Callable[[], object]] = [
            start(*FAST_IMPORT, "--depth=0", f"--export-marks={path}", stdin=stream)
            for path, stream in zip(marks, streams, strict=False)  # not the streamed marks
        ]
        del streams
        if started:
            with ThreadPoolExecutor(len(started)) as pool:  # each thread feeds and waits for one
                list(pool.map(lambda finish: finish(), started))
        known = git_dir / "runway-marks"
        known.write_bytes(b"".join(path.read_bytes() for path in marks))
        marks.append(known)
        lines = [
            b"M %s :%d %s\n" % (mode.encode(), offset + k + 1, path.encode())
            for k, (path, mode, _) in enumerate(files)
        ]
        if streamed is not None:
            lines += [b"M 100644 :%d %s\n" % (mark, path.encode()) for path, mark in streamed[1]]
        lines += [b"D %s\n" % path.encode() for path in removed]
        stream = b"".join([*header, *lines, b"done\n"])
        start(*FAST_IMPORT, f"--import-marks={known}", stdin=stream)()
    finally:
        for path in marks:
            path.unlink(missing_ok=True)


def _split(count: int, parts: int) -> list[tuple[int, int]]:
    """`count` items in at most `parts` contiguous ranges of near-equal size (none empty)."""
    parts = max(1, min(parts, count))
    size, extra = divmod(count, parts)
    bounds, start = [], 0
    for i in range(parts):
        stop = start + size + (1 if i < extra else 0)
        bounds.append((start, stop))
        start = stop
    return [b for b in bounds if b[0] < b[1]]
