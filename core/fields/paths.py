"""Kubernetes-style field paths (`spec.scaling.prefill.gpu.count`, `env[0].name`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


class _MapKey(str):
    """A path part that names a map entry rather than a field."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class FieldPath:
    """An immutable path into an object; build with `child()` and `index()`, never by joining."""

    parts: tuple[str | int, ...] = ()

    @classmethod
    def root(cls, *names: str) -> FieldPath:
        return cls(tuple(names))

    def child(self, *names: str) -> FieldPath:
        return FieldPath(self.parts + names)

    def index(self, i: int) -> FieldPath:
        return FieldPath((*self.parts, i))

    def key(self, name: str) -> FieldPath:
        """A map key (labels, args): always the bracket form, as Kubernetes spells it."""
        return FieldPath((*self.parts, _MapKey(name)))

    def __str__(self) -> str:
        out: list[str] = []
        for part in self.parts:
            if isinstance(part, int | _MapKey):
                out.append(f"[{part}]")
            elif _PLAIN_KEY.match(part):
                out.append(f".{part}" if out else part)
            else:
                # Keys that are not identifiers (dots, slashes) use the bracket form, as
                # Kubernetes does for map keys: metadata.annotations[airunway.ai/x].
                out.append(f"[{part}]")
        return "".join(out)
