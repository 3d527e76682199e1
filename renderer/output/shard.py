"""`runway render --shard K/N`: one of N renders that together make one full render.

The partition is by namespace, and deterministic: a namespace belongs to shard
1 + (the first 8 bytes of sha256(namespace), as a number) mod N, wherever and whenever it is
computed. A shard renders the ModelDeployments and ExternalModelProviders of its namespaces and
sees, in the tree, only their folders: every other folder is not its business (never read, never
written, never removed). Two files at the top of the tree belong to every shard, and each shard
writes them as the union of its own part and what the tree holds for the others: the top
kustomization (the namespaces) and the record of sources (folder -> source). After a rejected
push, the render starts again from the remote head (renderer.flow: renderer.git.push), so N shards
pushing to one branch converge on the tree one full render writes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from core.fields.errors import SourceError
from kubeio.yamlio import dump
from renderer.git.disk import DiskTree
from renderer.output.folders import kustomization
from renderer.output.ownership import SOURCES_FILE, read_record, record_text
from renderer.output.tree import Tree

TOP = "kustomization.yaml"


class Part:
    """Some namespaces of the tree, rendered on their own: what a render of them reads and
    writes, and how the two files at the top take in the other namespaces' parts."""

    def owns(self, namespace: str) -> bool:
        raise NotImplementedError

    def owns_key(self, key: str) -> bool:
        """Whether an output folder (namespace/name) is this shard's."""
        return self.owns(key.split("/", 1)[0])

    def holds(self, path: str) -> bool:
        """Whether a path of the tree is this shard's to read and write: a file at the top, or
        anything in one of its namespaces."""
        namespace, slash, _ = path.partition("/")
        return not slash or self.owns(namespace)

    def view(self, current: DiskTree) -> DiskTree:
        """The tree on disk as this shard sees it."""
        return DiskTree(current.root, {p: s for p, s in current.stats.items() if self.holds(p)})

    def merged(self, tree: Tree, current: Mapping[str, str]) -> Tree:
        """`tree` (this shard's render) with the two shared files holding the other shards'
        parts as `current` (the whole tree on disk) has them."""
        others = {ns for ns in _namespaces(current) if not self.owns(ns)}
        own = _namespaces(tree)
        texts = dict(tree.written)
        texts[TOP] = dump(kustomization(sorted(own | others)))
        record = {k: v for k, v in read_record(current).items() if not self.owns_key(k)}
        record.update(read_record(tree))
        if record:
            texts[SOURCES_FILE] = record_text(record)
        else:
            texts.pop(SOURCES_FILE, None)
        return Tree(texts, tree.current, tree.unchanged - {TOP, SOURCES_FILE}, tree.scanned)


@dataclass(frozen=True, slots=True)
class Shard(Part):
    index: int  # 1..count
    count: int

    @classmethod
    def parse(cls, value: str) -> Shard:
        """`K/N` with 1 <= K <= N; a SourceError naming --shard otherwise."""
        left, slash, right = value.partition("/")
        if slash and _decimal(left) and _decimal(right) and 1 <= int(left) <= int(right):
            return cls(int(left), int(right))
        raise SourceError("--shard", f"expected K/N with 1 <= K <= N (as 2/4), got {value!r}")

    def owns(self, namespace: str) -> bool:
        number = int.from_bytes(hashlib.sha256(namespace.encode()).digest()[:8], "big")
        return number % self.count == self.index - 1


@dataclass(frozen=True, slots=True)
class Namespaces(Part):
    """Named namespaces (of a shard, when `within` is one)."""

    names: frozenset[str]
    within: Part | None = None

    def owns(self, namespace: str) -> bool:
        return namespace in self.names and (self.within is None or self.within.owns(namespace))


def _namespaces(tree: Iterable[str]) -> set[str]:
    """The namespaces a tree holds Runway's folders for (each has its kustomization)."""
    return {p.split("/", 1)[0] for p in tree if p.count("/") == 1 and p.endswith(f"/{TOP}")}


def _decimal(text: str) -> bool:
    """ASCII digits only: str.isdigit() also takes "²", which int() refuses, and "٣"."""
    return text.isascii() and text.isdigit()
