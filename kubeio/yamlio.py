"""The one YAML dumper and the one YAML loader.

The dumper is deterministic (sorted keys, no line wrapping), with block scalars for text.

Rendering dumps every object it writes (10,000 ModelDeployments: 40,000 documents), and PyYAML's
representer, which turns Python values into YAML nodes, is pure Python even under the C emitter:
it was 30% of a render. `dump` writes the text itself for what rendered objects hold (dicts with
string keys, lists, single-line strings, booleans, integers, None), with the emitter's exact
rules: sorted keys, block style, sequences in mappings not indented, a string plain when the
emitter would write it plain (printable ASCII decided here by the emitter's own analysis, any
other single-line string by asking the emitter), else quoted. A document with anything else (a
multi-line string, a float, a key past 128 bytes) goes through nodes it builds itself, with the
representer's rules; another container type or a key that is not a string, through the
representer. Property tests hold all three paths to the same bytes.

No anchors or aliases, ever: a dict or list that appears twice (one probe object used as the
liveness and the readiness probe) is written out twice, as people write Kubernetes YAML and as
kubectl prints it. A container that contains itself cannot be written out and is a ValueError.

The loader (`load_all`) is PyYAML's C loader refusing duplicate keys, integers too long to
convert and documents whose aliases expand past MAX_EXPANDED nodes; every failure is one
SourceError naming the document.
"""

from __future__ import annotations

import io
import re
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


def dump(obj: Mapping[str, Any] | list[Any], *, strings: Strings | None = None) -> str:
    """One object (or a list of values) as YAML; the same object always gives the same bytes.
    `strings`: the texts of strings written before, to reuse and add to (one per render)."""
    try:
        return _Writer(strings if strings is not None else Strings()).document(obj)
    except _Unusual:
        return dump_nodes(obj)


def dump_nodes(obj: Mapping[str, Any] | list[Any]) -> str:
    """`dump` through the nodes this module builds (or the representer's, for an unusual value)
    and the C emitter: the path of a document the writer leaves alone, and its reference."""
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


# A string the emitter may write plain or in single quotes with no analysis beyond _plain:
# printable ASCII, no quote (so quoting it is wrapping it).
_ASCII = re.compile(r"[ -&(-~]+")
# What keeps such a string from being a plain scalar in block context (the emitter's
# analyze_scalar): a document marker first, a leading indicator, `?`, `:` or `-` alone or before
# a space, `: ` or `:` at the end, ` #`, a leading or trailing space.
_NOT_PLAIN = re.compile(r"---|\.\.\.|[#,\[\]{}&*!|>\"%@`]|[?:-](?: |$)| |.*(?:: |:$| #| $)")
_BREAK = re.compile("[\r\n\x85\u2028\u2029]")  # what YAML reads as a line break
_OTHER_BREAK = re.compile("[\r\x85\u2028\u2029]")
_SIMPLE_KEY_BYTES = 128  # a longer key is written `? key` (the emitter's check_simple_key)


class _Resolve(FastResolve, yaml.resolver.Resolver):
    """The tags the dumper's resolver gives plain scalars (the emitter writes a string plain
    only when its text reads back as a string)."""


MAX_STRINGS = 8_192  # a Strings memo is emptied when it holds this many texts


class Strings(dict[str, str]):
    """How strings were written so far (string -> its text as a single-line scalar), for
    `dump` to reuse across the documents of one render: the same keys, images and names come
    back in every object. Bounded: emptied when full."""


class _Writer:
    """The text of one document, written directly: what `dump_nodes` writes, for the values it
    handles (see the module's text); _Unusual for any other, and a ValueError for a cycle."""

    def __init__(self, strings: Strings) -> None:
        self.out: list[str] = []
        self.path: set[int] = set()
        self.strings = strings
        if len(strings) >= MAX_STRINGS:
            strings.clear()
        self.resolver = _Resolve()

    def document(self, obj: Any) -> str:
        kind = type(obj)
        if kind is dict and obj:
            self._mapping(obj, "", "")
        elif kind is list and obj:
            self._sequence(obj, "", "")
        elif kind is dict or kind is list:
            return "{}\n" if kind is dict else "[]\n"
        else:
            raise _Unusual  # a scalar document (PyYAML ends it with `...`)
        return "".join(self.out)

    def _enter(self, value: Any) -> None:
        ident = id(value)
        if ident in self.path:
            raise ValueError(CYCLE)
        self.path.add(ident)

    def _mapping(self, value: dict[Any, Any], pad: str, first: str) -> None:
        """A non-empty mapping whose first line starts with `first`, the others with `pad`."""
        self._enter(value)
        if any(type(key) is not str for key in value):
            raise _Unusual
        out, prefix, inner, strings = self.out, first, pad + "  ", self.strings
        for key in sorted(value):
            item = value[key]
            if len(key) > _SIMPLE_KEY_BYTES // 4 and len(key.encode()) > _SIMPLE_KEY_BYTES:
                raise _Unusual  # written `? key`
            written = strings.get(key)
            if written is None:
                written = self._string(key)
            kind = type(item)
            if kind is dict and item:
                out.append(f"{prefix}{written}:\n")
                self._mapping(item, inner, inner)
            elif kind is list and item:
                out.append(f"{prefix}{written}:\n")
                self._sequence(item, pad, pad)  # in a mapping, a sequence is not indented
            elif kind is str and item in strings:
                out.append(f"{prefix}{written}: {strings[item]}\n")
            else:
                out.append(f"{prefix}{written}: {self._scalar(item, pad)}\n")
            prefix = pad
        self.path.discard(id(value))

    def _sequence(self, value: list[Any], pad: str, first: str) -> None:
        """A non-empty sequence whose first item starts with `first`, the others with `pad`."""
        self._enter(value)
        out, prefix, inner = self.out, first, pad + "  "
        for item in value:
            head = prefix + "- "
            kind = type(item)
            if kind is dict and item:
                self._mapping(item, inner, head)
            elif kind is list and item:
                self._sequence(item, inner, head)
            else:
                out.append(f"{head}{self._scalar(item, pad)}\n")
            prefix = pad
        self.path.discard(id(value))

    def _scalar(self, value: Any, pad: str) -> str:
        """A value's text after `key: ` or `- `, on a line that starts with `pad`."""
        kind = type(value)
        if kind is str:
            written = self.strings.get(value)
            if written is None:
                written = self._string(value) if _BREAK.search(value) is None else None
            return written if written is not None else _block(value, pad)
        if kind is bool:
            return "true" if value else "false"
        if kind is int:
            return str(value)
        if value is None:
            return "null"
        if kind is dict:
            return "{}"
        if kind is list:
            return "[]"
        raise _Unusual  # a float (its spellings are the representer's), or another type

    def _string(self, value: str) -> str:
        """A single-line string's text (the same as a key or as a value), remembered."""
        if _ASCII.fullmatch(value):
            plain = _NOT_PLAIN.match(value) is None and (
                self.resolver.resolve(ScalarNode, value, (True, False)) == _STR
            )
            written = value if plain else f"'{value}'"
        elif not value:
            written = "''"
        elif _BREAK.search(value) is not None:
            raise _Unusual  # a key with a line break is written `? key`
        else:
            written = _asked(value)
        self.strings[value] = written
        return written


def _asked(value: str) -> str:
    """How the emitter writes a single-line string that is not printable ASCII (quotes, `'`,
    escapes, characters it must escape), asked of the emitter itself."""
    text = dump_nodes({"k": value})
    if not text.startswith("k: ") or text.count("\n") != 1:
        raise _Unusual
    return text[3:-1]


def _block(value: str, pad: str) -> str:
    """A string with a line break, as the emitter writes it after `key: ` or `- ` on a line
    that starts with `pad`: asked of the emitter as a mapping's value at the top, where its
    lines (a `|` block) are indented by two; here they are by `pad` and two more. In quotes
    (when a block cannot hold it) it is one line, wherever it stands."""
    text = dump_nodes({"k": value})
    if not text.startswith("k: "):
        raise _Unusual
    header, _, body = text[3:].partition("\n")
    if _BREAK.search(header) is not None or _OTHER_BREAK.search(body) is not None:
        raise _Unusual  # a quoted scalar over several lines, or breaks other than \n
    if not body:
        return header
    lines = body[:-1].split("\n")  # the text ends with a line break
    if not header.startswith("|") or any(line and line[:2] != "  " for line in lines):
        raise _Unusual
    inner = pad + "  "
    return "\n".join([header, *(inner + line[2:] if line else "" for line in lines)])


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
    server's strict decoding refuse duplicate fields; PyYAML keeps the last one silently).
    Equal strings of one stream are one object: a file of 500 ModelDeployments repeats the
    same keys and values in each (the bench's 10,000 ModelDeployments in 20 files: 28.7 ->
    16.3 MB parsed, in the renderer and in every worker forked from it)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._strings: dict[str, str] = {}

    def share(self, strings: dict[str, str]) -> None:
        """Take equal strings from (and give new ones to) `strings`."""
        self._strings = strings

    def construct_shared_str(self, node: yaml.ScalarNode) -> str:
        value: str = self.construct_scalar(node)
        return self._strings.setdefault(value, value)

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
_StrictLoader.add_constructor(_STR, _StrictLoader.construct_shared_str)


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


def load_all(text: str, origin: str, strings: dict[str, str] | None = None) -> list[Any]:
    """Every document of a YAML stream; a SourceError names the document and the problem.
    `strings`: the strings of other streams loaded before, so that equal ones are one object
    across them too (the pieces of one file: renderer.reuse.parsecache)."""
    loaded: list[Any] = []
    # An alias is written `*name`: a stream without "*" has none, and skips the size walk.
    loader = (_AliasBoundLoader if "*" in text else _StrictLoader)(text)
    if strings is not None:
        loader.share(strings)
    try:
        while loader.check_data():  # type: ignore[no-untyped-call]  # PyYAML ships no type hints
            loaded.append(loader.get_data())
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise SourceError(
            origin, f"document {len(loaded) + 1}: not valid YAML{where}: {problem}"
        ) from None
    except RecursionError:
        raise SourceError(origin, f"document {len(loaded) + 1}: YAML nested too deeply") from None
    finally:
        loader.dispose()
    return loaded
