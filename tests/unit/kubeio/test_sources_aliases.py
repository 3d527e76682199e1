"""YAML aliases are bounded before anything walks what they expand to (kubeio/sources.py)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.fields.errors import SourceError
from kubeio.sources import parse_documents
from kubeio.yamlio import MAX_EXPANDED
from tests.support.hostile_render import laughs, laughs_nodes


@settings(max_examples=300, deadline=None)
@given(depth=st.integers(1, 12), width=st.integers(1, 12))
def test_a_document_is_refused_exactly_when_its_aliases_expand_past_the_bound(
    depth: int, width: int
) -> None:
    text = laughs(depth, width)
    if laughs_nodes(depth, width) <= MAX_EXPANDED:
        (doc,) = parse_documents(text, "laughs.yaml")
        assert doc.obj["metadata"] == {"name": "laughs", "namespace": "models"}
        return
    with pytest.raises(SourceError) as refused:
        list(parse_documents(text, "laughs.yaml"))
    assert str(refused.value) == (
        "laughs.yaml: document 1: not valid YAML at line 1, column 1: aliases expand this "
        "document past 100,000 nodes (nested aliases, a 'billion laughs'?); write the values out"
    )


def test_the_bound_is_counted_with_aliases_written_out() -> None:
    """The boundary itself: the largest laughs document under the bound parses."""
    assert laughs_nodes(5, 9) <= MAX_EXPANDED < laughs_nodes(6, 9)
    (doc,) = parse_documents(laughs(5, 9), "ok.yaml")
    assert len(doc.obj["spec"]["l4"]) == 9
