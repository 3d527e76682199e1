"""The render stamp: a render that would change nothing is answered without rendering.

After a render that committed (or found nothing to commit) and whose every ModelDeployment the
next render would reuse as it is (renderer.reuse.incremental, Rendered.stable), the stamp records, in
.git (never committed):
- Runway's fingerprint, and `inputs`: the digest of everything else the render read besides the
  tree: the settings that shape the output, the working directory, and the path and bytes of
  every source, provider-config and CRD file;
- `tree`: the git tree HEAD holds at the output folder;
- the report every object's result gave (names of its files, error, warnings, engine, provider,
  schemas) and the removals as a render of that tree would report them.

A render with the same inputs asks git whether the output folder holds exactly that tree:
`git status` of the folder is empty (nothing staged, changed, deleted, untracked or ignored:
git's index is the stat cache, and git compares by content what a stat cannot settle) and
HEAD's tree there is the recorded one. Then the report is the recorded one (every object reused,
no file changed), and nothing is parsed, rendered, written or committed: that is what a render
would have done, since a render's output is a function of its inputs and the tree (outputs are
deterministic). Any other answer, or an unreadable stamp, means a render as usual.

What git's stat cache cannot see, the stamp cannot either: git as Debian builds it compares
whole seconds, so a file edited to the same size in the same second as its last change of
ctime, with its mtime put back, reads as unchanged (files git writes or Runway writes are
"racily clean" for that second, and git compares those by content). `runway render --full`
compares every file by content.

The source files are keyed the same way (renderer.reuse.sourcekeys): a file's bytes are read
and digested only when its Stat (with its ctime, which no edit keeps) differs from the one
recorded when they were last read, and a Stat taken within a second of the file's last change
is not recorded; `--full` reads every source file.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from renderer.git.runner import Repo
from renderer.git.safefs import read_text
from renderer.output.folders import Result, report_line
from renderer.output.ownership import Removals
from renderer.reuse.digests import builtin_schemas_version, digest
from renderer.reuse.rendercache import Shared
from renderer.reuse.sourcekeys import SourceKeys
from renderer.reuse.store import NextPickle, Store, cache_key, types_of
from renderer.settings import Asked, RenderSettings, Target, checked_path

STAMP_FORMAT = 5
ROW_FIELDS = 8


class StampRow(NamedTuple):
    """A result as the stamp keeps it (a plain tuple of these fields in the file)."""

    key: str
    names: tuple[str, ...]  # its files' names
    error: str | None
    warnings: tuple[str, ...]
    engine: str | None
    provider: str | None
    schemas: tuple[tuple[str, str], ...]
    # its line of the JSON report (renderer.output.folders.report_line: encoding 10,000 results
    # again was a tenth of a render of one changed ModelDeployment)
    line: str


class Source(NamedTuple):
    """A source file as the stamp keeps it (a plain tuple of these fields in the file)."""

    path: str  # as read
    key: str  # its file_key
    namespaces: tuple[str, ...]  # the namespaces its documents render into
    configs: bool  # it holds an InferenceProviderConfig


@dataclass(frozen=True, slots=True)
class Stamp:
    fingerprint: str  # Runway's (renderer.reuse.digests.runway_fingerprint)
    inputs: str  # stamp_inputs
    tree: str
    rows: tuple[StampRow, ...]
    removals: Removals
    frame: str = ""  # stamp_frame: the inputs but the bytes of the source files
    sources: tuple[Source, ...] = ()  # the source files, in the order the render read them

    @classmethod
    def of(
        cls,
        fingerprint: str,
        inputs: str,
        tree: str,
        results: Sequence[Result],
        removals: Removals,
        *,
        frame: str = "",
        sources: Sequence[Source] = (),
    ) -> Stamp:
        """The stamp of a render's results; the removals as the next render reports them (what
        this one removed is gone: only the withheld and the outside count stay)."""
        one = Shared()  # equal values pickled once
        rows = tuple(
            r.files.row  # a result this stamp's report came from: its row as read
            if isinstance(r.files, _Listed)
            else StampRow(
                r.key,
                tuple(one(n) for n in sorted(r.files)),
                r.error,
                one(r.warnings),
                one(r.engine),
                one(r.provider),
                one(r.schemas),
                report_line(r),
            )
            for r in results
        )
        return cls(
            fingerprint,
            inputs,
            tree,
            rows,
            Removals((), removals.withheld, removals.reason, removals.outside),
            frame,
            tuple(sources),
        )

    @classmethod
    def load(cls, path: Path, inputs: str | None = None, frame: str | None = None) -> Stamp | None:
        """The stamp at `path`; None when there is none, when it is unreadable or of another
        shape, or when it was made from other `inputs` and (given) another `frame` (then its
        report, the bulk of the file, is not read)."""

        def shape(read: NextPickle) -> Stamp | None:
            header = read()
            if header[0] != STAMP_FORMAT:
                return None
            _, fingerprint, recorded, tree, framed, raw_sources = header
            if not all(isinstance(v, str) for v in (fingerprint, recorded, tree, framed)):
                raise TypeError("a digest that is not text")
            if inputs is not None and recorded != inputs and framed != frame:
                return None
            sources = _sources(raw_sources)
            rows, removals = read()
            return cls(
                fingerprint, recorded, tree, _rows(rows), _removals(removals), framed, sources
            )

        return Store.load(path, shape)

    def save(self, path: Path) -> None:
        """Two pickles: the digests, then the report (read only when the digests agree)."""
        removals = self.removals
        fields = (removals.removed, removals.withheld, removals.reason, removals.outside)
        sources = tuple(map(tuple, self.sources))
        header = (STAMP_FORMAT, self.fingerprint, self.inputs, self.tree, self.frame, sources)
        Store.save(path, header, (tuple(map(tuple, self.rows)), fields))

    def results(self, root: Path, keep: Callable[[str], bool] | None = None) -> list[Result]:
        """The recorded results (those whose keys `keep` keeps), each folder's files read from
        `root` only when asked for."""
        recorded = Result.recorded
        return [
            recorded(
                key,
                _Listed(f"{root}/{key}", row),
                error=error,
                warnings=warnings,
                engine=engine,
                provider=provider,
                schemas=schemas,
            )
            for row in self.rows
            if keep is None or keep(row.key)
            for key, _, error, warnings, engine, provider, schemas, _ in (row,)
        ]


def stamp_inputs(settings: Mapping[str, Any], read: Sequence[str]) -> str:
    """The digest of a render's inputs besides the tree: `settings` (name -> a value with a
    stable repr), the working directory, and `read`, the file_key (renderer.reuse.parsecache) of
    every source and provider-config file in the order the render read them."""
    parts: list[bytes | str] = [os.getcwd(), *read]
    parts += [f"{name}={settings[name]!r}" for name in sorted(settings)]
    return digest(*parts)


def stamp_frame(
    settings: Mapping[str, Any], sources: Sequence[str], providers: Sequence[str]
) -> str:
    """The digest of a render's inputs but the bytes of its source files: `settings` (as
    stamp_inputs), the working directory, the paths of the source files in the order read, and
    the file_key of every provider-config file (`providers`)."""
    parts: list[bytes | str] = [os.getcwd(), str(len(sources)), *sources, *providers]
    parts += [f"{name}={settings[name]!r}" for name in sorted(settings)]
    return digest(*parts)


def stamped_settings(asked: Asked, target: Target, schemas: str | None) -> dict[str, Any]:
    """The settings that shape a render's output and its report (besides the files it reads),
    with `schemas`, the digest of the CRDs named (named_schemas)."""
    shard = asked.shard
    return {
        "sources": asked.sources,
        "repo": str(Path(target.repo).resolve()),
        "path": checked_path(target.path),
        "providers": asked.providers,
        "crds": schemas,
        "gateway": asked.gateway,
        "max_removals": asked.max_removals,
        "shard": None if shard is None else (shard.index, shard.count),
        "recursive": asked.recursive,
        "builtin-schemas": builtin_schemas_version(),
    }


def named_schemas(asked: Asked, schema_digest: str) -> str | None:
    """The digest of the schemas in force when CRDs were named (--crds, --crds-from-cluster);
    the schema pack is part of Runway's fingerprint."""
    return schema_digest if asked.crds or asked.crds_from_cluster else None


def stamp_path(git_dir: Path, settings: RenderSettings) -> Path:
    """One stamp per output folder, and per shard of it, as the render cache."""
    return Store(git_dir).stamp(cache_key(settings))


def file_keys(
    paths: Sequence[str], keys: SourceKeys, *, recursive: bool = True
) -> list[tuple[str, str]]:
    """The path and file_key of each file that reading `paths` reads (folders walked as a
    render walks them, with every folder under them when `recursive`), in order: only files
    whose Stats changed are read (renderer.reuse.sourcekeys: `keys`, the render's)."""
    found = [(str(f.path), f.key) for f in keys.files(paths, recursive=recursive)]
    keys.save()
    return found


def head_tree(repo: Repo, subdir: str) -> str | None:
    found = repo.git("rev-parse", "-q", "--verify", f"HEAD:{subdir}", check=False)
    return found.stdout.strip() if found.returncode == 0 else None


def _rows(raw: Any) -> tuple[StampRow, ...]:
    """The recorded results, each field of the type it must have (else TypeError): the report
    is printed from them. Checked a field at a time over every row (a row at a time was 10 ms
    of 10,000); the warnings and schemas most rows share (one object, as saved) are checked
    once. The rows are kept as read."""
    rows = tuple(raw)
    if not types_of(rows) <= {tuple} or any(len(row) != ROW_FIELDS for row in rows):
        raise TypeError("a result that is not a row")
    keys, names, errors, warnings, engines, providers, schemas, lines = (
        zip(*rows, strict=True) if rows else ((),) * ROW_FIELDS
    )
    if not types_of(names) <= {tuple} or not types_of(keys, lines, *names) <= {str}:
        raise TypeError("a result field of the wrong type")
    if not types_of(errors, engines, providers) <= {str, type(None)}:
        raise TypeError("a result field of the wrong type")
    for shared in {id(w): w for w in warnings}.values():
        if type(shared) is not tuple or not types_of(shared) <= {str}:
            raise TypeError("warnings that are not texts")
    for shared in {id(s): s for s in schemas}.values():
        if type(shared) is not tuple or not types_of(shared) <= {tuple}:
            raise TypeError("schemas that are not pairs")
        if any(len(pair) != 2 for pair in shared) or not types_of(*shared) <= {str}:
            raise TypeError("a schema that is not a pair of texts")
    return tuple(map(StampRow._make, rows))


def _texts(raw: Any) -> tuple[str, ...]:
    found = tuple(raw)
    if not all(isinstance(t, str) for t in found):
        raise TypeError("a result field of the wrong type")
    return found


def _sources(raw: Any) -> tuple[Source, ...]:
    """The recorded source files, each field of the type it must have (else TypeError);
    checked a field at a time over every row, as the results are (_rows)."""
    rows = tuple(raw)
    if types_of(rows) - {tuple, list} or any(len(row) != len(Source._fields) for row in rows):
        raise TypeError("a source that is not a row")
    paths, keys, names, configs = zip(*rows, strict=True) if rows else ((),) * 4
    if types_of(paths, keys) - {str} or types_of(names) - {tuple, list}:
        raise TypeError("a source field of the wrong type")
    if types_of(*names) - {str} or types_of(configs) - {bool}:
        raise TypeError("a source field of the wrong type")
    return tuple(map(Source._make, zip(paths, keys, map(tuple, names), configs, strict=True)))


def _removals(raw: Any) -> Removals:
    removed, withheld, reason, outside = raw
    texts = (*removed, *withheld)
    if not all(isinstance(t, str) for t in texts) or type(outside) is not int:
        raise TypeError("a removal field of the wrong type")
    if reason is not None and not isinstance(reason, str):
        raise TypeError("a removal reason that is not text")
    return Removals(tuple(removed), tuple(withheld), reason, outside)


def recorded_line(result: Result) -> str | None:
    """The line of the JSON report the stamp recorded for `result`, when it is one of the
    stamp's (Stamp.results); None for any other."""
    return result.files.row.line if isinstance(result.files, _Listed) else None


class _Listed(Mapping[str, str]):
    """One folder's files by name (as its stamp `row` lists them), each read from disk when
    first asked for."""

    def __init__(self, folder: str, row: StampRow) -> None:
        self._folder, self._names, self.row = folder, row.names, row

    def __getitem__(self, name: str) -> str:
        if name not in self._names:
            raise KeyError(name)
        return read_text(f"{self._folder}/{name}")

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)
