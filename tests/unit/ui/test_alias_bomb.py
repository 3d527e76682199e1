"""A YAML alias bomb posted to either editor is refused by the CLI's reader, with its reason,
before it expands: the page answers 200 with the error, never a 5xx or a slow answer."""

from __future__ import annotations

import re

import pytest

from tests.support.paths import EXAMPLES
from tests.support.ui import post_headers
from ui.app import create_app
from ui.settings import Mode, UiSettings

KEY = b"k" * 32
# Nine levels of nine aliases each: 9**9 nodes once expanded.
BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{b}: &{b} [{', '.join([f'*{a}'] * 9)}]\n" for a, b in zip("abcdefgh", "bcdefghi", strict=True)
)
REASON = (
    "document 1: not valid YAML at line 1, column 1: aliases expand this document past "
    "100,000 nodes (nested aliases, a &#39;billion laughs&#39;?); write the values out"
)


@pytest.mark.parametrize(
    ("path", "data", "said"),
    [
        ("/models/yaml", {"yaml": BOMB}, f"editor: {REASON}"),
        (
            "/gateway/check",
            {"source": "yaml", "yaml": BOMB},
            f"Not an object: the YAML editor: {REASON}",
        ),
    ],
)
def test_an_alias_bomb_is_refused_with_its_reason(
    path: str, data: dict[str, str], said: str
) -> None:
    app = create_app(UiSettings(mode=Mode.OFFLINE, sources=(str(EXAMPLES),), secret_key=KEY))
    client = app.test_client()
    answer = client.post(path, data=data, headers=post_headers(client, KEY))
    page = answer.get_data(as_text=True)
    shown = re.findall(r'(?:role="alert"|class="(?:bad|error)")[^>]*>([^<]*)', page)
    assert (answer.status_code, shown[0]) == (200, said)
