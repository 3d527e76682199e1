"""Runway's shipped data, read from the installed packages: each provider's InferenceProviderConfig
(providers/<name>/config.yaml), the engine flag catalogs beside them (providers/<name>/catalogs/),
the operators' facts (providers/<name>/facts/) and the upstream version pins
(core/model/versions.env), and Runway's own version."""

from __future__ import annotations

import importlib.metadata
import json
from importlib import resources
from importlib.resources.abc import Traversable
from types import ModuleType
from typing import Any, cast

from core.checks.flags import FlagCatalog
from core.model.versions import Versions
from kubeio.sources import parse_documents
from providers.modules import plugins


def _package(plugin: ModuleType) -> Traversable:
    return resources.files(plugin.__name__)


def bundled_config_objects() -> list[dict[str, Any]]:
    """The shipped InferenceProviderConfigs, one per provider, in provider name order."""
    out: list[dict[str, Any]] = []
    for plugin in sorted(plugins(), key=lambda p: p.NAME):
        text = _package(cast(ModuleType, plugin)).joinpath("config.yaml").read_text("utf-8")
        out += [doc.obj for doc in parse_documents(text, f"{plugin.NAME}/config.yaml")]
    return out


def bundled_flag_catalogs() -> dict[str, FlagCatalog]:
    """The shipped engine flag catalogs by name (`make flags` writes them)."""
    catalogs: dict[str, FlagCatalog] = {}
    for plugin in plugins():
        folder = _package(cast(ModuleType, plugin)).joinpath("catalogs")
        if not folder.is_dir():
            continue
        for entry in folder.iterdir():
            if entry.name.endswith(".json"):
                name = entry.name.removesuffix(".json")
                catalogs[name] = FlagCatalog.parse(name, entry.read_text("utf-8"))
    return dict(sorted(catalogs.items()))


def bundled_facts() -> dict[str, dict[str, Any]]:
    """{provider: {fact: parsed JSON}} from providers/<name>/facts/<fact>.json: the data each
    provider's hooks read through their ProviderContext (KAITO's presets and instance types)."""
    out: dict[str, dict[str, Any]] = {}
    for plugin in sorted(plugins(), key=lambda p: p.NAME):
        folder = _package(cast(ModuleType, plugin)).joinpath("facts")
        if not folder.is_dir():
            continue
        out[plugin.NAME] = {
            entry.name.removesuffix(".json"): json.loads(entry.read_text("utf-8"))
            for entry in sorted(folder.iterdir(), key=lambda e: e.name)
            if entry.name.endswith(".json")
        }
    return out


def bundled_versions() -> Versions:
    return Versions.parse(resources.files("core.model").joinpath("versions.env").read_text("utf-8"))


def runway_version() -> str:
    """The installed package's version ("dev" when run from a tree that is not installed)."""
    try:
        return importlib.metadata.version("runway")
    except importlib.metadata.PackageNotFoundError:
        return "dev"
