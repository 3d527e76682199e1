"""The rendered tree, path -> text: each output folder (rendered now, or kept as it is on disk),
the kustomizations per namespace and at the top, and the record of sources."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from kubeio.yamlio import dump
from renderer.git.safefs import read_text
from renderer.output.folders import Result, kustomization
from renderer.output.ownership import SOURCES_FILE, Ownership, record_text


class Tree(Mapping[str, str]):
    """The rendered tree, path -> text. Paths in `unchanged` hold what `current` (the tree on
    disk) holds, and are read from it only when asked for; paths in `scanned` were found free of
    credentials when rendered."""

    def __init__(
        self,
        texts: dict[str, str],
        current: Mapping[str, str],
        unchanged: frozenset[str],
        scanned: frozenset[str] = frozenset(),
    ) -> None:
        self._texts = texts
        self._current = current
        self.unchanged = unchanged
        self.scanned = scanned
        self._order = sorted([*texts, *unchanged])

    def __getitem__(self, path: str) -> str:
        if path in self._texts:
            return self._texts[path]
        if path in self.unchanged:
            return self._current[path]
        raise KeyError(path)

    def __iter__(self) -> Iterator[str]:
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._order)

    def __contains__(self, path: object) -> bool:
        return path in self._texts or path in self.unchanged

    @property
    def current(self) -> Mapping[str, str]:
        """The tree on disk this one was rendered against."""
        return self._current

    @property
    def written(self) -> Mapping[str, str]:
        """The texts rendered this time (what a write of this tree writes, where it writes)."""
        return self._texts


class Folder(Mapping[str, str]):
    """One folder of `current`, name -> text, read only when asked for."""

    def __init__(self, current: Mapping[str, str], folder: str, held: Sequence[str]) -> None:
        self._current, self._folder, self._names = current, folder, held  # in name order

    def __getitem__(self, name: str) -> str:
        if name not in self._names:
            raise KeyError(name)
        return self._current[f"{self._folder}/{name}"]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def paths(self) -> list[str]:
        return [f"{self._folder}/{name}" for name in self._names]


class WrittenFolder(Folder):
    """A folder the write stage wrote as it was rendered (renderer.stages): its names and the
    digest of its files (renderer.reuse.digests.folder_digest, taken from the texts before they
    were let go); each text read from disk under `root` when asked for, and never kept. The
    tree takes it as it takes a folder as on disk: its paths are not written again."""

    def __init__(self, root: Path, folder: str, held: Sequence[str], digest: str) -> None:
        super().__init__({}, folder, held)
        self._root = root
        self.folder_digest = digest

    def __getitem__(self, name: str) -> str:
        if name not in self._names:
            raise KeyError(name)
        return read_text(self._root / self._folder / name)


def folders_of(current: Mapping[str, str], paths: Iterable[str]) -> dict[str, Folder]:
    """The output folders (namespace/name) of `current`, each a Folder; `paths` are its paths
    in path order."""
    names: dict[str, list[str]] = {}
    for path in paths:
        parts = path.split("/")
        if len(parts) == 3:
            names.setdefault(f"{parts[0]}/{parts[1]}", []).append(parts[2])
    return {folder: Folder(current, folder, held) for folder, held in names.items()}


def tree_folders(
    results: Sequence[Result], kept: Mapping[str, Mapping[str, str]]
) -> dict[str, Mapping[str, str]]:
    """Each folder of the tree, name -> text: the rendered one, or for a failed object the kept
    previous one (if any)."""
    folders: dict[str, Mapping[str, str]] = {}
    for result in results:
        if result.error is None:
            folders[result.key] = result.files
        elif result.key in kept:
            folders[result.key] = kept[result.key]
    return folders


def namespace_files(folders: Iterable[str]) -> dict[str, str]:
    """The kustomizations per namespace and at the top, so `kubectl kustomize` builds all."""
    namespaces: dict[str, list[str]] = {}
    for key in sorted(folders):
        namespace, name = key.split("/", 1)
        namespaces.setdefault(namespace, []).append(name)
    files = {
        f"{ns}/kustomization.yaml": dump(kustomization(names)) for ns, names in namespaces.items()
    }
    files["kustomization.yaml"] = dump(kustomization(sorted(namespaces)))
    return files


def build_tree(
    results: Sequence[Result],
    views: Mapping[str, Folder],
    current: Mapping[str, str],
    *,
    kept: Mapping[str, Folder] | None = None,
) -> Tree:
    """The tree of `results` (tree_folders plus namespace_files), where a folder taken as it is
    on disk is not read; `kept`: folders of no source given now, which stay as they are, and so
    do files outside any folder that are not Runway's (a README)."""
    texts: dict[str, str] = {}
    unchanged: set[str] = set()
    scanned = {r.key for r in results if r.scanned}
    folders = {**tree_folders(results, views), **(kept or {})}
    if kept is not None:
        unchanged.update(p for p in current if p.count("/") < 2 and not _is_runways(p))
    for folder, held in folders.items():
        if isinstance(held, Folder):  # as on disk: an unchanged or a failed object's folder
            unchanged.update(held.paths())
        else:
            texts.update((f"{folder}/{name}", text) for name, text in held.items())
    checked = frozenset(p for p in texts if p.rsplit("/", 1)[0] in scanned)
    texts.update(namespace_files(folders))
    return Tree(texts, current, frozenset(unchanged), checked)


def with_record(
    tree: Tree,
    kept: Mapping[str, Folder],
    record: Mapping[str, str],
    ownership: Ownership,
) -> Tree:
    """The tree with its SOURCES_FILE: this render's source for each folder it holds for a
    source given now, the recorded one for each folder it kept as it was."""
    held = {key for path in tree for key in [path.rsplit("/", 1)[0]] if key.count("/") == 1}
    given = {k for k in held if k in ownership.origins and k not in ownership.refused}
    now = {k: ownership.origins[k] for k in given}
    before = {k: record[k] for k in held if k in record and (k in kept or k not in now)}
    merged = {**before, **now}
    if not merged:
        return tree
    texts = {**tree.written, SOURCES_FILE: record_text(merged)}
    return Tree(texts, tree.current, tree.unchanged - {SOURCES_FILE}, tree.scanned)


def _is_runways(path: str) -> bool:
    """A file outside the folders that Runway writes: the kustomizations and its record."""
    return path.rsplit("/", 1)[-1] == "kustomization.yaml" or path == SOURCES_FILE
