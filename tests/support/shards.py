"""`runway render --shard K/N --push origin` for K = 1..N at once, each from its own clone: what
the shard test checks and what `bench.render --shards` times."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

RUNWAY = Path(sys.executable).parent / "runway"


def start_shards(sources: Path, clones: Sequence[Path], *extra: str) -> list[subprocess.Popen[str]]:
    """One render process per clone, shard K of len(clones) in the K-th, all started now;
    stderr is piped (stdout too unless `extra` sends it elsewhere: see the callers)."""
    count = len(clones)
    return [
        subprocess.Popen(
            [
                str(RUNWAY),
                "render",
                str(sources),
                "--repo",
                str(clone),
                "--shard",
                f"{k}/{count}",
                "--push",
                "origin",
                "--branch",
                "main",
                *extra,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k, clone in enumerate(clones, start=1)
    ]
