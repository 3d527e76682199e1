"""Reading YAML inputs: files and directories of objects, and the data bundled with Runway.

Every failure is a SourceError naming the file (and the document) and the problem in one line.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from core.fields.errors import SourceError
from kubeio.yamlio import FastResolve

YAML_SUFFIXES = (".yaml", ".yml")
STR_TAG = "tag:yaml.org,2002:str"
MERGE_TAG = "tag:yaml.org,2002:merge"
# Nodes of one document with its aliases written out. A ModelDeployment or ExternalModelProvider
# may hold 10,000 values (core.schema.bounds), an InferenceProviderConfig 128 KiB.
MAX_EXPANDED = 100_000


@dataclass(frozen=True, slots=True)
class Document:
    """One object from a file, with where it came from (for messages)."""

    origin: str
    index: int
    obj: dict[str, Any]

    @property
    def where(self) -> str:
        return f"{self.origin} (document {self.index + 1})"

    @property
    def kind(self) -> str:
        return f"{self.obj.get('apiVersion')} {self.obj.get('kind')}"


def yaml_files(paths: Iterable[str]) -> list[Path]:
    """The files named, and the YAML files under the directories named, in a stable order. A
    file named is read as named; under a directory, a symbolic link is followed only when it
    leads inside one of the directories named (else a SourceError names it)."""
    roots = [Path(raw).resolve() for raw in paths if Path(raw).is_dir()]
    out: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            out.extend(sorted(_walk(path, roots)))
        elif path.exists():
            out.append(path)
        else:
            raise SourceError(raw, "no such file or directory")
    return out


def _walk(top: Path, roots: Sequence[Path]) -> Iterator[Path]:
    """The YAML files under `top`, following links only into `roots`, each folder once."""
    seen: set[Path] = set()
    folders = [top]
    while folders:
        folder = folders.pop()
        real = folder.resolve()
        if real in seen:
            continue  # a link back to a folder walked already (or a loop)
        seen.add(real)
        with os.scandir(folder) as entries:
            for entry in entries:
                path = Path(entry.path)
                if entry.is_symlink():
                    target = path.resolve()
                    if not any(target == r or r in target.parents for r in roots):
                        raise SourceError(
                            str(path),
                            f"is a symbolic link to {target}, outside the source directories "
                            "given; Runway does not follow it (name the target itself)",
                        )
                if entry.is_dir():
                    folders.append(path)
                elif entry.is_file() and path.suffix in YAML_SUFFIXES:
                    yield path


def read_documents(paths: Iterable[str]) -> list[Document]:
    """Every non-empty YAML document in the given files and directories."""
    return [doc for path in yaml_files(paths) for doc in parse_documents(_read(path), str(path))]


def parse_documents(text: str, origin: str) -> Iterator[Document]:
    """The objects in one YAML stream; anything but a mapping per document is an error."""
    for index, obj in enumerate(_load_all(text, origin)):
        if obj is None:
            continue
        if not isinstance(obj, dict):
            got = type(obj).__name__
            raise SourceError(origin, f"document {index + 1} is a {got}, not a Kubernetes object")
        if not all(isinstance(k, str) for k in obj):
            raise SourceError(origin, f"document {index + 1} has a key that is not a string")
        yield Document(origin, index, obj)


class _StrictLoader(FastResolve, yaml.CSafeLoader):
    """PyYAML's C loader, refusing a key given twice in one mapping (kubectl and the API
    server's strict decoding refuse duplicate fields; PyYAML keeps the last one silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == MERGE_TAG:
                continue
            if key_node.tag == STR_TAG:  # the common key: its text is its value
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


def _load_all(text: str, origin: str) -> list[Any]:
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


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise SourceError(str(path), f"cannot read: {reason}") from None
