"""A provider's installation, GitOps-native: its config's `airunway.ai/installation` annotation
read and planned by the core (core/checks/installation.py, core/rendering/installs.py), written
as Flux HelmRepository + HelmRelease or an Argo CD Application, each object checked strictly
against the schema pack like every object Runway emits, and the same install as `helm`
commands to copy. The portal never runs Helm: the objects go to the repository through the
outputs (ui/outputs.py), and the GitOps engine installs the chart."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import ModuleType
from typing import Any

from flask import current_app

from core.fields.errors import FieldError
from kubeio.shipped import bundled_versions
from kubeio.yamlio import dump, dump_all
from renderer.schemapack import load_pack
from renderer.strict import Schemas
from ui.outputs import Bundle, Planned, checked_path

SCHEMAS = "runway.providers.schemas"  # the schema pack, loaded once per app


class Engine(StrEnum):
    FLUX = "flux"
    ARGOCD = "argocd"


ENGINE_TITLES = {Engine.FLUX: "Flux", Engine.ARGOCD: "Argo CD"}


@dataclass(frozen=True, slots=True)
class CheckedObject:
    obj: Mapping[str, Any]
    kind: str
    name: str
    text: str  # the object as YAML
    errors: tuple[FieldError, ...]  # the strict check's findings (none: it passes)


@dataclass(frozen=True, slots=True)
class Step:
    title: str
    description: str
    command: str


@dataclass(frozen=True, slots=True)
class InstallView:
    provider: str
    engine: Engine
    path: str  # where the objects go in the repository
    description: str = ""
    documentation_url: str = ""
    errors: tuple[FieldError, ...] = ()  # the annotation cannot be read, or planned for GitOps
    objects: tuple[CheckedObject, ...] = ()
    helm: tuple[str, ...] = ()
    steps: tuple[Step, ...] = ()
    absent: str = ""  # why there is nothing to install ('' when there is)

    @property
    def passes(self) -> bool:
        return bool(self.objects) and not self.errors and all(not o.errors for o in self.objects)


def _core() -> tuple[ModuleType, ModuleType] | None:
    """The installation reader and planner (core/checks/installation.py, core/rendering/
    installs.py), None in a build without them."""
    try:
        return (
            importlib.import_module("core.checks.installation"),
            importlib.import_module("core.rendering.installs"),
        )
    except ModuleNotFoundError:
        return None


def install_path(base: str, provider: str) -> str:
    """`<base>/<provider>.yaml`, checked to stay inside the repository."""
    return str(checked_path(f"{base.strip('/')}/{provider}.yaml"))


def schemas() -> Schemas:
    found: Schemas | None = current_app.extensions.get(SCHEMAS)
    if found is None:
        found = current_app.extensions[SCHEMAS] = Schemas.from_pack(load_pack())
    return found


def install_view(
    config: Mapping[str, Any], provider: str, engine: Engine, base: str
) -> InstallView:
    path = install_path(base, provider)
    core = _core()
    if core is None:
        return InstallView(
            provider, engine, path, absent="this build of Runway reads no installations"
        )
    reading, planning = core
    installation = reading.read_installation(config)
    if isinstance(installation, list):
        return InstallView(provider, engine, path, errors=tuple(installation))
    steps = tuple(Step(s.title, s.description, s.command) for s in installation.steps)
    common: dict[str, Any] = {
        "description": installation.description,
        "documentation_url": installation.documentation_url,
        "steps": steps,
    }
    if not installation.charts:
        why = f"the config of {provider} names no Helm chart to install"
        return InstallView(provider, engine, path, absent=why, **common)
    plan = planning.plan_install(installation)
    if isinstance(plan, list):
        return InstallView(provider, engine, path, errors=tuple(plan), **common)
    objects = planning.gitops_objects(plan, planning.Flavour(engine.value))
    kubernetes = bundled_versions().kubernetes
    checker = schemas()
    checked = tuple(
        CheckedObject(
            o,
            str(o["kind"]),
            str(o["metadata"]["name"]),
            dump(o),
            tuple(checker.check(o, kubernetes=kubernetes)),
        )
        for o in objects
    )
    return InstallView(
        provider,
        engine,
        path,
        objects=checked,
        helm=tuple(planning.helm_commands(plan)),
        **common,
    )


def install_bundle(view: InstallView) -> Bundle:
    """The install objects as one file of the repository."""
    objects = [o.obj for o in view.objects]
    title = f"{ENGINE_TITLES[view.engine]} install of {view.provider}"
    return Bundle(title, (Planned(view.path, dump_all(objects)),), tuple(objects))
