"""From source objects to the files of the GitOps tree, in memory and deterministically.

For each ModelDeployment: the same admission the webhook runs (sticky against the previously
rendered hydrated object) -> the selected provider's render() -> the cross-object invariants
(core/rendering/invariants.py) -> the strict upstream check -> one YAML file per object. A ModelDeployment that is rejected or incompatible, whose output would
carry a credential, or whose rendering raises anything at all, is reported and keeps its previous
output (nothing else is lost); the others render. Many ModelDeployments render in a pool of
processes, one per core; the output does not depend on how they were split.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from core.admission.configs import check_external_provider
from core.admission.entry import admit_object
from core.admission.verdict import MD, Verdict
from core.checks.credentials import credential_kind, find_credentials
from core.fields.errors import FieldError, Reason
from core.model.kinds import ExternalModelProvider, ModelDeployment
from core.model.names import check_model_deployment_names, rendered_name_problems
from core.model.versions import Versions
from core.rendering.assemble import render_model
from core.rendering.inferencegateway import (
    GatewayTarget,
    is_enabled,
)
from core.rendering.invariants import check_invariants
from core.schema.crds import external_model_provider_spec
from core.schema.rules import apply_defaults
from core.selection.configs import ProviderRegistry
from kubeio.guard import per_object
from kubeio.yamlio import Strings, dump
from renderer.git.safefs import NAME_MAX
from renderer.output.builtin import BUILTIN_API_VERSIONS
from renderer.output.folders import (
    EXTERNAL_FILE,
    EXTERNAL_SUFFIX,
    HYDRATED_FILE,
    Result,
    external_folder_of,
    folder_of,
    kustomization,
)
from renderer.output.strict import Schemas, incompatible
from renderer.pool import cores, fork_pool

SERVER_FIELDS = (
    "resourceVersion",
    "uid",
    "creationTimestamp",
    "generation",
    "managedFields",
    "selfLink",
)
POOL_MINIMUM = 64  # fewer ModelDeployments than this render in-process (a pool costs ~0.1 s)
CHUNK = 32  # ModelDeployments per pool task: small enough to balance, large enough to amortize
log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RenderContext:
    """What every ModelDeployment of one render is rendered with."""

    registry: ProviderRegistry
    schemas: Schemas
    pins: Versions
    gateway: GatewayTarget | None = None
    # how strings were written into YAML so far (kubeio.yamlio): each process of a render
    # fills its own copy
    strings: Strings = field(default_factory=Strings)


def render_one(
    obj: Mapping[str, Any], *, previous: Mapping[str, Any] | None, context: RenderContext
) -> Result:
    """One ModelDeployment's Result (see the module's text), rendered with `context` (whose
    `strings` is shared by the objects of one render)."""
    key = folder_of(obj)
    registry, schemas, pins = context.registry, context.schemas, context.pins
    gateway, strings = context.gateway, context.strings
    admission = admit_object(_source_view(obj), old=previous, registry=registry, kind=MD)
    if not admission.allowed:
        return Result(
            key, error="; ".join(str(e) for e in admission.errors), warnings=admission.warnings
        )
    md = ModelDeployment(admission.object)
    named = check_model_deployment_names(md)  # admission checks it on CREATE; Git needs it always
    if named:
        return Result(key, error="; ".join(map(str, named)), warnings=admission.warnings)
    if is_enabled(md, registry) and gateway is None:
        error = "spec.gateway.enabled: rendering gateway objects needs the Gateway routes attach to: pass --gateway NAMESPACE/NAME"
        return Result(key, error=error, warnings=admission.warnings)
    objects = render_model(md, registry, pins, gateway)
    misfits, refused = check_invariants(md, objects, registry), rendered_name_problems(objects)
    if misfits or refused:  # a Runway bug or an override that broke the fit: never written
        said = ["rendered objects do not fit together: " + "; ".join(misfits)] if misfits else []
        said += ["the API server would refuse: " + "; ".join(refused)] if refused else []
        return Result(key, error="; ".join(said), warnings=admission.warnings)
    consulted: dict[str, str] = {}
    for rendered in objects:
        errors = schemas.check(rendered, kubernetes=pins.kubernetes)
        consulted.update(schemas.sources_of([rendered]))
        if errors:
            kind = (str(rendered["apiVersion"]), str(rendered["kind"]))
            builtin = (
                f"Kubernetes {pins.kubernetes}" if kind[0] in BUILTIN_API_VERSIONS else "no CRD"
            )
            origin = schemas.origin.get(kind, builtin)
            return Result(
                key,
                error=str(incompatible(rendered, errors, origin)),
                warnings=admission.warnings,
                schemas=tuple(sorted(consulted.items())),
            )
    files = {HYDRATED_FILE: dump(admission.object, strings=strings)}
    for rendered in objects:
        name = f"{rendered['kind'].lower()}-{rendered['metadata']['name']}.yaml"
        files[name] = dump(rendered, strings=strings)
    files["kustomization.yaml"] = dump(kustomization(sorted(files)), strings=strings)
    if any(credential_kind(text) for text in files.values()):  # rare: then find the fields
        leaked = [
            f"{what}: {error}"
            for what, rendered in [("ModelDeployment", admission.object)]
            + [_named(o) for o in objects]
            for error in find_credentials(rendered)
        ] or [f"{name}: looks like a credential" for name, t in files.items() if credential_kind(t)]
        error = "refusing to write a credential into Git: " + "; ".join(leaked)
        return Result(key, error=error, warnings=admission.warnings)
    result = Result(key, files, None, admission.warnings, md.engine_type, md.provider_name)
    settled = _is_settled(obj, previous, admission, registry)
    return replace(result, settled=settled, schemas=tuple(sorted(consulted.items())), scanned=True)


def _named(obj: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    return f"{obj.get('kind')}/{(obj.get('metadata') or {}).get('name')}", obj


def _is_settled(
    obj: Mapping[str, Any],
    previous: Mapping[str, Any] | None,
    admission: Verdict,
    registry: ProviderRegistry,
) -> bool:
    """Whether admitting `obj` against its own hydrated output (which the next render reads back
    from Git as the previous object) gives the same verdict; rendering depends on nothing else
    of the previous object. YAML round-trips these plain objects exactly, so the object itself
    stands in for its file."""
    if previous == admission.object:
        return True  # this render already was that render
    try:
        # validation's part that reads neither the stored object nor the operation is the
        # first admission's, for the same hydrated object (this second admission was 22% of
        # render_one's time in a first render of 10,000; about a tenth of its CPU now saved)
        again = admit_object(
            _source_view(obj), old=admission.object, registry=registry, kind=MD, known=admission
        )
    except Exception:  # unsettled only costs a re-render next time
        log.debug("settling %s raised", folder_of(obj), exc_info=True)
        return False
    return (again.allowed, again.object, again.warnings) == (
        admission.allowed,
        admission.object,
        admission.warnings,
    )


def render_guarded(
    obj: Mapping[str, Any], *, previous: Mapping[str, Any] | None, context: RenderContext
) -> Result:
    """render_one, where any exception at all becomes this object's one-line error (the
    traceback goes to the debug log): one bad object never takes down the others."""
    key = folder_of(obj)
    return per_object(
        key,
        "rendered",
        lambda: render_one(obj, previous=previous, context=context),
        lambda error: Result(key, error=error),
        log,
    )


def render_external(obj: Mapping[str, Any]) -> Result:
    """An ExternalModelProvider, validated as admission would (an inline key is refused and never
    written), in a folder of its own."""
    emp = ExternalModelProvider(obj)
    key = external_folder_of(obj)
    errors = check_external_provider(obj)
    if not errors and len(f"{emp.name}{EXTERNAL_SUFFIX}".encode()) > NAME_MAX:
        detail = f"must be at most {NAME_MAX - len(EXTERNAL_SUFFIX)} characters: its folder {emp.name[:8]}...{EXTERNAL_SUFFIX} is a file name"
        errors = [FieldError("metadata.name", Reason.TOO_LONG, detail)]
    if errors:
        return Result(key, error="; ".join(str(e) for e in errors))
    files = {
        EXTERNAL_FILE: dump(_source_view(obj)),
        "kustomization.yaml": dump(kustomization([EXTERNAL_FILE])),
    }
    return Result(key, files)


def _source_view(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The object as the API server stores it from a user's commit: no status, no fields the
    server owns, and its CRD's defaults filled in (`mode: chat`, `key: apiKey`), so that Git and
    the cluster agree field for field (Argo CD diffs the two)."""
    out = {k: v for k, v in obj.items() if k != "status"}
    metadata = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in SERVER_FIELDS}
    spec = apply_defaults(out.get("spec"), external_model_provider_spec())
    return {**out, "metadata": metadata, "spec": spec}


def render_external_guarded(obj: Mapping[str, Any]) -> Result:
    """render_external, guarded as render_guarded is."""
    key = external_folder_of(obj)
    return per_object(
        key, "rendered", lambda: render_external(obj), lambda error: Result(key, error=error), log
    )


# What the pool's forked workers render: set just before the fork, so the objects, the registry
# and the parsed schemas reach the workers by copy-on-write instead of by pickling.
_WORK: tuple[Sequence[Mapping[str, Any]], Mapping[str, Mapping[str, Any]], RenderContext] | None
_WORK = None


def render_many(
    deployments: Sequence[Mapping[str, Any]],
    *,
    previous: Mapping[str, Mapping[str, Any]],
    context: RenderContext,
    workers: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[Result]:
    """render_guarded over `deployments` (in their order): render_chunks, gathered."""
    chunks = render_chunks(
        deployments, previous=previous, context=context, workers=workers, progress=progress
    )
    return [result for chunk in chunks for result in chunk]


def render_chunks(
    deployments: Sequence[Mapping[str, Any]],
    *,
    previous: Mapping[str, Mapping[str, Any]],
    context: RenderContext,
    workers: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> Iterator[list[Result]]:
    """render_guarded over `deployments`, in their order, a chunk of Results at a time as they
    are rendered (so that the caller may write them while the rest render): in a pool of
    `workers` processes (default: the usable cores) when there are enough of them to pay for
    one. `progress` is told how many are rendered so far, as they are."""
    global _WORK  # noqa: PLW0603 - see _WORK
    told = progress or (lambda done: None)
    count = workers if workers is not None else cores()
    if count <= 1 or len(deployments) < POOL_MINIMUM:
        for done, obj in enumerate(deployments, start=1):
            yield [_render_in(context, obj, previous)]
            told(done)
        return
    # The first one renders here: it builds what every render reuses (validators of built-in
    # kinds, compiled rules) once, before the fork, instead of once per worker.
    yield [_render_in(context, deployments[0], previous)]
    told(1)
    _WORK = (deployments, previous, context)
    try:
        bounds = [(i, min(i + CHUNK, len(deployments))) for i in range(1, len(deployments), CHUNK)]
        done = 1
        with fork_pool(count) as pool:
            for chunk in pool.imap(_render_range, bounds, chunksize=1):  # in order
                yield chunk
                done += len(chunk)
                told(done)
    finally:
        _WORK = None


def _render_range(bounds: tuple[int, int]) -> list[Result]:
    assert _WORK is not None
    deployments, previous, context = _WORK
    return [_render_in(context, o, previous) for o in deployments[bounds[0] : bounds[1]]]


def _render_in(
    context: RenderContext, obj: Mapping[str, Any], previous: Mapping[str, Mapping[str, Any]]
) -> Result:
    return render_guarded(obj, previous=previous.get(folder_of(obj)), context=context)
