"""Upstream version pins, parsed from the text of core/model/versions.env."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, fields

_LINE = re.compile(r"^([A-Z][A-Z0-9_]*)=(\S+)$")


@dataclass(frozen=True, slots=True)
class Versions:
    """One field per upstream the core itself renders or tests against; `extra` keeps every
    other pin by its KEY (the providers' operators and images: `pin("dynamo")` reads
    DYNAMO_VERSION), so that the core names no provider."""

    vllm: str
    gaie: str
    gateway_api: str
    istio: str
    kubernetes: str
    etcd: str
    extra: Mapping[str, str]

    @classmethod
    def parse(cls, text: str) -> Versions:
        """Parse KEY=VALUE lines; a missing pin or a malformed line is a packaging bug."""
        entries: dict[str, str] = {}
        for number, raw in enumerate(text.splitlines(), start=1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            match = _LINE.match(line)
            if match is None:
                raise ValueError(f"versions.env line {number}: expected KEY=VALUE, got {line!r}")
            entries[match.group(1)] = match.group(2)
        known = {f.name: f"{f.name.upper()}_VERSION" for f in fields(cls) if f.name != "extra"}
        missing = sorted(key for key in known.values() if key not in entries)
        if missing:
            raise ValueError(f"versions.env is missing {', '.join(missing)}")
        pins = {name: entries.pop(key) for name, key in known.items()}
        return cls(**pins, extra=dict(sorted(entries.items())))

    def pin(self, upstream: str) -> str:
        """The pin of `upstream` (`<UPSTREAM>_VERSION` in versions.env), a core field's or an
        extra one's; a missing pin is a packaging bug."""
        key = f"{upstream.upper()}_VERSION"
        if upstream in {f.name for f in fields(self) if f.name != "extra"}:
            return str(getattr(self, upstream))
        if key not in self.extra:
            raise ValueError(f"versions.env is missing {key}")
        return self.extra[key]

    def as_env(self) -> dict[str, str]:
        """KEY=VALUE pairs again, every pin included."""
        pins = {
            f"{f.name.upper()}_VERSION": getattr(self, f.name)
            for f in fields(self)
            if f.name != "extra"
        }
        return {**pins, **self.extra}
