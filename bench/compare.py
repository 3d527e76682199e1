"""`make bench-compare BASE=REV`: the `make bench` rows of this tree and of an older one, side by
side in one run.

The older tree is checked out (a detached git worktree under .cache/bench-base) and each bench
runs in both, in turn (base, this, base, this ...), with the same virtualenv: only the project's
code differs (PYTHONPATH names the tree). A row is a line of a bench's output; the rows of the
two trees are paired by their text with every number masked, and each number is shown as the
median over the rounds, base then this, with the ratio this/base. For timings below 1 is faster;
for rates (req/s) above 1 is. Lines whose text differs between the trees are listed apart.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

# As `make bench` runs them (bench.gateway needs LiteLLM's virtualenv: the Makefile's own row).
BENCHES = (
    ("bench",),
    ("bench.webhook",),
    ("bench.status",),
    ("bench.status_loop",),
    ("bench.render", "--count", "2000"),
)
NUMBER = re.compile(r"-?\d+(?:[.,]\d+)*(?:e-?\d+)?")
BENCH_SECONDS = 1800  # one bench in one tree; a hung bench fails the comparison


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.compare", description=__doc__)
    parser.add_argument("--base", required=True, help="the older tree's revision (git rev)")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each bench per tree")
    parser.add_argument(
        "--only", action="append", metavar="MODULE", help="run only these benches (repeatable)"
    )
    args = parser.parse_args(argv)
    here = Path(__file__).resolve().parent.parent
    base = _checkout(here, args.base)
    benches = [b for b in BENCHES if not args.only or b[0] in args.only]
    # The older tree runs on this tree's test cluster (make cluster builds it once).
    cache = os.environ.get("RUNWAY_CLUSTER_CACHE", str(here / ".cache" / "cluster"))
    failed = 0
    for bench in benches:
        runs: dict[str, list[list[str]]] = {"base": [], "this": []}
        try:
            for _ in range(args.rounds):
                for name, tree in (("base", base), ("this", here)):
                    runs[name].append(_run(bench, tree, cache))
        except BenchFailed as err:
            print(f"== python -m {' '.join(bench)}: {err}")
            failed += 1
            continue
        print(f"== python -m {' '.join(bench)} (base {args.base}, {args.rounds} rounds each)")
        for line in _rows(runs["base"], runs["this"]):
            print(line)
        sys.stdout.flush()
    return 1 if failed else 0


def _checkout(here: Path, rev: str) -> Path:
    """The tree at `rev` in .cache/bench-base (made again each time: nothing stale is measured)."""
    target = here / ".cache" / "bench-base"
    subprocess.run(
        ["git", "-C", str(here), "worktree", "remove", "--force", str(target)],
        capture_output=True,
        check=False,
    )
    shutil.rmtree(target, ignore_errors=True)
    subprocess.run(["git", "-C", str(here), "worktree", "prune"], check=True)
    subprocess.run(
        ["git", "-C", str(here), "worktree", "add", "-q", "--detach", str(target), rev], check=True
    )
    return target


class BenchFailed(Exception):
    """A bench exited with an error in one of the trees."""


def _run(bench: Sequence[str], tree: Path, cache: str) -> list[str]:
    """The lines a bench prints when the project's code is `tree`'s."""
    env = {**os.environ, "PYTHONPATH": str(tree), "RUNWAY_CLUSTER_CACHE": cache}
    done = subprocess.run(
        [sys.executable, "-m", *bench],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=BENCH_SECONDS,
        check=False,
    )
    if done.returncode != 0:
        tail = "\n".join(done.stderr.strip().splitlines()[-5:])
        raise BenchFailed(f"failed in {tree}:\n{tail}")
    return [line.rstrip() for line in done.stdout.splitlines() if line.strip()]


def _rows(base: list[list[str]], this: list[list[str]]) -> list[str]:
    """Each line of the benches' output with the medians of its numbers, base / this, and the
    ratio; the lines only one tree printed, apart."""
    shapes_base = _by_shape(base)
    shapes_this = _by_shape(this)
    out = []
    for shape, values in shapes_this.items():
        if shape not in shapes_base:
            out.append(f"  only in this tree: {shape}")
            continue
        old = shapes_base[shape]
        cells = []
        for i, (a, b) in enumerate(zip(old, values, strict=True)):
            if a == b:
                continue
            ratio = f" ({b / a:.2f}x)" if a else ""
            cells.append(f"#{i + 1} {a:g} -> {b:g}{ratio}")
        out.append(f"  {shape}" + (f"\n      {'; '.join(cells)}" if cells else ""))
    out += [f"  only in the base: {shape}" for shape in shapes_base if shape not in shapes_this]
    return out


def _by_shape(rounds: list[list[str]]) -> dict[str, list[float]]:
    """{line with its numbers masked: the median of each of its numbers over the rounds}; a line
    shape printed more than once in a run keeps its first."""
    found: dict[str, list[list[float]]] = {}
    for lines in rounds:
        seen = set()
        for line in lines:
            shape = " ".join(NUMBER.sub("#", line).split())  # aligned columns: widths vary
            if shape in seen:
                continue
            seen.add(shape)
            numbers = [float(n.replace(",", "")) for n in NUMBER.findall(line)]
            found.setdefault(shape, []).append(numbers)
    return {
        shape: [statistics.median(column) for column in zip(*runs, strict=False)]
        for shape, runs in found.items()
        if len({len(r) for r in runs}) == 1
    }


if __name__ == "__main__":
    raise SystemExit(main())
