"""The caches' one store: every .git/runway-* name of the caches, and the one safe pickle load
(anything unreadable, of another version or of the wrong shape is absent) and atomic save."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pytest

from renderer.reuse.store import NextPickle, Store


def _pair(read: NextPickle) -> tuple[str, int]:
    name, count = read()
    if not isinstance(name, str) or not isinstance(count, int):
        raise TypeError("not a pair")
    return name, count


def test_the_caches_names_are_the_stores(tmp_path: Path) -> None:
    store = Store(tmp_path)

    assert [
        store.sources,
        store.fingerprint,
        store.schemas("k1"),
        store.render_cache("k2"),
        store.stamp("k3"),
    ] == [
        tmp_path / "runway-sources",
        tmp_path / "runway-fingerprint",
        tmp_path / "runway-schemas-k1.pickle",
        tmp_path / "runway-render-cache-k2.pickle",
        tmp_path / "runway-stamp-k3.pickle",
    ]


def test_what_is_saved_loads_back_pickle_by_pickle(tmp_path: Path) -> None:
    path = tmp_path / "runway-x.pickle"
    Store.save(path, ("a", 1), ["more"])

    assert Store.load(path, lambda read: (read(), read())) == (("a", 1), ["more"])
    assert Store.load(path, _pair) == ("a", 1)


@pytest.mark.parametrize(
    "data",
    [
        b"",  # empty
        b"not a pickle",
        pickle.dumps(("a", "b")),  # of the wrong shape
        pickle.dumps(["a", 1, 2]),  # another version's shape
        pickle.dumps(("a", 1))[:-3],  # cut short
    ],
)
def test_anything_unreadable_or_of_another_shape_is_absent(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "runway-x.pickle"
    path.write_bytes(data)

    assert Store.load(path, _pair) is None
    assert Store.load(tmp_path / "none.pickle", _pair) is None
    assert Store.loads(data, lambda raw: _pair(lambda: raw), "test blob") is None


def test_a_value_that_cannot_be_pickled_is_not_saved_at_best_effort_and_fails_otherwise(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runway-x.pickle"
    unpicklable: Any = lambda: None  # noqa: E731

    Store.save(path, unpicklable, best_effort=True)
    assert not path.exists()
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        Store.save(path, unpicklable)
    assert not path.exists()


def test_cached_builds_once_and_drop_schemas_keeps_only_the_key_in_force(tmp_path: Path) -> None:
    store = Store(tmp_path)
    built: list[int] = []

    def build() -> dict[str, int]:
        built.append(1)
        return {"n": len(built)}

    first = store.cached(store.schemas("new"), build)
    again = store.cached(store.schemas("new"), build)
    store.schemas("old").write_bytes(b"stale")
    store.drop_schemas_but("new")

    assert (first, again, len(built)) == ({"n": 1}, {"n": 1}, 1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runway-schemas-new.pickle"]
