"""A source file parsed piece by piece (kubeio.sources.split_stream, renderer.reuse.parsecache) gives
exactly what parsing it whole gives: the same objects with the same document numbers, and the
same error for a stream that does not parse; an edit of one document parses that piece only."""

from __future__ import annotations

import contextlib
import pickle
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings

from core.fields.errors import SourceError
from kubeio.sources import parse_documents, parse_stream, split_stream
from kubeio.yamlio import dump
from renderer.reuse.parsecache import ParsedSources
from tests.support.sourcestreams import streams


def _whole(text: str) -> list[tuple[int, Any]] | str:
    try:
        return [(d.index, d.obj) for d in parse_documents(text, "f")]
    except SourceError as err:
        return str(err)


def _by_pieces(text: str, tmp: Path) -> list[tuple[int, Any]] | str:
    path = tmp / "f.yaml"
    path.write_text(text)
    parsed = ParsedSources(tmp / "cache", "fingerprint")
    try:
        (found,) = parsed.files([str(path)])
        return [(d.index, d.obj) for d in parsed.documents(found)]
    except SourceError as err:
        return str(err).replace(str(path), "f")


@settings(max_examples=400, deadline=None)
@given(text=streams())
def test_a_stream_parsed_piece_by_piece_gives_what_it_gives_whole(
    text: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    pieces = split_stream(text)
    tmp = tmp_path_factory.mktemp("pieces")

    assert pieces is None or "".join(pieces) == text
    assert _by_pieces(text, tmp) == _whole(text)


@settings(max_examples=200, deadline=None)
@given(before=streams(), after=streams())
def test_a_file_parsed_again_after_an_edit_gives_what_parsing_it_whole_gives(
    before: str, after: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The second parse reuses the first's pieces wherever their texts are the same."""
    tmp = tmp_path_factory.mktemp("again")
    path = tmp / "f.yaml"
    path.write_text(before)
    first = ParsedSources(tmp / "cache", "fingerprint")
    with contextlib.suppress(SourceError):
        first.documents(first.files([str(path)])[0])
    first.finish(tmp / "cache")
    path.write_text(before + after)

    assert _by_pieces(before + after, tmp) == _whole(before + after)


def test_an_edit_of_one_document_parses_only_its_piece(tmp_path: Path) -> None:
    """The cached pieces are taken as they are: one marked in the cache comes back marked."""
    documents = [dump({"kind": "ModelDeployment", "metadata": {"name": f"m{i}"}}) for i in range(5)]
    path = tmp_path / "f.yaml"
    path.write_text("".join(f"---\n{d}" for d in documents))
    first = ParsedSources(tmp_path / "cache", "fingerprint")
    first.documents(first.files([str(path)])[0])
    first.finish(tmp_path / "cache")
    (entry,) = (tmp_path / "cache").iterdir()
    key, pieces = pickle.loads(entry.read_bytes())
    pieces[0][1][1][0][1]["metadata"]["name"] = "from the cache"
    entry.write_bytes(pickle.dumps((key, pieces)))
    documents[3] = dump({"kind": "ModelDeployment", "metadata": {"name": "changed"}})
    path.write_text("".join(f"---\n{d}" for d in documents))
    again = ParsedSources(tmp_path / "cache", "fingerprint")

    docs = again.documents(again.files([str(path)])[0])

    assert [(d.index, d.obj["metadata"]["name"]) for d in docs] == [
        (0, "from the cache"),
        (1, "m1"),
        (2, "m2"),
        (3, "changed"),
        (4, "m4"),
    ]


def test_empty_documents_are_counted() -> None:
    assert parse_stream("---\n---\na: 1\n---\n", "f")[1] == 3
