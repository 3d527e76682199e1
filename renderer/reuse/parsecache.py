"""Caches of parsed inputs, in .git: source files by content, and anything built from inputs
whose digest names the entry (the parsed upstream schemas)."""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from core.fields.errors import SourceError
from kubeio.sources import Document, expand_lists, parse_stream, split_stream
from renderer.pool import fork_pool
from renderer.reuse.digests import digest, object_digest
from renderer.reuse.sourcekeys import SourceFile, SourceKeys
from renderer.reuse.store import NextPickle, Store

# Unparsed source bytes from which a render parses them in a pool (ParsedSources.prefetch): a
# pool costs ~0.1 s, and a file of 500 ModelDeployments takes ~0.06 s to parse.
PREFETCH_BYTES = 1 << 20


# A piece of a source file, parsed: how many documents it holds (empty ones included), each
# object with its index in the piece, and each object's digest.
Piece = tuple[int, list[tuple[int, dict[str, Any]]], list[str | None]]


class ParsedSources:
    """Source files parsed once per content: the documents of each YAML file and each object's
    canonical digest, pickled in a folder (inside .git), one entry per file path (named by the
    digest of Runway's fingerprint and the path) holding the file's key and its documents piece
    by piece (kubeio.sources.split_stream). A file whose key changed is parsed again piece by
    piece, and a piece the entry holds with the same text is not: an edit of one
    ModelDeployment in a file of 500 parses one (0.045 -> 0.004 s). Entries of files not read
    this time are dropped by `finish`. Without a folder, or with an unreadable entry, files
    are parsed as usual."""

    def __init__(
        self,
        folder: Path | None,
        fingerprint: str,
        *,
        by_stat: bool = True,
        keys: SourceKeys | None = None,
    ) -> None:
        self.folder = folder
        self.fingerprint = fingerprint
        self.digests: dict[int, str] = {}  # id(object) -> digest(canonical(object))
        self.pending: dict[str, Any] = {}  # parsed this time, stored by `finish`
        self.read_keys: list[
            str
        ] = []  # file_key of every file read, in order (renderer.reuse.stamp)
        self.read_paths: list[str] = []  # and its path
        # entries a worker parsed (prefetch), until `documents` takes them
        self._prefetched: dict[str, tuple[str, list[tuple[str, Piece]]]] = {}
        self._entries: dict[str, tuple[str, list[tuple[str, Piece]]] | None] = {}  # as read
        # files keyed by their Stats (renderer.reuse.sourcekeys): `keys`, those the render
        # asked already, else a record of its own; without `by_stat`, every file is read
        self._keys = keys or SourceKeys.within(folder, trust=by_stat)

    def read(self, paths: Sequence[str]) -> list[Document]:
        """The documents of the files, each `kind: List` as its items (kubeio.sources)."""
        docs: list[Document] = []
        for found in self.files(paths):
            docs += self.documents(found)
        return list(expand_lists(docs))

    def files(self, paths: Sequence[str], *, recursive: bool = True) -> list[SourceFile]:
        """The files reading `paths` reads (folders walked as kubeio.sources walks them, with
        every folder under them when `recursive`), each read and keyed, in order; their parsed
        documents stay cached whether asked for or not."""
        found = self._keys.files(paths, recursive=recursive)
        for path, _, key in found:
            self.read_keys.append(key)
            self.read_paths.append(str(path))
        return found

    def prefetch(self, files: Sequence[SourceFile], workers: int) -> None:
        """Parse the `files` the cache does not hold as they are, in a pool of `workers` forked
        processes when there is enough to parse to pay for one (PREFETCH_BYTES), while this
        process waits: the parse of a first render of 10,000 ModelDeployments is a tenth of it,
        and nothing else runs then (1.56 -> 0.90 s). Each worker answers a file's entry
        pickled; a file a worker could not parse is left to `documents`, which parses it here
        and says why it cannot be read."""
        todo = [found for found in files if not self._holds(found)]
        if workers < 2 or len(todo) < 2:
            return
        todo = [found._replace(data=found.content()) for found in todo]
        if sum(len(found.content()) for found in todo) < PREFETCH_BYTES:
            return
        # the largest first, so that no worker is left with a large file at the end
        todo.sort(key=lambda found: len(found.content()), reverse=True)
        tasks = [(self.folder, self.fingerprint, found) for found in todo]
        with fork_pool(min(workers, len(todo))) as pool:
            answers = pool.imap(_parsed_pieces, tasks, chunksize=1)
            for found, answer in zip(todo, answers, strict=True):
                if answer is not None:  # unpickled at once: each answer's bytes freed
                    self._prefetched[self._name(found.path)] = pickle.loads(answer)

    def _holds(self, source: SourceFile) -> bool:
        known = self._entry(self._name(source.path))
        return known is not None and known[0] == source.key

    def documents(self, source: SourceFile) -> list[Document]:
        """One file's documents (not yet expanded: see `read`), from the cache or parsed."""
        path, _, key = source
        name = self._name(path)
        # an entry read before (prefetch) is not kept: a stale one held the old objects alive
        known = self._entries.pop(name) if name in self._entries else self._read_entry(name)
        prefetched = self._prefetched.pop(name, None)
        if prefetched is not None and prefetched[0] == key:
            self.pending[name] = prefetched
            return self._documents(str(path), prefetched[1])
        if known is not None and known[0] == key:
            return self._documents(str(path), known[1])
        try:
            text = source.content().decode("utf-8")
        except UnicodeDecodeError as err:
            raise SourceError(str(path), f"cannot read: {err}") from None
        pieces = self._pieces(text, str(path), dict(known[1]) if known is not None else {})
        self.pending[name] = (key, pieces)
        return self._documents(str(path), pieces)

    def _pieces(self, text: str, origin: str, known: dict[str, Piece]) -> list[tuple[str, Piece]]:
        """The stream's pieces, each (digest of its text, its documents): as `known` holds
        them, or parsed. A piece that does not parse on its own, or a stream that cannot be
        cut, is parsed whole (then an error names the document as the whole stream counts)."""
        cut = split_stream(text)
        if cut is not None:
            try:
                return self._parse(cut, origin, known)
            except SourceError:
                pass
        return self._parse([text], origin, {})

    def _parse(
        self, pieces: Sequence[str], origin: str, known: dict[str, Piece]
    ) -> list[tuple[str, Piece]]:
        out, strings = [], dict[str, str]()  # equal strings one object across the pieces
        for piece in pieces:
            named = digest(piece)
            found = known.get(named)
            if found is None:
                docs, count = parse_stream(piece, origin, strings)
                digests = [object_digest(d.obj) for d in docs]
                # Plain pairs, not Documents: unpickling 10,000 dataclasses cost 0.1 s.
                found = (count, [(d.index, d.obj) for d in docs], digests)
            out.append((named, found))
        return out

    def _documents(self, origin: str, pieces: Sequence[tuple[str, Piece]]) -> list[Document]:
        docs, start = [], 0
        for _, (count, pairs, digests) in pieces:
            for (index, obj), known in zip(pairs, digests, strict=True):
                docs.append(Document(origin, start + index, obj))
                if known:
                    self.digests[id(obj)] = known
            start += count
        return docs

    def _entry(self, name: str) -> tuple[str, list[tuple[str, Piece]]] | None:
        """The cached key and pieces of a file, or None (none, or unreadable: parsed again);
        each entry read once."""
        if name not in self._entries:
            self._entries[name] = self._read_entry(name)
        return self._entries[name]

    def _read_entry(self, name: str) -> tuple[str, list[tuple[str, Piece]]] | None:
        entry = self.folder / name if self.folder is not None else None
        if entry is None or not entry.is_file():
            return None
        return Store.load(entry, _entry_shape)  # a damaged entry is parsed again

    def _name(self, path: Path) -> str:
        return f"{digest(self.fingerprint, str(path))}.pickle"

    def _store(self, entry: Path, value: Any) -> None:
        # equal strings are one object already (kubeio.yamlio): pickle writes each once
        Store.save(entry, value, best_effort=True)

    def finish(self, folder: Path) -> None:
        """Store what was parsed this time in `folder` (the repository may not have existed when
        the sources were read) and drop the entries of files not read this time."""
        for name, value in self.pending.items():
            self._store(folder / name, value)
        self.pending.clear()
        # the entries are those of the files the last render read: when these are the same
        # files, there is nothing to drop (a render killed before saving the record leaves the
        # last one's, so the next drops what it must)
        listing = digest(*self.read_paths)
        if folder.is_dir() and listing != self._keys.listing():
            used = {self._name(Path(path)) for path in self.read_paths}
            for entry in folder.iterdir():
                if entry.name not in used:
                    entry.unlink(missing_ok=True)
        self._keys.save(folder, keep=set(self.read_paths), listing=listing)


def _parsed_pieces(task: tuple[Path | None, str, SourceFile]) -> bytes | None:
    """A pool worker's share of ParsedSources.prefetch: a file's entry (its key and pieces,
    those of its cached entry whose text is the same taken from it), pickled; None when the
    file is not UTF-8 or does not parse (the render parses it again, and says why)."""
    folder, fingerprint, source = task
    try:
        text = source.content().decode("utf-8")
        parsing = ParsedSources(folder, fingerprint)
        known = parsing._entry(parsing._name(source.path))
        pieces = parsing._pieces(text, str(source.path), dict(known[1]) if known else {})
        return pickle.dumps((source.key, pieces), pickle.HIGHEST_PROTOCOL)
    except Exception:  # anything: told by the parse that follows in the render
        return None


def _entry_shape(read: NextPickle) -> tuple[str, list[tuple[str, Piece]]]:
    key, pieces = read()
    if not isinstance(key, str) or not isinstance(pieces, list):
        raise TypeError("an entry of another shape")
    return key, pieces
