"""A provider's installation, GitOps-native: its config's `airunway.ai/installation` annotation
read and planned by the core (core/checks/installation.py, core/rendering/installs.py), written
as Flux HelmRepository + HelmRelease or an Argo CD Application, each object checked strictly
against the schema pack like every object Runway emits, and the same install as `helm`
commands to copy. The portal never runs Helm: the objects go to the repository through the
outputs (ui/outputs.py), and the GitOps engine installs the chart."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from core.checks.installation import read_installation
from core.fields.errors import FieldError
from core.rendering.installs import Flavour, gitops_objects, helm_commands, plan_install
from kubeio.shipped import bundled_versions
from kubeio.yamlio import dump, dump_all
from renderer.output.strict import check_objects
from ui.context import schemas
from ui.outputs import Bundle, Planned, checked_path

ENGINE_TITLES = {Flavour.FLUX: "Flux", Flavour.ARGOCD: "Argo CD"}


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
    engine: Flavour
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


def install_path(base: str, provider: str) -> str:
    """`<base>/<provider>.yaml`, checked to stay inside the repository."""
    return str(checked_path(f"{base.strip('/')}/{provider}.yaml"))


def install_view(
    config: Mapping[str, Any], provider: str, engine: Flavour, base: str
) -> InstallView:
    """The config's installation as `engine`'s objects, each strict-checked, with the `helm`
    commands; or why it cannot be installed that way, or that it names nothing to install."""
    path = install_path(base, provider)
    installation = read_installation(config)
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
    plan = plan_install(installation)
    if isinstance(plan, list):
        return InstallView(provider, engine, path, errors=tuple(plan), **common)
    checked = check_objects(
        gitops_objects(plan, engine), schemas(), kubernetes=bundled_versions().kubernetes
    )
    objects = tuple(
        CheckedObject(o, str(o["kind"]), str(o["metadata"]["name"]), dump(o), tuple(errors))
        for o, errors in checked
    )
    return InstallView(
        provider, engine, path, objects=objects, helm=tuple(helm_commands(plan)), **common
    )


def install_bundle(view: InstallView) -> Bundle:
    """The install objects as one file of the repository."""
    objects = [o.obj for o in view.objects]
    title = f"{ENGINE_TITLES[view.engine]} install of {view.provider}"
    return Bundle(title, (Planned(view.path, dump_all(objects)),), tuple(objects))
