"""The render cache keeps each namespace's entries apart: a render of some namespaces reads and
writes only theirs, and what it saves is what a cache of every entry would save."""

from __future__ import annotations

import pickle
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from renderer.reuse.rendercache import CACHE_FORMAT, Entry, RenderCache, packed

NAMESPACES = st.sampled_from(["a", "b", "team-1", "é"])
FOLDERS = st.builds(lambda n, m: f"{n}/{m}", NAMESPACES, st.sampled_from(["x", "y", "m-2"]))
DIGEST = st.sampled_from(["k1", "k2", "k3"])
ENTRIES = st.builds(
    Entry,
    DIGEST,
    st.none() | DIGEST,
    st.none() | st.sampled_from(["spec.model.id: Required value"]),
    st.sampled_from([(), ("a warning",)]),
    st.none() | st.sampled_from(["vllm", "sglang"]),
    st.none() | st.sampled_from(["llmd", "kaito"]),
    st.sampled_from([(), (("v1 Service", "Kubernetes 1.37"),)]),
    st.none() | DIGEST,
    st.none() | st.just(packed([("a.yaml", (1, 2, 3, 4)), ("b.yaml", (5, 6, 7, 8))])),
)
CACHES = st.dictionaries(FOLDERS, ENTRIES, max_size=8)
SETTINGS = settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@SETTINGS
@given(CACHES, st.none() | DIGEST)
def test_a_saved_cache_loads_as_it_was(
    tmp_path: Path, entries: dict[str, Entry], tree: str | None
) -> None:
    path = tmp_path / "cache.pickle"
    RenderCache(dict(entries), tree).save(path)
    loaded = RenderCache.load(path)
    assert (loaded.entries, loaded.tree) == (entries, tree)
    for folder, entry in entries.items():
        assert RenderCache.load(path).entry(folder) == entry


@SETTINGS
@given(CACHES, CACHES, st.sets(NAMESPACES), st.none() | DIGEST)
def test_a_render_of_some_namespaces_saves_what_a_whole_cache_would(
    tmp_path: Path,
    before: dict[str, Entry],
    rendered: dict[str, Entry],
    part: set[str],
    tree: str | None,
) -> None:
    """Load, look at the part's entries only (as a render of them does), merge in what the
    render left for them, save: the file holds the old entries outside the part and the new
    ones inside it, and only the part's namespaces were read."""
    path = tmp_path / "cache.pickle"
    RenderCache(dict(before), "old").save(path)
    owns = part.__contains__
    now = {f: e for f, e in rendered.items() if owns(f.split("/", 1)[0])}
    cache = RenderCache.load(path)
    seen = cache.entries_in(owns)
    assert seen == {f: e for f, e in before.items() if owns(f.split("/", 1)[0])}
    assert cache._unread.keys() == {f.split("/", 1)[0] for f in before} - part
    after = cache.merged(owns, cache.succeeded_by(now))
    after.tree = tree
    after.save(path)
    expected = {f: e for f, e in before.items() if not owns(f.split("/", 1)[0])} | now
    loaded = RenderCache.load(path)
    assert (loaded.entries, loaded.tree) == (expected, tree)


def test_saving_what_was_loaded_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "cache.pickle"
    entries = {
        "a/x": Entry("k1", "f1", None, (), "vllm", "llmd"),
        "b/y": Entry("k2", None, "e", (), None, None),
    }
    RenderCache(entries, "t").save(path)
    before = path.stat()
    cache = RenderCache.load(path)
    cache.entry("a/x")
    after = cache.succeeded_by(dict(cache.entries))
    after.tree = "t"  # as a render sets it after committing
    after.save(path)
    assert path.stat().st_ino == before.st_ino  # not written again (atomic writes replace)
    changed = RenderCache.load(path)
    changed.tree = "u"
    changed.save(path)
    assert path.stat().st_ino != before.st_ino


def test_an_unreadable_namespace_is_empty_and_the_rest_is_read(tmp_path: Path) -> None:
    path = tmp_path / "cache.pickle"
    entries = {
        "a/x": Entry("k1", "f1", None, (), "vllm", "llmd"),
        "b/y": Entry("k2", None, "e", (), None, None),
    }
    RenderCache(entries, "t").save(path)
    _, tree, blobs = pickle.loads(path.read_bytes())
    blobs["a"] = b"not a pickle"
    path.write_bytes(pickle.dumps((CACHE_FORMAT, tree, blobs)))
    loaded = RenderCache.load(path)
    assert (loaded.entries, loaded.tree) == ({"b/y": entries["b/y"]}, "t")
    path.write_bytes(pickle.dumps((CACHE_FORMAT, tree, {"a": 3})))
    assert RenderCache.load(path).entries == {}
