"""What the Models page shows for a composed ModelDeployment, from the core in process, by the
very functions the commands call:

- the admission verdict: core.admission.entry.admit_object, judged by the repository policy,
  and its text and JSON form (kubeio.inspection: `runway validate`);
- the selection trace: kubeio.explanation.explain_one and its text (`runway explain`);
- the files `runway render` would write for it: renderer.output.render.render_guarded (admission,
  the provider's render, the invariants, the strict check of every upstream object against the
  schema pack), each shown with its strict-check result.

The registry is the one `runway render` builds for the source folders (their
InferenceProviderConfigs, else the shipped ones); it, the schema pack and the pins are read
once per portal process (Checker)."""

from __future__ import annotations

import io
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.admission.entry import admit_object
from core.admission.verdict import Verdict
from core.model.kinds import DEFAULT_NAMESPACE, ModelDeployment
from core.model.versions import Versions
from core.rendering.assemble import render_model
from core.rendering.inferencegateway import GatewayTarget, parse_gateway
from core.selection.configs import ProviderRegistry
from kubeio.explanation import explain_one, failed_explanation, print_explanation
from kubeio.guard import per_object
from kubeio.inspection import judged_by_policy, print_verdict
from kubeio.objects import object_key
from kubeio.registry import build_registry
from kubeio.shipped import bundled_versions
from kubeio.yamlio import dump, load_all
from renderer.output.folders import HYDRATED_FILE
from renderer.output.render import RenderContext, render_guarded
from renderer.output.strict import Schemas

RENDER_PATH = "rendered"  # `runway render --path`'s default: where the preview's files go
DEFAULT_GATEWAY = "gateways/inference"  # the Gateway routes attach to, as the docs' examples
KUSTOMIZATION = "kustomization.yaml"
log = logging.getLogger("runway.ui.models")


@dataclass(frozen=True, slots=True)
class Checker:
    """What every preview of one portal process checks with."""

    registry: ProviderRegistry
    schemas: Schemas
    pins: Versions

    @classmethod
    def build(cls, configs: Sequence[Mapping[str, Any]], schemas: Schemas) -> Checker:
        return cls(build_registry(configs or None), schemas, bundled_versions())


@dataclass(frozen=True, slots=True)
class RenderedFile:
    """One file render would write: its path in the repository, its text, and what the
    strict check said of it (ok None: not an upstream object, nothing to check)."""

    path: str
    kind: str
    text: str
    check: str
    ok: bool | None


@dataclass(frozen=True, slots=True)
class Preview:
    verdict: Mapping[str, Any]  # `validate -o json`'s element
    verdict_text: str  # `validate`'s lines
    explanation: Mapping[str, Any]  # `explain -o json`'s element
    explanation_text: str
    render_error: str | None
    render_warnings: tuple[str, ...]
    files: tuple[RenderedFile, ...]

    @property
    def allowed(self) -> bool:
        return bool(self.verdict["allowed"])

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(f.kind for f in self.files)


def gateway_target(text: str) -> GatewayTarget | str:
    """`NAMESPACE/NAME` as render's --gateway takes it, or why it is not one."""
    target = parse_gateway(text.strip())
    return f"the Gateway routes attach to: {target}" if isinstance(target, str) else target


def preview(
    obj: Mapping[str, Any],
    checker: Checker,
    gateway: GatewayTarget | str,
    where: str | None = None,
) -> Preview:
    """The previews of `obj`; `where`: the file the object would be written to (its patch's),
    whose repository's policy (kubeio.policy) judges it as `runway validate` of that file does."""
    key = object_key(
        ModelDeployment(obj).namespace or DEFAULT_NAMESPACE, str(ModelDeployment(obj).name)
    )
    registry = checker.registry

    def refused(detail: str) -> Verdict:
        return Verdict.failed(obj, None, detail)

    judged = per_object(key, "checked", lambda: admit_object(obj, registry=registry), refused, log)
    if where is not None:  # a malformed policy file: unusable input for validate too
        judged = judged_by_policy(judged, where, obj)
    said = io.StringIO()
    print_verdict(judged, said)
    traced = per_object(
        key, "checked", lambda: explain_one(obj, registry=registry), failed_explanation(obj), log
    )
    told = io.StringIO()
    print_explanation(traced, told)
    error, warnings, files = _rendered(obj, checker, gateway, judged)
    return Preview(
        judged.as_json(), said.getvalue(), traced, told.getvalue(), error, warnings, files
    )


def _rendered(
    obj: Mapping[str, Any],
    checker: Checker,
    gateway: GatewayTarget | str,
    judged: Verdict,
) -> tuple[str | None, tuple[str, ...], tuple[RenderedFile, ...]]:
    if isinstance(gateway, str):
        return gateway, (), ()
    context = RenderContext(checker.registry, checker.schemas, checker.pins, gateway)
    result = render_guarded(obj, previous=None, context=context)
    folder = f"{RENDER_PATH}/{result.key}"
    if result.error is None:
        origins = dict(result.schemas)
        files = tuple(
            _file(f"{folder}/{name}", text, origins) for name, text in result.files.items()
        )
        return None, result.warnings, files
    if not judged.allowed:
        return result.error, result.warnings, ()
    return result.error, result.warnings, _each_checked(judged.object, checker, gateway, folder)


def _file(path: str, text: str, origins: Mapping[str, str]) -> RenderedFile:
    obj = load_all(text, path)[0]
    kind = str(obj.get("kind"))
    if path.endswith(f"/{HYDRATED_FILE}"):
        return RenderedFile(path, kind, text, "Runway's own object, as admission hydrated it", None)
    if path.endswith(f"/{KUSTOMIZATION}"):
        return RenderedFile(path, kind, text, "the folder's Kustomization (not applied)", None)
    origin = origins.get(f"{obj.get('apiVersion')} {kind}", "the schema pack")
    return RenderedFile(path, kind, text, f"strict check passed ({origin})", True)


def _each_checked(
    hydrated: Mapping[str, Any], checker: Checker, gateway: GatewayTarget, folder: str
) -> tuple[RenderedFile, ...]:
    """When render refused the object after admission allowed it: each upstream object the
    provider renders, with its own strict-check result (render stops at the first)."""
    try:
        objects = render_model(ModelDeployment(hydrated), checker.registry, checker.pins, gateway)
    except Exception:  # the page's boundary: render's own error is shown already
        log.debug("rendering the preview's objects raised", exc_info=True)
        return ()
    out = []
    for rendered in objects:
        errors = checker.schemas.check(rendered, kubernetes=checker.pins.kubernetes)
        name = f"{str(rendered['kind']).lower()}-{rendered['metadata']['name']}.yaml"
        check = "; ".join(str(e) for e in errors) if errors else "strict check passed"
        out.append(
            RenderedFile(
                f"{folder}/{name}", str(rendered["kind"]), dump(rendered), check, not errors
            )
        )
    return tuple(out)
