"""`make fuzz` area: hostile values under the schema pack's CRD validation rules.

Each case takes a differential case's object (tests/support/crdcases.py), replaces the value at
the node of its rule with a random hostile value (wrong types, integers past 64 bits, long
strings, deep or wide containers, odd keys), and runs Runway's strict check on it. The rule the
class protects: the check answers with field errors only (never an exception, never a crash of
the CEL runtime), every error names a path inside the object, and one check stays under a second.
"""

from __future__ import annotations

import copy
import random
import time
from typing import Any

from kubeio.shipped import bundled_versions
from renderer.output.schemapack import load_pack
from renderer.output.strict import Schemas
from tests.fuzzing import Report
from tests.support.crdcases import cases, place

SEED = 20261202
SLOW_SECONDS = 1.0
_SCALARS: tuple[Any, ...] = (
    None,
    True,
    0,
    -1,
    2**63,
    -(2**63) - 1,
    10**4000,  # past int64; YAML input stops at 4,300 digits (docs/security.md)
    1.5,
    float("nan"),
    "",
    "*",
    "0s",
    "µs",
    "1µs",
    "::1",
    "a" * 100,  # longer: Python re backtracks on some pack patterns (Gateway address type: cubic)
    "\x00\n\u202e",
)


def _hostile(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth >= 4 or roll < 0.45:
        return rng.choice(_SCALARS)
    if roll < 0.7:
        wide = 200 if depth == 0 else 3  # one wide level: the object stays a few hundred values
        return [_hostile(rng, depth + 1) for _ in range(rng.choice((0, 1, 3, wide)))]
    keys = ("type", "value", "name", "namespace", "port", "__x__", "a.b", "", "1")
    return {rng.choice(keys): _hostile(rng, depth + 1) for _ in range(rng.choice((0, 1, 4)))}


def run(examples: int) -> Report:
    """`examples` hostile objects, spread over every rule of the pack."""
    report = Report("crd rules")
    rng = random.Random(SEED)
    schemas = Schemas.from_pack(load_pack())
    pack = {(e.crd["spec"]["group"], e.crd["spec"]["names"]["kind"]): e.crd for e in load_pack()}
    kubernetes = bundled_versions().kubernetes
    every = cases()
    slowest = 0.0
    for n in range(examples):
        case = every[n % len(every)]
        crd = pack[(case.group, case.kind)]
        (version,) = [v for v in crd["spec"]["versions"] if v["name"] == case.version]
        obj = copy.deepcopy(case.obj)
        at = _schema_path(case.path)
        place(obj, version["schema"]["openAPIV3Schema"], at, _hostile(rng))
        started = time.perf_counter()
        try:
            found = schemas.check(obj, kubernetes=kubernetes, old=case.old)
        except Exception as err:  # the point: any exception is a failure of the class
            report.failures.append(f"{case.id}: raised {type(err).__name__}")
            continue
        finally:
            slowest = max(slowest, time.perf_counter() - started)
        outside = [e.path for e in found if not e.path.startswith(("spec", "status", "metadata"))]
        if outside:
            report.failures.append(f"{case.id}: error outside the object at {outside[0]!r}")
        report.cases += 1
    if slowest > SLOW_SECONDS:
        report.failures.append(f"slowest check took {slowest:.2f} s (bound {SLOW_SECONDS} s)")
    report.numbers["slowest_ms"] = round(slowest * 1000, 1)
    return report


def _schema_path(path: str) -> tuple[str, ...]:
    """The schema path of a case's concrete field path: [0] is an element, [key] a map entry."""
    parts: list[str] = []
    for token in path.replace("]", "").replace("[", ".[").split("."):
        if not token:
            continue
        if token.startswith("["):
            parts.append("[*]" if token[1:].isdigit() else "{*}")
        else:
            parts.append(token)
    return tuple(parts)
