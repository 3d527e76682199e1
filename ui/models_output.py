"""Where a composed ModelDeployment goes in the source repository (ui/outputs.py delivers it):
the source file that already defines the same kind/namespace/name, with that document replaced
(the rest of the file as it is), else a new file `<first -f folder>/<namespace>/<name>.yaml` (`<namespace>/<name>.yaml` without
a source folder: live, where apply needs no file)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from core.model.kinds import DEFAULT_NAMESPACE, MODEL_DEPLOYMENT, ModelDeployment
from kubeio.sources import Document, parse_stream, split_stream
from kubeio.yamlio import dump, dump_all, load_all
from ui.models_catalog import Sources, defining
from ui.outputs import MAX_FILE, Bundle, OutputError, Planned, relative_to_root, repo_root
from ui.settings import UiSettings


def bundle(settings: UiSettings, sources: Sources, obj: Mapping[str, Any]) -> Bundle:
    md = ModelDeployment(obj)
    title = f"{MODEL_DEPLOYMENT} {md.namespace or DEFAULT_NAMESPACE}/{md.name}"
    found = defining(sources, obj)
    path = planned_path(settings, sources, obj)
    text = _replaced(found, obj) if found is not None else dump(obj)
    return Bundle(title, (Planned(path, text),), (obj,))


def planned_path(settings: UiSettings, sources: Sources, obj: Mapping[str, Any]) -> str:
    """The repository-relative path the object is written to (see the module's text)."""
    found = defining(sources, obj)
    if found is not None:
        return _in_repo(settings, found.origin)
    md = ModelDeployment(obj)
    return new_path(settings, md.namespace or DEFAULT_NAMESPACE, str(md.name))


def new_path(settings: UiSettings, namespace: str, name: str) -> str:
    """`<first -f folder>/<namespace>/<name>.yaml`; without a source folder (live, no -f), the
    path a download names: `<namespace>/<name>.yaml`."""
    folder = relative_to_root(settings, settings.sources[0]) if settings.sources else ""
    return "/".join(p for p in (folder, namespace, f"{name}.yaml") if p)


def _in_repo(settings: UiSettings, origin: str) -> str:
    root = repo_root(settings)
    try:
        return Path(origin).resolve().relative_to(root).as_posix()
    except ValueError:
        raise OutputError(f"{origin} is not inside the repository {root}") from None


def _replaced(found: Document, obj: Mapping[str, Any]) -> str:
    """The text of `found`'s file with its document replaced by `obj` (the file as it is when it
    holds `obj` already): only the piece between
    `---` markers that holds it is rewritten (its leading comments kept), or, when the file's
    pieces cannot be told apart, every document written again."""
    path = Path(found.origin)
    if path.stat().st_size > MAX_FILE:
        raise OutputError(f"{found.origin} is larger than {MAX_FILE} bytes")
    text = path.read_text(encoding="utf-8")
    if found.obj == obj:
        return text  # the file holds this object already: nothing to change
    pieces = split_stream(text)
    if pieces is not None:
        counted = 0
        for at, piece in enumerate(pieces):
            held = parse_stream(piece, found.origin)[1]
            if counted <= found.index < counted + held:
                if held == 1:
                    pieces[at] = _kept_head(piece) + dump(obj)
                    return "".join(pieces)
                break
            counted += held
    loaded = load_all(text, found.origin)  # numbered as Document.index numbers them
    loaded[found.index] = dict(obj)
    return dump_all([d for d in loaded if d is not None])


def _kept_head(piece: str) -> str:
    """The lines before a document's first key: its `---` marker and comments."""
    head = []
    for line in piece.splitlines(keepends=True):
        stripped = line.strip()
        if stripped and not stripped.startswith("#") and not stripped.startswith("---"):
            break
        head.append(line)
    return "".join(head)
