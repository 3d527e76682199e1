"""Composing an ExternalModelProvider on the Gateway providers page, and its checks: admission's
(core.admission.configs.check_external_provider, the base URL rules included) and the merge
boundary exactly as `runway gateway-plan` decides it (gateway.run.plan_objects over the other
claimants plus the composed object, its lines made by gateway.merge's own line functions).

The form takes a Secret reference only (name and key): there is no field for a key's value, and
admission refuses one written inline in the YAML. In live mode the object is stamped
`gateway.tokenfactory.mirantis.com/requested-by` with the signed-in user; offline nobody is
signed in, so nothing is stamped (an annotation written in the YAML is kept as written) and the
page says so.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.admission.configs import REQUESTED_BY, check_external_provider, requested_by
from core.fields.errors import FieldError, SourceError
from core.model.kinds import EMP_API_VERSION, EXTERNAL_MODEL_PROVIDER, dig
from gateway.merge import Owner, conflict_line, model_line, owner_of, skipped_line
from gateway.run import PlanSettings, plan_objects
from kubeio.sources import parse_stream
from kubeio.yamlio import dump

EDITOR = "the YAML editor"
MAX_ROWS = 1000  # model rows a form may post (the CRD's limit of models per provider)
DEFAULT_NAMESPACE = "gateway"


@dataclass(frozen=True, slots=True)
class ModelRow:
    upstream: str  # spec.models[].upstreamModel ('' : the servedName)
    served: str  # spec.models[].servedName


@dataclass(frozen=True, slots=True)
class Form:
    name: str = ""
    namespace: str = DEFAULT_NAMESPACE
    base_url: str = ""
    secret_name: str = ""
    secret_key: str = "apiKey"
    models: tuple[ModelRow, ...] = (ModelRow("", ""),)


@dataclass(frozen=True, slots=True)
class Claim:
    """One line of the merge boundary's answer about the composed provider."""

    line: str  # exactly as gateway-plan prints it
    conflict: bool
    others: tuple[Owner, ...] = ()  # the other claimants of a conflicting name


@dataclass(frozen=True, slots=True)
class Verdict:
    obj: Mapping[str, Any] | None  # None: the input is not an object at all
    text: str = ""  # the object as YAML
    problem: str = ""  # why the input could not be read
    errors: tuple[FieldError, ...] = ()  # admission's
    claims: tuple[Claim, ...] = ()
    stamp: str = ""  # what was done about requested-by
    notes: tuple[str, ...] = field(default=())

    @property
    def conflicts(self) -> tuple[Claim, ...]:
        return tuple(c for c in self.claims if c.conflict)

    @property
    def allowed(self) -> bool:
        return self.obj is not None and not self.errors and not self.conflicts


def form_of(values: Mapping[str, Any], lists: Mapping[str, Sequence[str]]) -> Form:
    """The form's fields as posted (every value a string; missing ones empty)."""
    upstream = list(lists.get("model_upstream", ()))[:MAX_ROWS]
    served = list(lists.get("model_served", ()))[:MAX_ROWS]
    rows = max(len(upstream), len(served))
    upstream += [""] * (rows - len(upstream))
    served += [""] * (rows - len(served))
    return Form(
        name=str(values.get("name", "")).strip(),
        namespace=str(values.get("namespace", "")).strip(),
        base_url=str(values.get("base_url", "")).strip(),
        secret_name=str(values.get("secret_name", "")).strip(),
        secret_key=str(values.get("secret_key", "")).strip(),
        models=tuple(ModelRow(u.strip(), s.strip()) for u, s in zip(upstream, served, strict=True)),
    )


def form_object(form: Form) -> dict[str, Any]:
    """The ExternalModelProvider the form describes (a row with no servedName is left out; an
    empty Secret name leaves the reference out, which admission then names)."""
    spec: dict[str, Any] = {"baseURL": form.base_url}
    if form.secret_name:
        ref = {"name": form.secret_name}
        spec["credentialsSecretRef"] = ref | ({"key": form.secret_key} if form.secret_key else {})
    spec["models"] = [
        {"servedName": row.served} | ({"upstreamModel": row.upstream} if row.upstream else {})
        for row in form.models
        if row.served
    ]
    return {
        "apiVersion": EMP_API_VERSION,
        "kind": EXTERNAL_MODEL_PROVIDER,
        "metadata": {"name": form.name, "namespace": form.namespace or DEFAULT_NAMESPACE},
        "spec": spec,
    }


def yaml_object(text: str) -> dict[str, Any] | str:
    """The one object of the editor's text, or why there is none (the CLI's bounded reader)."""
    try:
        docs, _ = parse_stream(text, EDITOR)
    except SourceError as err:
        return str(err)
    if len(docs) != 1:
        return f"{EDITOR}: holds {len(docs)} objects; compose one ExternalModelProvider"
    return docs[0].obj


def stamped(obj: dict[str, Any], username: str) -> tuple[dict[str, Any], str]:
    """`obj` with requested-by set to `username` (live), and what the page says about it."""
    if not username:
        given = requested_by(obj)
        kept = f" ({REQUESTED_BY} is kept as written: {given})" if given else ""
        return obj, f"Offline: nobody is signed in, so the portal stamps no {REQUESTED_BY}{kept}."
    out = copy.deepcopy(obj)
    metadata = out.get("metadata")
    if not isinstance(metadata, dict):
        return out, f"Not stamped: metadata is not a mapping ({REQUESTED_BY} needs one)."
    annotations = metadata.get("annotations")
    if not isinstance(annotations, dict):
        annotations = metadata["annotations"] = {}
    previous = annotations.get(REQUESTED_BY)
    annotations[REQUESTED_BY] = username
    if previous is not None and previous != username:
        return out, f"Stamped {REQUESTED_BY}: {username} (the editor said {previous!s:.200})."
    return out, f"Stamped {REQUESTED_BY}: {username} (you, signed in)."


def verdict(obj: dict[str, Any], others: Sequence[Mapping[str, Any]], username: str) -> Verdict:
    """Admission's verdict and the merge boundary's answer for `obj` among `others` (every other
    ModelDeployment, ExternalModelProvider and InferenceProviderConfig). An object of `others`
    with the same namespace and name is the one `obj` would replace: it leaves the merge and is
    admission's `old` (requested-by cannot change)."""
    obj, stamp = stamped(obj, username)
    owner = owner_of(obj)
    old = next(
        (o for o in others if o.get("kind") == EXTERNAL_MODEL_PROVIDER and owner_of(o) == owner),
        None,
    )
    errors = tuple(check_external_provider(obj, old))
    rest = [o for o in others if o is not old]
    result = plan_objects([*rest, obj], PlanSettings())
    claims = [Claim(model_line(m), False) for m in result.models if m.owner == owner]
    claims += [
        Claim(conflict_line(c), True, tuple(c.others(owner)))
        for c in result.conflicts
        if owner in c.claimants
    ]
    claims += [Claim(skipped_line(s), False) for s in result.skipped if s.owner == owner]
    return Verdict(obj, _text(obj), errors=errors, claims=tuple(claims), stamp=stamp)


def _text(obj: Mapping[str, Any]) -> str:
    try:
        return dump(obj)
    except (ValueError, TypeError, RecursionError) as err:
        return f"# cannot be shown as YAML: {err}"


def claimed_names(obj: Mapping[str, Any]) -> tuple[str, ...]:
    models = dig(obj, "spec", "models")
    if not isinstance(models, list):
        return ()
    return tuple(
        str(m.get("servedName")) for m in models if isinstance(m, Mapping) and "servedName" in m
    )
