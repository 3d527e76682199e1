"""The strict schemas of Kubernetes' built-in kinds (kubernetes-validate's, per Kubernetes
minor), for the render-time strict check (renderer.output.strict): each kind's validator built
on first use, and the JSON Schema turned into the OpenAPI form the structural checker reads.
"""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from core.fields.errors import FieldError, Reason
from core.fields.paths import FieldPath
from core.schema.compiled import Checker


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
    {
        "v1",
        "apps/v1",
        "batch/v1",
        "rbac.authorization.k8s.io/v1",
        "policy/v1",
        "networking.k8s.io/v1",
    }
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
