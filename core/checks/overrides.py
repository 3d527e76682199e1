"""spec.provider.overrides, layer 1 (every provider) and the helpers layer 2 modules share.

The three layers (seed 000, "spec.provider.overrides passes through three separate checks"):
1. here: overrides are a JSON object; security-sensitive and workload-sizing keys are rejected at
   any depth, through objects and arrays, one error per rejected subtree;
2. the selected provider's module (`check_overrides`): accepted root keys, typed keys strict;
3. the target API server's schema: the renderer's strict check of every rendered object
   (core/schema/structural.py against the pinned upstream CRD), done at render time.
No message ever echoes an override value: overrides are where people paste tokens.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.fields.errors import FieldError, Reason
from core.fields.paths import FieldPath
from core.schema.structural import check_schema, type_name

SECURITY_KEYS = frozenset(
    {
        "securityContext",
        "serviceAccountName",
        "serviceAccount",
        "hostNetwork",
        "hostPID",
        "hostIPC",
        "automountServiceAccountToken",
        "nodeName",
        "priorityClassName",
        "runtimeClassName",
        # Pod Security "baseline" forbids both: a hostPath volume mounts the node's filesystem
        # (the escalation reported against AI Runway's Direct vLLM overrides) and a hostPort
        # binds the node's network. `privileged` and `capabilities` live only inside
        # securityContext, which is already rejected whole.
        "hostPath",
        "hostPort",
    }
)
SIZING_KEYS = frozenset({"replicas", "resources"})


def check_global(
    overrides: Any, at: FieldPath, sized: frozenset[str] = frozenset()
) -> list[FieldError]:
    """Layer 1: the shape and the recursive key blocklists, in document order. `sized` are the
    provider's roots whose own sizing keys are typed and bounded by its layer 2 (the Overrides
    role's `sized`): a sizing key directly under one of them is left to that check."""
    if not isinstance(overrides, Mapping):
        detail = f"overrides must be a JSON object, not {type_name(overrides)}"
        return [FieldError(str(at), Reason.INVALID, detail)]
    errors: list[FieldError] = []
    # Iterative depth-first walk: arbitrarily deep input cannot exhaust the recursion limit.
    stack: list[tuple[Any, FieldPath]] = [(overrides, at)]
    while stack:
        node, path = stack.pop()
        children: list[tuple[Any, FieldPath]] = []
        if isinstance(node, Mapping):
            for key, value in node.items():
                child = path.child(str(key))
                if key in SECURITY_KEYS:
                    errors.append(FieldError(str(child), Reason.FORBIDDEN, _security(key)))
                elif key in SIZING_KEYS and not _sized_root(path, at, sized):
                    errors.append(FieldError(str(child), Reason.FORBIDDEN, _sizing(key)))
                else:
                    children.append((value, child))
        elif isinstance(node, list):
            children = [(item, path.index(i)) for i, item in enumerate(node)]
        stack.extend(reversed(children))
    return errors


def _security(key: str) -> str:
    return f'"{key}" may not be set through overrides: it is security-sensitive'


def _sizing(key: str) -> str:
    return (
        f'"{key}" may not be set through overrides: it would bypass the admission limits; '
        "use spec.scaling and spec.resources instead"
    )


def _sized_root(path: FieldPath, at: FieldPath, sized: frozenset[str]) -> bool:
    """`path` is one of the provider's sized roots, directly under the overrides (`at`)."""
    return any(path == at.child(root) for root in sized)


def without_blocked(value: Any, sized: frozenset[str] = frozenset()) -> Any:
    """A copy of overrides without the subtrees layer 1 rejected: what layer 2 gets to see
    (the sizing keys of the provider's sized roots stay, for its typed check)."""
    if isinstance(value, Mapping):
        return {
            k: _kept(v, sized) if k in sized else without_blocked(v)
            for k, v in value.items()
            if k not in SECURITY_KEYS and k not in SIZING_KEYS
        }
    if isinstance(value, list):
        return [without_blocked(v) for v in value]
    return value


def _kept(value: Any, sized: frozenset[str]) -> Any:
    """A sized root's value: its own sizing keys kept, everything beneath them filtered."""
    if not isinstance(value, Mapping):
        return without_blocked(value)
    return {k: without_blocked(v) for k, v in value.items() if k not in SECURITY_KEYS}


def check_roots(
    overrides: Mapping[str, Any], provider: str, roots: frozenset[str], at: FieldPath
) -> list[FieldError]:
    """Layer 2, first step: only the provider's accepted root keys; each named when rejected."""
    accepted = ", ".join(sorted(roots)) or "none"
    return [
        FieldError(
            str(at.child(key)),
            Reason.FORBIDDEN,
            f'root key "{key}" is not accepted by provider {provider} (accepted: {accepted})',
        )
        for key in overrides
        if key not in roots
    ]


def check_accepted(
    overrides: Mapping[str, Any],
    provider: str,
    shape: Mapping[str, Any],
    at: FieldPath,
) -> list[FieldError]:
    """Layer 2: the root keys `shape` declares, each decoded strictly against its shape."""
    roots = frozenset(shape.get("properties", {}))
    present = {k: v for k, v in overrides.items() if k in roots}
    return check_roots(overrides, provider, roots, at) + check_schema(present, shape, at)


def object_roots(*roots: str) -> dict[str, Any]:
    """The shape of overrides whose accepted roots are free-form objects (merged upstream)."""
    free = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return {"type": "object", "properties": {root: free for root in roots}}


POD_SPEC_INSTEAD = (
    "the pod spec of a Deployment Runway renders is Runway's (overrides would replace the serving "
    "container: its image, args, probes and GPU request); set spec.engine.image, spec.engine.args, "
    "spec.env, spec.resources, spec.nodeSelector, spec.tolerations or spec.podTemplate.metadata instead"
)


def check_no_pod_spec(overrides: Mapping[str, Any], at: FieldPath) -> list[FieldError]:
    """llm-d and Direct vLLM: `spec.template.spec` is refused, as AI Runway refuses it for llm-d.
    Deployment-level fields (strategy, revisionHistoryLimit, template metadata) stay open."""
    template = (
        overrides.get("spec", {}).get("template")
        if isinstance(overrides.get("spec"), Mapping)
        else None
    )
    if isinstance(template, Mapping) and "spec" in template:
        return [
            FieldError(
                str(at.child("spec", "template", "spec")), Reason.FORBIDDEN, POD_SPEC_INSTEAD
            )
        ]
    return []
