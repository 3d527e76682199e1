"""Runway's shipped data, read from the installed packages: each provider's InferenceProviderConfig
(providers/<name>/config.yaml), the engine flag catalogs beside them (providers/<name>/catalogs/),
the operators' facts (providers/<name>/facts/) and the upstream version pins
(core/model/versions.env), and Runway's own version."""

from __future__ import annotations

import importlib.metadata
import json
from collections.abc import Sequence
from importlib import resources
from typing import Any

from core.checks.flags import FlagCatalog
from core.model.versions import Versions
from kubeio.sources import parse_documents
from providers.modules import packages


def bundled_config_objects(path: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The shipped InferenceProviderConfigs, one per provider (providers/<name>/config.yaml;
    `path`: more folders of provider packages), in provider name order."""
    out: list[dict[str, Any]] = []
    for package in packages(path):
        text = package.files.joinpath("config.yaml").read_text("utf-8")
        out += [doc.obj for doc in parse_documents(text, f"{package.provider.name}/config.yaml")]
    return out


def bundled_flag_catalogs(path: Sequence[str] = ()) -> dict[str, FlagCatalog]:
    """The shipped engine flag catalogs by name (`make flags` writes them)."""
    catalogs: dict[str, FlagCatalog] = {}
    for package in packages(path):
        folder = package.files.joinpath("catalogs")
        if not folder.is_dir():
            continue
        for entry in folder.iterdir():
            if entry.name.endswith(".json"):
                name = entry.name.removesuffix(".json")
                catalogs[name] = FlagCatalog.parse(name, entry.read_text("utf-8"))
    return dict(sorted(catalogs.items()))


def bundled_facts(path: Sequence[str] = ()) -> dict[str, dict[str, Any]]:
    """{provider: {fact: parsed JSON}} from providers/<name>/facts/<fact>.json: the data each
    provider's hooks read through their ProviderContext (KAITO's presets and instance types)."""
    out: dict[str, dict[str, Any]] = {}
    for package in packages(path):
        folder = package.files.joinpath("facts")
        if not folder.is_dir():
            continue
        out[package.provider.name] = {
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
