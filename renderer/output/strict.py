"""The render-time strict check (the #308 lesson): every rendered object against the schema of its
pinned upstream, with undeclared fields reported instead of pruned.

CRD schemas come from Runway's schema pack (renderer/output/schemapack.py) by default. CRDs found in
directories (`--crds`, searched recursively for CustomResourceDefinition documents, any layout) or
served by a cluster (`--crds-from-cluster`) override it kind by kind. An object whose kind has no
schema anywhere is reported too: "strict everywhere" means nothing is waved through unchecked.
"""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.fields.errors import FieldError, IncompatibleUpstream, Reason, SourceError
from core.fields.paths import FieldPath
from core.schema.compiled import Checker
from core.schema.rules import Node, compile_crd_schema, new_environment, validate
from kubeio.sources import read_documents
from renderer.output.schemapack import PackEntry

CRD_KIND = "CustomResourceDefinition"


@dataclass(frozen=True)
class Schemas:
    """openAPIV3Schema by (apiVersion, kind), and where each came from (for messages)."""

    by_kind: Mapping[tuple[str, str], Mapping[str, Any]] = field(default_factory=dict)
    origin: Mapping[tuple[str, str], str] = field(default_factory=dict)
    builtin: dict[str, BuiltinSchemas] = field(default_factory=dict)  # by Kubernetes version
    used: dict[tuple[str, str], str] = field(default_factory=dict)  # what check() consulted
    # Each kind's x-kubernetes-validations rules, compiled on the kind's first check (once per
    # schema load, never per object); the CEL environment is built with the first of them.
    rules: dict[tuple[str, str], Node | None] = field(default_factory=dict)
    environment: list[Any] = field(default_factory=list)
    # Each kind's structural checker (core.schema.compiled), made on the kind's first check.
    checkers: dict[tuple[str, str], Checker] = field(default_factory=dict)

    @classmethod
    def from_pack(cls, entries: Iterable[PackEntry]) -> Schemas:
        """The schemas of Runway's schema pack (`load_pack()`)."""
        return cls.from_crds((entry.origin, entry.crd) for entry in entries)

    def overridden_by(self, other: Schemas) -> Schemas:
        """These schemas, with every kind `other` has taken from `other` instead."""
        return Schemas({**self.by_kind, **other.by_kind}, {**self.origin, **other.origin})

    @classmethod
    def from_crds(cls, crds: Iterable[tuple[str, Mapping[str, Any]]]) -> Schemas:
        by_kind: dict[tuple[str, str], Mapping[str, Any]] = {}
        origin: dict[tuple[str, str], str] = {}
        for where, crd in crds:
            spec = crd.get("spec") or {}
            group, kind = spec.get("group"), (spec.get("names") or {}).get("kind")
            for version in spec.get("versions") or ():
                schema = (version.get("schema") or {}).get("openAPIV3Schema")
                if group and kind and version.get("served") and isinstance(schema, Mapping):
                    key = (f"{group}/{version['name']}", kind)
                    by_kind[key] = schema
                    origin[key] = where
        return cls(by_kind, origin)

    @classmethod
    def from_directories(cls, directories: Iterable[str | Path]) -> Schemas:
        """CRDs found anywhere under the directories (later ones win for the same kind)."""
        paths = [Path(d) for d in directories]
        for path in paths:
            if not path.is_dir():
                raise SourceError(
                    str(path),
                    "CRD directory does not exist",
                )
        docs = read_documents([str(p) for p in paths])
        return cls.from_crds(
            (doc.where, doc.obj) for doc in docs if doc.obj.get("kind") == CRD_KIND
        )

    def check(
        self, obj: Mapping[str, Any], *, kubernetes: str, old: Mapping[str, Any] | None = None
    ) -> list[FieldError]:
        """Every field of `obj` the upstream schema does not declare, every type error and, for
        custom kinds, every broken x-kubernetes-validations rule and format (transition rules
        only against `old`, the stored object `obj` would replace). Built-in kinds are checked against Kubernetes `kubernetes` (the KUBERNETES_VERSION pin)."""
        key = (str(obj.get("apiVersion")), str(obj.get("kind")))
        if key[0] in BUILTIN_API_VERSIONS:
            if kubernetes not in self.builtin:
                self.builtin[kubernetes] = BuiltinSchemas(kubernetes)
            self.used[key] = f"Kubernetes {self.builtin[kubernetes].minor} (kubernetes-validate)"
            return self.builtin[kubernetes].check(obj)
        schema = self.by_kind.get(key)
        if schema is None:
            return [
                FieldError(
                    "apiVersion",
                    Reason.NOT_FOUND,
                    f"no CRD for {key[0]} {key[1]}, neither in Runway's schema pack nor among the "
                    "given CRDs; pass --crds DIR holding the upstream CRD",
                )
            ]
        self.used[key] = self.origin[key]
        checker = self.checkers.get(key)
        if checker is None:
            checker = self.checkers[key] = Checker(schema)
        errors = checker.errors(obj, FieldPath())
        if any(_blocks_rules(e) for e in errors):
            return errors  # as the API server: the rules would read values of the wrong shape
        return errors + validate(obj, self._rules(key, schema), old=old)

    def _rules(self, key: tuple[str, str], schema: Mapping[str, Any]) -> Node | None:
        """The compiled rules and formats of one kind (see core.schema.rules)."""
        if key not in self.rules:
            if not self.environment:
                self.environment.append(new_environment())
            self.rules[key] = compile_crd_schema(schema, self.environment[0])
        return self.rules[key]

    def sources_of(self, objects: Iterable[Mapping[str, Any]]) -> dict[str, str]:
        """`apiVersion Kind` -> where its schema came from, for those of `objects` checked."""
        keys = {(str(o.get("apiVersion")), str(o.get("kind"))) for o in objects}
        return {
            f"{api} {kind}": self.used[(api, kind)] for api, kind in sorted(keys & set(self.used))
        }

    def used_sources(self) -> dict[str, str]:
        """`apiVersion Kind` -> where its schema came from, for every kind checked so far."""
        return {f"{api} {kind}": self.used[(api, kind)] for api, kind in sorted(self.used)}


def builtin_versions() -> list[str]:
    """The Kubernetes versions kubernetes-validate has schemas of, oldest first, as its
    utils.all_versions() gives them; read from its package data without importing it (it
    imports jsonschema: 41 ms of a render of one ModelDeployment)."""
    found = [
        _VERSION_FOLDER.sub(r"\1", entry.name)
        for entry in _builtin_folder().iterdir()
        if _VERSION_FOLDER.match(entry.name)
    ]
    return sorted(found, key=_version_key)


def builtin_schema(relative: str) -> Any:
    """One of kubernetes-validate's schema files (`kubernetes-json-schema/...`), as its
    utils.schema_contents() reads it (FileNotFoundError: none)."""
    with (_builtin_folder().parent / relative).open(encoding="utf-8") as handle:
        return json.load(handle)


def major_minor(version: str) -> str:
    return _MAJOR_MINOR.sub(r"\1", version)


def _builtin_folder() -> Path:
    spec = importlib.util.find_spec("kubernetes_validate")
    if spec is None or spec.origin is None:
        raise FileNotFoundError("kubernetes-validate is not installed")
    return Path(spec.origin).parent / "kubernetes-json-schema"


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version))


_VERSION_FOLDER = re.compile(r"^v([^-]*).*")
_MAJOR_MINOR = re.compile(r"^(\d+\.\d+).*")
BUILTIN_API_VERSIONS = frozenset(
    {"v1", "apps/v1", "rbac.authorization.k8s.io/v1", "policy/v1", "networking.k8s.io/v1"}
)
_UNEXPECTED = re.compile(r"'([^']+)' (?:was|were) unexpected")


class BuiltinSchemas:
    """Strict validators for built-in kinds at one Kubernetes minor, each built on first use
    (reading kubernetes-validate's schema files once, not on every object)."""

    def __init__(self, kubernetes: str, *, inline: bool = True, reference: bool = False) -> None:
        self.inline = inline  # False: references resolved on every object (tests compare)
        self.reference = reference  # True: jsonschema on every object (tests compare)
        self._checkers: dict[tuple[str, str], tuple[Checker, Checker | None]] = {}
        wanted = kubernetes.lstrip("v")
        known = [v for v in builtin_versions() if major_minor(v) <= major_minor(wanted)]
        self.minor = major_minor(wanted)
        self._dir = f"v{known[-1]}-local-strict" if known else ""
        self._validators: dict[tuple[str, str], Any] = {}
        self._definitions: Any = None

    def _source(self, api_version: str, kind: str) -> Any:
        """kubernetes-validate's schema of a kind, as written (FileNotFoundError: none)."""
        group = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
        path = f"kubernetes-json-schema/{self._dir}/{kind.lower()}-{group}.json"
        schema = builtin_schema(path)
        if self._definitions is None:
            self._definitions = builtin_schema(
                f"kubernetes-json-schema/{self._dir}/_definitions.json"
            )
        return schema

    def _checkers_of(self, api_version: str, kind: str) -> tuple[Checker, Checker | None]:
        """The structural checkers of a kind and of its metadata (None: it declares none), for
        the kind's schema in check_schema's form, translated on first use."""
        key = (api_version, kind)
        if key not in self._checkers:
            inlined = _inline(self._source(api_version, kind), self._definitions, {}, ())
            structural = _structural(inlined)
            meta = structural["properties"].get("metadata")
            self._checkers[key] = (Checker(structural), None if meta is None else Checker(meta))
        return self._checkers[key]

    def _validator(self, api_version: str, kind: str) -> Any:
        """The jsonschema validator of a kind (the reference; see check)."""
        key = (api_version, kind)
        if key not in self._validators:
            import jsonschema  # noqa: PLC0415  (the reference validator, for the tests)
            import referencing  # noqa: PLC0415

            schema = self._source(api_version, kind)
            registry = referencing.Resource.from_contents(schema) @ (
                referencing.Resource.from_contents(self._definitions) @ referencing.Registry()
            )
            if self.inline:
                schema = _inline(schema, self._definitions, {}, ())
            self._validators[key] = jsonschema.validators.Draft202012Validator(
                schema, registry=registry
            )
        return self._validators[key]

    def check(self, obj: Mapping[str, Any]) -> list[FieldError]:
        """The first strict error of a built-in object, as the API server's apply path reports
        one: the schema in check_schema's form (see _structural), or with `reference`, through
        jsonschema as kubernetes-validate's schema is written (five times slower; the tests
        hold the two to the same verdicts)."""
        api_version, kind = str(obj.get("apiVersion")), str(obj.get("kind"))
        if self.reference:
            return self.reference_errors(obj)[:1]
        try:
            whole, meta = self._checkers_of(api_version, kind)
        except FileNotFoundError:
            return [self._no_schema(api_version, kind)]
        errors = whole.errors(obj, FieldPath())
        metadata = obj.get("metadata")
        if isinstance(metadata, Mapping) and meta is not None:  # the root skips it
            errors += meta.errors(metadata, FieldPath().child("metadata"))
        if not errors:
            return []
        first = min(errors, key=lambda e: _path_key(e.path))
        if first.reason is Reason.UNKNOWN_FIELD:
            detail = first.detail.replace("the schema", f"the Kubernetes {self.minor} schema", 1)
            return [FieldError(first.path, first.reason, detail)]
        return [first]

    def reference_errors(self, obj: Mapping[str, Any]) -> list[FieldError]:
        """Every strict error jsonschema finds, in path order."""
        api_version, kind = str(obj.get("apiVersion")), str(obj.get("kind"))
        try:
            validator = self._validator(api_version, kind)
        except FileNotFoundError:
            return [self._no_schema(api_version, kind)]
        found = []
        for err in sorted(validator.iter_errors(dict(obj)), key=lambda e: [str(p) for p in e.path]):
            at = FieldPath()
            for part in err.path:
                at = at.index(part) if isinstance(part, int) else at.child(str(part))
            unexpected = _UNEXPECTED.search(err.message)
            if unexpected is not None:
                detail = f"not declared in the Kubernetes {self.minor} schema"
                for name in re.findall(r"'([^']+)'", err.message.split(" unexpected")[0]):
                    found.append(FieldError(str(at.child(name)), Reason.UNKNOWN_FIELD, detail))
                continue
            found.append(FieldError(str(at), Reason.INVALID, err.message.splitlines()[0]))
        return found

    def _no_schema(self, api_version: str, kind: str) -> FieldError:
        detail = f"no Kubernetes {self.minor} schema for {api_version} {kind}"
        return FieldError("apiVersion", Reason.NOT_FOUND, detail)


_BLOCKING = frozenset({Reason.UNSUPPORTED, Reason.REQUIRED, Reason.TOO_LONG, Reason.TOO_MANY})
_WRONG_TYPE = re.compile(r"^must be (an integer or a string|\w+, not \w+)$")


def _blocks_rules(error: FieldError) -> bool:
    """A schema error after which the API server runs no x-kubernetes-validations rule (enum,
    required, too long, too many, wrong type: apiextensions-apiserver's hasBlockingErr)."""
    return error.reason in _BLOCKING or _WRONG_TYPE.match(error.detail) is not None


def _path_key(path: str) -> list[str]:
    return re.split(r"[.\[\]]+", path)


def _structural(schema: Mapping[str, Any]) -> dict[str, Any]:
    """kubernetes-validate's JSON Schema (references inlined) in the OpenAPI form check_schema
    reads: a type list with "null" is a type and `nullable`; an object without
    `additionalProperties: false` takes any other field, as JSON Schema says; `format`, texts and
    the x-kubernetes-* merge hints do not constrain values here and are left out."""
    out: dict[str, Any] = {}
    kind = schema.get("type")
    names = [t for t in kind if t != "null"] if isinstance(kind, list) else [kind] if kind else []
    if len(names) == 1:
        out["type"] = names[0]
    if isinstance(kind, list) and "null" in kind:
        out["nullable"] = True
    if isinstance(schema.get("properties"), Mapping):
        out["properties"] = {k: _structural(v) for k, v in schema["properties"].items()}
    extra = schema.get("additionalProperties")
    if isinstance(extra, Mapping):
        out["additionalProperties"] = _structural(extra)
    elif extra is not False and "object" in names:
        out["x-kubernetes-preserve-unknown-fields"] = True
    if isinstance(schema.get("items"), Mapping):
        out["items"] = _structural(schema["items"])
    for keyword in ("allOf", "anyOf", "oneOf"):
        if keyword in schema:
            out[keyword] = [_structural(branch) for branch in schema[keyword]]
    for keyword in _CARRIED:
        if keyword in schema:
            out[keyword] = schema[keyword]
    unknown = {k for k in schema if not k.startswith("x-kubernetes-")} - _READ - _CARRIED - _IGNORED
    if unknown:  # a keyword this translation would drop: refuse rather than check less
        raise ValueError(f"kubernetes-validate schema keyword(s) not translated: {sorted(unknown)}")
    return out


_READ = frozenset(
    {"type", "properties", "additionalProperties", "items", "allOf", "anyOf", "oneOf"}
)
_CARRIED = frozenset(
    {"required", "enum", "minimum", "maximum", "minLength", "maxLength", "pattern"}
    | {"minItems", "maxItems"}
)
_IGNORED = frozenset({"format", "description", "$schema", "$id", "$ref"})


def _inline(
    schema: Any, definitions: Mapping[str, Any], done: dict[str, Any], expanding: tuple[str, ...]
) -> Any:
    """`schema` without descriptions, with each `$ref` to a definition replaced by the definition
    itself, so the validator does not resolve references on every object (a third of its time).
    A reference back into a definition being expanded stays, made absolute (the registry
    resolves it)."""
    if isinstance(schema, list):
        return [_inline(item, definitions, done, expanding) for item in schema]
    if not isinstance(schema, Mapping):
        return schema
    defs = definitions.get("$defs", {})
    ref = schema.get("$ref")
    name = ref.rpartition("#/$defs/")[2] if isinstance(ref, str) and "#/$defs/" in ref else None
    # Descriptions go too (text, never a property's schema): each subschema's keywords are
    # listed again whenever the validator descends into it.
    if name is None or name not in defs:
        return {
            k: _inline(v, definitions, done, expanding)
            for k, v in schema.items()
            if not (k == "description" and isinstance(v, str))
        }
    rest = {
        k: _inline(v, definitions, done, expanding)
        for k, v in schema.items()
        if k != "$ref" and not (k == "description" and isinstance(v, str))
    }
    if name in expanding:
        return {"$ref": f"{definitions.get('$id', '')}#/$defs/{name}", **rest}
    if name not in done:
        done[name] = _inline(defs[name], definitions, done, (*expanding, name))
    return {"allOf": [done[name]], **rest} if rest else done[name]


def incompatible(
    obj: Mapping[str, Any], errors: list[FieldError], origin: str
) -> IncompatibleUpstream:
    """One IncompatibleUpstream naming the object, the first field and the upstream it came from."""
    name = f"{obj.get('kind')}/{(obj.get('metadata') or {}).get('name')}"
    first = errors[0]
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return IncompatibleUpstream(
        first.path, f"{name} ({obj.get('apiVersion')}, schema from {origin}): {first}{more}"
    )


def check_objects(
    objects: Iterable[Mapping[str, Any]], schemas: Schemas, *, kubernetes: str
) -> list[tuple[Mapping[str, Any], list[FieldError]]]:
    """Each object with its strict-check errors (none: it passes), in order; for objects Runway
    writes outside a render, such as a provider's install objects (core/rendering/installs.py),
    checked with the same Schemas as rendered ones."""
    return [(obj, schemas.check(obj, kubernetes=kubernetes)) for obj in objects]
