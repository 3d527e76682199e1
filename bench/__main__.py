"""Admission-path timings on the bundled examples (bounded: a fixed number of rounds)."""

from __future__ import annotations

import functools
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from bench import cel, limits
from core.admission.hydrate import hydrate
from core.admission.pipeline import admit
from core.cel.rules import activation, evaluate
from kubeio.registry import build_registry
from kubeio.shipped import bundled_config_objects

ROUNDS = 200
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def per_call_us(fn: Callable[[], Any], rounds: int = ROUNDS) -> float:
    """Median of per-call wall time over `rounds` calls, in microseconds."""
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1e6)
    return statistics.median(samples)


def main() -> None:
    configs = bundled_config_objects()
    objects = [
        d
        for p in sorted(EXAMPLES.glob("*.yaml")) + sorted(EXAMPLES.glob("rejected/*.yaml"))
        for d in yaml.safe_load_all(p.read_text())
        if d
    ]
    registry = build_registry(configs, flags={})
    load = per_call_us(lambda: build_registry(configs, flags={}), rounds=20)
    rules = [r for c in registry.configs.values() for r in c.rules]
    bound = activation(registry.env, hydrate(objects[0], registry=registry).obj["spec"])
    rule_us = statistics.median(per_call_us(functools.partial(evaluate, r, bound)) for r in rules)
    bind_us = per_call_us(lambda: activation(registry.env, objects[0]["spec"]))
    hydrate_us = statistics.median(
        per_call_us(functools.partial(hydrate, o, registry=registry)) for o in objects
    )
    admit_us = statistics.median(
        per_call_us(functools.partial(admit, o, registry=registry)) for o in objects
    )
    stored = [hydrate(o, registry=registry).obj for o in objects]
    readmit_us = statistics.median(
        per_call_us(functools.partial(admit, o, old=o, registry=registry))
        for o in stored
        if "provider" in o["spec"]
    )
    print(f"objects: {len(objects)} examples, {ROUNDS} rounds each, medians")
    print(f"registry load (5 configs, {len(rules)} rules compiled): {load / 1000:.2f} ms")
    print(f"CEL: bind spec {bind_us:.0f} us, evaluate one rule {rule_us:.0f} us")
    print(f"hydrate (defaults + selection + stamp): {hydrate_us:.0f} us per object")
    print(f"admit (hydrate + validate + JSONPatch): {admit_us:.0f} us per object")
    print(f"re-admit a hydrated object (sticky, no CEL): {readmit_us:.0f} us per object")
    print(f"ratio admit / re-admit: {admit_us / readmit_us:.2f}x (the cost of running selection)")
    print(f"admissions per second per core (first admission): {1e6 / admit_us:.0f}")
    cel.main()
    limits.main()


if __name__ == "__main__":
    main()
