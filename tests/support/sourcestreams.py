"""Generated YAML streams: documents valid and broken, with every form of separator between them."""

from __future__ import annotations

from hypothesis import strategies as st

from kubeio.yamlio import dump

# What may sit between and around documents, and what may start one.
MARKERS = ["---\n", "--- \n", "---\t\n", "--- # a comment\n", "---\n\n"]
BETWEEN = ["", "\n", "# a comment\n", "  \n", "#---\n"]
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


# Whole documents, written as people write them: by the dumper, by hand in flow style, a block
# scalar holding a line of dashes (indented: part of it), an anchor and its alias, nothing; now
# and then a scalar or a list (errors) or a broken one.
VALID = st.one_of(
    st.dictionaries(st.text(min_size=1, max_size=6), VALUES, min_size=1, max_size=3).map(dump),
    st.just("a: |\n  text\n  ---\n  more\n"),
    st.just("a: &x {b: 1}\nc: *x\n"),
    st.just(""),
)
BROKEN = st.sampled_from(["just a scalar\n", "- a list\n", "a: [1, 2\n", "a: 'open\n"])
DOCUMENTS = st.integers(min_value=0, max_value=15).flatmap(lambda n: BROKEN if n == 0 else VALID)


@st.composite
def streams(draw: st.DrawFn) -> str:
    parts = [draw(st.sampled_from(BETWEEN))]
    for i, document in enumerate(draw(st.lists(DOCUMENTS, max_size=6))):
        if i or draw(st.booleans()):  # the first document may go without a marker
            parts.append(draw(st.sampled_from(MARKERS)))
        parts += [document, draw(st.sampled_from(BETWEEN))]
    return "".join(parts)
