"""The Models page's form and its YAML editor, kept in sync: the form's fields read from a
ModelDeployment (YAML -> form), and merged into it (form -> YAML). Merging changes only the
fields the form shows; every other field of the object is kept as the editor has it, so the
editor reaches the whole API and the form never drops what it does not show.

The editor's text is read by the CLI's bounded reader (kubeio.sources.parse_documents) and
must hold exactly one ModelDeployment; anything else is a ComposeError with the reader's
message (which names the line of a YAML error)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from core.fields.errors import SourceError
from core.model.kinds import GROUP, MODEL_DEPLOYMENT, dig
from core.schema.crds import ENGINES, SERVING_MODES
from kubeio.sources import parse_documents
from kubeio.yamlio import dump

API_VERSION = f"{GROUP}/v1alpha1"
EDITOR = "editor"  # how messages name the YAML editor's text
AUTO = ""  # the form's "let Runway choose" / "not set" value
MAX_TEXT = 256 * 1024  # characters of the editor's text: a ModelDeployment is a few KiB


class ComposeError(ValueError):
    """The editor's text is not one ModelDeployment; the message says why (and where)."""


@dataclass(frozen=True, slots=True)
class Field:
    """One control of the form: its input name, the path it edits, its label, its kind."""

    name: str
    path: tuple[str, ...]
    label: str
    kind: str = "text"  # text, number, choice, check, lines
    choices: tuple[str, ...] = ()
    hint: str = ""


FIELDS = (
    Field("name", ("metadata", "name"), "Name"),
    Field("namespace", ("metadata", "namespace"), "Namespace"),
    Field(
        "source",
        ("spec", "model", "source"),
        "Model source",
        "choice",
        ("huggingface", "custom"),
    ),
    Field("model_id", ("spec", "model", "id"), "Model ID", hint="a Hugging Face repository"),
    Field("served_name", ("spec", "model", "servedName"), "Served model name"),
    Field("engine", ("spec", "engine", "type"), "Engine", "choice", ENGINES),
    Field("provider", ("spec", "provider", "name"), "Provider", "choice"),
    Field("mode", ("spec", "serving", "mode"), "Serving mode", "choice", SERVING_MODES),
    Field("gpu_count", ("spec", "resources", "gpu", "count"), "GPUs per replica", "number"),
    Field("gpu_type", ("spec", "resources", "gpu", "type"), "GPU resource name"),
    Field("replicas", ("spec", "scaling", "replicas"), "Replicas", "number"),
    Field("context_length", ("spec", "engine", "contextLength"), "Context length", "number"),
    Field(
        "extra_args",
        ("spec", "engine", "extraArgs"),
        "Extra engine arguments",
        "lines",
        hint="one per line",
    ),
    Field("gateway", ("spec", "gateway", "enabled"), "Behind the inference gateway", "check"),
    Field("gateway_model", ("spec", "gateway", "modelName"), "Gateway model name"),
)


def blank(namespace: str = "default") -> dict[str, Any]:
    """A new ModelDeployment to start from: a name, a namespace, a model."""
    return {
        "apiVersion": API_VERSION,
        "kind": MODEL_DEPLOYMENT,
        "metadata": {"name": "my-model", "namespace": namespace},
        "spec": {"model": {"id": ""}},
    }


def parse(text: str) -> dict[str, Any]:
    """The one ModelDeployment of the editor's text, through the CLI's bounded reader."""
    if len(text) > MAX_TEXT:
        raise ComposeError(f"{EDITOR}: longer than {MAX_TEXT} characters")
    try:
        docs = list(parse_documents(text, EDITOR))
    except SourceError as err:
        raise ComposeError(str(err)) from None
    if len(docs) != 1:
        raise ComposeError(f"{EDITOR}: expected one ModelDeployment, found {len(docs)} documents")
    obj = docs[0].obj
    if obj.get("kind") != MODEL_DEPLOYMENT or obj.get("apiVersion") != API_VERSION:
        got = f"{obj.get('apiVersion')} {obj.get('kind')}"
        raise ComposeError(f"{EDITOR}: expected {API_VERSION} {MODEL_DEPLOYMENT}, got {got}")
    return obj


def text_of(obj: Mapping[str, Any]) -> str:
    return dump(obj)


def values_of(obj: Mapping[str, Any]) -> dict[str, str]:
    """The form's value of each field, as text ('' when the object does not set it)."""
    return {field.name: _shown(field, dig(obj, *field.path)) for field in FIELDS}


def _shown(field: Field, value: Any) -> str:
    if value is None:
        return AUTO
    if field.kind == "lines" and isinstance(value, list):
        return "\n".join(str(v) for v in value)
    if field.kind == "check":
        return "on" if value is True else AUTO
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def merged(obj: Mapping[str, Any], form: Mapping[str, str]) -> dict[str, Any]:
    """`obj` with the form's fields set from `form` (each field's input, absent for an
    unchecked box); a field left empty is removed, and so is a mapping it leaves empty. Every
    field the form does not show is kept."""
    out = copy.deepcopy(dict(obj))
    for field in FIELDS:
        raw = form.get(field.name)
        if field.kind == "check":
            _set_check(out, field.path, bool(raw))
            continue
        if raw is None:
            continue  # not posted: not the form's to change
        value = _value(field, raw)
        if value is None:
            _remove(out, field.path)
        else:
            _put(out, field.path, value)
    return out


def _value(field: Field, raw: str) -> Any:
    text = raw.strip()
    if not text:
        return None
    if field.kind == "number":
        return int(text) if text.isascii() and text.isdigit() else text  # admission says why
    if field.kind == "lines":
        return [line.strip() for line in raw.splitlines() if line.strip()] or None
    return text


def _set_check(obj: dict[str, Any], path: tuple[str, ...], checked: bool) -> None:
    """A box sets `true`; cleared, it removes a `true` (and leaves a `false` as written)."""
    if checked:
        _put(obj, path, True)
    elif dig(obj, *path) is True:
        _remove(obj, path)


def _put(obj: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    here = obj
    for key in path[:-1]:
        child = here.get(key)
        if not isinstance(child, dict):
            child = {}
            here[key] = child
        here = child
    here[path[-1]] = value


def _remove(obj: dict[str, Any], path: tuple[str, ...]) -> None:
    """Remove the value at `path`, then each mapping on the way that this left empty."""
    trail: list[dict[str, Any]] = [obj]
    for key in path[:-1]:
        child = trail[-1].get(key)
        if not isinstance(child, dict):
            return
        trail.append(child)
    if path[-1] not in trail[-1]:
        return
    del trail[-1][path[-1]]
    for depth in range(len(path) - 1, 0, -1):
        if trail[depth] or depth == 1:  # metadata and spec stay
            break
        del trail[depth - 1][path[depth - 1]]
