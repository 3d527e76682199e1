"""The source repository's policy: which namespaces the files under each path may define.

Modelled on Argo CD's AppProject, whose `destinations` list the namespaces an Application may
deploy to: here the file `.runway/policy.yaml` at the top of the Git work tree holding the
sources maps path globs to the namespaces those files may define objects in.

    kind: SourcePolicy
    rules:
      - paths: ["models/team-a/**"]
        namespaces: ["team-a", "team-a-*"]

A ModelDeployment or ExternalModelProvider (the kinds rendered into a namespace) in a file under
a policy may name a namespace only when a rule whose `paths` match the file (relative to the
work tree, `/`-separated) lists it in `namespaces`; a file no rule matches may define none.
Without the file, there is no restriction. `runway validate` and `runway render` check the
same way (`violations`); a policy file that is not of this shape is unusable input (exit 2).

Globs: `*`, `?` and `[...]` match within one path component (fnmatch), `**` as a whole
component spans any number of them; namespaces are fnmatch globs. Each glob is at most MAX_GLOB
characters with at most MAX_WILDCARDS wildcards, a policy at most MAX_RULES rules.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from core.fields.errors import SourceError
from core.model.kinds import DEFAULT_NAMESPACE, EXTERNAL_MODEL_PROVIDER, MODEL_DEPLOYMENT
from kubeio.sources import STDIN, Document
from kubeio.yamlio import load_all

POLICY_FILE = ".runway/policy.yaml"
POLICY_KIND = "SourcePolicy"
CHECKED_KINDS = (MODEL_DEPLOYMENT, EXTERNAL_MODEL_PROVIDER)
MAX_POLICY_BYTES = 1 << 20
MAX_RULES = 1000
MAX_GLOB = 256
MAX_WILDCARDS = 8


@dataclass(frozen=True, slots=True)
class Rule:
    paths: tuple[str, ...]
    namespaces: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Policy:
    """A policy file: where it is (for messages), the work tree its paths are relative to, and
    its rules in order."""

    file: str
    root: Path
    rules: tuple[Rule, ...]


def parse_policy(loaded: Any, file: str, root: Path) -> Policy:
    """The policy of the parsed YAML `loaded`; SourceError naming `file` and the field when it
    is not a SourcePolicy as documented."""
    if not isinstance(loaded, Mapping) or loaded.get("kind") != POLICY_KIND:
        raise SourceError(file, f"expected a mapping with kind: {POLICY_KIND}")
    unknown = sorted(str(k) for k in loaded if k not in ("kind", "rules"))
    if unknown:
        raise SourceError(file, f"unknown field {unknown[0]!r} (expected kind, rules)")
    rules = loaded.get("rules")
    if not isinstance(rules, list) or len(rules) > MAX_RULES:
        raise SourceError(file, f"rules: expected a list of at most {MAX_RULES} rules")
    return Policy(
        file, root, tuple(_rule(rule, f"rules[{i}]", file) for i, rule in enumerate(rules))
    )


def _rule(rule: Any, at: str, file: str) -> Rule:
    if not isinstance(rule, Mapping) or set(rule) != {"paths", "namespaces"}:
        raise SourceError(file, f"{at}: expected a mapping of exactly paths and namespaces")
    found = []
    for name in ("paths", "namespaces"):
        globs = rule[name]
        if not isinstance(globs, list) or not globs:
            raise SourceError(file, f"{at}.{name}: expected a non-empty list of globs")
        for i, glob in enumerate(globs):
            if not isinstance(glob, str) or not glob or len(glob) > MAX_GLOB:
                raise SourceError(
                    file, f"{at}.{name}[{i}]: expected a glob of 1-{MAX_GLOB} characters"
                )
            if sum(glob.count(c) for c in "*?[") > MAX_WILDCARDS:
                raise SourceError(file, f"{at}.{name}[{i}]: more than {MAX_WILDCARDS} wildcards")
            if name == "paths" and (glob.startswith("/") or ".." in glob.split("/")):
                raise SourceError(
                    file, f"{at}.{name}[{i}]: a path relative to the work tree, without .."
                )
        found.append(tuple(globs))
    return Rule(found[0], found[1])


def matches(glob: str, path: str) -> bool:
    """Whether `path` matches the path glob: component by component (fnmatch, whose patterns
    do not backtrack without bound), `**` standing for any number of components. Steps:
    components of the glob times components of the path."""
    pieces, parts = _pieces(glob), path.split("/")
    if None not in pieces:  # no `**`: one component each
        return len(pieces) == len(parts) and all(map(_fits, pieces, parts))
    states = {0}  # how many components of `path` the glob so far can have matched
    for piece in pieces:
        if not states:
            return False
        if piece is None:
            states = set(range(min(states), len(parts) + 1))
        else:
            states = {j + 1 for j in states if j < len(parts) and _fits(piece, parts[j])}
    return len(parts) in states


Piece = str | Callable[[str], object] | None  # a literal component, a pattern's match, `**`


@lru_cache(maxsize=4096)
def _pieces(glob: str) -> tuple[Piece, ...]:
    return tuple(
        None
        if piece == "**"
        else re.compile(fnmatch.translate(piece)).match
        if any(c in piece for c in "*?[")
        else piece
        for piece in glob.split("/")
    )


def _fits(piece: Piece, part: str) -> bool:
    return piece == part if isinstance(piece, str) else piece is not None and bool(piece(part))


def check(policy: Policy, path: str, namespace: str) -> str | None:
    """Why the file at `path` (relative to the policy's work tree) may not define an object in
    `namespace`, or None when it may. Pure."""
    return verdict(policy, path, namespace, rules_for(policy, path))


def rules_for(policy: Policy, path: str) -> list[tuple[str, Rule]]:
    """The rules whose paths match `path`, each with the first of its globs that does."""
    return _rules_for(policy.rules, _index(policy.rules), path)


def _rules_for(
    rules: Sequence[Rule], index: Mapping[str, list[tuple[int, int, str]]], path: str
) -> list[tuple[str, Rule]]:
    """rules_for, trying only the globs whose literal leading folders lead to `path` (_index)."""
    parts = path.split("/")
    tried = sorted({c for k in range(len(parts) + 1) for c in index.get("/".join(parts[:k]), ())})
    found: list[tuple[str, Rule]] = []
    for number, _, glob in tried:
        rule = rules[number]
        if (not found or found[-1][1] is not rule) and matches(glob, path):
            found.append((glob, rule))
    return found


@lru_cache(maxsize=64)
def _index(rules: tuple[Rule, ...]) -> dict[str, list[tuple[int, int, str]]]:
    """Each glob (rule number, glob number, glob) under its literal leading folders (the
    components before the first wildcard or `**`, the last one aside), or, without any
    wildcard, under the path it names."""
    index: dict[str, list[tuple[int, int, str]]] = {}
    for number, rule in enumerate(rules):
        for place, glob in enumerate(rule.paths):
            pieces, literal = glob.split("/"), []
            for piece in pieces:
                if piece == "**" or any(c in piece for c in "*?["):
                    break
                literal.append(piece)
            if len(literal) < len(pieces):  # a wildcard: under its folders; else the path itself
                literal = literal[: len(pieces) - 1]
            index.setdefault("/".join(literal), []).append((number, place, glob))
    return index


def verdict(
    policy: Policy, path: str, namespace: str, matched: Sequence[tuple[str, Rule]]
) -> str | None:
    """`check`, with the rules that match `path` worked out (rules_for)."""
    if not matched:
        return (
            f"namespace {namespace} is not allowed by {policy.file}: no rule's paths match {path}"
        )
    if any(fnmatch.fnmatchcase(namespace, ns) for _, rule in matched for ns in rule.namespaces):
        return None
    said = "; ".join(
        f"paths {glob!r} may define {', '.join(rule.namespaces)}" for glob, rule in matched
    )
    return f"namespace {namespace} is not allowed by {policy.file} for {path}: {said}"


def load_policy(root: Path) -> Policy | None:
    """The policy of the work tree `root`, None when it has no policy file."""
    path = root / POLICY_FILE
    if not path.is_file():
        return None
    try:
        with path.open("rb") as file:  # never more than the bound, however large the file
            data = file.read(MAX_POLICY_BYTES + 1)
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise SourceError(str(path), f"cannot read the policy file: {err}") from None
    if len(data) > MAX_POLICY_BYTES:
        raise SourceError(str(path), f"a policy file is at most {MAX_POLICY_BYTES} bytes")
    loaded = load_all(text, str(path))
    if len(loaded) != 1:
        raise SourceError(str(path), f"expected one YAML document, found {len(loaded)}")
    return parse_policy(loaded[0], str(path), root)


def work_tree_of(folder: Path, known: dict[Path, Path | None] | None = None) -> Path | None:
    """The top of the Git work tree holding `folder` (the nearest folder with a `.git`); `known`
    keeps the answer of every folder on the way (one stat per folder, however many files)."""
    known = {} if known is None else known
    passed = []
    at = folder
    while at not in known:
        if (at / ".git").exists():
            known[at] = at
        elif at.parent == at:
            known[at] = None
        else:
            passed.append(at)
            at = at.parent
    for each in passed:
        known[each] = known[at]
    return known[at]


def violations(docs: Sequence[Document]) -> list[str]:
    """Every document that its work tree's policy does not allow, as `where: why`."""
    return [f"{d.where}: {why}" for d, why in zip(docs, verdicts(docs), strict=True) if why]


def verdicts(docs: Sequence[Document]) -> list[str | None]:
    """For each document, why its work tree's policy does not allow it, or None. Each work
    tree's policy is loaded once (SourceError when one is malformed), each file matched against
    the rules once, each namespace of a file judged once. `runway validate` and `runway render`
    both ask this."""
    governs = _Governs()
    files: dict[str, tuple[Policy, str, list[tuple[str, Rule]]] | None] = {}
    judged: dict[tuple[str, str], str | None] = {}
    found: list[str | None] = []
    for doc in docs:
        found.append(None)
        if doc.obj.get("kind") not in CHECKED_KINDS or doc.origin == STDIN:
            continue
        if doc.origin not in files:
            files[doc.origin] = governs(doc.origin)
        governed = files[doc.origin]
        if governed is None:
            continue
        meta = doc.obj.get("metadata")
        namespace = meta.get("namespace") if isinstance(meta, Mapping) else None
        namespace = namespace if isinstance(namespace, str) and namespace else DEFAULT_NAMESPACE
        if (doc.origin, namespace) not in judged:
            judged[doc.origin, namespace] = verdict(*governed[:2], namespace, governed[2])
        found[-1] = judged[doc.origin, namespace]
    return found


Governed = tuple[str, "Policy", dict[str, list[tuple[int, int, str]]]]  # top, policy, index


class _Governs:
    """Which policy governs a source file: each folder's work tree found once, each work
    tree's policy loaded and indexed once."""

    def __init__(self) -> None:
        self.trees: dict[Path, Path | None] = {}
        self.folders: dict[str, Governed | None] = {}
        self.roots: dict[Path, Governed | None] = {}

    def __call__(self, origin: str) -> tuple[Policy, str, list[tuple[str, Rule]]] | None:
        """The policy, the file's path in its work tree, and the rules matching it; None when
        no policy governs the file."""
        file = os.path.abspath(origin)
        folder = os.path.dirname(file)
        if folder not in self.folders:
            self.folders[folder] = self._policy(folder)
        found = self.folders[folder]
        if found is None:
            return None
        top, policy, index = found
        path = file[len(top) :].lstrip("/")
        return policy, path, _rules_for(policy.rules, index, path)

    def _policy(self, folder: str) -> Governed | None:
        root = work_tree_of(Path(folder), self.trees)
        if root is None:
            return None
        if root not in self.roots:
            policy = load_policy(root)
            self.roots[root] = None if policy is None else (str(root), policy, _index(policy.rules))
        return self.roots[root]


def enforce(docs: Sequence[Document]) -> None:
    """SourceError naming every document the policies do not allow (render: exit 2)."""
    found = violations(docs)
    if found:
        more = f" (and {len(found) - 20} more)" if len(found) > 20 else ""
        raise SourceError(POLICY_FILE, "; ".join(found[:20]) + more)
