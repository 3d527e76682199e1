"""aikit at AIKIT_VERSION, as KAITO's llama.cpp Workspaces run it: from the facts
(providers/kaito/facts/aikit.json, `make facts` from aikit's sources at the pin).

Three llama.cpp modes (spec.engine.type llamacpp on kaito):
* a pre-made model image (spec.model.source custom, image ghcr.io/kaito-project/aikit/<model>:<tag>):
  it serves the name aikit's README gives it (the catalog);
* a GGUF file in a Hugging Face repository, run by aikit's runner image
  (ghcr.io/kaito-project/aikit/runners/llama-cpp-{cpu,cuda}:<pin>), which downloads it when the pod
  starts (`direct`);
* the same GGUF built into an image in the cluster with aikit's BuildKit frontend (`built`,
  providers/kaito/build.py).

Line numbers are aikit's pkg/aikit2llb/inference/runner.go at the pin unless said otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from core.fields.errors import FieldError, Reason, shown
from core.model.kinds import ModelDeployment, ModelSource
from core.model.plugin import ProviderContext

HF = "https://huggingface.co"
GGUF = ".gguf"
GGUF_URL_AT = "spec.engine.args.ggufUrl"
# A path segment of a Hugging Face id or file: what the Hub's own names use; no '..', no '%'.
_SEGMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")
# An https URL as the runner and BuildKit are given it: RFC 3986's unreserved and delimiter
# characters and percent-escapes only (no space, quote, backslash, backtick or control character).
_URL = re.compile(r"https://[A-Za-z0-9._~:/?#\[\]@!&()*+,;=%-]+")


@dataclass(frozen=True, slots=True)
class Gguf:
    """One GGUF file as the runner takes it: `ref` the https URL it fetches with curl (runner.go
    generateLlamaCppDownload: an http(s) reference is saved under its basename), `file` that
    basename, `served` the name LocalAI answers to (the file name without .gguf: the config the
    runner writes names the model so)."""

    ref: str
    file: str
    served: str


def facts(context: ProviderContext) -> Mapping[str, Any]:
    return context.fact("aikit")


def aikit_at(context: ProviderContext) -> str:
    """'aikit <tag>': the aikit release the facts were read at, as messages cite it."""
    tag = facts(context).get("aikit")
    return f"aikit {tag}" if tag else "aikit at AIKIT_VERSION"


def runner_image(md: ModelDeployment, context: ProviderContext, tag: str) -> str:
    """The runner image aikit publishes at `tag` for `md`: llama-cpp-cuda on GPUs, else
    llama-cpp-cpu (.github/workflows/release-runners.yaml: pushed per tag as
    <registry>/<runner>:<tag>)."""
    runners = facts(context).get("runners") or {}
    registry = str(runners.get("registry") or "ghcr.io/kaito-project/aikit/runners")
    return f"{registry}/llama-cpp-{'cuda' if md.gpu_count > 0 else 'cpu'}:{tag}"


def frontend_image(context: ProviderContext, tag: str) -> str:
    """aikit's BuildKit frontend at `tag` (.github/workflows/release.yaml)."""
    return f"{facts(context).get('frontend') or 'ghcr.io/kaito-project/aikit/aikit'}:{tag}"


def premade(image: str, context: ProviderContext) -> Mapping[str, Any] | None:
    """The catalog entry of a pre-made model image (README.md's tables at the pin), or None."""
    catalog = facts(context).get("premade") or {}
    prefix = f"{catalog.get('registry') or 'ghcr.io/kaito-project/aikit'}/"
    if not image.startswith(prefix):
        return None
    entry = (catalog.get("images") or {}).get(image.removeprefix(prefix))
    return entry if isinstance(entry, Mapping) else None


def is_aikit_image(image: str, context: ProviderContext) -> bool:
    catalog = facts(context).get("premade") or {}
    return image.startswith(f"{catalog.get('registry') or 'ghcr.io/kaito-project/aikit'}/")


def gguf(md: ModelDeployment) -> Gguf | None:
    """The GGUF file a Hugging Face llama.cpp model names, as the runner must be given it; None
    when it names none the runner can fetch (gguf_errors says why) or the source is custom.
    engine.args.ggufUrl (an http(s) URL, or huggingface://<org>/<repo>/<file>.gguf) wins over
    model.id (<org>/<repo>/<path>/<file>.gguf)."""
    if md.model_source == ModelSource.CUSTOM:
        return None
    url = (md.engine.get("args") or {}).get("ggufUrl")
    if url is not None:
        text = str(url)
        if text.startswith("huggingface://"):
            return _hub_file(text.removeprefix("huggingface://"))
        parts = urlsplit(text)
        name = parts.path.rsplit("/", 1)[-1]
        if parts.scheme != "https" or not parts.netloc or parts.query or parts.fragment:
            return None
        if not _URL.fullmatch(text):
            return None
        if not name.endswith(GGUF) or not _SEGMENT.fullmatch(name):
            return None
        return Gguf(text, name, name.removesuffix(GGUF))
    return _hub_file(md.model_id) if md.model_id else None


def _hub_file(path: str) -> Gguf | None:
    """<org>/<repo>/<path>/<file>.gguf -> its resolve URL on the main revision."""
    parts = path.split("/")
    if len(parts) < 3 or not all(_SEGMENT.fullmatch(p) for p in parts):
        return None
    if not parts[-1].endswith(GGUF) or any(p in (".", "..") for p in parts):
        return None
    org, repo, *rest = parts
    url = f"{HF}/{org}/{repo}/resolve/main/{'/'.join(rest)}"
    return Gguf(url, parts[-1], parts[-1].removesuffix(GGUF))


def gguf_errors(md: ModelDeployment, context: ProviderContext) -> list[FieldError]:
    """A Hugging Face llama.cpp model must name one GGUF file the runner can fetch."""
    url = (md.engine.get("args") or {}).get("ggufUrl")
    if md.model_source == ModelSource.CUSTOM or gguf(md) is not None:
        return []
    if url is None and not md.model_id:  # no id: the core says so
        return []
    at = aikit_at(context)
    if url is not None:
        detail = (
            f"{shown(url)!r} is not a GGUF file {at}'s runner can fetch: give an https URL whose "
            "path ends in <file>.gguf, without a query or fragment (the runner saves it under the "
            "URL's basename and serves the first *.gguf file: runner.go generateLlamaCppDownload), "
            "or huggingface://<org>/<repo>/<file>.gguf"
        )
        return [FieldError(GGUF_URL_AT, Reason.INVALID, detail)]
    detail = (
        f"{shown(md.model_id)!r} names no GGUF file: give <org>/<repo>/<file>.gguf or set "
        f"spec.engine.args.ggufUrl ({at}'s runner cannot fetch huggingface://<org>/<repo>/<file> "
        "and serves any *.gguf of a bare repo: runner.go generateLlamaCppDownload)"
    )
    return [FieldError("spec.model.id", Reason.INVALID, detail)]


def served_as(md: ModelDeployment, context: ProviderContext) -> str | None:
    """The name a llama.cpp model's pods answer to: the catalog's for a pre-made image, the GGUF
    file's name without .gguf for a Hugging Face file; None for any other custom image."""
    if md.model_source == ModelSource.CUSTOM:
        entry = premade(md.image_override or "", context)
        return str(entry["servedName"]) if entry is not None else None
    found = gguf(md)
    return found.served if found is not None else None


def image_checks(
    md: ModelDeployment, context: ProviderContext
) -> tuple[list[FieldError], list[str]]:
    """(errors, warnings) of a custom image under aikit's registry: a pre-made image aikit's
    README offers only on NVIDIA GPUs, run without one, is refused; an image the catalog at the
    pin does not list is warned about, not refused: aikit publishes model images from a workflow
    run by hand (.github/workflows/update-models.yaml), not per release, so a newer one may exist,
    but Runway cannot know the name it serves."""
    image = md.image_override or ""
    if md.model_source != ModelSource.CUSTOM or not is_aikit_image(image, context):
        return [], []
    entry = premade(image, context)
    at = aikit_at(context)
    if entry is None:
        return [], [
            f"spec.engine.image {shown(image)!r} is not one of {at}'s pre-made model images "
            "(README.md), so Runway does not know the name it serves: the route matches "
            "spec.gateway.modelName, else the model id or the ModelDeployment's name; set "
            "spec.gateway.modelName to the name the image's LocalAI config gives the model"
        ]
    if md.gpu_count == 0 and not entry.get("cpu"):
        detail = (
            f"{shown(image)!r} runs only on NVIDIA GPUs ({at} README.md offers it in its CUDA "
            "table only): set spec.resources.gpu.count"
        )
        return [FieldError("spec.resources.gpu.count", Reason.REQUIRED, detail)], []
    return [], []
