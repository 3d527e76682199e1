"""The one YAML dumper: deterministic (sorted keys, no line wrapping), block scalars for text."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import yaml


class _Dumper(yaml.CSafeDumper):
    """Safe dumping, with multi-line strings as `|` blocks so embedded configs stay readable."""


def _str(dumper: _Dumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def dump(obj: Mapping[str, Any]) -> str:
    """One object as YAML; the same object always gives the same bytes."""
    text: str = yaml.dump(
        obj,
        Dumper=_Dumper,
        sort_keys=True,
        default_flow_style=False,
        width=1 << 30,
        allow_unicode=True,
    )
    return text


def dump_all(objects: Iterable[Mapping[str, Any]]) -> str:
    """Several objects as one multi-document stream."""
    return "".join(f"---\n{dump(obj)}" for obj in objects)
