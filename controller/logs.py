"""Repeated log lines, rate-limited: the same warning (same subject, same text) is written at
most once per `every` seconds, and the next line written says how many were held back. A
failing object or a stuck watch then costs a line a minute, not a line a pass."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

MAX_SUBJECTS = 10_000  # lines remembered; past it the oldest are forgotten (written again)


@dataclass
class Throttle:
    """`warning(subject, text)`: log `text` unless the same subject logged the same text less
    than `every` seconds ago."""

    log: logging.Logger
    every: float = 60.0
    clock: Callable[[], float] = time.monotonic
    _last: dict[str, tuple[str, float, int]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def warning(self, subject: str, text: str) -> bool:
        """Whether the line was written."""
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
        self.log.warning("status-controller: %s: %s%s", subject, text, suffix)
        return True

    def clear(self, subject: str) -> None:
        """`subject` recovered: its next failure is logged at once."""
        with self._lock:
            self._last.pop(subject, None)
