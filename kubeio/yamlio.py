"""The one YAML dumper and the one YAML loader.

The dumper is deterministic (sorted keys, no line wrapping), with block scalars for text.

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

The loader (`load_all`) is PyYAML's C loader refusing duplicate keys, integers too long to
convert and documents whose aliases expand past MAX_EXPANDED nodes; every failure is one
SourceError naming the document.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Mapping
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from core.fields.errors import SourceError

_STR = "tag:yaml.org,2002:str"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
_BOOL = "tag:yaml.org,2002:bool"
_INT = "tag:yaml.org,2002:int"
_NULL = "tag:yaml.org,2002:null"
CYCLE = "a value that contains itself cannot be written as YAML"
_MERGE = "tag:yaml.org,2002:merge"
# Nodes of one document with its aliases written out. A ModelDeployment or ExternalModelProvider
# may hold 10,000 values (core.schema.bounds), an InferenceProviderConfig 128 KiB.
MAX_EXPANDED = 100_000
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


def dump(obj: Mapping[str, Any] | list[Any]) -> str:
    """One object (or a list of values) as YAML; the same object always gives the same bytes."""
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


def dump_represented(obj: Mapping[str, Any] | list[Any]) -> str:
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


# -- loading ---------------------------------------------------------------------------------


class _StrictLoader(FastResolve, yaml.CSafeLoader):
    """PyYAML's C loader, refusing a key given twice in one mapping (kubectl and the API
    server's strict decoding refuse duplicate fields; PyYAML keeps the last one silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == _MERGE:
                continue
            if key_node.tag == _STR:  # the common key: its text is its value
                key = key_node.value
            else:
                key = self.construct_object(key_node, deep=deep)
            if key in seen:  # named as written: `on` and `yes` are both the key True
                raise yaml.constructor.ConstructorError(
                    None, None, f'duplicate key "{key_node.value}"', key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)

    def construct_checked_int(self, node: yaml.ScalarNode) -> int:
        """An integer, or an error at its line when it has more digits than Python converts."""
        try:
            value: int = self.construct_yaml_int(node)
        except ValueError:
            raise yaml.constructor.ConstructorError(
                None, None, "integer with too many digits (out of range)", node.start_mark
            ) from None
        return value


_StrictLoader.add_constructor("tag:yaml.org,2002:int", _StrictLoader.construct_checked_int)


class _AliasBoundLoader(_StrictLoader):
    """_StrictLoader, refusing a document whose aliases expand it past MAX_EXPANDED nodes
    before anything is built: the nodes an alias shares are built once, but every walk of the
    result (the cache digest, admission) visits each use, so 758 bytes of nested aliases (a
    "billion laughs") would cost a billion visits."""

    def construct_document(self, node: yaml.Node) -> Any:
        if _expanded_size(node) > MAX_EXPANDED:
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"aliases expand this document past {MAX_EXPANDED:,} nodes (nested aliases, a "
                "'billion laughs'?); write the values out",
                node.start_mark,
            )
        return super().construct_document(node)


def _expanded_size(root: yaml.Node) -> int:
    """The number of nodes of the document with every alias written out (each shared node's
    size computed once, so this costs one visit per distinct node)."""
    sizes: dict[int, int] = {}
    order: list[yaml.Node] = []
    stack = [root]
    while stack:  # every distinct node, parents before children
        node = stack.pop()
        if id(node) in sizes:
            continue
        sizes[id(node)] = 0
        order.append(node)
        if isinstance(node, yaml.MappingNode):
            stack += [part for pair in node.value for part in pair]
        elif isinstance(node, yaml.SequenceNode):
            stack += node.value
    for node in reversed(order):  # children first (a cycle cannot be built by the composer)
        if isinstance(node, yaml.MappingNode):
            children = [part for pair in node.value for part in pair]
        elif isinstance(node, yaml.SequenceNode):
            children = node.value
        else:
            children = []
        sizes[id(node)] = min(1 + sum(sizes[id(c)] for c in children), MAX_EXPANDED + 1)
    return sizes[id(root)]


def load_all(text: str, origin: str) -> list[Any]:
    """Every document of a YAML stream; a SourceError names the document and the problem."""
    loaded: list[Any] = []
    # An alias is written `*name`: a stream without "*" has none, and skips the size walk.
    loader = _AliasBoundLoader if "*" in text else _StrictLoader
    try:
        loaded.extend(yaml.load_all(text, Loader=loader))
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise SourceError(
            origin, f"document {len(loaded) + 1}: not valid YAML{where}: {problem}"
        ) from None
    except RecursionError:
        raise SourceError(origin, f"document {len(loaded) + 1}: YAML nested too deeply") from None
    return loaded
