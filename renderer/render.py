"""From source objects to the files of the GitOps tree, in memory and deterministically.

For each ModelDeployment: the same admission the webhook runs (sticky against the previously
rendered hydrated object) -> the selected provider's render() -> the strict upstream check ->
one YAML file per object. A ModelDeployment that is rejected or incompatible is reported and
keeps its previous output (nothing else is lost); the others render.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from providers.admission import admit
from providers.configs_admission import check_external_provider
from providers.gateway import GatewayTarget, capabilities_of, is_enabled, render_gateway
from providers.model import (
    EXTERNAL_MODEL_PROVIDER,
    MODEL_DEPLOYMENT,
    ExternalModelProvider,
    ModelDeployment,
)
from providers.registry import MODULES, ProviderRegistry
from providers.versions import Versions
from renderer.strict import BUILTIN_API_VERSIONS, Schemas, incompatible
from renderer.yamlio import dump

DEFAULT_NAMESPACE = "default"
SERVER_FIELDS = (
    "resourceVersion",
    "uid",
    "creationTimestamp",
    "generation",
    "managedFields",
    "selfLink",
)
HYDRATED_FILE = "modeldeployment.yaml"
EXTERNAL_FILE = "externalmodelprovider.yaml"
EXTERNAL_SUFFIX = ".emp"  # a dot: no ModelDeployment name can have one, so folders never clash
MODEL_PORTS = {"kaito": 5000}  # the port the provider's model server listens on; 8000 otherwise


@dataclass(frozen=True)
class Result:
    """One ModelDeployment's outcome: its files (relative to its folder), or why it has none."""

    key: str  # namespace/name
    files: Mapping[str, str] = field(default_factory=dict)
    error: str | None = None
    warnings: tuple[str, ...] = ()
    engine: str | None = None
    provider: str | None = None


def folder_of(obj: Mapping[str, Any]) -> str:
    md = ModelDeployment(obj)
    return f"{md.namespace or DEFAULT_NAMESPACE}/{md.name}"


def render_one(
    obj: Mapping[str, Any],
    *,
    previous: Mapping[str, Any] | None,
    registry: ProviderRegistry,
    schemas: Schemas,
    pins: Versions,
    gateway: GatewayTarget | None = None,
) -> Result:
    key = folder_of(obj)
    admission = admit(_source_view(obj), old=previous, registry=registry)
    if not admission.allowed:
        return Result(
            key, error="; ".join(str(e) for e in admission.errors), warnings=admission.warnings
        )
    md = ModelDeployment(admission.obj)
    objects = MODULES[md.provider_name].render(md, pins)
    if is_enabled(md):
        if gateway is None:
            error = "spec.gateway.enabled: rendering gateway objects needs the Gateway routes attach to: pass --gateway NAMESPACE/NAME"
            return Result(key, error=error, warnings=admission.warnings)
        capabilities = capabilities_of(md, registry)
        port = MODEL_PORTS.get(md.provider_name, 8000)
        objects += render_gateway(md, capabilities, gateway, pins, port=port)
    for rendered in objects:
        errors = schemas.check(rendered, kubernetes=pins.kubernetes)
        if errors:
            kind = (str(rendered["apiVersion"]), str(rendered["kind"]))
            builtin = (
                f"Kubernetes {pins.kubernetes}" if kind[0] in BUILTIN_API_VERSIONS else "no CRD"
            )
            origin = schemas.origin.get(kind, builtin)
            return Result(
                key, error=str(incompatible(rendered, errors, origin)), warnings=admission.warnings
            )
    files = {HYDRATED_FILE: dump(admission.obj)}
    for rendered in objects:
        files[f"{rendered['kind'].lower()}-{rendered['metadata']['name']}.yaml"] = dump(rendered)
    files["kustomization.yaml"] = dump(kustomization(sorted(files)))
    return Result(key, files, None, admission.warnings, md.engine_type, md.provider_name)


def render_external(obj: Mapping[str, Any]) -> Result:
    """An ExternalModelProvider, validated as admission would (an inline key is refused and never
    written), in a folder of its own."""
    emp = ExternalModelProvider(obj)
    key = f"{emp.namespace or DEFAULT_NAMESPACE}/{emp.name}{EXTERNAL_SUFFIX}"
    errors = check_external_provider(obj)
    if errors:
        return Result(key, error="; ".join(str(e) for e in errors))
    files = {
        EXTERNAL_FILE: dump(_source_view(obj)),
        "kustomization.yaml": dump(kustomization([EXTERNAL_FILE])),
    }
    return Result(key, files)


def _source_view(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The object as a user would commit it: no status and no fields the server owns."""
    out = {k: v for k, v in obj.items() if k != "status"}
    metadata = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in SERVER_FIELDS}
    return {**out, "metadata": metadata}


def kustomization(resources: Sequence[str]) -> dict[str, Any]:
    return {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [r for r in resources if r != "kustomization.yaml"],
    }


def render_all(
    objects: Sequence[Mapping[str, Any]],
    *,
    previous: Mapping[str, Mapping[str, Any]],
    registry: ProviderRegistry,
    schemas: Schemas,
    pins: Versions,
    gateway: GatewayTarget | None = None,
) -> list[Result]:
    """Every ModelDeployment among `objects`, in folder order."""
    deployments = sorted((o for o in objects if o.get("kind") == MODEL_DEPLOYMENT), key=folder_of)
    externals = [render_external(o) for o in objects if o.get("kind") == EXTERNAL_MODEL_PROVIDER]
    rendered = [
        render_one(
            o,
            previous=previous.get(folder_of(o)),
            registry=registry,
            schemas=schemas,
            pins=pins,
            gateway=gateway,
        )
        for o in deployments
    ]
    return sorted(rendered + externals, key=lambda r: r.key)


def tree_files(results: Sequence[Result], kept: Mapping[str, Mapping[str, str]]) -> dict[str, str]:
    """The whole tree: each rendered folder (or the kept previous one for a failed object), plus
    kustomizations per namespace and at the top so `kubectl kustomize` builds everything."""
    folders: dict[str, Mapping[str, str]] = {}
    for result in results:
        if result.error is None:
            folders[result.key] = result.files
        elif result.key in kept:
            folders[result.key] = kept[result.key]
    files: dict[str, str] = {}
    namespaces: dict[str, list[str]] = {}
    for key in sorted(folders):
        namespace, name = key.split("/", 1)
        namespaces.setdefault(namespace, []).append(name)
        for name_in_folder, text in folders[key].items():
            files[f"{key}/{name_in_folder}"] = text
    for namespace, names in namespaces.items():
        files[f"{namespace}/kustomization.yaml"] = dump(kustomization(names))
    files["kustomization.yaml"] = dump(kustomization(sorted(namespaces)))
    return dict(sorted(files.items()))
