"""Comparing what was written with what the API server stores."""

from __future__ import annotations

from typing import Any


def missing_from(sent: Any, stored: Any, at: str = "spec") -> list[str]:
    """Where `stored` lost or changed what was sent (fields the server defaulted are fine)."""
    if isinstance(sent, dict):
        if not isinstance(stored, dict):
            return [at]
        return [
            m
            for k, v in sent.items()
            for m in (missing_from(v, stored[k], f"{at}.{k}") if k in stored else [f"{at}.{k}"])
        ]
    if isinstance(sent, list):
        if not isinstance(stored, list) or len(stored) != len(sent):
            return [at]
        return [
            m
            for i, (a, b) in enumerate(zip(sent, stored, strict=True))
            for m in missing_from(a, b, f"{at}[{i}]")
        ]
    return [] if sent == stored else [at]
