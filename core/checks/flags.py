"""Engine flag catalogs (generated from the pinned engines' own argument definitions by
`make flags`, shipped beside each provider in providers/<name>/catalogs/) and the admission check of user flags against them.

The edges read the catalog files and pass the parsed catalogs in (through the provider
registry); nothing here reads a file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.checks.credentials import credential_kind
from core.fields.errors import FieldError, Reason
from core.fields.paths import FieldPath
from core.model.kinds import PIPELINE_PARALLEL, Engine, ModelDeployment
from core.model.plugin import Flags, Provider
from core.schema.suggest import MAX_SUGGESTIONS, close_matches

ARGS = FieldPath.root("spec", "engine", "args")
# An argument name (spec.engine.args key); matched whole (fullmatch: `$` allows a trailing newline).
ARG_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]*")
EXTRA_ARGS = FieldPath.root("spec", "engine", "extraArgs")
ENGINE = FieldPath.root("spec", "engine")
PIPELINE_PARALLEL_AT = ARGS.key(PIPELINE_PARALLEL)
# Unknown flags named one by one, per object; the rest are counted in one more error, so the
# answer stays small whatever the object holds (at most 512 args and 1,024 extraArgs). The first
# MAX_SUGGESTIONS of them get a "did you mean" (core.checks.suggest).
LISTED_UNKNOWN = 32


@dataclass(frozen=True, slots=True)
class Flag:
    name: str
    value: str  # "none" (a switch), "required" or "optional"
    type: str


@dataclass(frozen=True, slots=True)
class FlagCatalog:
    """Every flag one engine entry point accepts at one version, and where that came from."""

    name: str
    engine: str
    version: str
    image: str  # the default image whose entry point this catalog describes
    method: str
    sources: tuple[str, ...]
    flags: Mapping[str, Flag]
    underscores_as_dashes: bool = False
    dotted_keys: bool = False
    prefixes: tuple[str, ...] = ()

    @classmethod
    def parse(cls, name: str, text: str) -> FlagCatalog:
        """A catalog from the text of providers/<name>/catalogs/<name>.json."""
        data: Mapping[str, Any] = json.loads(text)
        flags = {
            flag: Flag(flag, str(entry["value"]), str(entry["type"]))
            for flag, entry in data["flags"].items()
        }
        return cls(
            name=name,
            engine=str(data["engine"]),
            version=str(data["version"]),
            image=str(data["image"]),
            method=str(data["method"]),
            sources=tuple(data["sources"]),
            flags=flags,
            underscores_as_dashes=bool(data.get("underscoresAsDashes")),
            dotted_keys=bool(data.get("dottedKeys")),
            prefixes=tuple(data.get("prefixes") or ()),
        )

    def canonical(self, flag: str) -> str:
        """The name the engine's parser looks up: `--max_model_len=8` -> `--max-model-len`."""
        name = flag.split("=", 1)[0]
        if self.dotted_keys and name.startswith("--"):
            name = name.split(".", 1)[0]
        if self.underscores_as_dashes and name.startswith("--"):
            name = "--" + name[2:].replace("_", "-")
        return name

    def knows(self, flag: str) -> bool:
        name = flag.split("=", 1)[0]
        if any(name.startswith(prefix) for prefix in self.prefixes):
            return True
        return self.canonical(flag) in self.flags

    def suggestion(self, flag: str) -> str:
        """'; did you mean --x?' for the closest catalogued flag, or ''."""
        close = close_matches(self.canonical(flag), sorted(self.flags))
        return f"; did you mean {close[0]}?" if close else ""

    def label(self) -> str:
        return f"{self.engine} {self.version}"


FlagCatalogs = Mapping[str, FlagCatalog]

# Flags Runway derives from the spec (or owns: the port every other object points at), with the
# spec field to set instead; each provider's table (providers/<name>/flags.py) says which, per
# catalog. Checked on canonical names, so `--port=9000`, `--port 9000` and `port: "9000"` in
# spec.engine.args are all refused.
PORT_OWNED = "Runway owns the server port (8000): the Service, the probes and the InferencePool target it; it cannot be changed"
HOST_OWNED = "Runway binds the server to 0.0.0.0 so the Service reaches it; it cannot be changed"
TP = "set spec.resources.gpu.count (or the component's gpu.count); Runway sets the tensor-parallel size to it"
PP = "set spec.engine.args.pipeline-parallel-size (the nodes one replica spans, where the provider places a replica across nodes); Runway writes the flag itself"
SERVED = "set spec.model.servedName (or spec.gateway.modelName)"
MODEL = "set spec.model.id"
CONTEXT = "set spec.engine.contextLength"
TRUST = "set spec.engine.trustRemoteCode"
PREFIX = "set spec.engine.enablePrefixCaching"
EAGER = "set spec.engine.enforceEager"
DISAGG = "set spec.serving.mode (disaggregated serving configures it)"
# The vLLM engine's flags Runway sets from the spec, whichever provider runs vLLM.
VLLM_ENGINE_OWNED: Mapping[str, str] = {
    "--model": MODEL,
    "--served-model-name": SERVED,
    "--tensor-parallel-size": TP,
    "-tp": TP,
    "--pipeline-parallel-size": PP,
    "-pp": PP,
    "--max-model-len": CONTEXT,
    "--trust-remote-code": TRUST,
    "--no-trust-remote-code": TRUST,
    "--enable-prefix-caching": PREFIX,
    "--no-enable-prefix-caching": PREFIX,
    "--enforce-eager": EAGER,
    "--no-enforce-eager": EAGER,
    "--kv-transfer-config": DISAGG,
}
# What the vLLM OpenAI server's host and port flags are owned for, where Runway renders its pods.
VLLM_SERVER_OWNED: Mapping[str, str] = {
    **VLLM_ENGINE_OWNED,
    "--host": HOST_OWNED,
    "--port": PORT_OWNED,
    "--uds": PORT_OWNED,
}


# The catalog of the vLLM OpenAI server, which the pods of every provider that renders its own
# vLLM Deployments run (Direct vLLM, llm-d).
VLLM_SERVER_CATALOG = "vllm"


def vllm_server_catalog(engine: str) -> str | None:
    return VLLM_SERVER_CATALOG if engine == Engine.VLLM else None


def vllm_server_owned(catalog: str) -> Mapping[str, str]:
    return VLLM_SERVER_OWNED if catalog == VLLM_SERVER_CATALOG else {}


VLLM_SERVER_FLAGS = Flags(vllm_server_catalog, vllm_server_owned)


def user_flags(
    md: ModelDeployment, catalog: FlagCatalog | None = None
) -> list[tuple[FieldPath, str]]:
    """(field path, flag) for every flag the user wrote, in spec.engine.args then extraArgs.
    With a catalog, the token after a flag that requires a value (`--api-key X`) is that value,
    never a flag, even when it starts with a dash."""
    args: Mapping[str, Any] = md.engine.get("args") or {}
    # A key that is not a flag name (leading dashes, spaces) is refused by the args check.
    out = [(ARGS.key(key), f"--{key}") for key in sorted(args) if ARG_KEY.fullmatch(key)]
    value_next = False
    for i, token in enumerate(md.engine.get("extraArgs") or ()):
        text = str(token)
        if value_next or not is_flag(text):
            value_next = False
            continue
        out.append((EXTRA_ARGS.index(i), text))
        known = catalog.flags.get(catalog.canonical(text)) if catalog is not None else None
        value_next = "=" not in text and known is not None and known.value == "required"
    return out


def is_flag(token: str) -> bool:
    """A flag token (`--x`, `--x=1`, `-tp`), not a value such as `-1` or a bare `--`."""
    return token.startswith("-") and token != "--" and not token[1:2].isdigit()


def check_engine_flags(
    md: ModelDeployment, catalogs: FlagCatalogs, plugin: Provider
) -> tuple[list[FieldError], list[str]]:
    """(errors, warnings) for the user's flags: a Runway-owned flag is refused; an unknown one
    is refused when the default image runs, and only warned about when spec.engine.image names
    another image (the catalog describes the pinned engine, not that image)."""
    name = plugin.flags.catalog(md.engine_type)
    catalog = catalogs.get(name) if name else None
    if catalog is None:
        return [], []
    owned = plugin.flags.owned(catalog.name)
    # Refused when the default image runs; only warned about when spec.engine.image names
    # another image (the catalog describes the pinned engine, not that image).
    warn = bool(md.image_override and md.image_override != catalog.image)
    errors: list[FieldError] = []
    warnings: list[str] = []
    unknown = 0
    for at, flag in user_flags(md, catalog):
        if at == PIPELINE_PARALLEL_AT:
            continue  # the typed rule owns it (core/checks/parallel.py)
        if credential_kind(flag.lstrip("-")) is not None:
            continue  # never echoed: the credential check refuses it without naming it
        canonical = catalog.canonical(flag)
        if canonical in owned:
            errors.append(FieldError(str(at), Reason.FORBIDDEN, f"{canonical}: {owned[canonical]}"))
        elif not catalog.knows(flag):
            unknown += 1
            if unknown <= LISTED_UNKNOWN:
                hint = catalog.suggestion(flag) if unknown <= MAX_SUGGESTIONS else ""
                detail = f"{canonical} is not a flag of {catalog.label()}{hint}"
                _unknown(str(at), detail, md.image_override if warn else None, errors, warnings)
    if unknown > LISTED_UNKNOWN:
        detail = (
            f"{unknown - LISTED_UNKNOWN} more flags are not flags of {catalog.label()} "
            f"(only the first {LISTED_UNKNOWN} are named)"
        )
        _unknown(str(ENGINE), detail, md.image_override if warn else None, errors, warnings)
    return errors, warnings


def _unknown(
    at: str, detail: str, image: str | None, errors: list[FieldError], warnings: list[str]
) -> None:
    """An unknown flag's error, or its warning when `image` (another than the catalog's) runs."""
    if image is None:
        errors.append(FieldError(at, Reason.INVALID, detail))
    else:
        warnings.append(
            f"{at}: {detail} (not refused: spec.engine.image runs {image}, "
            "which the catalog may not describe)"
        )


def unknown_flags(args: Sequence[str], catalog: FlagCatalog) -> list[str]:
    """The flags among rendered `args` that the catalog does not list."""
    return [t for t in args if is_flag(t) and not catalog.knows(t)]
