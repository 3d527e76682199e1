"""'Did you mean' suggestions, bounded in input size and in count.

difflib compares the word with every candidate, in time that grows with both their lengths,
and a check that suggests for every unknown name of an object at the input limits would run
thousands of such searches (issue #40, item 10: 9,000 unknown flags cost 1.2-1.7 s). So no
suggestion is made for a word longer than MAX_WORD (no flag, field, preset or instance type name
is), and the checks that suggest make at most MAX_SUGGESTIONS per object.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

MAX_WORD = 64
MAX_SUGGESTIONS = 16


def close_matches(word: str, candidates: Iterable[str], n: int = 1) -> list[str]:
    """Up to `n` candidates close to `word` (difflib's ratio of at least 0.6), best first; none
    for a word longer than MAX_WORD."""
    if len(word) > MAX_WORD:
        return []
    return difflib.get_close_matches(word, list(candidates), n=n)
