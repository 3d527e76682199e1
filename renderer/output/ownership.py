"""Which outputs a render may remove, and which source each output came from.

A render is asked about the sources it is given (files and directories: its roots). It removes
an output folder only when the source file that folder was last rendered from lies inside those
roots and no longer defines it; outputs of sources outside the roots are never touched. That is
`kubectl apply --prune` scoped by a label selector, with the roots as the selector: what the
command was not pointed at is not its business. The source of every folder is recorded in the
tree itself (SOURCES_FILE, committed, so a fresh clone in CI knows it too); a folder with no
record (rendered by an older Runway, or put there by hand) is never removed.

The same rule holds for changing an output: a source inside the roots that defines a folder
whose recorded source is another file, outside the roots, that still exists, is refused, naming
both files (`claims`); that folder keeps its output and its record. When the recorded file is
gone, the claim may proceed (nobody else owns the folder now).

A render with any failure removes nothing (the failed object may be the one a removal would
have been replaced by), and more than `max_removals` removals at once are withheld unless that
limit is raised: a typo in a CI glob must not prune production.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.fields.errors import SourceError
from core.model.kinds import (
    EXTERNAL_MODEL_PROVIDER,
    INFERENCE_PROVIDER_CONFIG,
    MODEL_DEPLOYMENT,
)
from kubeio.sources import Document
from renderer.output.folders import Result, external_folder_of, folder_of

SOURCES_FILE = "runway-sources.json"  # at the top of the tree: folder -> the source it came from
RECORD_KIND = "RenderSources"  # not a Kubernetes kind: no kustomization lists this file
DEFAULT_MAX_REMOVALS = 10


@dataclass(frozen=True, slots=True)
class Ownership:
    """What this render is about: the source of each output it renders (folder -> origin), its
    roots, the folders refused (folder -> why), and how many removals it may make."""

    origins: Mapping[str, str] = field(default_factory=dict)
    roots: Sequence[str] = ()
    refused: Mapping[str, str] = field(default_factory=dict)
    max_removals: int | None = None  # None: no limit (the library default; the CLI sets one)
    failures_elsewhere: int = (
        0  # failed results of the same render outside these (renderer.reuse.delta)
    )
    recursive: bool = True  # a root folder holds its subfolders' files too (`render -R`)


@dataclass(frozen=True, slots=True)
class Removals:
    """The outcome: folders removed, folders that would have been removed but were not (and
    why), and how many folders of sources outside the roots were left alone."""

    removed: tuple[str, ...] = ()
    withheld: tuple[str, ...] = ()
    reason: str | None = None
    outside: int = 0  # folders whose source is outside the roots, or unrecorded


def output_key(obj: Mapping[str, Any]) -> str | None:
    """The folder an object renders into, or None for a kind without one."""
    if obj.get("kind") == MODEL_DEPLOYMENT:
        return folder_of(obj)
    if obj.get("kind") == EXTERNAL_MODEL_PROVIDER:
        return external_folder_of(obj)
    return None


def duplicates(
    docs: Sequence[Document], keys: Sequence[str | None] | None = None
) -> dict[str, str]:
    """folder -> the error for every folder two documents define (the same kind, namespace and
    name), naming each place. Two InferenceProviderConfigs of one name are unusable input.
    `keys`: each document's output_key, when the caller has them already."""
    places: dict[str, list[str]] = {}
    configs: dict[str, list[str]] = {}
    keys = keys if keys is not None else [output_key(doc.obj) for doc in docs]
    for doc, key in zip(docs, keys, strict=True):
        if key is not None:
            places.setdefault(key, []).append(doc.where)
        elif doc.obj.get("kind") == INFERENCE_PROVIDER_CONFIG:
            name = str((doc.obj.get("metadata") or {}).get("name"))
            configs.setdefault(name, []).append(doc.where)
    for name, where in sorted(configs.items()):
        if len(where) > 1:
            raise SourceError(
                where[1], f"InferenceProviderConfig {name} is also defined in {where[0]}"
            )
    return {
        key: f"defined {len(where)} times, in {' and '.join(where)}; keep one definition"
        for key, where in sorted(places.items())
        if len(where) > 1
    }


def portable(
    path: str | Path, work: Path, cwd: Path | None = None, folders: dict[str, Path] | None = None
) -> str:
    """A source path as recorded, the same wherever the repositories are checked out: relative
    to the GitOps work tree when inside it, else relative to the current directory (`cwd`,
    resolved) when inside that, else absolute; its folder resolved, its own name kept.
    `folders`: folders resolved already, by their path as given (filled as they are)."""
    given = Path(path)
    if given.name:
        parent = str(given.parent)
        known = folders.get(parent) if folders is not None else None
        if known is None:
            known = given.parent.resolve()
            if folders is not None:
                folders[parent] = known
        where = known / given.name
    else:
        where = given.resolve()
    for base in (work, cwd or Path.cwd().resolve()):
        if where.is_relative_to(base):  # it, or under it
            return where.relative_to(base).as_posix()
    return where.as_posix()


def is_under(origin: str, roots: Collection[str], recursive: bool = True) -> bool:
    """Whether a recorded source lies inside one of the roots (`.`: the whole work tree): in
    the folder itself, or with `recursive` anywhere under it (what reading the roots reads,
    kubeio.sources.yaml_files)."""
    for root in roots:
        if origin == root:
            return True
        if root == ".":
            rest = "" if origin.startswith("/") else origin
        else:
            prefix = root.rstrip("/") + "/"
            rest = origin[len(prefix) :] if origin.startswith(prefix) else ""
        if rest and (recursive or "/" not in rest):
            return True
    return False


def read_record(current: Mapping[str, str]) -> dict[str, str]:
    """The recorded source of each folder; an entry that is not a plain folder and path pair
    (a hand edit, a hostile push) is left out, so that folder is never removed."""
    text = current.get(SOURCES_FILE) if SOURCES_FILE in current else None
    if text is None:
        return {}
    try:
        loaded = json.loads(text)
    except (ValueError, RecursionError):
        return {}
    sources = loaded.get("sources") if isinstance(loaded, dict) else None
    if not isinstance(sources, dict):
        return {}
    return {
        k: v
        for k, v in sources.items()
        if isinstance(k, str) and isinstance(v, str) and k.count("/") == 1 and ".." not in k
    }


def record_text(record: Mapping[str, str]) -> str:
    """JSON, one folder a line: the text of `json.dumps(body, indent=1, sort_keys=True,
    ensure_ascii=False)`, written line by line with the C string encoder json.dumps uses for each
    string (with an indent json.dumps runs its Python encoder: 12 ms for 10,000 entries, against
    3 ms; YAML's dumper took 0.6 s). A property test holds the two texts equal."""
    if not record:
        body = {"kind": RECORD_KIND, "sources": {}}
        return json.dumps(body, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    text = _JSON_STRING
    lines = ",\n".join([f"  {text(k)}: {text(v)}" for k, v in sorted(record.items())])
    return f'{{\n "kind": {text(RECORD_KIND)},\n "sources": {{\n{lines}\n }}\n}}\n'


# A str as json.dumps(ensure_ascii=False) writes it (json.encoder's C function, as it uses).
_JSON_STRING = json.encoder.encode_basestring


def claims(
    ownership: Ownership, record: Mapping[str, str], another: Callable[[str, str], bool]
) -> dict[str, str]:
    """folder -> the refusal, for every folder this render's sources define whose recorded source
    is outside the roots and, by `another` (recorded, source now), a file that exists and is
    not the source now. One dict lookup per folder; only a folder whose recorded source is
    spelled otherwise than its source now costs more."""
    found: dict[str, str] = {}
    for key, origin in ownership.origins.items():
        owner = record.get(key)
        if owner is None or owner == origin or key in ownership.refused:
            continue
        if not is_under(owner, ownership.roots, ownership.recursive) and another(owner, origin):
            found[key] = (
                f"defined in {origin}, but its output belongs to {owner}, outside the sources "
                f"given; render {owner} to change it, or remove it there first"
            )
    return found


def another_file(work: Path, cwd: Path) -> Callable[[str, str], bool]:
    """Whether a recorded source (as `portable` wrote it: relative to the work tree or to the
    current directory, or absolute; either place counts) is a file that exists now and is not
    the file `origin` (spelled the same way), however each is spelled."""

    def another(recorded: str, origin: str) -> bool:
        found = [p for p in (work / recorded, cwd / recorded) if p.exists()]
        mine = [p for p in (work / origin, cwd / origin) if p.exists()]
        return bool(found) and not any(os.path.samefile(f, m) for f in found for m in mine)

    return another


def decide(
    gone: Collection[str],
    record: Mapping[str, str],
    ownership: Ownership,
    results: Sequence[Result],
) -> Removals:
    """Of the folders no source defines now (`gone`), those this render removes."""
    eligible = sorted(
        k for k in gone if k in record and is_under(record[k], ownership.roots, ownership.recursive)
    )
    outside = len(gone) - len(eligible)
    if not eligible:
        return Removals(outside=outside)
    failed = sum(1 for r in results if r.error is not None) + ownership.failures_elsewhere
    if failed:
        reason = f"the render had {failed} failure{'s' if failed > 1 else ''}: a render with a failure removes nothing"
        return Removals(withheld=tuple(eligible), reason=reason, outside=outside)
    limit = ownership.max_removals
    if limit is not None and len(eligible) > limit:
        reason = f"{len(eligible)} removals exceed --max-removals {limit}; pass --max-removals {len(eligible)} to make them"
        return Removals(withheld=tuple(eligible), reason=reason, outside=outside)
    return Removals(removed=tuple(eligible), outside=outside)


def origins_of(
    docs: Sequence[Document], work: Path, keys: Sequence[str | None] | None = None
) -> dict[str, str]:
    """folder -> the source it comes from now (the first definition; duplicates are refused).
    `keys`: each document's output_key, when the caller has them already."""
    found: dict[str, str] = {}
    paths: dict[str, str] = {}  # origin as read -> as recorded (a file holds many documents)
    cwd = Path.cwd().resolve()
    folders: dict[str, Path] = {}  # each folder resolved once (a file per model: 500 in one)
    keys = keys if keys is not None else [output_key(doc.obj) for doc in docs]
    for doc, key in zip(docs, keys, strict=True):
        if key is not None and key not in found:
            if doc.origin not in paths:
                paths[doc.origin] = portable(doc.origin, work, cwd, folders)
            found[key] = paths[doc.origin]
    return found


def roots_of(paths: Sequence[str], work: Path) -> list[str]:
    return sorted({portable(os.path.normpath(p), work) for p in paths})
