"""What `runway validate` says about one object, in its documented `validate -o json` shape and
as its text lines: the verdict of admission (mutate, then validate) for the kinds the webhook
admits. `runway validate` (cli/inspect.py) and the portal's Models page (ui/) both call these,
so the page says exactly what the command says."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from core.admission.pipeline import Admission, admit, patch_of
from core.fields.errors import FieldError
from core.model.kinds import (
    EMP_GROUP,
    EXTERNAL_MODEL_PROVIDER,
    GROUP,
    INFERENCE_PROVIDER_CONFIG,
    MODEL_DEPLOYMENT,
    ModelDeployment,
    dig,
)
from core.selection.configs import ProviderRegistry
from kubeio.objects import DEFAULT_NAMESPACE
from kubeio.policy import verdicts
from kubeio.sources import Document, group_of

# The kinds the webhook admits (webhook/handlers.py), by API group and kind; the other two are
# cluster-scoped or namespaced as their CRDs say (core/schema/crds.py).
MD = (GROUP, MODEL_DEPLOYMENT)
IPC = (GROUP, INFERENCE_PROVIDER_CONFIG)
EMP = (EMP_GROUP, EXTERNAL_MODEL_PROVIDER)
NAMESPACED = (MD, EMP)


def kind_of(obj: Mapping[str, Any]) -> tuple[str | None, Any]:
    return group_of(obj.get("apiVersion")), obj.get("kind")


def name_of(obj: Mapping[str, Any]) -> str:
    """metadata.name, as text even when it is not a string (the check says what is wrong)."""
    found = dig(obj, "metadata", "name")
    return found if isinstance(found, str) else str(found)


def verdict(
    obj: Mapping[str, Any],
    doc: Document | None,
    old: Mapping[str, Any] | None,
    *,
    errors: list[dict[str, str]],
    skipped: str | None = None,
    warnings: Sequence[str] = (),
    patch: list[dict[str, Any]] | None = None,
    admitted: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One element of the documented `validate -o json` array."""
    namespace = ModelDeployment(obj).namespace
    namespaced = kind_of(obj) in NAMESPACED
    return {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "name": name_of(obj),
        "namespace": (namespace or DEFAULT_NAMESPACE) if namespaced else (namespace or None),
        "source": doc.where if doc is not None else None,
        "operation": "UPDATE" if old is not None else "CREATE",
        "allowed": not errors,
        "skipped": skipped,
        "errors": errors,
        "warnings": list(warnings),
        "patch": patch or [],
        "object": dict(admitted if admitted is not None else obj),
    }


def deny_by_policy(results: list[dict[str, Any]], docs: Sequence[Document]) -> None:
    """Deny each object the source repository's policy does not allow it to define
    (kubeio.policy, asked by `runway render` too), at its metadata.namespace."""
    for doc, result, why in zip(docs, results, verdicts(docs), strict=True):
        if why is not None:
            field = doc.field("metadata.namespace")
            result["errors"].append({"field": field, "message": f"Forbidden: {why}"})
            result["allowed"] = False


def validate_one(
    obj: Mapping[str, Any], *, old: Mapping[str, Any] | None = None, registry: ProviderRegistry
) -> dict[str, Any]:
    """One ModelDeployment's admission, in the documented `validate -o json` shape."""
    admission: Admission = admit(obj, old=old, registry=registry)
    return verdict(
        obj,
        None,
        old,
        errors=[field_error(e) for e in admission.errors],
        warnings=admission.warnings,
        patch=patch_of(obj, admission),
        admitted=admission.obj,
    )


def field_error(error: FieldError) -> dict[str, str]:
    return {"field": error.path, "message": f"{error.reason}: {error.detail}"}


def print_verdict(result: Mapping[str, Any], out: TextIO) -> None:
    name = f"{result['namespace']}/{result['name']}" if result["namespace"] else result["name"]
    if result["skipped"]:
        # as kubeio.sources.skip_note words it for every command
        print(
            f"skipped {result['kind']}/{result['name']} ({result['source']}): {result['skipped']}",
            file=out,
        )
        return
    if result["kind"] != MODEL_DEPLOYMENT:
        name = f"{result['kind']} {name}"
    if not result["allowed"]:
        print(f"{name}: denied", file=out)
    elif result["kind"] == MODEL_DEPLOYMENT:
        spec = result["object"]["spec"]
        annotations = result["object"]["metadata"].get("annotations", {})
        engine = f"{spec['engine']['type']} ({annotations.get('airunway.ai/engine-selection', 'explicit')})"
        provider = f"{spec['provider']['name']} ({annotations.get('airunway.ai/provider-selection', 'explicit')})"
        print(f"{name}: allowed: engine {engine}, provider {provider}", file=out)
    else:
        print(f"{name}: allowed", file=out)
    for error in result["errors"]:
        print(f"  {error['field']}: {error['message']}", file=out)
    for warning in result["warnings"]:
        print(f"  warning: {warning}", file=out)
