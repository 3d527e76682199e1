"""The digests incremental rendering keys on: of inputs, of objects, of files and of Runway itself.

A ModelDeployment's output is a function of its source object, its previously rendered hydrated
object (stickiness) and inputs shared by every object: Runway itself, the provider configs, the
pins, the schemas, the gateway settings. `inputs_digest` folds the shared inputs, named, into one
digest; `render_key` adds the per-object ones.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import core
import kubeio
import providers
import renderer
from kubeio.files import atomic_write

# The packages whose code and data rendering runs (cli/ only parses and prints): a change to any
# file in them must invalidate every cached output.
RENDERING_PACKAGES: tuple[ModuleType, ...] = (core, providers, kubeio, renderer)
# pyproject.toml's version, as the installed distribution's metadata gives it (a unit test holds
# the three equal): asking importlib.metadata costs 24 ms, a quarter of a re-render's Python.
RUNWAY_VERSION = "0.1.0"


def digest(*parts: bytes | str) -> str:
    """One digest of several byte strings (length-prefixed, so boundaries cannot shift)."""
    h = hashlib.blake2b(digest_size=20)
    for part in parts:
        data = part.encode("utf-8") if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def canonical(obj: Any) -> str:
    """A stable text of a YAML-loaded object; types JSON lacks keep their type name."""
    return json.dumps(
        obj,
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        default=lambda v: f"<{type(v).__name__}>{v!r}",
    )


def inputs_digest(inputs: Mapping[str, bytes | str]) -> str:
    """The shared inputs of rendering, by name: adding an input is one more entry."""
    return digest(*(part for name in sorted(inputs) for part in (name, inputs[name])))


def files_digest(paths: Path | Sequence[Path]) -> str:
    """The bytes of the files (or of every file under a folder), by relative path."""
    roots = [paths] if isinstance(paths, Path) else paths
    parts: list[bytes | str] = []
    for root in roots:
        found = [root]
        if root.is_dir():
            found = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix != ".pyc")
        for path in found:
            # the name's bytes (os.fsencode: UTF-8 for a UTF-8 name, so digests stay as they
            # were), so that a name that is not UTF-8 hashes too, and the reader names it
            name = path.relative_to(root) if root.is_dir() else Path(path.name)
            parts += [os.fsencode(name), path.read_bytes()]
    return digest(*parts)


def source_fingerprint(packages: Sequence[Path], version: str) -> str:
    """Runway's own version: the package version and the bytes of its code and data."""
    return digest(version, files_digest(packages))


def rendering_folders() -> list[Path]:
    """The folders of RENDERING_PACKAGES."""
    return [Path(str(package.__file__)).parent for package in RENDERING_PACKAGES]


def runway_fingerprint(memo: Path | None = None) -> str:
    """Runway's own version: the package version and the bytes of the code and data that
    rendering runs (core/, providers/ with their configs and catalogs, kubeio/ with the pins it
    loads, and renderer/ with its schema pack). With `memo` (a file in .git), it is kept there
    under the Stats of those files (path, size, inode, mtime and ctime in nanoseconds), and read
    back while they are the same: hashing the 3.4 MB took 10 ms of every render."""
    folders = rendering_folders()
    if memo is None:
        return source_fingerprint(folders, RUNWAY_VERSION)
    key = digest(RUNWAY_VERSION, *map(repr, map(_stats_of_files, folders)))
    try:
        kept = memo.read_text().split()
        if len(kept) == 2 and kept[0] == key:
            return kept[1]
    except (OSError, UnicodeDecodeError):
        pass
    found = source_fingerprint(folders, RUNWAY_VERSION)
    with contextlib.suppress(OSError):  # no memo: computed again next time
        atomic_write(memo, f"{key} {found}\n".encode())
    return found


def _stats_of_files(root: Path) -> list[tuple[str, int, int, int, int]]:
    """Each file under `root` files_digest reads (its path under `root`), with its Stat."""
    found = []
    for folder, folders, files in os.walk(root):
        folders.sort()
        for name in sorted(files):
            if not name.endswith(".pyc"):
                path = os.path.join(folder, name)
                st = os.stat(path)
                found.append((path, st.st_size, st.st_ino, st.st_mtime_ns, st.st_ctime_ns))
    return found


def builtin_schemas_version() -> str:
    """The version of kubernetes-validate (the built-in kinds' schemas), from its version.py,
    read without importing the package or importlib.metadata (a render that changes nothing
    asks for it first thing); from the distribution's metadata when that file says otherwise."""
    spec = importlib.util.find_spec("kubernetes_validate")
    if spec is not None and spec.origin is not None:
        try:
            text = (Path(spec.origin).parent / "version.py").read_text()
        except OSError:
            text = ""
        found = re.fullmatch(r"__version__ = ['\"]([^'\"]+)['\"]\s*", text)
        if found:
            return found.group(1)
    from importlib import metadata  # noqa: PLC0415

    return metadata.version("kubernetes-validate")


def object_digest(obj: Any) -> str | None:
    try:
        return digest(canonical(obj))
    except (ValueError, TypeError, RecursionError):
        return None


def render_key(
    shared: str, obj: Mapping[str, Any], previous_hydrated: str | None, known: str | None = None
) -> str | None:
    """The key of one ModelDeployment's output, from the digest of its previous hydrated file
    (text_digest; `known`: the object's digest, if computed already); None if the object cannot
    be keyed (then it is always rendered, and rendering reports what is wrong with it)."""
    source = known or object_digest(obj)
    if source is None:
        return None
    return digest(shared, source, "\0" if previous_hydrated is None else "1" + previous_hydrated)


def text_digest(text: str | None) -> str | None:
    return None if text is None else digest(text)


def folder_digest(files: Mapping[str, str] | None) -> str:
    """The files of one output folder, by name (as taken already by a folder the render wrote
    as it went, renderer.output.tree.WrittenFolder, whose texts are on disk only)."""
    known = getattr(files, "folder_digest", None)
    if isinstance(known, str):
        return known
    h = hashlib.blake2b(digest_size=20)
    for name, text in sorted((files or {}).items()):
        # Names and YAML text hold no NUL, so NUL separates them unambiguously.
        h.update(f"{name}\0{text}\0".encode())
    return h.hexdigest()
