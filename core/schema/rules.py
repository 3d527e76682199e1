"""A CRD's `x-kubernetes-validations` rules and value formats, evaluated as the Kubernetes API
server evaluates them (k8s.io/apiextensions-apiserver schema/cel at the KUBERNETES_VERSION pin).

`compile_crd_schema` compiles every rule of one openAPIV3Schema once; `validate` runs them on an
object. As the API server does:
- the schema's defaults are applied first (rules see `group: ""` where the object left it out);
- a rule at a node runs with `self` bound to that node's value, once per element under `items`
  and `additionalProperties`, and not at all where the object has no value (or null);
- property names are escaped as Kubernetes escapes them (`namespace` is `self.__namespace__`);
- the environment is the CEL standard library with the strings extension (`split`, ...), which
  is what the rules of the schema pack use; a rule calling a function this environment lacks
  (Kubernetes' `isURL`, `quantity`, `ip`, ...) does not compile and refuses every object that
  reaches it, naming the rule: Runway never waves an object through a rule it cannot run;
- transition rules (those reading `oldSelf`) run only against an old value (`old=`): on create
  the API server skips them, and a render has no old object, so a render skips them too;
- a failed rule reports the rule's `message` (or its `messageExpression`), at the node's field
  path (plus the rule's `fieldPath`), with the rule's `reason`, spelled as the API server
  spells it: `spec.rules[0]: Invalid value: <message>` for an object or list,
  `spec.x: Invalid value: "0s": <message>` for a scalar.

The bound (docs/security.md): the runtime stops one evaluation after 10,000 loop
steps, and one object gets at most MAX_EVALUATIONS rule evaluations; past that, the object is
refused with one error saying so, as the API server refuses past its cost budget.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cel_expr_python import cel
from cel_expr_python.ext.ext_strings import ExtStrings

from core.fields.errors import FieldError, Reason
from core.fields.paths import FieldPath
from core.model.numbers import INT64_MAX, INT64_MIN
from core.schema.formats import format_problem

MAX_EVALUATIONS = 10_000  # rule evaluations per object (each bounded by the runtime's budget)
MAX_MESSAGE = 512
_STRINGS = re.compile(
    r"""r?(\"\"\"[\s\S]*?\"\"\"|'''[\s\S]*?'''|"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*')"""
)
_OLD_SELF = re.compile(r"\boldSelf\b")
_RESERVED = frozenset(
    {"true", "false", "null", "in", "as", "break", "const", "continue", "else", "for"}
    | {"function", "if", "import", "let", "loop", "package", "namespace", "return", "var"}
    | {"void", "while"}
)
_IDENT = re.compile(r"\A[a-zA-Z_.\-/][a-zA-Z0-9_.\-/]*\Z")
_ESCAPES = {"__": "__underscores__", ".": "__dot__", "-": "__dash__", "/": "__slash__"}
_REASONS = {
    "FieldValueForbidden": Reason.FORBIDDEN,
    "FieldValueRequired": Reason.REQUIRED,
    "FieldValueDuplicate": Reason.DUPLICATE,
}
_FIELD_PATH_PART = re.compile(r"\.([A-Za-z_][A-Za-z0-9_\-]*)|\[(\d+)\]|\['([^']*)'\]")


@dataclass(frozen=True, slots=True)
class Rule:
    """One compiled x-kubernetes-validations entry; `program` None means it did not compile."""

    rule: str
    message: str
    program: Any
    problem: str | None = None
    message_program: Any = None
    transition: bool = False
    field_path: tuple[str | int, ...] = ()
    reason: Reason = Reason.INVALID


@dataclass(frozen=True, slots=True)
class Node:
    """The compiled schema at one node: its rules and the children that hold rules or formats."""

    schema: Mapping[str, Any]
    rules: tuple[Rule, ...] = ()
    properties: Mapping[str, Node] = field(default_factory=dict)
    additional: Node | None = None
    items: Node | None = None
    combinators: bool = False  # anyOf/oneOf/allOf/not that a format or a `not` makes ours to check
    plan: Plan | None = None  # how CEL's view of a value here differs from it (rule nodes)
    env: Any = None  # the environment the rules were compiled in (builds their activations)


def escape(name: str) -> str | None:
    """A property name as CEL sees it (Kubernetes' escaping), or None: not reachable from CEL."""
    if name.isascii() and name.isalnum() and not name[0].isdigit() and name not in _RESERVED:
        return name  # the common case, without a regular expression
    if not name or name[0].isdigit() or not _IDENT.match(name):
        return None
    if name in _RESERVED:
        return f"__{name}__"
    return re.sub(r"__|[.\-/]", lambda m: _ESCAPES[m.group(0)], name)


def new_environment() -> Any:
    """The rule environment: `self` and `oldSelf` (dyn) and the strings extension."""
    variables = {"self": cel.Type.DYN, "oldSelf": cel.Type.DYN}
    return cel.NewEnv(variables=variables, extensions=[ExtStrings()])


def compile_crd_schema(schema: Mapping[str, Any], env: Any) -> Node | None:
    """Every rule of an openAPIV3Schema compiled once; None when nothing in it needs a check."""
    return _compile_node(schema, env)


def _compile_node(schema: Mapping[str, Any], env: Any) -> Node | None:
    rules = tuple(_compile_rule(r, env) for r in schema.get("x-kubernetes-validations") or ())
    props = {
        name: node
        for name, sub in sorted((schema.get("properties") or {}).items())
        if isinstance(sub, Mapping) and (node := _compile_node(sub, env)) is not None
    }
    extra, items = schema.get("additionalProperties"), schema.get("items")
    additional = _compile_node(extra, env) if isinstance(extra, Mapping) else None
    each = _compile_node(items, env) if isinstance(items, Mapping) else None
    combinators = any(k in schema for k in _COMBINATORS) and _mentions_format_or_not(
        [schema[k] for k in _COMBINATORS if k in schema]
    )
    checks = "format" in schema or schema.get("type") == "integer"
    if not (rules or props or additional or each or checks or combinators):
        return None
    plan = _plan(schema) if rules else None
    return Node(schema, rules, props, additional, each, combinators, plan, env)


@dataclass(frozen=True, slots=True)
class Plan:
    """Where CEL's view of a value differs from the value: the property names it sees escaped
    (None: a name CEL cannot reach, left out), and the children holding more of them."""

    renames: Mapping[str, str | None]
    props: Mapping[str, Plan]
    items: Plan | None = None
    additional: Plan | None = None


def _plan(schema: Mapping[str, Any]) -> Plan | None:
    props = schema.get("properties")
    props = props if isinstance(props, Mapping) else {}
    renames = {n: escape(n) for n in props if escape(n) != n}
    subs = {
        n: p
        for n, sub in props.items()
        if isinstance(sub, Mapping) and (p := _plan(sub)) is not None
    }
    items, extra = schema.get("items"), schema.get("additionalProperties")
    each = _plan(items) if isinstance(items, Mapping) else None
    additional = _plan(extra) if isinstance(extra, Mapping) else None
    if not (renames or subs or each or additional):
        return None
    return Plan(renames, subs, each, additional)


_COMBINATORS = ("anyOf", "oneOf", "allOf", "not")


def _mentions_format_or_not(value: Any) -> bool:
    """check_schema leaves `format` and `not` out, so combinators holding one are checked here."""
    if isinstance(value, Mapping):
        return "format" in value or "not" in value or _mentions_format_or_not(list(value.values()))
    if isinstance(value, list):
        return any(_mentions_format_or_not(v) for v in value)
    return False


def _compile_rule(entry: Mapping[str, Any], env: Any) -> Rule:
    text = str(entry.get("rule", ""))
    message = str(entry.get("message") or "").strip() or f"failed rule: {text.strip()}"
    reason = _REASONS.get(str(entry.get("reason")), Reason.INVALID)
    path = _field_path(str(entry.get("fieldPath") or ""))
    transition = _OLD_SELF.search(_STRINGS.sub("''", text)) is not None
    try:
        program = env.compile(text)
    except RuntimeError as err:  # cel-expr-python raises RuntimeError for every compile failure
        first = (str(err).splitlines() or ["does not compile"])[0][:MAX_MESSAGE]
        return Rule(text, message, None, f"rule compile error: {first}", reason=reason)
    message_program = None
    if entry.get("messageExpression"):
        try:
            message_program = env.compile(str(entry["messageExpression"]))
        except RuntimeError:
            message_program = None  # the API server refuses such a CRD; fall back to message
    return Rule(text, message, program, None, message_program, transition, path, reason)


def _field_path(text: str) -> tuple[str | int, ...]:
    parts: list[str | int] = []
    for found in _FIELD_PATH_PART.finditer(text):
        name, index, key = found.groups()
        parts.append(int(index) if index is not None else name if name is not None else key)
    return tuple(parts)


@dataclass(slots=True)
class _Run:
    """The state of one validate() call: its errors and the evaluations left."""

    errors: list[FieldError] = field(default_factory=list)
    left: int = MAX_EVALUATIONS
    plain: bool = True  # every value of the object (and the old one) can be given to CEL


def validate(obj: Mapping[str, Any], root: Node | None, *, old: Any = None) -> list[FieldError]:
    """Every rule and format error of `obj` (defaulted first, as the API server does)."""
    if root is None:
        return []
    run = _Run(plain=_unrepresentable(obj) is None and _unrepresentable(old) is None)
    _walk(obj, old, root, FieldPath(), run, top=True)
    return run.errors


def apply_defaults(value: Any, schema: Mapping[str, Any]) -> Any:
    """`value` with the schema's defaults filled in where a field is absent (or null and not
    nullable), recursively, as the API server defaults before it validates; a new value."""
    if type(value) is dict:
        out = dict(value)
        props = schema.get("properties") or {}
        for name, sub in props.items():
            if "default" in sub and (
                name not in out or (out[name] is None and not sub.get("nullable"))
            ):
                out[name] = json.loads(json.dumps(sub["default"]))
            if name in out:
                out[name] = apply_defaults(out[name], sub)
        extra = schema.get("additionalProperties")
        if type(extra) is dict:
            for key, item in list(out.items()):
                if key not in props:
                    out[key] = apply_defaults(item, extra)
        return out
    items = schema.get("items")
    if type(value) is list and type(items) is dict:
        return [apply_defaults(item, items) for item in value]
    return value


def _walk(
    value: Any,
    old: Any,
    node: Node,
    at: FieldPath,
    run: _Run,
    *,
    top: bool = False,
    done: bool = False,
) -> None:
    """Check one node; `done`: `value` (and `old`) already carry their defaults."""
    if value is None or run.left < 0:
        return
    if node.rules and not done:  # the rules see the whole subtree defaulted
        value, done = apply_defaults(value, node.schema), True
        old = apply_defaults(old, node.schema) if old is not None else None
    elif not done and type(value) is dict:  # only the children that get checked
        value, old = _default_children(value, node), _default_children(old, node)
    problem = format_problem(value, node.schema)
    if problem is not None:
        run.errors.append(FieldError(str(at), Reason.INVALID, problem))
    if node.combinators:
        _check_combinators(value, node.schema, at, run)
    if node.rules:
        _run_rules(value, old, node, at, run, top=top)
    if isinstance(value, dict):
        olds = old if isinstance(old, dict) else {}
        for name, child in node.properties.items():
            if name in value and not (top and name in ("apiVersion", "kind", "metadata")):
                _walk(value[name], olds.get(name), child, at.child(name), run, done=done)
        if node.additional is not None:
            declared = node.schema.get("properties") or {}
            for key in sorted(k for k in value if k not in declared):
                _walk(value[key], olds.get(key), node.additional, at.key(key), run, done=done)
    elif isinstance(value, list) and node.items is not None:
        olds_by_index = _correlate(value, old, node.schema)
        for i, item in enumerate(value):
            _walk(item, olds_by_index[i], node.items, at.index(i), run, done=done)


def _default_children(value: Any, node: Node) -> Any:
    """`value` with the defaults of the checked children it lacks (a defaulted child may hold
    rules of its own), or `value` itself when it lacks none."""
    if type(value) is not dict:
        return value
    props = node.schema.get("properties") or {}
    missing = [
        n
        for n in node.properties
        if "default" in props[n] and (value.get(n) is None and not props[n].get("nullable"))
    ]
    if not missing:
        return value
    return {**value, **{n: json.loads(json.dumps(props[n]["default"])) for n in missing}}


def _correlate(value: list[Any], old: Any, schema: Mapping[str, Any]) -> list[Any]:
    """The old element of each element: by key in a map-type list; none in other lists (the
    API server correlates only these, so a transition rule under another list never runs)."""
    keys = schema.get("x-kubernetes-list-map-keys") or ()
    if schema.get("x-kubernetes-list-type") != "map" or not isinstance(old, list) or not keys:
        return [None] * len(value)
    by_key = {tuple(json.dumps(o.get(k)) for k in keys): o for o in old if isinstance(o, dict)}
    return [
        by_key.get(tuple(json.dumps(v.get(k)) for k in keys)) if isinstance(v, dict) else None
        for v in value
    ]


def to_cel(value: Any, plan: Plan | None) -> Any:
    """The value CEL sees: properties under their escaped names (Kubernetes' escaping), the
    ones CEL cannot name left out; only the parts of `value` the plan names are copied."""
    if plan is None:
        return value
    if type(value) is dict:
        out = {}
        for key, item in value.items():
            name = plan.renames.get(key, key)
            if name is None:
                continue
            sub = plan.props.get(key, plan.additional if key not in plan.renames else None)
            out[name] = to_cel(item, sub)
        return out
    if type(value) is list and plan.items is not None:
        return [to_cel(item, plan.items) for item in value]
    return value


def _run_rules(value: Any, old: Any, node: Node, at: FieldPath, run: _Run, *, top: bool) -> None:
    bound = to_cel(value, node.plan)
    if top and isinstance(bound, dict) and isinstance(bound.get("metadata"), dict):
        meta = bound["metadata"]  # the API server shows rules name and generateName only
        bound = {**bound, "metadata": {k: meta[k] for k in ("name", "generateName") if k in meta}}
    old_bound = to_cel(old, node.plan)
    problem = None
    if not run.plain:  # only when the object as a whole holds a value CEL cannot take
        problem = _unrepresentable(bound) or _unrepresentable(old_bound)
    if problem is not None:  # never handed to the runtime (a huge integer crashes it)
        run.errors.append(FieldError(str(at), Reason.INVALID, f"{_kind(node)}: {problem}"))
        return
    inputs: dict[str, Any] = {}
    for rule in node.rules:
        if rule.transition and old is None:
            continue  # on create (and at render) there is nothing to compare against
        run.left -= 1
        if run.left < 0:
            detail = "validation failed due to running out of cost budget, no further validation rules will be run"
            run.errors.append(FieldError(str(at), Reason.INVALID, f"{_kind(node)}: {detail}"))
            return
        key = "oldSelf" if rule.transition else "self"
        if key not in inputs:  # one activation per node, shared by its rules (converted once)
            data = {"self": bound, "oldSelf": old_bound} if rule.transition else {"self": bound}
            inputs[key] = node.env.Activation(data)
        failure = _evaluate(rule, inputs[key])
        if failure is None:
            continue
        where = at
        for part in rule.field_path:
            where = where.index(part) if isinstance(part, int) else where.child(part)
        if failure is _FALSE:
            run.errors.append(
                _rule_error(where, value, node.schema, _message(rule, inputs[key]), rule)
            )
        else:
            run.errors.append(FieldError(str(where), Reason.INVALID, f"{_kind(node)}: {failure}"))


_FALSE = "false"
_PLAIN = (str, float, bool, type(None))


def _unrepresentable(value: Any) -> str | None:
    """Why a value cannot be given to CEL (as the API server could not have decoded it), or None."""
    stack = [value]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is dict:
            if not all(type(k) is str for k in node):
                return "a map key that is not a string cannot be evaluated by the rules"
            stack.extend(node.values())
        elif kind is list:
            stack.extend(node)
        elif kind is int:
            if not INT64_MIN <= node <= INT64_MAX:
                return "an integer outside the 64-bit range cannot be evaluated by the rules"
        elif kind not in _PLAIN:
            return f"a {kind.__name__} is not a JSON value and cannot be evaluated by the rules"
    return None


def _evaluate(rule: Rule, data: Any) -> str | None:
    """None when the rule holds, _FALSE when it does not, else why it could not be evaluated."""
    if rule.program is None:
        return rule.problem
    try:
        result = rule.program.eval(data)
    # Third-party runtime on rules a user may supply: whatever it raises (budget overruns are
    # RuntimeError) is this rule's failure, reported, and the other rules go on.
    except Exception as err:
        return f"{_first_line(str(err))} evaluating rule: {rule.message}"
    kind = result.type()
    if kind == cel.Type.BOOL:
        return None if result.value() else _FALSE
    if kind == cel.Type.ERROR:
        return f"{_first_line(str(result.value()))} evaluating rule: {rule.message}"
    return f"evaluated to {kind.name().lower()}, not a bool, evaluating rule: {rule.message}"


def _message(rule: Rule, data: Any) -> str:
    if rule.message_program is None:
        return rule.message
    try:
        result = rule.message_program.eval(data)
    # A broken messageExpression falls back to the message, as upstream does (the runtime raises
    # RuntimeError for budget overruns; anything else it raises is the same failure).
    except Exception:
        return rule.message
    text = result.value() if result.type() == cel.Type.STRING else None
    if not isinstance(text, str) or not text.strip() or "\n" in text:
        return rule.message
    return text.strip()[:MAX_MESSAGE]


def _rule_error(
    at: FieldPath, value: Any, schema: Mapping[str, Any], message: str, rule: Rule
) -> FieldError:
    if rule.reason is Reason.DUPLICATE:
        return FieldError(str(at), rule.reason, _shown(value))
    if rule.reason in (Reason.FORBIDDEN, Reason.REQUIRED) or schema.get("type") in (
        "object",
        "array",
    ):
        return FieldError(str(at), rule.reason, message)
    return FieldError(str(at), rule.reason, f"{_shown(value)}: {message}")


def _shown(value: Any) -> str:
    """A value as the API server's field errors print it (strings quoted, others as JSON)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _kind(node: Node) -> str:
    return json.dumps(str(node.schema.get("type", "")))


def _first_line(text: str) -> str:
    return (text.splitlines() or ["evaluation failed"])[0][:MAX_MESSAGE]


def _check_combinators(value: Any, schema: Mapping[str, Any], at: FieldPath, run: _Run) -> None:
    detail = None
    if any(not _matches(value, sub) for sub in schema.get("allOf") or ()):
        detail = "must validate all the schemas (allOf)"
    elif schema.get("anyOf") and not any(_matches(value, sub) for sub in schema["anyOf"]):
        detail = "must validate at least one schema (anyOf)"
    elif schema.get("oneOf") and sum(_matches(value, sub) for sub in schema["oneOf"]) != 1:
        detail = "must validate one and only one schema (oneOf)"
    elif isinstance(schema.get("not"), Mapping) and _matches(value, schema["not"]):
        detail = "must not validate the schema (not)"
    if detail is not None:
        run.errors.append(FieldError(str(at), Reason.INVALID, detail))


def _matches(value: Any, schema: Mapping[str, Any]) -> bool:
    """Whether `value` satisfies a combinator branch's value validations (JSON Schema's meaning)."""
    if "enum" in schema and not any(_same(value, v) for v in schema["enum"]):
        return False
    if isinstance(schema.get("not"), Mapping) and _matches(value, schema["not"]):
        return False
    if format_problem(value, schema) is not None:
        return False
    if isinstance(value, str) and not _string_ok(value, schema):
        return False
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        if any(k in value and not _matches(value[k], sub) for k, sub in props.items()):
            return False
        if any(k not in value for k in schema.get("required") or ()):
            return False
    items = schema.get("items")
    if (
        isinstance(value, list)
        and isinstance(items, Mapping)
        and not all(_matches(item, items) for item in value)
    ):
        return False
    if not all(_matches(value, sub) for sub in schema.get("allOf") or ()):
        return False
    if schema.get("anyOf") and not any(_matches(value, sub) for sub in schema["anyOf"]):
        return False
    return not schema.get("oneOf") or sum(_matches(value, sub) for sub in schema["oneOf"]) == 1


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def _string_ok(value: str, schema: Mapping[str, Any]) -> bool:
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        return False
    if "minLength" in schema and len(value) < schema["minLength"]:
        return False
    return "pattern" not in schema or re.search(schema["pattern"], value) is not None


def rules_of(root: Node | None) -> list[tuple[FieldPath, Rule]]:
    """Every compiled rule of a schema with the schema path it sits at (items as [*])."""
    found: list[tuple[FieldPath, Rule]] = []
    stack: list[tuple[Node, FieldPath]] = [(root, FieldPath())] if root is not None else []
    while stack:
        node, at = stack.pop()
        found.extend((at, rule) for rule in node.rules)
        children = [(child, at.child(name)) for name, child in node.properties.items()]
        if node.additional is not None:
            children.append((node.additional, at.key("*")))
        if node.items is not None:
            children.append((node.items, at.key("*")))
        stack.extend(reversed(children))
    return found


__all__: Sequence[str] = (
    "MAX_EVALUATIONS",
    "Node",
    "Rule",
    "apply_defaults",
    "compile_crd_schema",
    "escape",
    "new_environment",
    "rules_of",
    "to_cel",
    "validate",
)
