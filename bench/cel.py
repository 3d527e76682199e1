"""CEL rows of `make bench`: admission CPU with 110 evaluated rules, `runway validate` start-up,
the adversarial corpus (which configs are refused, and the worst admission an accepted one
can cause), and regex rules (the worst admitted one against the per-rule bound). Bounded: fixed rounds, fixed corpus, one subprocess at a time."""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from core.admission.configs import check_provider_config
from core.admission.hydrate import hydrate
from core.admission.pipeline import admit
from core.cel.regex import MAX_WEIGHT
from core.cel.rules import (
    CONFIG_COST_LIMIT,
    RULE_COST_LIMIT,
    activation,
    compile_rule,
    evaluate,
    new_environment,
)
from core.model.kinds import ModelDeployment
from core.schema.bounds import MAX_VALUES
from core.selection.choice import select_provider
from core.selection.configs import ProviderRegistry
from kubeio.registry import build_registry
from kubeio.shipped import bundled_config_objects
from providers.modules import plugins
from tests.fuzzing.cel import declared_worst_spec, lookup_rule, lookup_spec
from tests.support.celbombs import RULE_BOUND_MS, cost_ms

PLUGINS = {plugin.name: plugin for plugin in plugins()}

ROOT = Path(__file__).resolve().parent.parent
ADMISSION_TARGET_MS = 5.0
STARTUP_TARGET_S = 0.3
CEL_TARGET_MS = 100.0
L10 = "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]"
_L17 = "[" + ", ".join(str(i) for i in range(17)) + "]"


# The most args an admissible ModelDeployment can hold, with its other values (apiVersion, kind,
# metadata, engine, resources) counted: providers.bounds.MAX_VALUES less a margin of 100.
LIMIT_ARGS = MAX_VALUES - 100


def cpu_ms(fn: Callable[[], Any], rounds: int) -> float:
    """Median process CPU time of one call, in ms (CPU, not wall: the machine is shared)."""
    samples = []
    for _ in range(rounds):
        start = time.process_time()
        fn()
        samples.append((time.process_time() - start) * 1e3)
    return statistics.median(samples)


def scale_registry() -> ProviderRegistry:
    """55 configs: the five Runway renders with 22 rules each, all evaluated (only the last one
    in priority order matches), and 50 others (no renderer, so never evaluated)."""
    shipped = {c["metadata"]["name"]: c for c in bundled_config_objects()}
    objects = []
    for p, name in enumerate(sorted(PLUGINS)):
        rules = [
            {
                "condition": (
                    f"has(spec.resources) && has(spec.resources.gpu) && "
                    f"spec.resources.gpu.count > {100 + i} && spec.engine.type == 'vllm'"
                    if i % 2
                    else f"has(spec.serving) && spec.serving.mode == 'mode-{i}'"
                ),
                "priority": 1000 - 22 * p - i,
            }
            for i in range(22)
        ]
        if name == sorted(PLUGINS)[-1]:
            rules[-1] = {"condition": "spec.engine.type == 'vllm'", "priority": 0}
        spec = dict(shipped[name]["spec"], selectionRules=rules)
        objects.append(dict(shipped[name], spec=spec))
    for i in range(50):
        other = dict(shipped["vllm"], metadata={"name": f"other-{i:02d}"})
        other["spec"] = dict(other["spec"], selectionRules=[{"condition": "true", "priority": 1}])
        objects.append(other)
    return build_registry(objects, flags={})


def admission_rows() -> None:
    registry = scale_registry()
    obj = {
        "apiVersion": "airunway.ai/v1alpha1",
        "kind": "ModelDeployment",
        "metadata": {"name": "m", "namespace": "ns"},
        "spec": {"model": {"id": "meta-llama/Llama-3.1-8B"}, "resources": {"gpu": {"count": 1}}},
    }
    spec = hydrate(obj, registry=registry).obj["spec"]
    spec.pop("provider")
    md = ModelDeployment({"spec": spec})
    choice = select_provider(spec, md, registry)
    admit_ms = cpu_ms(lambda: admit(obj, registry=registry), rounds=200)
    select_ms = cpu_ms(lambda: select_provider(spec, md, registry), rounds=200)
    print(
        f"admission with {len(registry.configs)} provider configs, {choice.evaluated} rules "
        f"evaluated (selected {getattr(choice.decision, 'value', None)}): "
        f"{admit_ms:.2f} ms CPU per admission, of which selection {select_ms:.2f} ms; "
        f"target <= {ADMISSION_TARGET_MS} ms: ratio {admit_ms / ADMISSION_TARGET_MS:.2f}"
    )


def startup_rows() -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    command = [str(Path(sys.executable).parent / "runway"), "validate", "examples/vllm-1gpu.yaml"]
    walls, cpus = [], []
    for i in range(6):  # the first run only writes the bytecode cache
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(command, cwd=ROOT, env=env, capture_output=True, check=True, timeout=60)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        if i:
            walls.append(wall)
            cpus.append(cpu)
    probe = (
        "import sys; from cli.main import main; main(['validate', 'examples/vllm-1gpu.yaml']); "
        "print(sorted(m for m in ('kubernetes', 'gunicorn', 'flask', 'dulwich', "
        "'kubernetes_validate') if m in sys.modules))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.splitlines()[-1]
    wall, cpu = statistics.median(walls), statistics.median(cpus)
    print(
        f"`runway validate FILE` start-up: {wall:.2f} s wall, {cpu:.2f} s CPU (median of 5); "
        f"target <= {STARTUP_TARGET_S} s: ratio {cpu / STARTUP_TARGET_S:.2f} (CPU), "
        f"{wall / STARTUP_TARGET_S:.2f} (wall); cluster/server modules imported: {loaded}"
    )


def adversarial_configs() -> list[tuple[str, dict[str, Any]]]:
    """The issue's corpus: each shape as one InferenceProviderConfig named like a real provider."""
    base = next(c for c in bundled_config_objects() if c["metadata"]["name"] == "dynamo")

    def config(rules: list[str]) -> dict[str, Any]:
        selection = [{"condition": r, "priority": 1} for r in rules]
        return dict(base, spec=dict(base["spec"], selectionRules=selection))

    nest = "true"
    for var in "edcba":
        nest = f"{L10}.all({var}, {nest})"
    return [
        ("nested .all 5 deep over 10-item literals", config([nest])),
        ("nested .all 4 deep (accepted; the runtime budget stops it)", config([_nested(4)])),
        (
            "24 x .map(s, s + s) over ['ab']",
            config(["['ab']" + ".map(s, s + s)" * 24 + ".size() > 0"]),
        ),
        (
            "12 x .map(s, s + s) over ['ab'] (accepted)",
            config(["['ab']" + ".map(s, s + s)" * 12 + ".size() > 0"]),
        ),
        (
            "3,000 rules (3 MB)",
            config([f"spec.engine.type == '{'x' * 990}{i:04d}'" for i in range(3000)]),
        ),
        (
            "64 rules of 1 KiB literals",
            config([f"spec.engine.type == '{'x' * 990}{i:04d}'" for i in range(64)]),
        ),
        (
            "huge list literal (over 1 KiB)",
            config(["spec.engine.type in [" + ", ".join(f"'{i}'" for i in range(200)) + "]"]),
        ),
        ("exists over a spec list", config(["spec.args.exists(a, a == '--x')"])),
        ("map over a spec list", config(["spec.args.map(a, a + a).size() > 0"])),
        ("9 rules of 3-deep nesting", config([_nested(3)] * 9)),
        ("the issue's regex bomb (\\pL{1000} in 17 x 17 loops)", config([REGEX_RULES[0]])),
        ("the largest regex program in a 16-step loop (accepted)", config([REGEX_RULES[3]])),
    ]


def _nested(depth: int) -> str:
    body = "true"  # .all never stops early on it: every level runs in full
    for var in "dcba"[4 - depth :]:
        body = f"{L10}.all({var}, {body})"
    return body


def adversarial_rows() -> None:
    print(
        f"CEL cost limits: {RULE_COST_LIMIT:,} per rule, {CONFIG_COST_LIMIT:,} per config "
        f"(units of ~0.1 us); decisions at InferenceProviderConfig admission:"
    )
    accepted: list[dict[str, Any]] = []
    for name, obj in adversarial_configs():
        start = time.process_time()
        errors = check_provider_config(obj)
        decide_ms = (time.process_time() - start) * 1e3
        verdict = "accepted" if not errors else f"refused ({errors[0].path}: {errors[0].reason})"
        print(f"  {name}: {verdict}, decided in {decide_ms:.1f} ms CPU")
        if not errors:
            accepted.append(obj)
    worst_ms = worst_admission_ms(accepted)
    print(
        f"worst admission with every accepted adversarial config as all five providers: "
        f"{worst_ms:.1f} ms CPU in CEL; target <= {CEL_TARGET_MS:.0f} ms: "
        f"ratio {worst_ms / CEL_TARGET_MS:.2f}"
    )


def worst_admission_ms(accepted: list[dict[str, Any]]) -> float:
    """Each accepted config in turn stands for all five providers (nothing matches, so every
    rule runs) against a spec that fills the input limits: as many 100-character args as an
    admissible object holds (providers.bounds.MAX_VALUES); the slowest admission's CEL time."""
    spec = {
        "engine": {"type": "vllm"},
        "resources": {"gpu": {"count": 1}},
        "args": ["--" + "x" * 98] * LIMIT_ARGS,
    }
    md = ModelDeployment({"spec": spec})
    worst = 0.0
    for obj in accepted:
        objects = [
            {
                **obj,
                "metadata": {"name": name},
                "spec": {
                    **obj["spec"],
                    "selectionRules": [
                        dict(r, condition=f"({r['condition']}) && false")
                        for r in obj["spec"]["selectionRules"]
                    ],
                },
            }
            for name in sorted(PLUGINS)
        ]
        registry = build_registry(objects, flags={})
        worst = max(worst, cpu_ms(partial(select_provider, spec, md, registry), rounds=3))
    return worst


def calibration_rows() -> None:
    """Measured time per estimated unit for costly accepted rules (the bound assumes <= 100 ns)."""
    env = new_environment()
    for condition in (
        "spec.args.exists(a, a == '--x')",
        _nested(3),
        "['ab']" + ".map(s, s + s)" * 12 + ".size() > 0",
    ):
        rule = compile_rule(env, condition, 0)
        spec = {"args": ["--" + "x" * 98] * LIMIT_ARGS}
        bound = activation(env, spec)
        evaluate(rule, bound)
        ms = cpu_ms(partial(evaluate, rule, bound), rounds=5)
        print(
            f"  {ms * 1e6 / rule.cost:.0f} ns per unit: {rule.cost:,} units, {ms:.2f} ms  {condition[:60]}"
        )


# Regex rules: the bombs (refused now), and the costliest shapes that are admitted:
# the largest pattern in a loop, NFA-thrashing patterns over a 65,536-character spec string.
REGEX_RULES = (
    f"{_L17}.all(a, {_L17}.all(b, !'a'.matches('\\\\pL{{1000}}')))",
    "'a'.matches('[\\\\pL\\\\pN]{300}')",
    "'a'.matches(spec.texts.a)",
    "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15].all(i, !'ab'.matches('a{497}'))",
    f"{L10}.all(i, !'abababababababab'.matches('(?:a|b){{199}}'))",
    "spec.texts.ab.matches('(?:a|b|ab|ba)*a[ab]{5}c')",
    "spec.texts.a.matches('(?:a|b)*a[ab]{6}c')",
    "spec.model.id.matches('^meta-llama/.*$')",
    "spec.texts.mix.matches('(?:[ab]*a[ab]{20}){10}c')",
    f"{L10}.all(i, size(spec.texts.ab) > i)",
)


def regex_rows() -> None:
    """Each regex rule's verdict at InferenceProviderConfig admission; for the admitted ones,
    the slowest evaluation over a spec at CEL's input limits, against the per-rule bound."""
    env = new_environment()
    bound = activation(env, declared_worst_spec())
    print(
        f"CEL regex rules (per-rule bound {RULE_BOUND_MS:g} ms, regex program <= {MAX_WEIGHT:,}):"
    )
    worst = (0.0, "")
    for condition in REGEX_RULES:
        rule = compile_rule(env, condition, 0)
        if rule.program is None:
            print(f"  refused: {condition[:70]}: {str(rule.compile_error)[:90]}")
            continue
        evaluate(rule, bound)
        ms = cost_ms(rule, bound, rounds=5)
        worst = max(worst, (ms, condition))
        print(
            f"  admitted, estimate {rule.cost * 1e-4:.2f} ms, measured {ms:.2f} ms: {condition[:70]}"
        )
    print(
        f"worst admitted regex rule: {worst[0]:.2f} ms CPU per evaluation; bound <= "
        f"{RULE_BOUND_MS:g} ms: ratio {worst[0] / RULE_BOUND_MS:.2f} ({worst[1][:60]})"
    )


# Lookups (issue #40, item 3): the triple loop (refused), and smaller ones, over a spec at
# its declared bounds where every lookup misses (the miss quotes its key in an error).
LOOKUP_RULES = (
    lookup_rule("spec.model.id", "spec.engine.args[{k}] == 1", [20, 20, 20]),
    lookup_rule("spec.model.id", "spec.engine.args[{k}] == 1", [20, 20, 5]),
    lookup_rule("spec.provider.overrides.k", "spec.engine.args[{k}] == 1", [20]),
    lookup_rule("spec.model.id", "{k} + {k} in spec.engine.args", [20, 20]),
    lookup_rule("spec.model.id", "spec.engine.args.exists(a, spec.engine.args[a] == {k})", []),
)


def lookup_rows() -> None:
    """Each lookup rule's verdict; for the admitted ones, measured against the estimate."""
    env = new_environment()
    bound = activation(env, lookup_spec())
    print("CEL lookup rules (spec at its declared bounds, every lookup a miss):")
    for condition in LOOKUP_RULES:
        rule = compile_rule(env, condition, 0)
        if rule.program is None:
            print(f"  refused: {condition[:70]}: {str(rule.compile_error)[:60]}")
            continue
        evaluate(rule, bound)
        ms = cost_ms(rule, bound, rounds=5)
        print(
            f"  admitted, estimate {rule.cost * 1e-4:.2f} ms, measured {ms:.2f} ms "
            f"(ratio {ms / (rule.cost * 1e-4):.2f}): {condition[-70:]}"
        )


def main() -> None:
    admission_rows()
    startup_rows()
    adversarial_rows()
    regex_rows()
    lookup_rows()
    print("CEL cost calibration (CPU per estimated unit):")
    calibration_rows()


if __name__ == "__main__":
    main()
