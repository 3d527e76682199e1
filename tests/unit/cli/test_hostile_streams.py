"""Mistaken and hostile input through the readers issue #23 added (`-f -`, standard input, `kind:
List` and typed lists), one property test per class: whatever arrives, each command that reads
standard input answers with an exit code of its own and a message naming where the input went
wrong. It never prints a traceback, and a List never makes the reader recurse or lose an item."""

from __future__ import annotations

import io
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli.exits import Exit
from cli.main import main
from kubeio.sources import Document, expand_lists
from tests.support.builders import model_deployment

READERS = (("validate", "-f", "-"), ("explain", "-f", "-"), ("gateway-plan", "-f", "-"))
ANSWERS = {Exit.OK, Exit.PARTIAL, Exit.USAGE}
SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

# Text that looks like YAML where it matters: document markers, flow and block collections,
# tags, anchors, List kinds, odd scalars and control characters.
FRAGMENTS = st.sampled_from(
    [
        "---\n",
        "...\n",
        "kind: List\n",
        "kind: ModelDeploymentList\n",
        "apiVersion: airunway.ai/v1alpha1\n",
        "apiVersion: v1\n",
        "items:\n",
        "items: 3\n",
        "items: [1, {a: b}, null]\n",
        "- ",
        "  - kind: List\n",
        "metadata: {name: x}\n",
        "spec: !!binary aGVsbG8=\n",
        "&a [*a]\n",
        "? [a, b]\n: c\n",
        "{",
        "]",
        "'unterminated\n",
        "\t",
        "\x00",
        "\ufeff",
        "key: " + "9" * 400 + "\n",
    ]
)
STREAMS = st.lists(st.one_of(FRAGMENTS, st.text(max_size=20)), max_size=12).map("".join)


def run(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    stream: io.TextIOBase,
    argv: tuple[str, ...],
) -> tuple[int, str, str]:
    monkeypatch.setattr("sys.stdin", stream)
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@SETTINGS
@given(text=STREAMS, argv=st.sampled_from(READERS))
def test_any_text_on_standard_input_gets_an_answer_never_a_traceback(
    text: str,
    argv: tuple[str, ...],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    code, out, err = run(capsys, monkeypatch, io.StringIO(text), argv)

    assert code in ANSWERS, (code, err)
    assert "Traceback" not in out + err
    if code == Exit.USAGE:
        # Where it went wrong: the stream as named (`-`) or as read (`<stdin>`, document N).
        assert "<stdin>" in err or "runway: -: " in err, err


@SETTINGS
@given(data=st.binary(min_size=1, max_size=64), argv=st.sampled_from(READERS))
def test_bytes_that_are_not_utf8_are_named_as_unreadable(
    data: bytes,
    argv: tuple[str, ...],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stream = io.TextIOWrapper(io.BytesIO(b"kind: List\n" + data), encoding="utf-8")
    code, out, err = run(capsys, monkeypatch, stream, argv)

    assert code in ANSWERS
    assert "Traceback" not in out + err
    try:
        (b"kind: List\n" + data).decode("utf-8")
    except UnicodeDecodeError:
        assert code == Exit.USAGE and "<stdin>: cannot read" in err, err


def nested(depth: int, leaf: dict[str, Any]) -> dict[str, Any]:
    obj = leaf
    for _ in range(depth):
        obj = {"apiVersion": "v1", "kind": "List", "items": [obj]}
    return obj


@settings(max_examples=20, deadline=None)
@given(depth=st.integers(0, 3000), width=st.integers(1, 5))
def test_lists_nested_past_any_recursion_limit_expand_to_every_item_in_order(
    depth: int, width: int
) -> None:
    leaves = [model_deployment(f"m{i}", "team") for i in range(width)]
    docs = [Document("x.yaml", 0, nested(depth, leaf)) for leaf in leaves]

    expanded = list(expand_lists(docs))

    assert [d.obj for d in expanded] == leaves
    assert [d.items for d in expanded] == [(0,) * depth] * width


@pytest.mark.parametrize(
    ("items", "where"),
    [
        ("7", "items must be a list"),
        ("[1]", "is a int, not a Kubernetes object"),
        ("[{kind: List, items: [[]]}]", "is a list, not a Kubernetes object"),
    ],
)
@pytest.mark.parametrize("argv", READERS)
def test_a_list_whose_items_are_not_objects_is_named_by_path(
    items: str,
    where: str,
    argv: tuple[str, ...],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = (
        yaml.safe_dump(model_deployment("ok", "team"))
        + f"---\napiVersion: v1\nkind: List\nitems: {items}\n"
    )
    code, out, err = run(capsys, monkeypatch, io.StringIO(text), argv)

    assert (code, "Traceback" in out + err) == (Exit.USAGE, False)
    assert where in err and "<stdin>" in err, err
