"""The costliest reviews the webhook accepts, one per hardening class: each at the documented
input limits (docs/security.md): a 3 MiB body, 10,000 values, 100 levels of nesting.
Shared by the tests (each must get the right answer) and `python -m bench` (their CPU time)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from core.checks.credentials import SHAPES
from core.schema.bounds import MAX_NESTING, MAX_VALUES
from core.schema.crds import ARGS, EXTRA_ARGS, VALUE
from tests.support.builders import external_model_provider, model_deployment, provider_config
from tests.support.webhook import review

BODY = 3 * 1024 * 1024  # the webhook's default request body limit (RUNWAY_MAX_BODY_BYTES)
ROOM = 4096  # left for the envelope, so every review fits under BODY
# Every literal the credential detector looks for, so that each of its shapes searches the value.
ANNOTATION = BODY - ROOM - 64  # the longest annotation value a review at the limit carries
EVERY_LITERAL = " ".join(lit for _, literals, _ in SHAPES for lit in literals) + " @"


@dataclass(frozen=True, slots=True)
class Case:
    kind: str  # the fuzz class it belongs to
    name: str
    path: str  # the endpoint
    document: dict[str, Any]


def plain_model() -> dict[str, Any]:
    """The ModelDeployment every case here is built on, as it is before a case adds its load."""
    return _md()


def _md(**spec: Any) -> dict[str, Any]:
    spec.setdefault("engine", "vllm")
    return model_deployment(gpu=1, provider="vllm", **spec)


def _fill(unit: str) -> int:
    """How many times `unit` (plus a separator) fits in a body at the limit."""
    return (BODY - ROOM) // (len(unit) + 2)


def _many_values() -> dict[str, Any]:
    """Env entries well past MAX_VALUES, as many as fit in the body."""
    unit = '{"name": "E0000000", "value": "x@a://u:"}'
    return _md(env=[{"name": f"E{i:07d}", "value": "x@a://u:"} for i in range(_fill(unit))])


def _most_containers() -> dict[str, Any]:
    """As many empty lists as fit in the body: the most objects JSON decoding can create."""
    return _md(overrides={"spec": {"x": [[] for _ in range(_fill("[]"))]}})


def _longest_string() -> dict[str, Any]:
    """One value of 3 MiB where no schema bounds it (provider overrides: env values and engine
    args have 32 KiB, annotations 256 KiB): a run of URL-scheme characters, then every literal
    of every credential shape, and no credential (the detector must search the whole value each
    time)."""
    run = BODY - ROOM - len(EVERY_LITERAL) - 1
    return _md(overrides={"spec": {"notes": "a" * run + " " + EVERY_LITERAL}})


def _credential_at_the_end() -> dict[str, Any]:
    """The same 3 MiB value with a token at its very end."""
    obj = _longest_string()
    overrides = obj["spec"]["provider"]["overrides"]["spec"]
    overrides["notes"] = overrides["notes"][:-64] + " ghp_" + "a1B2" * 9
    return obj


def _longest_bounded_string() -> dict[str, Any]:
    """An env value one character past its bound (32 KiB), refused before any other check."""
    return _md(env=[{"name": "NOTES", "value": "a" * (VALUE + 1)}])


def _longest_annotation() -> dict[str, Any]:
    """One annotation as long as the body allows: the API server's bound is 256 KiB."""
    return _md(annotations={"example.com/notes": "a" * ANNOTATION})


def _widest_allowed() -> dict[str, Any]:
    """As many values as allowed (MAX_VALUES), in overrides: every walk sees all of them."""
    obj = _md(overrides={"spec": {}})
    room = MAX_VALUES - _count(obj)
    obj["spec"]["provider"]["overrides"]["spec"] = {f"k{i:05d}": "v" for i in range(room)}
    return obj


def _deepest_allowed() -> dict[str, Any]:
    """Overrides nested to the last allowed level, in as many branches as MAX_VALUES allows."""
    obj = _md(overrides={"spec": {}})
    base = 6  # levels above overrides.spec's content: the object, spec, provider, overrides, spec
    chain = MAX_NESTING - base
    branches = (MAX_VALUES - _count(obj)) // chain
    for b in range(branches):
        node = obj["spec"]["provider"]["overrides"]["spec"].setdefault(f"b{b}", {})
        for _ in range(chain - 1):
            node = node.setdefault("x", {})
    return obj


def _largest_numbers() -> dict[str, Any]:
    """Integers at the int64 bounds and quantities of 128 characters, MAX_VALUES of them."""
    obj = _md(overrides={"spec": {}})
    room = MAX_VALUES - _count(obj) - 1
    obj["spec"]["provider"]["overrides"]["spec"]["x"] = [
        2**63 - 1 if i % 2 else "9" * 126 + "Ki" for i in range(room)
    ]
    return obj


def _count(obj: Any) -> int:
    if isinstance(obj, dict):
        return len(obj) + sum(_count(v) for v in obj.values())
    if isinstance(obj, list):
        return len(obj) + sum(_count(v) for v in obj)
    return 0


def _unknown_flags(args: int, extra: int = 0) -> dict[str, Any]:
    """Engine flags that are no flag of the catalog but close to one, so that a "did you mean"
    search over the whole catalog finds something for each (issue #40, item 10)."""
    engine = {
        "type": "vllm",
        "args": {f"max-model-lenx{i:05d}": "1" for i in range(args)},
        "extraArgs": [f"--enable-prefix-cachinx{i:05d}" for i in range(extra)],
    }
    return _md(engine=engine)


def _the_issues_flags() -> dict[str, Any]:
    """The issue's review: 9,000 unknown engine args (past spec.engine.args' 512)."""
    return _unknown_flags(9_000)


def _most_unknown_flags() -> dict[str, Any]:
    """As many unknown flags as the CRD allows: 512 args and 1,024 extraArgs."""
    return _unknown_flags(ARGS, EXTRA_ARGS)


def _emp_models() -> dict[str, Any]:
    return external_model_provider(
        models=[{"servedName": f"m{i:07d}"} for i in range(_fill('{"servedName": "m0000000"}'))]
    )


def _ipc_rules() -> dict[str, Any]:
    rule = "spec.engine.type == 'vllm'" + " " * 900
    return provider_config("x", rules=[(rule, 1)] * ((BODY - ROOM) // (len(rule) + 40)))


BUILDERS: tuple[tuple[str, str, str, Callable[[], dict[str, Any]], str], ...] = (
    # (class, name, path, object builder, operation)
    ("request-shapes", "3 MiB object, DELETE", "/validate", _longest_string, "DELETE"),
    ("request-shapes", "values past the limit", "/mutate", _many_values, "CREATE"),
    ("request-shapes", "3 MiB of empty lists", "/mutate", _most_containers, "CREATE"),
    ("request-shapes", "the most values allowed", "/validate", _widest_allowed, "CREATE"),
    ("request-shapes", "the deepest nesting allowed", "/validate", _deepest_allowed, "CREATE"),
    ("numbers", "the most numbers allowed, at their bounds", "/validate", _largest_numbers, "CREATE"),
    ("secrets", "a 3 MiB value, every literal", "/validate", _longest_string, "CREATE"),
    ("secrets", "a 3 MiB value ending in a token", "/validate", _credential_at_the_end, "CREATE"),
    ("request-shapes", "an env value past its bound", "/validate", _longest_bounded_string, "CREATE"),
    ("request-shapes", "3 MiB of annotations", "/validate", _longest_annotation, "CREATE"),
    ("secrets", "values past the limit", "/validate", _many_values, "CREATE"),
    ("flags", "9,000 unknown engine flags", "/validate", _the_issues_flags, "CREATE"),
    ("flags", "the most unknown flags allowed", "/validate", _most_unknown_flags, "CREATE"),
    ("other-kinds", "ExternalModelProvider, 3 MiB of models", "/validate-externalmodelprovider", _emp_models, "CREATE"),
    ("other-kinds", "InferenceProviderConfig, 3 MiB of rules", "/validate-inferenceproviderconfig", _ipc_rules, "CREATE"),
)  # fmt: skip


def cases() -> list[Case]:
    """Every case, built fresh (large: build them once per use)."""
    out: list[Case] = []
    for kind, name, path, build, operation in BUILDERS:
        document = review(build(), operation=operation, uid=f"limits-{len(out)}")
        if len(json.dumps(document)) > BODY:
            raise ValueError(f"{name}: the review does not fit in {BODY} bytes")
        out.append(Case(kind, name, path, document))
    return out
