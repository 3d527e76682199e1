"""What the Models page starts from and delivers against: the documents of the source folders
(-f), read by the CLI's reader file by file (a file that cannot be read is named, the others
still count), and the catalog built from them, from the shipped examples/ and from the
providers' model presets (their `presets` facts, e.g. KAITO's, naming the Hugging Face
repositories each preset serves)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.admission.verdict import MD, kind_of
from core.fields.errors import SourceError
from core.model.kinds import DEFAULT_NAMESPACE, INFERENCE_PROVIDER_CONFIG, ModelDeployment
from kubeio.objects import object_key
from kubeio.shipped import bundled_facts
from kubeio.sources import Document, read_documents, yaml_files
from ui.compose import blank

SHIPPED_EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
NOT_NAME = re.compile(r"[^a-z0-9-]+")
PRESET_GPUS = 1  # a preset starts on one GPU; the form changes it


@dataclass(frozen=True, slots=True)
class Sources:
    """The documents of the source folders, and each file that could not be read."""

    documents: tuple[Document, ...]
    problems: tuple[str, ...]

    def model_deployments(self) -> list[Document]:
        return [d for d in self.documents if kind_of(d.obj) == MD]

    def configs(self) -> list[dict[str, Any]]:
        return [d.obj for d in self.documents if d.obj.get("kind") == INFERENCE_PROVIDER_CONFIG]


@dataclass(frozen=True, slots=True)
class Entry:
    """One thing to start from: its key (the page's `pick`), its group, label and object."""

    key: str
    group: str
    label: str
    obj: Mapping[str, Any]


def read_sources(folders: Iterable[str]) -> Sources:
    docs: list[Document] = []
    problems: list[str] = []
    try:
        files = yaml_files(folders)
    except SourceError as err:
        return Sources((), (str(err),))
    for path in files:
        try:
            docs += read_documents([str(path)])
        except SourceError as err:
            problems.append(str(err))
    return Sources(tuple(docs), tuple(problems))


def fingerprint(folders: Iterable[str]) -> tuple[tuple[str, int, int], ...] | None:
    """Each source file's path, modification time and size (None when the folders cannot be
    walked): the Sources read for the same fingerprint are the same."""
    try:
        files = yaml_files(folders)
        return tuple((str(p), *_stat(p)) for p in files)
    except (SourceError, OSError):
        return None


def _stat(path: Path) -> tuple[int, int]:
    found = path.stat()
    return found.st_mtime_ns, found.st_size


def identity(obj: Mapping[str, Any]) -> tuple[Any, str]:
    """What makes two ModelDeployments the same object: kind and namespace/name."""
    md = ModelDeployment(obj)
    return (kind_of(obj), object_key(md.namespace or DEFAULT_NAMESPACE, str(md.name)))


def catalog(sources: Sources) -> tuple[Entry, ...]:
    """Every entry: the source folders' ModelDeployments, the shipped examples' (those of the
    folders are not repeated), then the presets."""
    entries = _documents("source", "In the source folders", sources.model_deployments())
    seen = {identity(e.obj) for e in entries}
    if SHIPPED_EXAMPLES.is_dir():
        shipped = read_sources([str(SHIPPED_EXAMPLES)]).model_deployments()
        rejected = SHIPPED_EXAMPLES / "rejected"  # examples admission denies, on purpose
        fresh = [
            d for d in shipped if identity(d.obj) not in seen and Path(d.origin).parent != rejected
        ]
        entries += _documents("example", "Shipped examples", fresh)
    return (*entries, *presets(bundled_facts()))


def _documents(prefix: str, group: str, docs: Sequence[Document]) -> list[Entry]:
    out = []
    for doc in docs:
        md = ModelDeployment(doc.obj)
        key = f"{prefix}:{object_key(md.namespace or DEFAULT_NAMESPACE, str(md.name))}"
        found = md.spec.get("model")
        model: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        label = f"{md.namespace or DEFAULT_NAMESPACE}/{md.name}: {model.get('id') or model.get('servedName') or 'custom model'}"
        out.append(Entry(key, group, label, doc.obj))
    return out


def presets(facts: Mapping[str, Mapping[str, Any]]) -> list[Entry]:
    """A ModelDeployment for each Hugging Face repository a provider's presets serve, on that
    provider, one GPU, the engine left to Runway."""
    out = []
    for provider, known in sorted(facts.items()):
        found = known.get("presets")
        if not isinstance(found, Mapping) or not isinstance(found.get("huggingFaceIds"), Mapping):
            continue
        for model_id, preset in sorted(found["huggingFaceIds"].items()):
            obj = blank()
            obj["metadata"]["name"] = NOT_NAME.sub("-", str(preset).lower()).strip("-")[:63]
            obj["spec"] = {
                "model": {"id": model_id},
                "provider": {"name": provider},
                "resources": {"gpu": {"count": PRESET_GPUS}},
            }
            label = f"{model_id} ({provider} preset {preset})"
            out.append(Entry(f"preset:{provider}:{model_id}", f"{provider} presets", label, obj))
    return out


def find(entries: Iterable[Entry], key: str) -> Entry | None:
    return next((e for e in entries if e.key == key), None)


def defining(sources: Sources, obj: Mapping[str, Any]) -> Document | None:
    """The source document that already defines the same kind/namespace/name as `obj`."""
    wanted = identity(obj)
    return next(
        (d for d in sources.model_deployments() if identity(d.obj) == wanted and not d.items),
        None,
    )
