"""KAITO: no flag catalog. Presets take no flags from the spec, and the llama.cpp template
always runs the user's image (there is no default to catalogue)."""

from __future__ import annotations

from collections.abc import Mapping


def flag_catalog(engine: str) -> str | None:
    return None


def owned_flags(catalog: str) -> Mapping[str, str]:
    return {}
