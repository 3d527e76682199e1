"""Source files keyed by their Stats (renderer.reuse.sourcekeys): a file whose Stat is the one
recorded is keyed without being read; a change to a file is never missed, also one that keeps
its size and puts its mtime back; a file changed in the second its Stat was taken is not
recorded; and a record that is truncated, edited or not a record at all means files are read
(their true keys), never a wrong key or a traceback."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from renderer.reuse.digests import digest
from renderer.reuse.sourcekeys import RECORD_FORMAT, SourceKeys, file_key, record_of


def sources(folder: Path, count: int = 3) -> list[Path]:
    paths = []
    for i in range(count):
        path = folder / f"m{i}.yaml"
        path.write_text(f"kind: ModelDeployment\nmetadata: {{name: m{i}}}\n")
        paths.append(path)
    return paths


def learned(folder: Path, paths: list[Path]) -> Path:
    """The record of `paths`, every Stat recorded (no racy window)."""
    keys = SourceKeys.within(folder, racy_ns=-(10**18))
    for path in paths:
        keys.key(path)
    keys.save()
    record = record_of(folder)
    assert record is not None
    return record


def test_a_file_whose_stat_is_recorded_is_keyed_without_reading_it(tmp_path: Path) -> None:
    paths = sources(tmp_path)
    learned(tmp_path / "parsed", paths)
    keys = SourceKeys.within(tmp_path / "parsed")
    for path in paths:
        key, data = keys.key(path)
        assert data is None
        assert key == file_key(path, path.read_bytes())


def test_an_edit_that_keeps_the_size_and_puts_the_mtime_back_is_seen(tmp_path: Path) -> None:
    paths = sources(tmp_path)
    learned(tmp_path / "parsed", paths)
    before = os.stat(paths[1])
    paths[1].write_text(paths[1].read_text().replace("m1", "x1"))
    os.utime(paths[1], ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(paths[1]).st_size == before.st_size
    key, data = SourceKeys.within(tmp_path / "parsed").key(paths[1])
    assert data == paths[1].read_bytes()
    assert key == file_key(paths[1], data)


def test_a_file_replaced_by_another_is_read(tmp_path: Path) -> None:
    paths = sources(tmp_path)
    learned(tmp_path / "parsed", paths)
    other = tmp_path / "other"
    other.write_text(paths[0].read_text().replace("m0", "y0"))
    os.replace(other, paths[0])
    key, data = SourceKeys.within(tmp_path / "parsed").key(paths[0])
    assert data is not None and key == file_key(paths[0], data)


def test_a_file_changed_within_the_racy_window_is_not_recorded(tmp_path: Path) -> None:
    paths = sources(tmp_path)
    keys = SourceKeys.within(tmp_path / "parsed")  # the files were written just now: racy
    for path in paths:
        keys.key(path)
    keys.save()
    again = SourceKeys.within(tmp_path / "parsed")
    assert all(again.key(path)[1] is not None for path in paths)


def test_without_trust_every_file_is_read(tmp_path: Path) -> None:
    paths = sources(tmp_path)
    learned(tmp_path / "parsed", paths)
    keys = SourceKeys.within(tmp_path / "parsed", trust=False)
    assert all(keys.key(path)[1] == path.read_bytes() for path in paths)


def test_save_keeps_only_the_paths_read_and_records_in_a_new_folder(tmp_path: Path) -> None:
    paths = sources(tmp_path)
    keys = SourceKeys(None, racy_ns=-(10**18))
    for path in paths:
        keys.key(path)
    folder = tmp_path / "parsed"
    keys.save(folder, keep={str(paths[0])})
    record = record_of(folder)
    assert record is not None and record.parent == tmp_path  # beside the folder
    with record.open("rb") as handle:
        version, _, body = pickle.load(handle)
    entries, _ = pickle.loads(body)
    assert version == RECORD_FORMAT
    assert list(entries) == [str(paths[0])]


VALUES = st.recursive(
    st.none() | st.integers() | st.text(max_size=5) | st.binary(max_size=5) | st.booleans(),
    lambda inner: (
        st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=10,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    how=st.sampled_from(["cut", "flip", "shape", "any"]),
    cut=st.integers(0, 10_000),
    value=VALUES,
    data=st.data(),
)
def test_a_damaged_record_means_the_files_are_read_never_a_wrong_key(
    tmp_path: Path, how: str, cut: int, value: object, data: st.DataObject
) -> None:
    folder = tmp_path / str(cut)
    folder.mkdir(exist_ok=True)
    paths = sources(folder)
    record = learned(folder, paths)
    good = record.read_bytes()
    if how == "cut":
        damaged = good[: cut % len(good)]
    elif how == "flip":
        at = cut % len(good)
        damaged = good[:at] + bytes([good[at] ^ data.draw(st.integers(1, 255))]) + good[at + 1 :]
    elif how == "shape":
        name = data.draw(st.sampled_from([str(p) for p in paths]))
        body = pickle.dumps(({name: value}, None))
        damaged = pickle.dumps((RECORD_FORMAT, digest(body), body))
    else:
        damaged = pickle.dumps(value)
    # a good record cut short or with a byte changed, entries of another shape, any value
    record.write_bytes(damaged)
    # a paths' bytes changed since, with its size kept: a record still vouching would be wrong
    paths[2].write_text(paths[2].read_text().replace("m2", "z2"))
    keys = SourceKeys.within(folder)
    for path in paths:
        key, _ = keys.key(path)
        assert key == file_key(path, path.read_bytes())
