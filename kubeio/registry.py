"""The one provider-registry builder: webhook, render, validate, explain and gateway-sync all
build their registry here, so each checks with the same plug-ins, flag catalogs and facts."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from core.checks.flags import FlagCatalog
from core.fields.errors import SourceError
from core.selection.configs import ProviderRegistry
from kubeio.shipped import bundled_config_objects, bundled_facts, bundled_flag_catalogs
from kubeio.sources import read_documents
from providers.modules import plugins


def build_registry(
    objects: Iterable[Mapping[str, Any]] | None = None,
    *,
    flags: Mapping[str, FlagCatalog] | None = None,
    facts: Mapping[str, Mapping[str, Any]] | None = None,
    path: Sequence[str] = (),
) -> ProviderRegistry:
    """The registry of `objects` (InferenceProviderConfigs; the shipped ones when None), with
    every provider package found (providers/, and the folders in `path`), the shipped flag
    catalogs (or `flags`, when given) and the shipped facts (or `facts`: a caller that rebuilds
    often reads them once)."""
    configs = bundled_config_objects(path) if objects is None else objects
    catalogs = bundled_flag_catalogs(path) if flags is None else flags
    known = bundled_facts(path) if facts is None else facts
    return ProviderRegistry.from_objects(
        configs, plugins=plugins(path), flags=catalogs, facts=known
    )


def load_registry(directories: Sequence[str] | None) -> ProviderRegistry:
    """The registry from the given directories of InferenceProviderConfigs, else the shipped one."""
    if not directories:
        return build_registry()
    docs = read_documents(directories)
    for doc in docs:
        if doc.obj.get("kind") != "InferenceProviderConfig":
            raise SourceError(doc.where, f"expected an InferenceProviderConfig, got {doc.kind}")
    return build_registry(doc.obj for doc in docs)
