"""Bounded texts for the sync's status messages and log lines (issue #40, item 8 and class 4).

A tenant decides how many models and names a message would list and how long each is; the sync
decides how much of it is written. A status message names at most MAX_LISTED problems and
MAX_NAMES owners per problem ("and N more") and is cut at MAX_MESSAGE characters; a log line that
would repeat within one pass is written once with its count (kubeio.repeats.Repeats).
"""

from __future__ import annotations

from collections.abc import Sequence

from kubeio.repeats import at_most

MAX_MESSAGE = 4096  # characters of one status message (a condition's message included)
MAX_LISTED = 10  # problems one status message names


def clipped(text: str, limit: int = MAX_MESSAGE) -> str:
    """`text`, cut to `limit` characters with a note saying so."""
    if len(text) <= limit:
        return text
    note = f"... ({len(text) - limit} more characters)"
    return text[: limit - len(note)] + note


def summary(messages: Sequence[str]) -> str:
    """One status message from per-model messages: MAX_LISTED of them, clipped."""
    return clipped(at_most(messages, MAX_LISTED, "; "))
