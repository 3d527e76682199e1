"""CEL selection rules on cel-expr-python: compiled and cost-checked once, evaluated against `spec`.

The environment is AI Runway's: exactly one variable `spec` of type dyn (the defaulted spec with
the resolved engine filled in), the standard library, no extensions and no Kubernetes libraries.
cel-expr-python follows cel-go, so `has(spec.resources.gpu)` is an error when `spec.resources`
is missing; the shipped rules guard every level (docs/admission.md, "CEL semantics").

A rule is refused (compile_error set; it never matches) when it does not compile, is longer than
MAX_RULE_LENGTH, calls `matches` with a pattern that is not a literal of the regex subset
core.cel.regex bounds, or its estimated cost (core.cel.cost) exceeds RULE_COST_LIMIT.
At evaluation the runtime's own iteration budget (10,000 steps) stops anything the estimate
missed.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cel_expr_python import cel

from core.cel.checked import (
    Call,
    Const,
    Expr,
    Ident,
    MalformedAst,
    Select,
    checked_expr,
    walk,
)
from core.cel.cost import INPUT_ENTRY_LIMIT, INPUT_STRING_LIMIT, Size, estimate, schema_size
from core.cel.regex import check_pattern
from core.fields.paths import FieldPath
from core.model.jsonvalue import nodes
from core.model.numbers import INT64_MAX, INT64_MIN
from core.schema.crds import model_deployment_spec

MAX_RULE_LENGTH = 1024
# Estimated cost in units of about 0.1 µs (core/cel/cost.py), for one rule and for all the
# rules of one config together. At most five configs (one per provider Runway renders) are
# evaluated per admission, so one admission spends at most 5 x 150,000 units, about 75 ms
# (docs/security.md).
RULE_COST_LIMIT = 150_000
CONFIG_COST_LIMIT = 150_000
_MATCHES_HINT = (
    "matches() costs its pattern's RE2 program size times the text's length, and a string "
    f"from spec may hold {INPUT_STRING_LIMIT:,} characters: use a smaller pattern, "
    "startsWith/endsWith/contains, or ==; loops multiply"
)
MAX_MESSAGE = 200  # runtime messages are cut here: they can quote input values
Environment = Any  # cel.Env; the extension module ships stubs mypy cannot follow


@dataclass(frozen=True, slots=True)
class Rule:
    """One selection rule; `program` is None when the condition was refused (`compile_error`)."""

    condition: str
    priority: int
    program: Any
    compile_error: str | None
    cost: int = 0  # estimated maximum cost of one evaluation
    uses_spec: bool = True
    # The top-level spec fields the rule reads, when it reads spec only as `spec.<field>`;
    # None when it needs all of spec (`size(spec)`, `spec.exists(...)`, a variable named spec).
    reads: frozenset[str] | None = None
    # For a rule of the plain forms (see _plan): the rule in Python, answering True or False
    # where it can be sure of CEL's answer, None where the runtime must answer.
    plan: Plan | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class RuleResult:
    """A rule's result for one object: True, False, or an error (which is a non-match)."""

    matched: bool
    error: str | None = None


MATCHED, UNMATCHED = RuleResult(True), RuleResult(False)  # immutable: every plain answer is one
Plan = Callable[[Mapping[str, Any]], bool | None]


@dataclass(frozen=True, slots=True)
class Bound:
    """The evaluation input for one spec: the fields CEL may see, and why the others may not."""

    activation: Any
    problems: Mapping[str, str]  # top-level field -> "spec.field...: why" (kept out of CEL)
    # What CEL was given as `spec`, when every value in it converts (see _is_plain): only then
    # may a rule be answered without the runtime, which fails every rule when one does not.
    spec: Mapping[str, Any] | None = None

    def problem_for(self, rule: Rule) -> str | None:
        """Why `rule` cannot run on this spec: it reads a field kept out (or all of spec)."""
        if not rule.uses_spec or not self.problems:
            return None
        if rule.reads is None:
            return next(iter(self.problems.values()))
        return next((self.problems[f] for f in sorted(rule.reads) if f in self.problems), None)


def new_environment(variables: Sequence[str] = ("spec",)) -> Environment:
    """A CEL environment with dyn-typed `variables` (about 1 ms; build one per registry)."""
    return cel.NewEnv(variables=dict.fromkeys(variables, cel.Type.DYN))


def compile_rule(env: Environment, condition: str, priority: int) -> Rule:
    """Compile and cost-check a condition; a bad one becomes a Rule carrying why, never raises."""
    program, ast, problem = _compile(env, condition)
    if problem is None and ast is not None:
        problem = regex_problem(ast, condition)
    if problem is not None or ast is None:
        return Rule(condition, priority, None, problem)
    cost = estimate(ast, {"spec": spec_size()})
    if cost > RULE_COST_LIMIT:
        hint = (
            _MATCHES_HINT
            if any(isinstance(n, Call) and n.function == "matches" for n in walk(ast))
            else "loops multiply: iterate fewer or smaller lists, do not grow strings or lists"
        )
        problem = (
            f"estimated cost {cost:,} exceeds the limit of {RULE_COST_LIMIT:,} per rule ({hint})"
        )
        return Rule(condition, priority, None, problem, cost)
    nodes = walk(ast)
    uses = sum(1 for n in nodes if isinstance(n, Ident) and n.name == "spec")
    fields = [
        n.field
        for n in nodes
        if isinstance(n, Select) and isinstance(n.operand, Ident) and n.operand.name == "spec"
    ]
    reads = frozenset(fields) if len(fields) == uses else None
    return Rule(condition, priority, program, None, cost, uses > 0, reads, _plan(ast))


@functools.cache
def spec_size() -> Size:
    """The largest `spec` a rule can see: rules run only on a spec that passed the structure
    check against the ModelDeployment schema (core.admission.hydrate), so at its declared sizes."""
    return schema_size(model_deployment_spec())


_ORDER = {"_<_": operator.lt, "_<=_": operator.le, "_>_": operator.gt, "_>=_": operator.ge}


def _plan(ast: Expr) -> Plan | None:
    """The rule in Python when it is made only of `spec.<path>` compared with a string (== and
    !=), an integer (any comparison) or a bool (== and !=), `has(spec.<path>)`, `&&`, `||` and
    `!`: the forms the shipped rules use. Each part answers True, False or None (not sure: a
    field missing or not a map on the way, a value of another type), and `&&` and `||` absorb
    None as CEL absorbs an error (false && error is false, true || error is true). A None at
    the top is the runtime's to answer, error message and all."""
    if isinstance(ast, Select) and ast.test_only:
        parent = _path(ast.operand)
        if parent is None:
            return None
        name = ast.field
        return lambda spec: _has(_read(spec, parent), name)
    if not isinstance(ast, Call) or ast.target is not None:
        return None
    if ast.function in ("_&&_", "_||_") and ast.args:
        planned = [_plan(a) for a in ast.args]
        parts = [p for p in planned if p is not None]
        if len(parts) < len(planned):
            return None
        return _junction(parts, decisive=ast.function == "_||_")
    if ast.function == "!_" and len(ast.args) == 1:
        inner = _plan(ast.args[0])
        return None if inner is None else lambda spec: _not(inner(spec))
    if len(ast.args) == 2:
        return _comparison(ast.function, *ast.args)
    return None


def _comparison(function: str, left: Expr, right: Expr) -> Plan | None:
    for side, other, flipped in ((left, right, False), (right, left, True)):
        path = _path(side)
        if not path or not isinstance(other, Const):  # None, or `spec` itself
            continue
        const, kind = other.value, type(other.value)
        if kind not in (str, int, bool) or (function in _ORDER and kind is not int):
            return None
        if function in {"_==_", "_!=_"}:
            equal = function == "_==_"
            return lambda spec: _equal(_read(spec, path), const, kind, equal)
        order = _ORDER.get(function)
        if order is None:
            return None
        if flipped:
            return lambda spec: _ordered(const, _read(spec, path), kind, order)
        return lambda spec: _ordered(_read(spec, path), const, kind, order)
    return None


def _path(node: Expr) -> tuple[str, ...] | None:
    """The fields of `spec.a.b` (() for `spec` itself), or None for anything else."""
    fields: list[str] = []
    while isinstance(node, Select) and not node.test_only:
        fields.append(node.field)
        node = node.operand
    if isinstance(node, Ident) and node.name == "spec":
        return tuple(reversed(fields))
    return None


_UNSURE: Any = object()  # a read CEL would fail (or answer otherwise than Python would)


def _read(spec: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = spec
    for key in path:
        if type(node) is not dict or key not in node:
            return _UNSURE
        node = node[key]
    return node


def _has(parent: Any, name: str) -> bool | None:
    return name in parent if type(parent) is dict else None


def _equal(value: Any, const: Any, kind: type, equal: bool) -> bool | None:
    if type(value) is not kind:
        return None
    return (value == const) is equal


def _ordered(a: Any, b: Any, kind: type, order: Callable[[Any, Any], bool]) -> bool | None:
    if type(a) is not kind or type(b) is not kind:
        return None
    return order(a, b)


def _not(value: bool | None) -> bool | None:
    return None if value is None else not value


def _junction(parts: list[Plan], *, decisive: bool) -> Plan:
    """`&&` (decisive False: one false part makes it false) or `||` (decisive True); unsure
    when no part is decisive and one is unsure, as CEL's error in either."""

    def run(spec: Mapping[str, Any]) -> bool | None:
        unsure = False
        for part in parts:
            answer = part(spec)
            if answer is decisive:
                return decisive
            unsure = unsure or answer is None
        return None if unsure else not decisive

    return run


def regex_problem(ast: Expr, condition: str) -> str | None:
    """Why a `matches` in the rule is refused: its pattern is not a string literal, or not one
    whose RE2 program core.cel.regex can bound; located in the condition and the pattern."""
    calls = [n for n in walk(ast) if isinstance(n, Call) and n.function == "matches" and n.args]
    for call in sorted(calls, key=lambda c: c.offset):
        pattern = call.args[-1]
        if not (isinstance(pattern, Const) and isinstance(pattern.value, str)):
            return (
                f"{_place(condition, call.offset)}: the pattern of matches() must be a string "
                "literal (a pattern computed from the object cannot be checked before it runs)"
            )
        verdict = check_pattern(pattern.value)
        if verdict.problem is not None:
            shown = pattern.value if len(pattern.value) <= 40 else pattern.value[:37] + "..."
            where = "" if verdict.offset is None else f", at character {verdict.offset + 1}"
            return (
                f"{_place(condition, pattern.offset)}: regular expression '{shown}'{where}: "
                f"{verdict.problem}"
            )
    return None


def _place(condition: str, offset: int) -> str:
    """`line L, column C` of a code-point offset, as the compiler's own messages say it."""
    if offset < 0:
        return "in a matches() call"
    line_start = condition.rfind("\n", 0, offset) + 1
    return f"line {condition.count(chr(10), 0, offset) + 1}, column {offset - line_start + 1}"


def fields_read(rules: Iterable[Rule]) -> frozenset[str] | None:
    """The top-level spec fields a set of rules reads; None when one of them needs all of spec."""
    fields: set[str] = set()
    for rule in rules:
        if rule.program is None or not rule.uses_spec:
            continue
        if rule.reads is None:
            return None
        fields |= rule.reads
    return frozenset(fields)


def compile_problem(env: Environment, condition: str) -> str | None:
    """Why a condition does not compile (syntax, types, length), or None; no cost check."""
    return _compile(env, condition)[2]


def activation(
    env: Environment, spec: Mapping[str, Any], fields: frozenset[str] | None = None
) -> Bound:
    """The CEL input for one spec; built once per selection and shared by every rule.

    With `fields` (see fields_read), only those top-level fields are given to the runtime, which
    converts everything it is given on first access: a large subtree no rule reads (overrides,
    for instance) costs nothing and cannot make a rule fail.

    A value CEL cannot represent, or larger than the cost model assumes, is reported with its
    field instead of reaching the runtime (which would error with the value in the message, or
    crash the process for integers of more than 4,300 digits).
    """
    if fields is not None:
        spec = {key: spec[key] for key in sorted(fields) if key in spec}
    if len(spec) > INPUT_ENTRY_LIMIT:
        return Bound(env.Activation({}), {"": f"spec: more than {INPUT_ENTRY_LIMIT:,} entries"})
    if _is_plain(spec):
        return Bound(env.Activation({"spec": spec}), {}, spec)
    problems: dict[str, str] = {}
    for key, value in spec.items():
        problem = (
            input_problem({key: value})
            if isinstance(key, str)
            else "spec: a map key that is not a string"
        )
        if problem is not None:
            problems[str(key)] = problem
    clean = {k: v for k, v in spec.items() if str(k) not in problems}
    return Bound(env.Activation({"spec": clean}), problems)


def evaluate(rule: Rule, bound: Bound) -> RuleResult:
    """Run one rule. Errors and non-bool results are non-matches that say why."""
    if rule.program is None:
        return RuleResult(False, f"does not compile: {rule.compile_error}")
    problem = bound.problem_for(rule) if bound.problems else None
    if problem is not None:
        return RuleResult(False, f"spec cannot be given to CEL: {problem}")
    if rule.plan is not None and bound.spec is not None:
        known = rule.plan(bound.spec)
        if known is not None:
            return MATCHED if known else UNMATCHED
    try:
        value = rule.program.eval(bound.activation)
    # The rule is user-supplied code run by a third-party runtime: whatever it raises (budget
    # overruns are RuntimeError), the rule is a non-match with the reason recorded, and the
    # other rules and providers go on.
    except Exception as err:
        return RuleResult(False, _runtime_message(str(err)))
    answer = value.value()  # a bool for BOOL alone (an ERROR's is its message): one call less
    if answer is True:
        return MATCHED
    if answer is False:
        return UNMATCHED
    kind = value.type()
    if kind == cel.Type.ERROR:
        return RuleResult(False, _runtime_message(str(answer)))
    return RuleResult(False, f"evaluated to {kind.name().lower()}, not a bool")


def input_problem(spec: Mapping[str, Any]) -> str | None:
    """The first value in `spec` a rule must not see ("spec.a.b: why"), or None."""
    if _is_plain(spec):
        return None
    stack: list[tuple[Any, FieldPath]] = [(spec, FieldPath.root("spec"))]
    while stack:
        node, at = stack.pop()
        detail = _value_problem(node)
        if detail is not None:
            return f"{at}: {detail}"
        if isinstance(node, dict):
            stack.extend((node[k], at.child(k)) for k in reversed(list(node)))
        elif isinstance(node, list):
            stack.extend((node[i], at.index(i)) for i in reversed(range(len(node))))
    return None


def _is_plain(value: Any) -> bool:
    """The fast path: one pass without paths over JSON-shaped data within the limits."""
    for node in nodes(value):
        kind = type(node)
        if kind is dict:
            if len(node) > INPUT_ENTRY_LIMIT or not all(type(k) is str for k in node):
                return False
        elif kind is list:
            if len(node) > INPUT_ENTRY_LIMIT:
                return False
        elif kind is str:
            if len(node) > INPUT_STRING_LIMIT or "\x00" in node:
                return False  # the runtime reads a string up to its first NUL (see _encodes)
            if not (node.isascii() or _encodes(node)):
                return False
        elif kind is int:
            if not INT64_MIN <= node <= INT64_MAX:
                return False
        elif kind not in (bool, float, type(None)):
            return False
    return True


def _encodes(text: str) -> bool:
    """Whether CEL can take the string as it is: a lone surrogate fails the conversion of the
    whole input, and so every rule, and a NUL ends the string the runtime sees ("a\x00b" is
    "a" to it). Such a spec takes the slow path, which gives the runtime the spec as it is and
    answers no rule in Python (Bound.spec is None)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _value_problem(node: Any) -> str | None:
    if isinstance(node, bool) or node is None:
        return None
    if isinstance(node, int):
        if INT64_MIN <= node <= INT64_MAX:
            return None
        return "integer outside the 64-bit range CEL (and Kubernetes) can hold"
    if isinstance(node, float):
        return None  # NaN and infinities are CEL doubles too
    if isinstance(node, str):
        if len(node) <= INPUT_STRING_LIMIT:
            return None
        return f"string longer than {INPUT_STRING_LIMIT:,} characters"
    if isinstance(node, dict | list):
        if len(node) > INPUT_ENTRY_LIMIT:
            return f"more than {INPUT_ENTRY_LIMIT:,} entries"
        if isinstance(node, dict) and not all(isinstance(k, str) for k in node):
            return "a map key that is not a string"
        return None
    return f"a {type(node).__name__} is not a JSON value (quote it in YAML)"


def _compile(env: Environment, condition: str) -> tuple[Any, Expr | None, str | None]:
    if not condition.strip():
        return None, None, "condition is empty"
    if len(condition) > MAX_RULE_LENGTH:
        return (
            None,
            None,
            f"condition is {len(condition)} characters long; the limit is {MAX_RULE_LENGTH}",
        )
    try:
        program = env.compile(condition)
    except RuntimeError as err:  # cel-expr-python raises RuntimeError for every compile failure
        return None, None, _compile_message(str(err))
    returns = program.return_type()
    if returns not in (cel.Type.BOOL, cel.Type.DYN):
        return None, None, f"evaluates to {returns.name().lower()}, not a bool"
    try:
        ast = checked_expr(program.serialize())
    except MalformedAst as err:  # fail closed: a rule whose cost cannot be estimated is refused
        return None, None, f"cannot be analysed for cost: {err}"
    return program, ast, None


def _compile_message(text: str) -> str:
    """`ERROR: <input>:1:20: Syntax error: ...` becomes `line 1, column 20: Syntax error: ...`."""
    first = text.splitlines()[0] if text else "does not compile"
    if "recursion" in first:
        return "nested too deeply (the parser allows 32 levels)"
    _, _, rest = first.partition("ERROR: <input>:")
    line, _, rest = rest.partition(":")
    column, _, message = rest.partition(":")
    if line.isdigit() and column.isdigit():
        message = message.partition(" expecting ")[0]  # the parser lists every token it wanted
        first = f"line {line}, column {column}: {message.strip()}"
    return first[:MAX_MESSAGE]


def _runtime_message(text: str) -> str:
    first = text.splitlines()[0] if text else "evaluation failed"
    if "Iteration budget exceeded" in first:
        return "iteration budget exceeded (the runtime stops a rule after 10,000 loop steps)"
    return first[:MAX_MESSAGE]
