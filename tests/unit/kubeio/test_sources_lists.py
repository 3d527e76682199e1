"""Reading manifests as kubectl users write them (issue #23 item 5): `kind: List` and typed lists
(nested too) stand for their items, each named by its index path; standard input reads as a
file does; -n gives a namespace to objects without one."""

from __future__ import annotations

import io
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from core.fields.errors import SourceError
from kubeio.sources import STDIN, Document, expand_lists, in_namespace, read_documents
from kubeio.yamlio import dump_all


def leaf(n: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"leaf-{n}"}}


@st.composite
def nested(draw: st.DrawFn, depth: int = 0) -> Any:
    """A leaf (its number filled in later) or a List of such, up to four levels deep."""
    if depth >= 4 or draw(st.booleans()):
        return None
    items = draw(st.lists(nested(depth + 1), max_size=4))
    return {"apiVersion": "v1", "kind": "List", "items": items}


def fill(tree: Any, path: tuple[int, ...], found: list[tuple[tuple[int, ...], str]]) -> Any:
    """The tree with each leaf numbered in depth-first order; `found` gets (path, name)."""
    if tree is None:
        obj = leaf(len(found))
        found.append((path, obj["metadata"]["name"]))
        return obj
    return tree | {"items": [fill(t, (*path, i), found) for i, t in enumerate(tree["items"])]}


@settings(max_examples=200, deadline=None)
@given(st.lists(nested(), min_size=1, max_size=4))
def test_lists_expand_to_their_items_depth_first_with_index_paths(trees: list[Any]) -> None:
    expected: list[tuple[int, tuple[int, ...], str]] = []
    docs = []
    for index, tree in enumerate(trees):
        found: list[tuple[tuple[int, ...], str]] = []
        docs.append(Document("in.yaml", index, fill(tree, (), found)))
        expected += [(index, path, name) for path, name in found]

    got = list(expand_lists(docs))

    assert [(d.index, d.items, d.obj["metadata"]["name"]) for d in got] == expected
    for doc in got:
        prefix = "".join(f".items[{i}]" for i in doc.items).removeprefix(".")
        where = f", {prefix}" if doc.items else ""
        assert doc.where == f"in.yaml (document {doc.index + 1}{where})"
        assert doc.field("spec.model.id") == (
            f"{prefix}.spec.model.id" if prefix else "spec.model.id"
        )
        assert doc.field("[x]") == f"{prefix}[x]"
        assert doc.field("") == prefix


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(nested(), max_size=3), min_size=1, max_size=3), st.integers(0, 2))
def test_standard_input_reads_as_the_same_file_would(
    streams: list[list[Any]], position: int
) -> None:
    """Any stream of documents (Lists among them), from `-`, gives what the file gives, in the
    place `-` has among the paths."""
    texts = [dump_all(fill(t, (), []) if t else leaf(0) for t in trees) for trees in streams]
    stream, files = texts[0], texts[1:]
    with tempfile.TemporaryDirectory() as folder:
        paths = []
        for i, text in enumerate(files):
            path = Path(folder) / f"f{i}.yaml"
            path.write_text(text)
            paths.append(str(path))
        (Path(folder) / "stdin.yaml").write_text(stream)
        at = min(position, len(paths))
        with_dash = [*paths[:at], STDIN, *paths[at:]]
        with_file = [*paths[:at], str(Path(folder) / "stdin.yaml"), *paths[at:]]

        from_stdin = read_documents(with_dash, stdin=io.StringIO(stream))
        from_file = read_documents(with_file)

    assert [(d.obj, d.items, d.index) for d in from_stdin] == [
        (d.obj, d.items, d.index) for d in from_file
    ]
    assert {d.origin for d in from_stdin if d.origin.startswith("<")} <= {"<stdin>"}


def test_a_typed_list_gives_its_items_its_kind() -> None:
    """What `GET /apis/airunway.ai/v1alpha1/modeldeployments` answers: items without kind."""
    listed = {
        "apiVersion": "airunway.ai/v1alpha1",
        "kind": "ModelDeploymentList",
        "items": [{"metadata": {"name": "a"}}, {"apiVersion": "v1", "kind": "Secret"}],
    }

    docs = list(expand_lists([Document("-", 0, listed)]))

    assert [d.obj for d in docs] == [
        {
            "apiVersion": "airunway.ai/v1alpha1",
            "kind": "ModelDeployment",
            "metadata": {"name": "a"},
        },
        {"apiVersion": "v1", "kind": "Secret"},
    ]


@pytest.mark.parametrize(
    ("paths", "stdin", "message"),
    [
        (["-", "-"], "", "-: standard input can be read only once; name it once"),
        (["-"], None, "-: this command does not read standard input; name a file"),
    ],
    ids=["twice", "not-here"],
)
def test_standard_input_misuse_is_named(paths: list[str], stdin: str | None, message: str) -> None:
    with pytest.raises(SourceError) as raised:
        read_documents(paths, stdin=io.StringIO(stdin) if stdin is not None else None)

    assert str(raised.value) == message


MD_KINDS = [("airunway.ai", "ModelDeployment")]


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.sampled_from([None, "", "team-a", "team-b"]), min_size=1, max_size=6),
    st.sampled_from(["team-a", "team-b"]),
)
def test_namespace_is_given_to_objects_without_one_and_a_clash_is_refused(
    namespaces: list[str | None], wanted: str
) -> None:
    docs = []
    for i, namespace in enumerate(namespaces):
        metadata: dict[str, Any] = {"name": f"m{i}"}
        if namespace is not None:
            metadata["namespace"] = namespace
        md = {"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment", "metadata": metadata}
        docs.append(Document("in.yaml", i, md))
    before = yaml.safe_dump([d.obj for d in docs])
    clash = next((i for i, n in enumerate(namespaces) if n not in (None, "", wanted)), None)

    if clash is not None:
        with pytest.raises(SourceError) as raised:
            in_namespace(docs, wanted, MD_KINDS)
        assert str(raised.value) == (
            f"in.yaml (document {clash + 1}): the object's namespace {namespaces[clash]!r} does "
            f"not match -n/--namespace {wanted!r}; remove one of them"
        )
    else:
        got = in_namespace(docs, wanted, MD_KINDS)
        assert [d.obj["metadata"]["namespace"] for d in got] == [wanted] * len(docs)
    assert yaml.safe_dump([d.obj for d in docs]) == before  # the input is never changed


def test_namespace_leaves_other_kinds_alone() -> None:
    config = {"apiVersion": "airunway.ai/v1alpha1", "kind": "InferenceProviderConfig"}
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"namespace": "x"}}

    got = in_namespace([Document("f", 0, config), Document("f", 1, secret)], "y", MD_KINDS)

    assert [d.obj for d in got] == [config, secret]
