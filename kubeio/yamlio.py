"""The one YAML dumper: deterministic (sorted keys, no line wrapping), block scalars for text.

Rendering dumps every object it writes (10,000 ModelDeployments: 40,000 documents), and PyYAML's
representer, which turns Python values into YAML nodes, is pure Python even under the C emitter:
it was 30% of a render. `dump` builds the nodes itself for what rendered objects hold (dicts with
string keys, lists, strings, booleans, integers, None; other leaves go to the representer), with
the representer's exact rules: sorted keys, block style, `|` for multi-line strings. Anything else
(another container type, a key that is not a string) takes the representer's path for the whole
document. A property test holds the two paths to the same bytes.

No anchors or aliases, ever: a dict or list that appears twice (one probe object used as the
liveness and the readiness probe) is written out twice, as people write Kubernetes YAML and as
kubectl prints it. A container that contains itself cannot be written out and is a ValueError.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Mapping
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

_STR = "tag:yaml.org,2002:str"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
_BOOL = "tag:yaml.org,2002:bool"
_INT = "tag:yaml.org,2002:int"
_NULL = "tag:yaml.org,2002:null"
CYCLE = "a value that contains itself cannot be written as YAML"
_OPTIONS: dict[str, Any] = {
    "sort_keys": True,
    "default_flow_style": False,
    "width": 1 << 30,
    "allow_unicode": True,
}


class FastResolve(yaml.resolver.BaseResolver):
    """PyYAML's resolver answers (which tag a scalar has when none is written), without its
    loop where no implicit type can start the value and no path resolver is registered. The C
    emitter asks twice per scalar it writes, the C composer once per node it reads."""

    def resolve(self, kind: type[Node], value: Any, implicit: tuple[bool, bool]) -> str:
        if not self.yaml_path_resolvers:
            if kind is ScalarNode:
                wildcards = None in self.yaml_implicit_resolvers
                if not implicit[0] or (
                    value and value[0] not in self.yaml_implicit_resolvers and not wildcards
                ):
                    return str(self.DEFAULT_SCALAR_TAG)
            elif kind is SequenceNode:
                return str(self.DEFAULT_SEQUENCE_TAG)
            elif kind is MappingNode:
                return str(self.DEFAULT_MAPPING_TAG)
        tag: str = super().resolve(kind, value, implicit)  # type: ignore[no-untyped-call]  # PyYAML ships no type hints
        return tag


class _Dumper(FastResolve, yaml.CSafeDumper):
    """Safe dumping, with multi-line strings as `|` blocks so embedded configs stay readable,
    and never an anchor or an alias (a value used twice is written twice)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _str(dumper: _Dumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar(_STR, value, style=style)


_Dumper.add_representer(str, _str)


class _Unusual(Exception):
    """A value the node builder leaves to the representer, for the whole document."""


def dump(obj: Mapping[str, Any]) -> str:
    """One object as YAML; the same object always gives the same bytes."""
    stream = io.StringIO()
    dumper = _Dumper(stream, **_OPTIONS)
    try:
        try:
            node = _node(obj, dumper, set())
        except _Unusual:
            _refuse_cycles(obj, set())
            node = dumper.represent_data(obj)
        dumper.open()
        dumper.serialize(node)
        dumper.close()
    finally:
        dumper.dispose()
    return stream.getvalue()


def dump_represented(obj: Mapping[str, Any]) -> str:
    """`dump` through PyYAML's representer only (the reference the node builder must equal)."""
    text: str = yaml.dump(obj, Dumper=_Dumper, **_OPTIONS)
    return text


def _node(value: Any, dumper: _Dumper, path: set[int]) -> Node:
    """The node the representer would give `value`; `path` holds the ids of the containers
    being written around it (one met again inside itself is a cycle)."""
    kind = type(value)
    if kind is str:
        return ScalarNode(_STR, value, style="|" if "\n" in value else None)
    if kind is dict or kind is list:
        if kind is dict and any(type(key) is not str for key in value):
            raise _Unusual
        ident = id(value)
        if ident in path:
            raise ValueError(CYCLE)
        path.add(ident)
        try:
            if kind is dict:
                pairs = [
                    (_node(k, dumper, path), _node(v, dumper, path))
                    for k, v in sorted(value.items())
                ]
                return MappingNode(_MAP, pairs, flow_style=False)
            return SequenceNode(_SEQ, [_node(i, dumper, path) for i in value], flow_style=False)
        finally:
            path.discard(ident)
    if kind is bool:
        return ScalarNode(_BOOL, "true" if value else "false")
    if kind is int:
        return ScalarNode(_INT, str(value))
    if value is None:
        return ScalarNode(_NULL, "null")
    if kind is float:
        node: Node = dumper.represent_data(value)  # its spellings of inf, nan and exponents
        return node
    raise _Unusual


def _refuse_cycles(value: Any, path: set[int]) -> None:
    """The representer, told to ignore aliases, would recurse forever on a cycle."""
    if isinstance(value, Mapping):
        children: Iterable[Any] = [*value.keys(), *value.values()]
    elif isinstance(value, list | tuple):
        children = value
    else:
        return
    if id(value) in path:
        raise ValueError(CYCLE)
    path.add(id(value))
    for child in children:
        _refuse_cycles(child, path)
    path.discard(id(value))


def dump_all(objects: Iterable[Mapping[str, Any]]) -> str:
    """Several objects as one multi-document stream."""
    return "".join(f"---\n{dump(obj)}" for obj in objects)
