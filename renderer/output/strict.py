"""The render-time strict check (the #308 lesson): every rendered object against the schema of its
pinned upstream, with undeclared fields reported instead of pruned.

CRD schemas come from Runway's schema pack (renderer/output/schemapack.py) by default. CRDs found in
directories (`--crds`, searched recursively for CustomResourceDefinition documents, any layout) or
served by a cluster (`--crds-from-cluster`) override it kind by kind. An object whose kind has no
schema anywhere is reported too: "strict everywhere" means nothing is waved through unchecked.
"""

from __future__ import annotations

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
from renderer.output.builtin import BUILTIN_API_VERSIONS, BuiltinSchemas
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


_BLOCKING = frozenset({Reason.UNSUPPORTED, Reason.REQUIRED, Reason.TOO_LONG, Reason.TOO_MANY})
_WRONG_TYPE = re.compile(r"^must be (an integer or a string|\w+, not \w+)$")


def _blocks_rules(error: FieldError) -> bool:
    """A schema error after which the API server runs no x-kubernetes-validations rule (enum,
    required, too long, too many, wrong type: apiextensions-apiserver's hasBlockingErr)."""
    return error.reason in _BLOCKING or _WRONG_TYPE.match(error.detail) is not None


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
