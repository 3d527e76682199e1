"""The patch's and the answer's JSON text (webhook.responses.compact_json, orjson with json.dumps
for what orjson refuses) decodes to exactly the value it was given, over generated JSON values: `1`,
`1.0` and `true` stay three values, keys keep their order, and strings with lone surrogates (a
review's `\\ud800` escapes decode to them) and integers beyond 64 bits are written too. The
reference is json.dumps, the encoder the webhook used before."""

from __future__ import annotations

import base64
import json
import re
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from webhook.responses import compact_json, denied, patched, review

# A high surrogate followed by a low one is written as the pair's escapes, which every decoder
# reads as the one character they encode (json.dumps did the same); a review's escapes decode
# to that character already, so no object holds the two apart.
PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")
TEXT = st.text(st.characters() | st.integers(0xD800, 0xDFFF).map(chr), max_size=8).filter(
    lambda text: PAIR.search(text) is None
)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**64), max_value=2**64)
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=20,
)
OPS = st.lists(
    st.fixed_dictionaries(
        {"op": st.sampled_from(["add", "replace"]), "path": TEXT, "value": VALUES}
    ),
    max_size=4,
)


def exact(value: Any) -> str:
    """The value's repr: types, float bits (the shortest round-trip text) and key order."""
    return repr(value)


@given(OPS)
def test_the_patch_text_decodes_to_the_operations(ops: list[dict[str, Any]]) -> None:
    text = compact_json(ops)
    assert exact(json.loads(text)) == exact(ops)
    assert exact(json.loads(text)) == exact(json.loads(json.dumps(ops)))


@given(VALUES)
def test_a_patched_response_carries_the_patch_of_the_change(value: Any) -> None:
    before = {"metadata": {"name": "m"}, "spec": {"a": 1}}
    after = {"metadata": {"name": "m"}, "spec": {"a": 1, "b": value}}
    response = patched("uid-1", before, after)
    assert response["patchType"] == "JSONPatch"
    ops = json.loads(base64.b64decode(response["patch"]))
    assert exact(ops) == exact([{"op": "add", "path": "/spec/b", "value": value}])
    assert set(response) == {"uid", "allowed", "patch", "patchType"}
    assert response["allowed"] is True and response["uid"] == "uid-1"


@given(TEXT, st.lists(TEXT, max_size=3), st.sampled_from([400, 403, 500, 503]), OPS)
def test_an_answer_text_decodes_to_the_review(
    message: str, warnings: list[str], code: int, ops: list[dict[str, Any]]
) -> None:
    """Denials carry the user's own strings (field values in messages, rule text in warnings);
    a patched answer carries the patch in base64."""
    refused = review(denied("uid-1", message, code=code, warnings=warnings))
    allowed = review(patched("uid-2", {"spec": {}}, {"spec": {"ops": ops}}, warnings))
    for answer in (refused, allowed):
        assert exact(json.loads(compact_json(answer))) == exact(answer)
        assert exact(json.loads(compact_json(answer))) == exact(json.loads(json.dumps(answer)))
