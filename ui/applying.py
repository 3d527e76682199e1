"""The "apply to the cluster as the signed-in user" output (issue #41, "Output, GitOps first"):
off unless the site runs `runway ui --actions --apply-as-user`.

What is applied is what `runway apply` applies for one rendered folder (renderer.apply.
apply_objects): the hydrated ModelDeployment first, then its upstream objects, each server-side
applied with fieldValidation=Strict under the field manager `runway-ui`, through a client that
carries the user's own token (ui.cluster.Cluster.as_user), never the portal's rights.

Before the button is offered, a SelfSubjectAccessReview made with the user's token asks whether
they may create and patch each kind in its namespace (`offer`). Where it says no, the page shows
the API server's own words for that user and object: a server-side dry run of the same apply as
the user, whose refusal names them (`modeldeployments.airunway.ai "x" is forbidden: User "..."
cannot patch resource ...`). A refusal at apply time is shown the same way, never as a 500.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import DynamicApiError, ResourceNotFoundError

from kubeio.client import CALL_FAILURES, api_failure, error_message
from kubeio.users import User
from renderer.apply import Applied, apply_objects
from ui.cluster import TIMEOUT, Cluster
from ui.outputs import Bundle, OutputError

FIELD_MANAGER = "runway-ui"
VERBS = ("create", "patch")  # a server-side apply creates the object, or patches it
FAILURES = (DynamicApiError, *CALL_FAILURES)


@dataclass(frozen=True, slots=True)
class Target:
    """Where one object of a bundle goes, as RBAC names it."""

    group: str
    resource: str  # the plural, e.g. modeldeployments
    namespace: str
    name: str

    @property
    def qualified(self) -> str:
        return f"{self.resource}.{self.group}" if self.group else self.resource


@dataclass(frozen=True, slots=True)
class Refusal:
    """What the user may not do, and the API server's own message for it."""

    verb: str
    target: Target
    message: str


@dataclass(frozen=True, slots=True)
class Offer:
    """Whether the Apply button is offered: `refusals` empty, or why not."""

    refusals: tuple[Refusal, ...] = ()
    problem: str = ""  # the bundle cannot be applied at all (a kind not served, no objects)

    @property
    def allowed(self) -> bool:
        return not self.refusals and not self.problem


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one apply did: each object's result, in order."""

    results: tuple[Applied, ...]

    @property
    def ok(self) -> bool:
        return bool(self.results) and all(r.ok for r in self.results)


def dynamic_as(cluster: Cluster, viewer: User) -> DynamicClient:
    """A dynamic client (discovery included) that authenticates as the user."""
    return DynamicClient(cluster.as_user(viewer))  # type: ignore[no-untyped-call]


def _objects(bundle: Bundle) -> list[dict[str, Any]]:
    objects = [dict(obj) for obj in bundle.objects]
    if not objects:
        raise OutputError(f"{bundle.title} has no objects to apply")
    for obj in objects:
        meta = obj.get("metadata")
        if not isinstance(meta, Mapping) or not meta.get("name") or not obj.get("kind"):
            raise OutputError(f"{bundle.title}: every object to apply needs a kind and a name")
    return objects


def targets(dynamic: DynamicClient, objects: Sequence[Mapping[str, Any]]) -> list[Target]:
    """Each object's resource as the API server serves it (discovery made as the user)."""
    found = []
    for obj in objects:
        try:
            resource = dynamic.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
        except ResourceNotFoundError:
            raise OutputError(
                f"the API server does not serve {obj['apiVersion']} {obj['kind']} "
                "(is its CRD installed?)"
            ) from None
        meta = obj["metadata"]
        namespace = str(meta.get("namespace") or "") if resource.namespaced else ""
        found.append(Target(resource.group, resource.name, namespace, str(meta["name"])))
    return found


def offer(cluster: Cluster, viewer: User, bundle: Bundle) -> Offer:
    """Whether `viewer` may apply `bundle`: a SelfSubjectAccessReview per kind, namespace and
    verb; for each refusal the API server's message from a dry run as the user."""
    try:
        objects = _objects(bundle)
        dynamic = dynamic_as(cluster, viewer)
        found = targets(dynamic, objects)
    except OutputError as err:
        return Offer(problem=str(err))
    except FAILURES as err:
        return Offer(problem=api_failure(err) or error_message(err))
    refusals = []
    asked: set[Target] = set()
    for obj, target in zip(objects, found, strict=True):
        kind = Target(target.group, target.resource, target.namespace, "")
        if kind in asked:
            continue
        asked.add(kind)
        denied = [
            verb
            for verb in VERBS
            if not cluster.may(
                viewer, verb, target.resource, group=target.group, namespace=target.namespace
            ).allowed
        ]
        if denied:
            refusals.append(Refusal(" and ".join(denied), target, dry_run_refusal(dynamic, obj)))
    return Offer(tuple(refusals))


def dry_run_refusal(dynamic: DynamicClient, obj: Mapping[str, Any]) -> str:
    """The API server's answer to a server-side dry run of applying `obj` as the user: its own
    message naming the user and the object when RBAC refuses, '' when it would be accepted."""
    try:
        resource = dynamic.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
        resource.server_side_apply(
            body=dict(obj),
            name=obj["metadata"]["name"],
            namespace=obj["metadata"].get("namespace"),
            field_manager=FIELD_MANAGER,
            force_conflicts=True,
            dry_run="All",
            query_params=[("fieldValidation", "Strict")],
            _request_timeout=TIMEOUT,
        )
    except FAILURES as err:
        return error_message(err) if isinstance(err, DynamicApiError) else str(api_failure(err))
    return ""


def apply_as_user(cluster: Cluster, viewer: User, bundle: Bundle, now: dt.datetime) -> Outcome:
    """Apply `bundle` with the user's client, as `runway apply` applies a folder. The status is
    left to the status controller (the user need not be allowed to write it). A refusal is in
    the outcome with the API server's message; an unreachable server raises OutputError."""
    objects = _objects(bundle)
    first = objects[0]["metadata"]
    folder = f"{first.get('namespace') or ''}/{first['name']}"
    try:
        dynamic = dynamic_as(cluster, viewer)
        results = apply_objects(
            dynamic,
            folder,
            objects,
            field_manager=FIELD_MANAGER,
            now=now,
            timeout=TIMEOUT,
            status=False,
        )
    except FAILURES as err:
        raise OutputError(
            f"applying {bundle.title}: {api_failure(err) or error_message(err)}"
        ) from None
    return Outcome(tuple(results))
