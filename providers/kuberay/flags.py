"""KubeRay: no flag catalog. Ray Serve LLM takes engine kwargs, not command-line flags."""

from __future__ import annotations

from collections.abc import Mapping


def flag_catalog(engine: str) -> str | None:
    return None


def owned_flags(catalog: str) -> Mapping[str, str]:
    return {}
