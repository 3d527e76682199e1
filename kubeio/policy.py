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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.fields.errors import SourceError
from core.model.kinds import EXTERNAL_MODEL_PROVIDER, MODEL_DEPLOYMENT
from kubeio.sources import STDIN, Document
from kubeio.yamlio import load_all

POLICY_FILE = ".runway/policy.yaml"
POLICY_KIND = "SourcePolicy"
CHECKED_KINDS = (MODEL_DEPLOYMENT, EXTERNAL_MODEL_PROVIDER)
MAX_POLICY_BYTES = 1 << 20
MAX_RULES = 1000
MAX_GLOB = 256
MAX_WILDCARDS = 8
DEFAULT_NAMESPACE = "default"


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
    parts = path.split("/")
    states = {0}  # how many components of `path` the glob so far can have matched
    for piece in glob.split("/"):
        if not states:
            return False
        if piece == "**":
            states = set(range(min(states), len(parts) + 1))
        else:
            states = {
                j + 1 for j in states if j < len(parts) and fnmatch.fnmatchcase(parts[j], piece)
            }
    return len(parts) in states


def check(policy: Policy, path: str, namespace: str) -> str | None:
    """Why the file at `path` (relative to the policy's work tree) may not define an object in
    `namespace`, or None when it may. Pure."""
    matched = []
    for rule in policy.rules:
        glob = next((g for g in rule.paths if matches(g, path)), None)
        if glob is not None:
            matched.append((glob, rule))
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
        data = path.read_bytes()[: MAX_POLICY_BYTES + 1]
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


def violations(docs: Iterable[Document]) -> list[str]:
    """Every document that its work tree's policy does not allow, as `where: why`; each
    work tree's policy loaded once (SourceError when one is malformed)."""
    policies: dict[Path, Policy | None] = {}
    trees: dict[Path, Path | None] = {}
    files: dict[str, tuple[Path, Path | None]] = {}
    found = []
    for doc in docs:
        if doc.obj.get("kind") not in CHECKED_KINDS or doc.origin == STDIN:
            continue
        if doc.origin not in files:
            file = Path(doc.origin).absolute()
            files[doc.origin] = (file, work_tree_of(file.parent, trees))
        file, root = files[doc.origin]
        if root is None:
            continue
        if root not in policies:
            policies[root] = load_policy(root)
        policy = policies[root]
        if policy is None:
            continue
        meta = doc.obj.get("metadata")
        namespace = meta.get("namespace") if isinstance(meta, Mapping) else None
        namespace = namespace if isinstance(namespace, str) and namespace else DEFAULT_NAMESPACE
        why = check(policy, _relative(file, root), namespace)
        if why is not None:
            found.append(f"{doc.where}: {why}")
    return found


def enforce(docs: Sequence[Document]) -> None:
    """SourceError naming every document the policies do not allow (render: exit 2)."""
    found = violations(docs)
    if found:
        more = f" (and {len(found) - 20} more)" if len(found) > 20 else ""
        raise SourceError(POLICY_FILE, "; ".join(found[:20]) + more)


def _relative(file: Path, root: Path) -> str:
    try:
        return file.relative_to(root).as_posix()
    except ValueError:
        return file.resolve().relative_to(root.resolve()).as_posix()
