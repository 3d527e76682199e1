"""The provider packages Runway finds, apart from the registry (core/selection/configs.py), so
that no provider import creates a cycle: a sixth provider is one package under providers/ (an
__init__ building its Provider value as PROVIDER) and its config.yaml, nothing else.

Nothing is imported until a caller asks: `packages()` walks the search path (providers/' own
folders, plus any folder a caller adds) with pkgutil at call time.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from types import ModuleType

import providers
from core.model.plugin import Provider

EXPORT = "PROVIDER"  # the one name each provider package exports its Provider value under


@dataclass(frozen=True, slots=True)
class ProviderPackage:
    """A provider package found on the search path: its Provider value and its folder (its
    config.yaml, catalogs/ and facts/)."""

    provider: Provider
    files: Traversable


def _load(info: pkgutil.ModuleInfo) -> ModuleType:
    """The package `info` names, as providers.<name>: imported from providers/ itself, or from
    an added folder by its finder."""
    name = f"{providers.__name__}.{info.name}"
    folder = getattr(info.module_finder, "path", None)
    if name in sys.modules or folder in providers.__path__:
        return importlib.import_module(name)
    spec = importlib.util.spec_from_file_location(
        name, f"{folder}/{info.name}/__init__.py", submodule_search_locations=[]
    )
    if spec is None or spec.loader is None:
        raise ImportError(f"no provider package {info.name} in {folder}", name=name)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # the package's own imports of providers.<name>.* find it
    spec.loader.exec_module(module)
    return module


def packages(path: Sequence[str] = ()) -> tuple[ProviderPackage, ...]:
    """Every provider package under providers/ and the folders in `path`, in name order (the
    first of a name wins)."""
    found: dict[str, ProviderPackage] = {}
    for info in pkgutil.iter_modules([*providers.__path__, *path]):
        if not info.ispkg or info.name in found:
            continue
        module = _load(info)
        provider = getattr(module, EXPORT, None)
        if isinstance(provider, Provider):
            found[info.name] = ProviderPackage(provider, resources.files(module))
    return tuple(found[name] for name in sorted(found))


def plugins(path: Sequence[str] = ()) -> tuple[Provider, ...]:
    """Every provider's Provider value (packages()), in name order."""
    return tuple(package.provider for package in packages(path))
