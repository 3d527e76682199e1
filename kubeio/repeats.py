"""Log lines said again and again, written once with how often they were held back.

Two ways to be said again, one helper. Within one pass (the gateway sync): lines `add`ed are
written once each at `flush`, with how many times and for which names (at most MAX_NAMES of
them). Over time (the status controller): the same `warning` about the same subject is written
at most once per `every` seconds, and the next line written says how many were held back, so a
failing object or a stuck watch costs a line a minute, not a line a pass.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

MAX_NAMES = 5  # names (owners, servedNames) one problem or log line lists
MAX_SUBJECTS = 10_000  # subjects remembered; past it the oldest are forgotten (written again)


def at_most(items: Sequence[str], limit: int = MAX_NAMES, separator: str = ", ") -> str:
    """At most `limit` of `items`, then "and N more"."""
    shown = separator.join(items[:limit])
    rest = len(items) - limit
    return f"{shown}{separator}and {rest} more" if rest > 0 else shown


@dataclass
class Repeats:
    """Repeated lines of one logger: `add(line, name)` ... `flush()` within a pass (`add("write
    failed: HTTP 500", "id-7")`), or `warning(subject, text)` rate-limited over time, each line
    then starting with `prefix`."""

    logger: logging.Logger
    level: int = logging.WARNING
    every: float = 60.0
    prefix: str = ""
    clock: Callable[[], float] = time.monotonic
    names: dict[str, list[str]] = field(default_factory=dict)  # line -> names, until flush
    _last: dict[str, tuple[str, float, int]] = field(default_factory=dict)  # text, at, held
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, line: str, name: str) -> None:
        self.names.setdefault(line, []).append(name)

    def flush(self) -> None:
        """Write each line added since the last flush once, with its count and names."""
        for line, names in self.names.items():
            self.logger.log(
                self.level, "%s (%d: %s)", line, len(names), at_most(names, separator=",")
            )
        self.names.clear()

    def warning(self, subject: str, text: str) -> bool:
        """Log `text` about `subject` unless the same subject logged the same text less than
        `every` seconds ago; whether the line was written."""
        now = self.clock()
        with self._lock:
            last = self._last.get(subject)
            if last is not None and last[0] == text and now - last[1] < self.every:
                self._last[subject] = (text, last[1], last[2] + 1)
                return False
            held = last[2] if last is not None and last[0] == text else 0
            self._last.pop(subject, None)
            self._last[subject] = (text, now, 0)
            while len(self._last) > MAX_SUBJECTS:
                del self._last[next(iter(self._last))]
        suffix = f" ({held} more like it in the last {self.every:.0f} s)" if held else ""
        self.logger.log(self.level, "%s%s: %s%s", self.prefix, subject, text, suffix)
        return True

    def clear(self, subject: str) -> None:
        """`subject` recovered: its next failure is logged at once."""
        with self._lock:
            self._last.pop(subject, None)
