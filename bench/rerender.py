"""Re-renders against `git status --porcelain`, side by side, for sources laid out one file per
ModelDeployment (as `kubectl apply -R` users keep them: a folder per namespace, a file per
model) or the render bench's one file per namespace.

A first render + commit sets the repository up (not timed against a target). Then, alternating
in one run, `--rounds` times: `git status --porcelain` on the same repository (the floor of any
re-render: it has to see what changed), a re-render with nothing changed, and a re-render with
one ModelDeployment changed (and, untimed, its file put back and rendered again, so that every
round starts from the same tree). Each row is the median of its rounds, with wall and CPU (user
+ system of the command and its children) and the ratio of the medians against the target.

`python -m bench.rerender` (10,000, one file per model); `--count 100000 --namespaces 500` is
the 100,000 row; `--layout per-namespace` the render bench's layout.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.render import RUNWAY, compile_bytecode
from kubeio.yamlio import dump_all
from tests.support.builders import model_deployment

# Issue #46: a re-render of 10,000 laid out one file per model within 3 times (nothing changed)
# and 4 times (one changed) of `git status --porcelain`; of 100,000, nothing changed, 3 times.
TARGETS = {"nothing changed": 3.0, "one changed": 4.0}
LAYOUTS = ("per-model", "per-namespace")


@dataclass(frozen=True)
class Timed:
    wall: float
    cpu: float  # user + system of the command and its children


def model(i: int, namespaces: int, seqs: int = 128) -> dict[str, object]:
    """The bench.render generator's ModelDeployment `i` (vllm, llm-d, auto -> KubeRay), in one
    of `namespaces`."""
    providers = ("vllm", "llmd", None)
    return model_deployment(
        f"m{i:06}",
        f"team{i % namespaces:03}",
        gpu=2 if providers[i % 3] is None else 1,
        provider=providers[i % 3],
        engine={"type": "vllm", "extraArgs": [f"--max-num-seqs={seqs}"]},
    )


def source_path(src: Path, layout: str, i: int, namespaces: int) -> Path:
    """The file ModelDeployment `i` is written in."""
    team = f"team{i % namespaces:03}"
    return src / team / f"m{i:06}.yaml" if layout == "per-model" else src / f"{team}.yaml"


def write_sources(src: Path, layout: str, count: int, namespaces: int) -> None:
    """Every ModelDeployment, in the `layout`."""
    if layout == "per-model":
        for n in range(namespaces):
            (src / f"team{n:03}").mkdir(parents=True)
        for i in range(count):
            source_path(src, layout, i, namespaces).write_text(dump_all([model(i, namespaces)]))
        return
    src.mkdir(parents=True, exist_ok=True)
    for n in range(namespaces):
        ids = range(n, count, namespaces)
        text = dump_all(model(i, namespaces) for i in ids)
        source_path(src, layout, n, namespaces).write_text(text)


def write_one(src: Path, layout: str, count: int, namespaces: int, *, i: int, seqs: int) -> None:
    """ModelDeployment `i` with `--max-num-seqs=seqs` (its file written again)."""
    if layout == "per-model":
        path = source_path(src, layout, i, namespaces)
        path.write_text(dump_all([model(i, namespaces, seqs)]))
        return
    n = i % namespaces
    ids = range(n, count, namespaces)
    text = dump_all(model(j, namespaces, seqs if j == i else 128) for j in ids)
    source_path(src, layout, n, namespaces).write_text(text)


def timed(argv: Sequence[str], cwd: Path | None = None) -> Timed:
    """One run of `argv`; a render that fails (exit status past 1) ends the bench."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{argv[0]} failed ({done.returncode}): {done.stderr.strip()}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return Timed(wall, cpu)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.rerender")
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--namespaces", type=int, default=20)
    parser.add_argument("--layout", choices=LAYOUTS, default="per-model")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--no-one-changed", action="store_true", help="the nothing-changed row only"
    )
    args = parser.parse_args(argv)
    compile_bytecode()
    count, namespaces, layout = args.count, args.namespaces, args.layout
    changed = count // 2
    rows: dict[str, list[Timed]] = {"git status --porcelain": [], "nothing changed": []}
    if not args.no_one_changed:
        rows["one changed"] = []
    with tempfile.TemporaryDirectory(prefix="runway-rerender-") as tmp:
        src, repo = Path(tmp) / "src", Path(tmp) / "gitops"
        write_sources(src, layout, count, namespaces)
        command = [RUNWAY, "render", "-R", str(src), "--repo", str(repo), "--commit", "-o", "json"]
        first = timed(command)
        timed(command)  # settles what the first render left racily clean (git re-reads it once)
        status = ["git", "status", "--porcelain"]
        for r in range(args.rounds):
            rows["git status --porcelain"].append(timed(status, repo))
            rows["nothing changed"].append(timed(command))
            if "one changed" in rows:
                write_one(src, layout, count, namespaces, i=changed, seqs=256 + r)
                rows["one changed"].append(timed(command))
                write_one(src, layout, count, namespaces, i=changed, seqs=128)
                timed(command)  # back to the tree every round starts from (not timed)
    load = open("/proc/loadavg").read().split()[:3]  # noqa: SIM115 - one read
    floor = statistics.median(t.wall for t in rows["git status --porcelain"])
    floor_cpu = statistics.median(t.cpu for t in rows["git status --porcelain"])
    print(
        f"re-render of {count} ModelDeployments ({namespaces} namespaces, layout {layout}), "
        f"{os.cpu_count()} cores, {args.rounds} alternating rounds, load average "
        f"{' '.join(load)} at the end; first render + commit {first.wall:.2f} s wall, "
        f"{first.cpu:.2f} s CPU (set-up, no target)"
    )
    print(
        f"  {'row':24} {'wall s':>7} {'cpu s':>7} {'÷ status':>9} {'target':>14} "
        f"{'cpu ÷ cpu':>9}  rounds (wall s)"
    )
    for what, runs in rows.items():
        wall = statistics.median(t.wall for t in runs)
        cpu = statistics.median(t.cpu for t in runs)
        target = TARGETS.get(what)
        verdict = ""
        if target is not None:
            verdict = f"<= {target:.0f}x {'met' if wall / floor <= target else 'NOT MET'}"
        each = ", ".join(f"{t.wall:.3f}" for t in runs)
        print(
            f"  {what:24} {wall:7.3f} {cpu:7.3f} {wall / floor:8.2f}x {verdict:>14} "
            f"{cpu / floor_cpu:8.2f}x  {each}"
        )
    print(
        "  ÷ status: the median wall time over git status's (the targets: issue #46); cpu ÷ cpu: "
        "user + system time (the command's children included) over git status's, steadier on a "
        "busy machine"
    )


if __name__ == "__main__":
    main()
