"""A static upper bound on what one evaluation of a CEL rule can cost, before it is accepted.

Modelled on Kubernetes' estimated-cost check for CRD validation rules (cel-go `checker/cost.go`):
walk the checked AST; each node costs its own work plus its children's; a comprehension costs
its range, plus iterations x (condition + step); string, list and map sizes are carried upward,
so `.map(s, s + s)` chains grow the estimate as they grow the value. The constants differ where
cel-expr-python differs from cel-go (measured: `make bench`, "CEL cost calibration"):
- a comprehension that builds a list (`map`, `filter`) copies its accumulator on every step,
  so its cost is quadratic in the number of iterations;
- `matches` compiles its regular expression on every call, constant or not, and RE2's work
  grows with its program (core.cel.regex bounds it from the pattern, which must be a
  constant): compiling costs REGEX_COMPILE plus REGEX_INSTRUCTION per instruction, matching
  REGEX_STEP per character of text and instruction (RE2 falls back to its NFA, which visits
  every instruction for every character, when the DFA's cache thrashes);
- `size` of a string counts its code points: linear in its length;
- the runtime stops any evaluation after ITERATION_LIMIT iterations, so no one comprehension is
  counted for more.
- a map or list index (`m[k]`, and `k in m`) hashes and compares its key, and a key that is not
  there fails with an error message that quotes it: both cost the key's length (a key of 65,536
  characters measured 97 µs per failed lookup, 4 µs per found one: 0.015 and 0.0006 units per
  character, under TRAVERSAL).
Values read from `spec` are taken at the sizes the ModelDeployment schema declares (its
maxLength, maxItems and maxProperties, which admission enforces before any rule runs: see
`schema_size`), the way the Kubernetes estimator takes a CRD's declared sizes; what the schema
does not bound, at the limits that `core.cel.rules` enforces on the input (INPUT_ENTRY_LIMIT,
INPUT_STRING_LIMIT) and the admission body size.
One unit is about 0.1 µs of evaluation on the reference machine (2 cores).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from core.cel.checked import Call, Comprehension, Const, Expr, Ident, ListExpr, MapExpr, Select
from core.cel.regex import MAX_WEIGHT, check_pattern
from core.schema.structural import MAX_KEY_LENGTH

ITERATION_LIMIT = 10_000  # cel-expr-python's fixed iteration budget per evaluation
INPUT_STRING_LIMIT = 65_536  # longest string in `spec` a rule may read (enforced by core.cel.rules)
INPUT_ENTRY_LIMIT = 10_000  # most entries of one list or map in `spec` (enforced likewise)
INPUT_TOTAL_LIMIT = 3 * 1024 * 1024  # a whole spec subtree: the API server's request size limit

TRAVERSAL = 0.1  # per character scanned or copied (cel-go's StringTraversalCostFactor)
REGEX_COMPILE = 400  # every `matches` call compiles its pattern (~7-40 µs measured)
REGEX_INSTRUCTION = 8  # compiling one RE2 instruction (bound) (~80-470 ns measured)
REGEX_STEP = 0.05  # one character through one instruction (NFA worst case: ~2-4 ns measured)
STRING_CALL = 15  # contains/startsWith/endsWith call overhead (~1.5 µs measured)
ELEMENT_COPY = 3  # copying one list element (~250 ns measured in accumulators)
LIST_CREATE, MAP_CREATE = 10, 30  # cel-go's ListCreateBaseCost, MapCreateBaseCost
ITERATION = 5  # one comprehension step's own overhead (~0.5 µs measured)
EVALUATION = 50  # calling into the runtime at all (~5 µs measured, whatever the rule)
_CAP = 10**18

Kind = Literal["scalar", "string", "list", "map", "unknown"]


@dataclass(frozen=True, slots=True)
class Size:
    """The largest a value can be: characters for strings, entries for lists and maps."""

    kind: Kind
    n: int
    item: Size | None = None  # the largest entry of a list or map (keys included)
    # An object's declared fields, each with its own size (None: a map with no declared fields)
    fields: Mapping[str, Size] | None = None
    key: Size | None = None  # a map's largest key, what a comprehension over it iterates

    def iterated(self) -> Size:
        """What a comprehension over this value binds its variable to: a map's keys."""
        if self.kind == "map" and self.key is not None:
            return self.key
        return self.entry()

    def entry(self) -> Size:
        if self.kind == "unknown":
            return UNKNOWN
        return self.item if self.item is not None else SCALAR

    def member(self, name: str) -> Size:
        """The size of field `name` (`x.name`, `x['name']`): its declared one; a field an object
        does not declare is unknown (the estimate never counts on a value being absent)."""
        if self.fields is not None:
            return self.fields.get(name, UNKNOWN)
        return self.entry()

    def weight(self) -> int:
        """Characters plus entries in total: what a deep comparison or copy touches."""
        if self.kind == "unknown":
            return max(INPUT_TOTAL_LIMIT, self.n)
        if self.kind in ("list", "map"):
            return min(_CAP, self.n * max(1, self.entry().weight()))
        return self.n


SCALAR = Size("scalar", 1)
UNKNOWN = Size("unknown", max(INPUT_STRING_LIMIT, INPUT_ENTRY_LIMIT))


def estimate(expr: Expr, variables: Mapping[str, Size] | None = None) -> int:
    """The estimated maximum cost of one evaluation of `expr`, in units (see module docstring);
    `variables`: the largest value of each variable (unknown when not given)."""
    cost, _ = _Estimator(variables or {}).cost(expr)
    return EVALUATION + cost


def schema_size(schema: Mapping[str, Any]) -> Size:
    """The largest value an OpenAPI schema admits: a string at its maxLength (an enum at its
    longest value), a list at its maxItems, a map at its maxProperties with keys of at most
    MAX_KEY_LENGTH (core.schema.structural enforces both), an object's declared fields each at
    its own size. Whatever the schema does not bound is taken at the input limits, and what it
    does not describe (preserved unknown fields, combinators, no type) is unknown."""
    kind = schema.get("type")
    if schema.get("x-kubernetes-preserve-unknown-fields") or kind is None:
        if schema.get("x-kubernetes-int-or-string"):
            return Size("string", int(schema.get("maxLength", INPUT_STRING_LIMIT)))
        return UNKNOWN
    if kind == "string":
        enum = schema.get("enum")
        if enum:
            return Size("string", max(len(str(v)) for v in enum))
        return Size("string", int(schema.get("maxLength", INPUT_STRING_LIMIT)))
    if kind == "array":
        items = schema.get("items")
        item = schema_size(items) if isinstance(items, Mapping) else UNKNOWN
        return Size("list", int(schema.get("maxItems", INPUT_ENTRY_LIMIT)), item)
    if kind == "object":
        return _object_size(schema)
    return SCALAR  # integer, number, boolean


def _object_size(schema: Mapping[str, Any]) -> Size:
    props: Mapping[str, Any] = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    fields = {name: schema_size(sub) for name, sub in props.items()}
    keys = [Size("string", len(name)) for name in fields]
    sizes = list(fields.values())
    n = len(fields)
    if isinstance(extra, Mapping):
        bounded = "maxProperties" in schema
        n += int(schema["maxProperties"]) if bounded else INPUT_ENTRY_LIMIT
        keys.append(Size("string", MAX_KEY_LENGTH if bounded else INPUT_STRING_LIMIT))
        sizes.append(schema_size(extra))
    elif extra is True or not fields:
        return UNKNOWN
    key = _largest(keys)
    item = _largest(sizes + keys) or SCALAR
    return Size("map", min(n, INPUT_ENTRY_LIMIT), item, fields if props else None, key)


class _Estimator:
    def __init__(self, variables: Mapping[str, Size]) -> None:
        self.scopes: dict[str, list[Size]] = {name: [size] for name, size in variables.items()}

    def cost(self, e: Expr) -> tuple[int, Size]:
        if isinstance(e, Const):
            return 0, _const_size(e.value)
        if isinstance(e, Ident):
            stack = self.scopes.get(e.name)
            return 1, stack[-1] if stack else UNKNOWN  # `spec` and anything unbound
        if isinstance(e, Select):
            cost, size = self.cost(e.operand)
            return cost + 1, SCALAR if e.test_only else size.member(e.field)
        if isinstance(e, ListExpr):
            parts = [self.cost(x) for x in e.elements]
            item = _largest([s for _, s in parts])
            return LIST_CREATE + sum(c for c, _ in parts), Size("list", len(parts), item)
        if isinstance(e, MapExpr):
            parts = [self.cost(x) for pair in e.entries for x in pair]
            item = _largest([s for _, s in parts])
            keys = _largest([size for _, size in parts[0::2]])  # parts: key, value, key, ...
            size = Size("map", len(e.entries), item, key=keys)
            return MAP_CREATE + sum(c for c, _ in parts), size
        if isinstance(e, Comprehension):
            return self._comprehension(e)
        return self._call(e)

    def _comprehension(self, e: Comprehension) -> tuple[int, Size]:
        range_cost, range_size = self.cost(e.iter_range)
        init_cost, init_size = self.cost(e.accu_init)
        iterations = min(range_size.n, ITERATION_LIMIT) if range_size.kind != "scalar" else 0
        builds = isinstance(e.accu_init, ListExpr | MapExpr)
        # During the loop the accumulator is taken at its final size: each step copies it.
        accu = Size(init_size.kind, iterations) if builds else init_size
        self._push(e.accu_var, accu)
        self._push(e.iter_var, range_size.iterated())
        condition, _ = self.cost(e.loop_condition)
        step, step_size = self.cost(e.loop_step)
        self._pop(e.iter_var)
        result_cost, result_size = self.cost(e.result)
        self._pop(e.accu_var)
        if builds:
            result_size = Size(init_size.kind, iterations, step_size.item)
        loop = iterations * (ITERATION + condition + step)
        return min(_CAP, range_cost + init_cost + loop + result_cost), result_size

    def _call(self, e: Call) -> tuple[int, Size]:
        parts = [self.cost(x) for x in ((e.target,) if e.target else ()) + e.args]
        base = sum(c for c, _ in parts)
        sizes = [s for _, s in parts]
        own, size = _function(e.function, sizes)
        key = e.args[-1] if e.args else None
        if e.function == "_[_]" and isinstance(key, Const) and isinstance(key.value, str):
            size = sizes[0].member(key.value)
        if e.function == "matches":
            own = _matches(sizes[0], e.args[-1])
        elif e.function == "_?_:_":
            base = parts[0][0] + max(parts[1][0], parts[2][0])
        elif e.function in ("_&&_", "_||_"):
            own = 0
        return min(_CAP, base + own), size

    def _push(self, name: str, size: Size) -> None:
        self.scopes.setdefault(name, []).append(size)

    def _pop(self, name: str) -> None:
        self.scopes[name].pop()


def _function(name: str, args: list[Size]) -> tuple[int, Size]:
    """A call's own cost (without its arguments') and the size of its result."""
    if name == "_?_:_":
        return 0, _largest(args[1:]) or SCALAR
    if name == "_+_":
        return _add(args[0], args[1])
    if name in ("_==_", "_!=_", "_<_", "_<=_", "_>_", "_>=_"):
        return 1 + _scan(min(args[0].weight(), args[1].weight())), SCALAR
    if name == "@in":
        needle, haystack = args
        if haystack.kind == "map":
            return 1 + _scan(needle.weight()), SCALAR
        each = 1 + _scan(min(needle.weight(), haystack.entry().weight()))
        return 1 + min(_CAP, haystack.n * each), SCALAR
    if name == "_[_]":
        # Hashing and comparing the key, and on a miss an error that quotes it (measured).
        key = args[1]
        return 1 + (_scan(key.weight()) if key.kind != "scalar" else 0), args[0].entry()
    if name == "size" and args and args[0].kind in ("string", "unknown"):
        return 1 + _scan(args[0].n), SCALAR  # code points are counted, not stored
    if name == "contains":
        return STRING_CALL + min(_CAP, _scan(args[0].n) * max(1, _scan(args[1].n))), SCALAR
    if name in ("startsWith", "endsWith"):
        return STRING_CALL + _scan(args[1].n), SCALAR
    if name in ("string", "bytes", "dyn"):
        widest = max(32, max((a.n for a in args), default=0) * (4 if name == "bytes" else 1))
        kind: Kind = "unknown" if name == "dyn" else "string"
        size = args[0] if name == "dyn" and args else Size(kind, widest)
        return 1 + _scan(sum(a.weight() for a in args)), size
    if name in _CONSTANT_TIME:
        return 1, SCALAR
    # Conversions (int, double, timestamp, duration, ...) and the rest: linear in their input.
    return 1 + _scan(sum(a.weight() for a in args)), SCALAR


# Operators whose work does not depend on the size of their operands.
_CONSTANT_TIME = frozenset(
    {"!_", "-_", "_-_", "_*_", "_/_", "_%_", "@not_strictly_false", "size", "type", "bool"}
)


def _matches(text: Size, pattern: Expr) -> int:
    """Compiling the pattern, then every character of the text through every instruction.

    A pattern that is not a constant, or not accepted (core.cel.rules refuses both), is taken
    at the largest program an accepted pattern can have."""
    weight = MAX_WEIGHT
    if isinstance(pattern, Const) and isinstance(pattern.value, str):
        verdict = check_pattern(pattern.value)
        weight = MAX_WEIGHT if verdict.problem is not None else max(1, verdict.weight)
    compile_cost = REGEX_COMPILE + REGEX_INSTRUCTION * weight
    return compile_cost + min(_CAP, math.ceil((text.n + 1) * weight * REGEX_STEP))


def _add(left: Size, right: Size) -> tuple[int, Size]:
    if left.kind == "scalar" or right.kind == "scalar":
        return 1, SCALAR  # a number (or time) on one side: no overload concatenates with it
    kinds = {left.kind, right.kind} - {"scalar"}
    kind: Kind = kinds.pop() if len(kinds) == 1 else "unknown"
    n = min(_CAP, left.n + right.n)
    size = Size(kind, n, _largest([x for x in (left.item, right.item) if x is not None]))
    copy = ELEMENT_COPY * n if kind in ("list", "unknown") else 0
    chars = _scan(left.weight() + right.weight()) if kind in ("string", "unknown") else 0
    return 1 + min(_CAP, max(copy, chars)), size


def _largest(sizes: list[Size]) -> Size | None:
    """One size that covers all of `sizes` (None for none)."""
    if not sizes:
        return None
    if any(s.kind == "unknown" for s in sizes):
        return UNKNOWN
    kinds = {s.kind for s in sizes}
    kind: Kind = kinds.pop() if len(kinds) == 1 else "unknown"
    items = [s.item for s in sizes if s.item is not None]
    return Size(kind, max(s.n for s in sizes), _largest(items))


def _const_size(value: object) -> Size:
    if isinstance(value, str | bytes):
        return Size("string", len(value))
    return SCALAR


def _scan(chars: int) -> int:
    return min(_CAP, math.ceil(chars * TRAVERSAL))
