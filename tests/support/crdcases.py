"""The differential cases of the schema pack's CRD validation rules: for every rule, at every
schema path it sits at, in every served version, an object the rule accepts and one it refuses.

Each object is the base object of its kind (tests/data/crdrules/bases.yaml) with the case's value
of `self` (tests/data/crdrules/cases.yaml, keyed by the rule's message) placed at the rule's
path; containers on the way are created with their required fields filled.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from core.fields.paths import FieldPath
from renderer.output.schemapack import load_pack

DATA = Path(__file__).resolve().parent.parent / "data" / "crdrules"
ITEMS, ENTRY = "[*]", "{*}"  # markers of a schema path: an array element, a map entry


@dataclass(frozen=True)
class Case:
    """One object to send to the API server and to Runway's strict check."""

    kind: str
    group: str
    version: str
    plural: str
    message: str  # the rule's message: which rule this case is for
    path: str  # the field path of the node the rule runs at
    passes: bool  # whether the rule accepts the object
    obj: dict[str, Any]
    old: dict[str, Any] | None  # for a transition rule: the stored object updated to `obj`
    blocked: bool = False  # fails the schema first, so the API server runs no rule on it

    @property
    def id(self) -> str:
        verdict = "passes" if self.passes else "fails"
        return f"{self.kind} {self.version} {self.path} {verdict}: {self.message}"

    @property
    def in_status(self) -> bool:
        return self.path.startswith("status")


def rule_sites(schema: Mapping[str, Any]) -> Iterator[tuple[tuple[str, ...], Mapping[str, Any]]]:
    """(schema path, rule) for every x-kubernetes-validations rule under `schema`."""
    stack: list[tuple[Mapping[str, Any], tuple[str, ...]]] = [(schema, ())]
    while stack:
        node, at = stack.pop()
        for rule in node.get("x-kubernetes-validations") or ():
            yield at, rule
        children = [(sub, (*at, name)) for name, sub in (node.get("properties") or {}).items()]
        if isinstance(node.get("additionalProperties"), dict):
            children.append((node["additionalProperties"], (*at, ENTRY)))
        if isinstance(node.get("items"), dict):
            children.append((node["items"], (*at, ITEMS)))
        stack.extend(reversed(children))


def filler(schema: Mapping[str, Any], child: str | None = None) -> Any:
    """A small value `schema` accepts: defaults, required fields, the first enum value. An
    object with a `type` discriminator gets the type named like `child` (Gateway API unions)."""
    if "default" in schema:
        return copy.deepcopy(schema["default"])
    kind = schema.get("type")
    props = schema.get("properties") or {}
    if kind == "object" or props:
        out = {name: filler(props[name]) for name in schema.get("required") or () if name in props}
        enum = (props.get("type") or {}).get("enum") or []
        named = [e for e in enum if child is not None and str(e).lower() == child.lower()]
        if named:
            out["type"] = named[0]
        return out
    if kind == "array":
        return [filler(schema.get("items") or {}) for _ in range(schema.get("minItems", 0))]
    if "enum" in schema:
        return schema["enum"][0]
    if kind == "integer":
        return max(int(schema.get("minimum", 1)), 1)
    if kind == "boolean":
        return False
    if kind == "string":
        return "a" * max(1, int(schema.get("minLength", 1)))
    return {}


def place(
    obj: dict[str, Any], schema: Mapping[str, Any], at: tuple[str, ...], value: Any
) -> tuple[str, Any]:
    """Put `value` at schema path `at` in `obj` (in place); the field path and the container."""
    here: Any = obj
    where = FieldPath()
    key: Any
    for step, following in zip(at, (*at[1:], None), strict=True):
        last = following is None
        if step == ITEMS:
            schema = schema["items"]
            if not here:
                here.append(filler(schema, following))
            where, key = where.index(0), 0
        elif step == ENTRY:
            schema = schema["additionalProperties"]
            key = min(here) if here else "k"
            if not here:
                here[key] = filler(schema, following)
            where = where.key(key)
        else:
            schema = schema["properties"][step]
            key = step
            if key not in here and not last:
                here[key] = filler(schema, following)
            where = where.child(step)
        if last:
            here[key] = copy.deepcopy(value)
            return str(where), here
        here = here[key]
    raise ValueError("empty schema path")


def _remove(obj: dict[str, Any], path: str) -> None:
    parts = [int(p) if p.isdigit() else p for p in re.findall(r"[^.\[\]]+", path)]
    here: Any = obj
    for part in parts[:-1]:
        here = here[part]
    here.pop(parts[-1], None)


def _many_matches() -> list[dict[str, Any]]:
    """Three rules holding 129 matches: each rule within its 64, the route over its 128."""
    backend = [{"name": "svc", "port": 80}]
    return [
        {
            "matches": [{"path": {"type": "PathPrefix", "value": f"/r{r}m{m}"}} for m in range(n)],
            "backendRefs": backend,
        }
        for r, n in enumerate((64, 64, 1))
    ]


def _build(
    base: Mapping[str, Any],
    schema: Mapping[str, Any],
    at: tuple[str, ...],
    spec: Mapping[str, Any],
    value: Any,
) -> tuple[str, dict[str, Any]]:
    obj = copy.deepcopy(dict(base))
    probe = copy.deepcopy(obj)
    path, _ = place(probe, schema, at, None)
    for removed in spec.get("without") or ():
        if not path.startswith(removed):
            _remove(obj, removed)
    path, container = place(obj, schema, at, _many_matches() if value == "many-matches" else value)
    if isinstance(container, dict):
        for key, extra in (spec.get("parent") or {}).items():
            if extra is None:
                container.pop(key, None)
            else:
                container[key] = copy.deepcopy(extra)
    return path, obj


def cases() -> list[Case]:
    """Every case, in pack order (file, version, schema path, passing before failing)."""
    bases = yaml.safe_load((DATA / "bases.yaml").read_text())
    specs = yaml.safe_load((DATA / "cases.yaml").read_text())
    found: list[Case] = []
    for entry in load_pack():
        names, group = entry.crd["spec"]["names"], entry.crd["spec"]["group"]
        for version in entry.crd["spec"]["versions"]:
            schema = version["schema"]["openAPIV3Schema"]
            seen: set[tuple[str, str]] = set()
            for at, rule in rule_sites(schema):
                if (str(at), rule["message"]) in seen:
                    continue  # two rules, one message, one place (HelmRelease spec.kubeConfig)
                seen.add((str(at), rule["message"]))
                spec = specs[rule["message"]]
                base = {
                    "apiVersion": f"{group}/{version['name']}",
                    "kind": names["kind"],
                    "metadata": {"name": "rules"},
                    **bases[names["kind"]],
                }
                old = None
                if "old" in spec:
                    old = _build(base, schema, at, spec, spec["old"])[1]
                for passes in (True, False):
                    path, obj = _build(base, schema, at, spec, spec["pass" if passes else "fail"])
                    found.append(
                        Case(
                            names["kind"],
                            group,
                            version["name"],
                            names["plural"],
                            rule["message"],
                            path,
                            passes,
                            obj,
                            old,
                            not passes and bool(spec.get("blocked")),
                        )
                    )
    return found


def _schema_path(text: str) -> tuple[str, ...]:
    return tuple(ITEMS if p == "*" else p for p in re.findall(r"[^.\[\]]+", text))


def format_cases() -> list[Case]:
    """Every value of formats.yaml, at the first served version of its kind."""
    bases = yaml.safe_load((DATA / "bases.yaml").read_text())
    entries = {e.crd["spec"]["names"]["kind"]: e for e in load_pack()}
    found: list[Case] = []
    for spec in yaml.safe_load((DATA / "formats.yaml").read_text()):
        crd = entries[spec["kind"]].crd
        version = crd["spec"]["versions"][0]
        base = {
            "apiVersion": f"{crd['spec']['group']}/{version['name']}",
            "kind": spec["kind"],
            "metadata": {"name": "formats"},
            **bases[spec["kind"]],
        }
        at = _schema_path(spec["path"])
        for passes, values in ((True, spec["valid"]), (False, spec["invalid"])):
            for value in values:
                obj = copy.deepcopy(base)
                path, _ = place(obj, version["schema"]["openAPIV3Schema"], at, value)
                names = crd["spec"]["names"]
                message = f"format: {value}"
                found.append(
                    Case(
                        spec["kind"],
                        crd["spec"]["group"],
                        version["name"],
                        names["plural"],
                        message,
                        path,
                        passes,
                        obj,
                        None,
                    )
                )
    return found
