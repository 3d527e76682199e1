"""Per-key backoff after failures, the one the edges share: the status controller's worker (a
ModelDeployment whose status write keeps failing), the gateway sync (an ExternalModelProvider
whose status the API server refuses, and a pass that could not finish) and the watch loop
(kubeio/watch.py: a list or watch that keeps failing). client-go's per-item exponential rate
limiter is the model: one key failing again and again is tried later and later, the others are
not held back, and a success forgets the key.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field


@dataclass
class Backoff:
    """Each key's delay after its failures: `first` seconds after the first, doubling with each
    failure after it, at most `most`, each stretched by up to `jitter` of itself (a fraction,
    0 by default); a success forgets the key. Used by one thread only."""

    first: float = 1.0
    most: float = 300.0
    clock: Callable[[], float] = time.monotonic
    jitter: float = 0.0
    failures: dict[Hashable, tuple[int, float]] = field(default_factory=dict)  # in a row, due at

    def fail(self, key: Hashable) -> tuple[int, float]:
        """Count a failure of `key`: the number in a row and the seconds until its next try."""
        count = self.count(key) + 1
        wait = min(self.first * 2.0 ** min(count - 1, 64), self.most)
        if self.jitter > 0:
            wait += random.uniform(0.0, self.jitter * wait)  # spreading, not secrecy
        self.failures[key] = (count, self.clock() + wait)
        return count, wait

    def succeed(self, key: Hashable) -> None:
        self.failures.pop(key, None)

    def count(self, key: Hashable) -> int:
        """Failures of `key` in a row (0 after a success)."""
        return self.failures.get(key, (0, 0.0))[0]

    def due(self, key: Hashable) -> bool:
        """Whether `key` may be tried now (its last delay is over, or it never failed)."""
        return self.failures.get(key, (0, 0.0))[1] <= self.clock()

    def next_in(self) -> float | None:
        """Seconds until the first failed key is due again (0 when one is due now); None when
        none is waiting."""
        if not self.failures:
            return None
        return max(0.0, min(due for _, due in self.failures.values()) - self.clock())
