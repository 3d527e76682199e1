"""Bounded texts for the sync's status messages and log lines (issue #40, item 8 and class 4).

A tenant decides how many models and names a message would list and how long each is; the sync
decides how much of it is written. A status message names at most MAX_LISTED problems and
MAX_NAMES owners per problem ("and N more") and is cut at MAX_MESSAGE characters; a log line that
would repeat within one pass is written once with its count (`Repeats`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

MAX_MESSAGE = 4096  # characters of one status message (a condition's message included)
MAX_LISTED = 10  # problems one status message names
MAX_NAMES = 5  # names (owners, servedNames) one problem or log line lists


def at_most(items: Sequence[str], limit: int = MAX_NAMES, separator: str = ", ") -> str:
    """At most `limit` of `items`, then "and N more"."""
    shown = separator.join(items[:limit])
    rest = len(items) - limit
    return f"{shown}{separator}and {rest} more" if rest > 0 else shown


def clipped(text: str, limit: int = MAX_MESSAGE) -> str:
    """`text`, cut to `limit` characters with a note saying so."""
    if len(text) <= limit:
        return text
    note = f"... ({len(text) - limit} more characters)"
    return text[: limit - len(note)] + note


def summary(messages: Sequence[str]) -> str:
    """One status message from per-model messages: MAX_LISTED of them, clipped."""
    return clipped(at_most(messages, MAX_LISTED, "; "))


@dataclass
class Repeats:
    """Log lines of one pass, each distinct line written once (`flush`), with the names it was
    added for (MAX_NAMES of them) and their count: `add("write failed: HTTP 500", "id-7")`."""

    logger: logging.Logger
    level: int = logging.WARNING
    names: dict[str, list[str]] = field(default_factory=dict)

    def add(self, line: str, name: str) -> None:
        self.names.setdefault(line, []).append(name)

    def flush(self) -> None:
        for line, names in self.names.items():
            self.logger.log(
                self.level, "%s (%d: %s)", line, len(names), at_most(names, separator=",")
            )
        self.names.clear()
