"""Source files parsed ahead in a pool of forked workers (ParsedSources.prefetch, what a render of
everything does with a megabyte or more to parse) give exactly what parsing them here gives: the
same documents, document numbers, digests and error, and the same cache entries, byte for byte,
over generated files (some broken, some not UTF-8), with and without the cached entries of an
earlier version of them, an alias bomb and a large value among them; a worker takes the cached
pieces whose text is the same."""

from __future__ import annotations

import pickle
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.fields.errors import SourceError
from kubeio.yamlio import dump
from renderer.reuse import parsecache
from renderer.reuse.parsecache import ParsedSources
from tests.support.sourcestreams import streams

# An alias bomb (9 levels of 9 references: refused past kubeio's expansion bound, in a worker
# as in the render) and a large value, besides generated streams and bytes that are not UTF-8.
BOMB = "a0: &a0 [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 10)
)
LARGE = "a: " + "x" * 200_000 + "\n"
FILES = st.lists(
    streams() | st.sampled_from([b"\xff\xfe not UTF-8\n", BOMB, LARGE]), min_size=2, max_size=4
)


def _write(folder: Path, files: list[str | bytes]) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, content in enumerate(files):
        path = folder / f"f{i}.yaml"
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        paths.append(str(path))
    return paths


def _read(paths: list[str], cache: Path, *, workers: int) -> tuple[Any, ...]:
    """What a render reads: every file's documents in order (or the first error), the digests,
    and the cache entries `finish` writes."""
    parsed = ParsedSources(cache, "fingerprint")
    files = parsed.files(paths)
    parsed.prefetch(files, workers)
    try:
        docs = [d for found in files for d in parsed.documents(found)]
        read: Any = [(d.origin, d.index, d.obj, parsed.digests.get(id(d.obj))) for d in docs]
    except SourceError as err:
        read = str(err)
    parsed.finish(cache)
    entries = {p.name: p.read_bytes() for p in sorted(cache.iterdir())} if cache.is_dir() else {}
    return read, entries


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(before=FILES, after=FILES)
def test_files_parsed_in_a_pool_give_what_parsing_them_here_gives(
    before: list[str | bytes],
    after: list[str | bytes],
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(parsecache, "PREFETCH_BYTES", 0)
    tmp = tmp_path_factory.mktemp("prefetch")
    answers = []
    for workers in (1, 2):  # the same paths both times: they are in messages and entry names
        shutil.rmtree(tmp / "cache", ignore_errors=True)
        first = _read(_write(tmp / "src", before), tmp / "cache", workers=workers)
        # an edit of each file: the earlier entries are the cache now
        edited = [*after, *before][: len(before)]
        again = _read(_write(tmp / "src", edited), tmp / "cache", workers=workers)
        answers.append((first, again))
    assert answers[0] == answers[1]


def test_a_worker_reuses_the_cached_pieces_of_an_edited_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A piece marked in the cache comes back marked: the worker did not parse it again."""
    monkeypatch.setattr(parsecache, "PREFETCH_BYTES", 0)
    documents = [dump({"kind": "ModelDeployment", "metadata": {"name": f"m{i}"}}) for i in range(5)]
    paths = _write(tmp_path / "src", ["".join(f"---\n{d}" for d in documents), "a: 1\n"])
    _read(paths, tmp_path / "cache", workers=2)
    name = ParsedSources(tmp_path / "cache", "fingerprint")._name(Path(paths[0]))
    entry = tmp_path / "cache" / name
    key, pieces = pickle.loads(entry.read_bytes())
    pieces[0][1][1][0][1]["metadata"]["name"] = "from the cache"
    entry.write_bytes(pickle.dumps((key, pieces)))
    documents[3] = dump({"kind": "ModelDeployment", "metadata": {"name": "changed"}})
    _write(tmp_path / "src", ["".join(f"---\n{d}" for d in documents), "a: 2\n"])

    read, _ = _read(paths, tmp_path / "cache", workers=2)

    assert [obj.get("metadata", {}).get("name") for _, _, obj, _ in read] == [
        "from the cache",
        "m1",
        "m2",
        "changed",
        "m4",
        None,
    ]
