"""Reading YAML inputs: files and directories of objects, standard input (`-`), and the data
bundled with Runway. A `kind: List` (what `kubectl get -o yaml` prints) or a typed list
(`ModelDeploymentList`) stands for its items, each named by its index (`items[2]`).

Every failure is a SourceError naming the file (and the document) and the problem in one line.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from core.fields.errors import SourceError
from core.fields.paths import FieldPath
from core.model.kinds import (
    EMP_GROUP,
    EXTERNAL_MODEL_PROVIDER,
    GROUP,
    INFERENCE_PROVIDER_CONFIG,
    MODEL_DEPLOYMENT,
    NOT_RUNWAYS,
    VERSION,
)
from kubeio.yamlio import load_all

YAML_SUFFIXES = (".yaml", ".yml")
STDIN = "-"  # the path that means standard input, as kubectl -f - and most tools spell it
STDIN_ORIGIN = "<stdin>"  # how messages name it
LIST_KIND = "List"
# Runway's own API groups (any version) and the kinds it knows in each. Any other kind in them is
# a mistake (an error with a suggestion); a kind of any other group is someone else's (skipped).
RUNWAY_KINDS: dict[str, tuple[str, ...]] = {
    GROUP: (MODEL_DEPLOYMENT, INFERENCE_PROVIDER_CONFIG),
    EMP_GROUP: (EXTERNAL_MODEL_PROVIDER,),
}
SKIPPED = NOT_RUNWAYS  # why a document of another group is skipped
# A kind longer than this is no Kubernetes kind (its plural is a DNS label, at most 63
# characters): no suggestion is searched for it, and messages show its start only.
KIND_CHARS = 63


@dataclass(frozen=True, slots=True)
class Document:
    """One object from a file, with where it came from (for messages): the document, and for an
    item of a List the index of the item in each List around it."""

    origin: str
    index: int
    obj: dict[str, Any]
    items: tuple[int, ...] = ()

    @property
    def where(self) -> str:
        inside = f", {self.at}" if self.items else ""
        return f"{self.origin} (document {self.index + 1}{inside})"

    @property
    def kind(self) -> str:
        return f"{self.obj.get('apiVersion')} {self.obj.get('kind')}"

    @property
    def at(self) -> FieldPath:
        """The path of this object in its document: `items[2]`, `items[0].items[1]`, or empty."""
        path = FieldPath()
        for i in self.items:
            path = path.child("items").index(i)
        return path

    def field(self, path: str) -> str:
        """A field path of this object (a FieldError's, already text) as a path in its document:
        `spec.model.id` of the third item of a List is `items[2].spec.model.id`."""
        if not self.items:
            return path
        prefix = str(self.at)
        if not path:
            return prefix
        return prefix + path if path.startswith("[") else f"{prefix}.{path}"


def is_list(obj: dict[str, Any]) -> bool:
    """`kind: List`, or a typed list (`kind: ModelDeploymentList` with `items`), as kubectl
    reads them."""
    kind = obj.get("kind")
    return kind == LIST_KIND or (
        isinstance(kind, str) and kind.endswith(LIST_KIND) and kind != LIST_KIND and "items" in obj
    )


def expand_lists(docs: Iterable[Document]) -> Iterator[Document]:
    """Each document, or for a List each of its items (Lists inside Lists too), depth first in
    order. An item of a typed list without apiVersion or kind takes the list's (`kind:
    ModelDeploymentList` holds ModelDeployments), as the API server's list answers leave them
    out."""
    for doc in docs:
        stack = [doc]
        while stack:
            top = stack.pop()
            if not is_list(top.obj):
                yield top
                continue
            stack.extend(reversed(list(_items(top))))


def _items(doc: Document) -> Iterator[Document]:
    items = doc.obj.get("items")
    if items is None:
        return
    if not isinstance(items, list):
        raise SourceError(doc.where, f"{doc.obj.get('kind')}: items must be a list of objects")
    kind = doc.obj["kind"]
    implied = {"apiVersion": doc.obj.get("apiVersion"), "kind": kind[: -len(LIST_KIND)]}
    for i, item in enumerate(items):
        inner = Document(doc.origin, doc.index, item, (*doc.items, i))
        if not isinstance(item, dict):
            got = type(item).__name__
            raise SourceError(inner.where, f"is a {got}, not a Kubernetes object")
        if kind != LIST_KIND and not ("apiVersion" in item and "kind" in item):
            inner = Document(doc.origin, doc.index, implied | item, inner.items)
        yield inner


def in_namespace(
    docs: Iterable[Document], namespace: str | None, namespaced: Iterable[tuple[str, str]]
) -> list[Document]:
    """`docs`, each object of a namespaced kind (group, kind) without a namespace given
    `namespace` (a new dict; the input is not changed), as `kubectl apply -n` does; an object
    that names another namespace is a SourceError, as kubectl refuses it. None: as they are."""
    if namespace is None:
        return list(docs)
    kinds = set(namespaced)
    out = []
    for doc in docs:
        if (group_of(doc.obj.get("apiVersion")), doc.obj.get("kind")) not in kinds:
            out.append(doc)
            continue
        metadata = doc.obj.get("metadata")
        metadata = metadata if isinstance(metadata, dict) else {}
        given = metadata.get("namespace")
        if given not in (None, "", namespace):
            raise SourceError(
                doc.where,
                f"the object's namespace {given!r} does not match -n/--namespace {namespace!r}; "
                "remove one of them",
            )
        obj = doc.obj | {"metadata": metadata | {"namespace": namespace}}
        out.append(Document(doc.origin, doc.index, obj, doc.items))
    return out


@dataclass(frozen=True, slots=True)
class Kinds:
    """Documents in order, each marked by is_runway_kind: Runway's own, or skipped."""

    documents: list[Document]
    ours: list[bool]

    @property
    def runway(self) -> list[Document]:
        return [doc for doc, ours in zip(self.documents, self.ours, strict=True) if ours]

    @property
    def skipped(self) -> list[Document]:
        return [doc for doc, ours in zip(self.documents, self.ours, strict=True) if not ours]

    @property
    def notes(self) -> list[str]:
        """One line per skipped document, the same in every command that reads sources."""
        return [skip_note(doc) for doc in self.skipped]


def runway_documents(docs: Iterable[Document]) -> Kinds:
    """`docs`, each marked by is_runway_kind (the first error raised)."""
    docs = list(docs)
    return Kinds(docs, [is_runway_kind(doc) for doc in docs])


def is_runway_kind(doc: Document) -> bool:
    """The one rule of kinds for every command that reads sources (`validate`, `explain`,
    `render`): True for a kind Runway knows in its own API groups (RUNWAY_KINDS, any
    version); False for a kind of any other group, which the command skips with skip_note. An
    unknown kind in Runway's groups (`ModelDeploymnet`), or an apiVersion or kind that is not
    text, is a SourceError naming the document, with the closest known kinds."""
    api_version, kind = doc.obj.get("apiVersion"), doc.obj.get("kind")
    if not (isinstance(api_version, str) and api_version and isinstance(kind, str) and kind):
        raise SourceError(
            doc.where,
            f"apiVersion {_shown(api_version)} and kind {_shown(kind)}: a Kubernetes object "
            "names both, as text",
        )
    group = group_of(api_version)
    known = RUNWAY_KINDS.get(group or "")
    if known is None:
        return False
    if kind in known:
        return True
    raise SourceError(
        doc.where,
        f"{_shown(kind)} is not a kind of {group} (it has {', '.join(known)})" + _suggestion(kind),
    )


def skip_note(doc: Document) -> str:
    """`skipped KIND/NAME (WHERE): not a kind of Runway's API groups`."""
    metadata = doc.obj.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    return f"skipped {_shown(doc.obj.get('kind'))}/{_shown(name)} ({doc.where}): {SKIPPED}"


def _suggestion(kind: str) -> str:
    """`; did you mean airunway.ai/v1alpha1 ModelDeployment?`: the closest known kinds of every
    Runway group (a handful), compared without case; none for a kind too long to be one."""
    if len(kind) > KIND_CHARS:
        return ""
    known = {k.lower(): f"{g}/{VERSION} {k}" for g, kinds in RUNWAY_KINDS.items() for k in kinds}
    close = difflib.get_close_matches(kind.lower(), sorted(known), n=2)
    return f"; did you mean {' or '.join(known[c] for c in close)}?" if close else ""


def _shown(value: Any) -> str:
    """A value of a document as a message shows it: text as it is, else its repr, cut at
    KIND_CHARS characters."""
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= KIND_CHARS else f"{text[:KIND_CHARS]}..."


def group_of(api_version: Any) -> str | None:
    """The API group of an apiVersion (`airunway.ai/v1alpha1` -> `airunway.ai`; `v1` -> "")."""
    if not isinstance(api_version, str):
        return None
    group, slash, _ = api_version.rpartition("/")
    return group if slash else ""


def yaml_files(paths: Iterable[str], *, recursive: bool = True) -> list[Path]:
    """The files named, and the YAML files in the directories named, in a stable order: a
    directory's own files, and with `recursive` those of every folder under it too (`runway
    -R`, as `kubectl apply -R`). A file named is read as named; in a directory, a symbolic link
    is followed only when it leads inside one of the directories named (else a SourceError names
    it). A directory that yields no file, but has YAML files in its subfolders, is a SourceError
    saying to pass -R: a wrong folder in a CI gate is never a silent pass."""
    paths = list(paths)
    roots = _roots(paths)
    return [path for raw in paths for path in _files_of(raw, roots, recursive)]


def _roots(paths: Sequence[str]) -> list[Path]:
    return [Path(raw).resolve() for raw in paths if raw != STDIN and _is_dir(raw)]


def _is_dir(raw: str) -> bool:
    if not raw:
        # "" would be read as the working directory, and all of it walked
        raise SourceError(
            "''", "an empty path names nothing; name a file or a directory (. for this one)"
        )
    check_name(raw)
    try:
        return Path(raw).is_dir()
    except (OSError, ValueError) as err:  # a name too long, an unreadable parent, a NUL
        raise SourceError(raw, f"cannot read: {_reason(err)}") from None


def _reason(err: Exception) -> str:
    return err.strerror if isinstance(err, OSError) and err.strerror else str(err)


def _files_of(raw: str, roots: Sequence[Path], recursive: bool) -> list[Path]:
    """The one rule of which files a path names, for every command that reads sources."""
    path = Path(raw)
    if _is_dir(raw):
        try:
            # in Path order (its parts': comparing Paths themselves was a quarter of a walk)
            found = sorted(_walk(path, roots, recursive), key=lambda p: p.parts)
            if not found and not recursive:
                _missing_recursion(raw)
            return found
        except OSError as err:  # an entry that vanished or cannot be read during the walk
            where = printable(str(err.filename)) if err.filename else raw
            raise SourceError(where, f"cannot read: {_reason(err)}") from None
    if path.exists():
        return [path]
    raise SourceError(raw, "no such file or directory")


def _missing_recursion(raw: str) -> None:
    """A SourceError when the directory `raw`, read without -R, has YAML files in its
    subfolders (counted without following links): `models/` named where the files are in
    `models/prod/`."""
    deeper = sum(
        1
        for _, _, names in os.walk(raw)
        for name in names
        if os.path.splitext(name)[1] in YAML_SUFFIXES
    )
    if deeper:
        raise SourceError(
            printable(raw),
            f"no YAML files; {deeper} in subfolders: pass -R (--recursive) to read them",
        )


def _walk(top: Path, roots: Sequence[Path], recursive: bool = True) -> Iterator[Path]:
    """The YAML files in `top` (with `recursive`, under it), following links only into
    `roots`, each folder once."""
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
                is_dir = entry.is_dir()
                if is_dir and not recursive:
                    continue  # a subfolder is read with -R only, as kubectl's
                if entry.is_symlink():
                    target = path.resolve()
                    if not any(target == r or r in target.parents for r in roots):
                        raise SourceError(
                            printable(str(path)),
                            f"is a symbolic link to {printable(str(target))}, outside the source "
                            "directories given; Runway does not follow it (name the target itself)",
                        )
                if is_dir:
                    folders.append(path)
                elif entry.is_file() and path.suffix in YAML_SUFFIXES:
                    check_name(entry.path)  # a file it does not read may have any name
                    yield path


def check_name(path: str) -> None:
    """A SourceError for a path whose bytes are not UTF-8 (the operating system's bytes, kept by
    Python as lone surrogates), naming it with those bytes escaped (`src/\\xff.yaml`): Runway
    writes every source path into its output, records, digests and messages as UTF-8 text."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise SourceError(
            printable(path),
            "the name is not UTF-8 text; Runway reads sources only under UTF-8 names (rename it)",
        ) from None


def printable(path: str) -> str:
    """`path` as one line of text that can always be printed: each byte that is not UTF-8 as
    `\\xNN`, each character that is not printable (a newline, a control) as its Python escape."""
    text = os.fsencode(path).decode("utf-8", "backslashreplace")
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


def read_documents(
    paths: Iterable[str], *, stdin: TextIO | None = None, recursive: bool = True
) -> list[Document]:
    """Every non-empty YAML document in the given files and directories (which files: see
    yaml_files), Lists expanded (see expand_lists); `-` is `stdin`, read once (a SourceError
    when it is None: the caller reads no standard input)."""
    paths = list(paths)
    if paths.count(STDIN) > 1:
        raise SourceError(STDIN, "standard input can be read only once; name it once")
    roots = _roots(paths)
    docs: list[Document] = []
    for raw in paths:
        if raw == STDIN:
            docs += parse_documents(_read_stdin(stdin), STDIN_ORIGIN)
            continue
        for path in _files_of(raw, roots, recursive):
            docs += parse_documents(_read(path), str(path))
    return list(expand_lists(docs))


def _read_stdin(stdin: TextIO | None) -> str:
    if stdin is None:
        raise SourceError(STDIN, "this command does not read standard input; name a file")
    try:
        return stdin.read()
    except (OSError, UnicodeDecodeError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise SourceError(STDIN_ORIGIN, f"cannot read: {reason}") from None


def parse_stream(
    text: str, origin: str, strings: dict[str, str] | None = None
) -> tuple[list[Document], int]:
    """The objects in one YAML stream (as parse_documents gives them), and how many documents
    it holds, empty ones included; `strings`: as kubeio.yamlio.load_all takes them."""
    loaded = load_all(text, origin, strings)
    return list(_objects(loaded, origin, 0)), len(loaded)


# A line that starts a document (`---` alone or before a space), and lines that make a stream
# more than documents one after the other (directives, document end markers).
_DOCUMENT_START = re.compile(r"(?m)^(?=---(?:[ \t]|$))")
_NOT_SPLIT = re.compile(r"(?m)^(?:%|\.\.\.(?:[ \t]|$))")


def split_stream(text: str) -> list[str] | None:
    """`text` cut where each document marker (`---` at the start of a line) starts a document,
    the pieces in order (the first may hold no document); None when the stream holds
    directives or document end markers, which may tie documents together. YAML ends any
    scalar or collection at such a line, so each piece holds whole documents, and parsing the
    pieces one by one gives the documents the whole stream gives (a property test holds it)."""
    if _NOT_SPLIT.search(text) is not None:
        return None
    return [piece for piece in _DOCUMENT_START.split(text) if piece]


def parse_documents(text: str, origin: str) -> Iterator[Document]:
    """The objects in one YAML stream; anything but a mapping per document is an error."""
    return _objects(load_all(text, origin), origin, 0)


def _objects(loaded: list[Any], origin: str, start: int) -> Iterator[Document]:
    """The documents a stream loaded to, numbered from `start` (the stream may be a piece of a
    longer one): empty ones left out, anything but a mapping an error."""
    for index, obj in enumerate(loaded, start):
        if obj is None:
            continue
        if not isinstance(obj, dict):
            got = type(obj).__name__
            raise SourceError(origin, f"document {index + 1} is a {got}, not a Kubernetes object")
        if not all(isinstance(k, str) for k in obj):
            raise SourceError(origin, f"document {index + 1} has a key that is not a string")
        yield Document(origin, index, obj)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise SourceError(str(path), f"cannot read: {_reason(err)}") from None
