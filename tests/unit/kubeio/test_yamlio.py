"""The YAML writer and the node builder give exactly the bytes of PyYAML's representer, for any
JSON-like value with any sharing of dicts and lists (strings of every character the emitter's
analysis looks at, keys around its 128-byte limit), and for the unusual values they hand back to
the representer; neither ever writes an anchor or an alias (a shared value is written out again);
the strict loader (with the same fast resolver) reads what PyYAML's loader reads."""

from __future__ import annotations

import enum
import math
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from core.fields.errors import SourceError
from kubeio.sources import parse_documents
from kubeio.yamlio import MAX_STRINGS, Strings, dump, dump_nodes, dump_represented

# Every character class the emitter's analysis (analyze_scalar) and the resolver look at:
# indicators, spaces, quotes, breaks, tabs, non-ASCII printable and not, the BOM, digits, dots.
TRICKY = "ab yYnN019.+-_:#,?[]{}&*!|>'\"%@`~=</\\\t\n\r\x00\x07\x85\xa0\u00e9\u2028\ufeff\U0001f600"
STRINGS = st.one_of(
    st.text(max_size=30),
    st.text(alphabet=TRICKY, max_size=12),
    st.sampled_from(
        [
            *("", "yes", "null", "~", "1e3", "0x1F", "a: b", "- x", "line\nnext\n", "'q'", "---"),
            *("...x", "-", ":", "?", "a:", "a #b", " a", "a ", "1.2.3", "1_000", "0o17", "<<"),
            *("2001-12-14", "=", ".inf", "-.5", "+1", "TRUE", "off", "2026-12-04 10:00:00"),
            *(":x", "-x", "?x"),
        ]
    ),
)
LONG_KEYS = st.builds(
    lambda n, c: c * n, st.integers(min_value=30, max_value=132), st.sampled_from(["a", "\u00e9"])
)
LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    STRINGS,
)
KEYS = st.one_of(st.text(max_size=8), st.text(alphabet=TRICKY, max_size=8), LONG_KEYS)


@st.composite
def objects(draw: st.DrawFn) -> dict[str, Any]:
    """A mapping of JSON-like values, some dicts and lists reused in several places."""
    shared: list[Any] = []

    def extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        return st.one_of(
            st.lists(children, max_size=4),
            st.dictionaries(KEYS, children, max_size=4),
        )

    tree = draw(st.dictionaries(KEYS, st.recursive(LEAVES, extend, max_leaves=25)))
    for key in list(tree)[: draw(st.integers(0, 3))]:
        if isinstance(tree[key], dict | list):
            shared.append(tree[key])
    for i, value in enumerate(shared):
        tree[f"again-{i}"] = value  # the same object twice (once an anchor and an alias)
    return tree


@settings(max_examples=300, deadline=None)
@given(objects())
def test_the_writer_and_the_node_builder_write_what_the_representer_writes(
    obj: dict[str, Any],
) -> None:
    expected = dump_represented(obj)

    assert dump_nodes(obj) == expected
    assert dump(obj) == expected
    assert dump(obj, strings=REUSED) == expected  # texts of every earlier example's strings


# One memo of string texts across every example of the test above, as one render shares one.
REUSED = Strings()


def test_a_full_memo_of_string_texts_is_emptied_and_still_gives_the_same_bytes() -> None:
    strings = Strings((f"s{i}", f"s{i}") for i in range(MAX_STRINGS))
    obj = {"a": ["x", "true", "\u00e9"], "b": "line\nnext"}

    assert dump(obj, strings=strings) == dump_represented(obj)
    assert strings == {"a": "a", "b": "b", "x": "x", "true": "'true'", "\u00e9": "\u00e9"}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.recursive(LEAVES, lambda inner: st.lists(inner, max_size=3), max_leaves=8)))
def test_the_writer_writes_lists_of_any_depth_as_the_representer_does(obj: list[Any]) -> None:
    assert dump(obj) == dump_represented(obj)


@pytest.mark.parametrize(
    "text",
    ["a" * 127, "a" * 128, "a" * 129, "\u00e9" * 64, "\u00e9" * 65, "x\u00e9" * 43],
    ids=["127", "128", "129", "128-bytes-2-byte", "130-bytes-2-byte", "129-bytes-mixed"],
)
def test_keys_around_the_emitters_simple_key_limit_are_written_as_it_writes_them(
    text: str,
) -> None:
    obj = {text: {"a": 1}, "b": [text]}

    assert dump(obj) == dump_represented(obj)


def test_unusual_values_take_the_representers_path() -> None:
    class Color(enum.Enum):
        RED = 1

    for obj in (
        {"a": OrderedDict(b=1)},  # another mapping type
        {"a": {1: "x", "b": 2}},  # a key that is not a string
        {"a": (1, 2)},  # a tuple: the safe representer refuses it, both paths alike
        {"a": Color.RED},
    ):
        try:
            expected: str | type[Exception] = dump_represented(obj)
        except Exception as err:  # the representer's own refusal
            expected = type(err)
        try:
            got: str | type[Exception] = dump(obj)
        except Exception as err:
            got = type(err)
        assert got == expected


def _anchors(text: str) -> list[str]:
    return [
        repr(event)
        for event in yaml.parse(text, Loader=yaml.CSafeLoader)
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None
    ]


@settings(max_examples=150, deadline=None)
@given(objects())
def test_shared_values_are_written_out_with_no_anchor_or_alias(obj: dict[str, Any]) -> None:
    text = dump(obj)

    assert _anchors(text) == []
    (doc,) = parse_documents(text, "t")
    assert _comparable(doc.obj) == _comparable(obj)
    assert dump(doc.obj) == text


def _comparable(value: Any) -> Any:
    """`value` with NaN (never equal to itself) as a tuple, which no parsed value is."""
    if isinstance(value, dict):
        return {k: _comparable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_comparable(v) for v in value]
    return ("NaN",) if isinstance(value, float) and math.isnan(value) else value


def test_a_shared_probe_is_written_out_twice() -> None:
    probe = {"httpGet": {"path": "/health", "port": 8000}}
    deployment = {"livenessProbe": probe, "readinessProbe": probe}

    assert dump(deployment) == (
        "livenessProbe:\n"
        "  httpGet:\n"
        "    path: /health\n"
        "    port: 8000\n"
        "readinessProbe:\n"
        "  httpGet:\n"
        "    path: /health\n"
        "    port: 8000\n"
    )


def _dict_in_itself() -> dict[str, Any]:
    obj: dict[str, Any] = {}
    obj["self"] = obj
    return obj


def _list_in_itself() -> dict[str, Any]:
    items: list[Any] = []
    items.append(items)
    return {"items": items}


def _through_another_mapping_type() -> dict[str, Any]:
    obj: dict[str, Any] = {}
    obj["o"] = OrderedDict(back=obj)
    return obj


@pytest.mark.parametrize(
    "make",
    [_dict_in_itself, _list_in_itself, _through_another_mapping_type],
    ids=["dict-in-itself", "list-in-itself", "through-another-mapping-type"],
)
def test_a_value_inside_itself_is_refused_by_name(make: Callable[[], dict[str, Any]]) -> None:
    with pytest.raises(ValueError) as raised:
        dump(make())

    assert str(raised.value) == "a value that contains itself cannot be written as YAML"


SCALARS = st.sampled_from(
    [
        *("2001-12-14", "2001-12-14t21:59:43.10-05:00", "0o17", "017", "1_000", "1:20"),
        *(".inf", "-.NaN", "Yes", "off", "NULL", "", "+1", "-2.5e-3", "0b101", "=", "<<"),
        *("!important", "@x", "%y", "~"),
    ]
)


@settings(max_examples=150, deadline=None)
@given(objects(), st.lists(SCALARS, max_size=5))
def test_the_strict_loader_reads_what_pyyamls_loader_reads(
    obj: dict[str, Any], plain: list[str]
) -> None:
    """A document written by dump, and one of scalars written plain (unquoted), so the
    resolver decides their types (some are not valid YAML, or have no safe constructor)."""
    lines = "".join(f"plain{i}: {value}\n" for i, value in enumerate(plain))
    text = dump(obj) + (f"---\n{lines}" if plain else "")

    try:
        theirs: list[Any] | None = [
            d for d in yaml.load_all(text, Loader=yaml.CSafeLoader) if d is not None
        ]
    except yaml.YAMLError:
        theirs = None
    try:
        ours: list[Any] | None = [doc.obj for doc in parse_documents(text, "t")]
    except SourceError:
        ours = None

    assert (ours is None) == (theirs is None)
    assert [dump_represented(o) for o in ours or []] == [dump_represented(o) for o in theirs or []]


def _strings_of(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings_of(k), *_strings_of(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings_of(v)]
    return []


@settings(max_examples=150, deadline=None)
@given(st.lists(objects(), min_size=1, max_size=4))
def test_equal_strings_of_one_stream_are_loaded_as_one_object(docs: list[dict[str, Any]]) -> None:
    text = "".join(f"---\n{dump(d)}" for d in docs)

    loaded = [d.obj for d in parse_documents(text, "t")]

    assert _comparable(loaded) == _comparable(list(yaml.load_all(text, Loader=yaml.SafeLoader)))
    found: dict[str, str] = {}
    for value in _strings_of(loaded):
        assert found.setdefault(value, value) is value
