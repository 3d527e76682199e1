"""`runway apply`: server-side apply of a rendered tree with fieldValidation=Strict.

Order: each folder's hydrated ModelDeployment first, then its upstream objects (a ModelDeployment
must exist before its status can report on them). A refusal is classified by message
(core.schema.upstream); IncompatibleUpstream marks the ModelDeployment Failed with the conditions
ResourceCreated=False and Ready=False (reason IncompatibleUpstream). For built-in kinds the API
server names one arbitrary unknown field per call, so the stored message is a stable summary and
the field goes to the log. A later clean apply clears the failure: applying again after the
upstream CRD is upgraded recovers without touching the ModelDeployment.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubernetes
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import DynamicApiError, ResourceNotFoundError

from core.schema.upstream import classify_write_error
from core.status.incompatible import INCOMPATIBLE_UPSTREAM, incompatible_message, is_builtin
from kubeio.client import api_client, error_message
from kubeio.objects import condition
from kubeio.sources import parse_documents
from renderer.git.safefs import link_error, read_text
from renderer.output.folders import EXTERNAL_FILE, HYDRATED_FILE

log = logging.getLogger(__name__)
REASON = INCOMPATIBLE_UPSTREAM


@dataclass(frozen=True)
class Applied:
    folder: str
    obj: str  # Kind/name
    ok: bool
    message: str = ""
    incompatible_field: str | None = None
    api_version: str = ""
    generation: int | None = None  # of the object as applied


def folders(root: Path) -> list[tuple[str, list[dict[str, Any]]]]:
    """(namespace/name, objects with the hydrated ModelDeployment first) for each folder; an
    ExternalModelProvider's folder holds just that object."""
    out = []
    for md_file in sorted([*root.glob(f"*/*/{HYDRATED_FILE}"), *root.glob(f"*/*/{EXTERNAL_FILE}")]):
        folder = md_file.parent
        others = sorted(
            p
            for p in folder.glob("*.yaml")
            if p.name not in (HYDRATED_FILE, EXTERNAL_FILE, "kustomization.yaml")
        )
        files = [md_file, *others]
        objects = [
            doc.obj
            for path in files
            for doc in parse_documents(_read_inside(root, path), str(path))
        ]
        out.append((f"{folder.parent.name}/{folder.name}", objects))
    return out


def _read_inside(root: Path, path: Path) -> str:
    """A file of the tree, refusing a link anywhere below `root` (the folder the user named):
    a link committed to the GitOps repository would apply whatever it points to."""
    for step in [path, *path.parents]:
        if step == root:
            break
        if step.is_symlink():
            raise link_error(step)
    return read_text(path)


def apply_tree(
    client: kubernetes.client.ApiClient, root: Path, *, field_manager: str, now: dt.datetime
) -> list[Applied]:
    dynamic = DynamicClient(client)
    results: list[Applied] = []
    for folder, objects in folders(root):
        results += apply_objects(dynamic, folder, objects, field_manager=field_manager, now=now)
    return results


def apply_objects(
    dynamic: DynamicClient,
    folder: str,
    objects: Sequence[dict[str, Any]],
    *,
    field_manager: str,
    now: dt.datetime,
    timeout: float | None = None,
    status: bool = True,
) -> list[Applied]:
    """One folder's objects, the hydrated ModelDeployment first, as `runway apply` applies them
    (the portal's "apply as the signed-in user" calls this with the user's client): each
    server-side applied with fieldValidation=Strict, then the ModelDeployment's status says
    whether its upstream objects were accepted (unless `status` is False: the status controller
    then says it). `timeout`: seconds for each API call (None: the client's own)."""
    if not objects:
        return []
    outcomes = [_apply(dynamic, folder, obj, field_manager, timeout) for obj in objects]
    md, upstream = objects[0], outcomes[1:]
    failed = next((o for o in upstream if o.incompatible_field is not None), None)
    if status and outcomes[0].ok and md.get("kind") == "ModelDeployment":
        _set_status(dynamic, md, outcomes[0], failed, now, timeout=timeout)
    return outcomes


def _apply(
    dynamic: DynamicClient,
    folder: str,
    obj: dict[str, Any],
    field_manager: str,
    timeout: float | None = None,
) -> Applied:
    name = f"{obj['kind']}/{obj['metadata']['name']}"
    try:
        resource = dynamic.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
        applied = resource.server_side_apply(
            body=obj,
            name=obj["metadata"]["name"],
            namespace=obj["metadata"].get("namespace"),
            field_manager=field_manager,
            force_conflicts=True,
            query_params=[("fieldValidation", "Strict")],
            _request_timeout=timeout,
        )
    except ResourceNotFoundError:
        return Applied(
            folder,
            name,
            False,
            f"the API server does not serve {obj['apiVersion']} {obj['kind']} (is its CRD installed?)",
        )
    except DynamicApiError as err:
        message = error_message(err)
        classified = classify_write_error(message)
        if classified is None:
            return Applied(folder, name, False, message)
        log.warning("apply refused folder=%s object=%s field=%s", folder, name, classified.field)
        return Applied(folder, name, False, message, classified.field, str(obj["apiVersion"]))
    generation = getattr(getattr(applied, "metadata", None), "generation", None)
    return Applied(
        folder,
        name,
        True,
        api_version=str(obj["apiVersion"]),
        generation=generation if isinstance(generation, int) else None,
    )


def _set_status(
    dynamic: DynamicClient,
    md: dict[str, Any],
    applied: Applied,
    failed: Applied | None,
    now: dt.datetime,
    *,
    timeout: float | None = None,
) -> None:
    """Write the upstream outcome into the ModelDeployment's status (the status subresource),
    for the generation `applied` (the ModelDeployment's own apply) left it at: Deploying, or the
    seed's rejection path (Stalled too, so kstatus and the Argo CD Lua call it failed)."""
    stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    if failed is None:
        status: dict[str, Any] = {
            "phase": "Deploying",
            "message": "upstream objects applied",
            "conditions": [
                condition(
                    "ResourceCreated", True, "ResourceCreated", "upstream objects applied", stamp
                ),
                condition("Reconciling", True, "Applied", "upstream objects applied", stamp),
            ],
        }
    else:
        builtin = is_builtin(failed.api_version)
        message = incompatible_message(failed.obj, failed.incompatible_field, builtin=builtin)
        status = {
            "phase": "Failed",
            "message": message,
            "conditions": [
                condition("ResourceCreated", False, REASON, message, stamp),
                condition("Ready", False, REASON, message, stamp),
                condition("Stalled", True, REASON, message, stamp),
            ],
        }
    if applied.generation is not None:
        status["observedGeneration"] = applied.generation
    body = {
        "apiVersion": md["apiVersion"],
        "kind": md["kind"],
        "metadata": {"name": md["metadata"]["name"], "namespace": md["metadata"].get("namespace")},
        "status": status,
    }
    resource = dynamic.resources.get(api_version=md["apiVersion"], kind=md["kind"])
    resource.status.patch(
        body=body,
        name=md["metadata"]["name"],
        namespace=md["metadata"].get("namespace"),
        content_type="application/merge-patch+json",
        _request_timeout=timeout,
    )


def summary(results: Sequence[Applied]) -> str:
    failed = sum(1 for r in results if not r.ok)
    return f"{len(results) - failed} applied, {failed} refused"


def cluster_crds(
    kubeconfig: str | None, *, context: str | None = None
) -> list[tuple[str, dict[str, Any]]]:
    """The CRDs installed in the cluster (what its API server will accept, exactly), each with
    where it came from; `context`: the kubeconfig context (None: its current one)."""
    with api_client(kubeconfig, context=context) as client:
        listed = kubernetes.client.ApiextensionsV1Api(client).list_custom_resource_definition()
        crds: list[dict[str, Any]] = client.sanitize_for_serialization(listed)["items"]
        server = client.configuration.host
    return [(f"cluster {server}, CRD {crd['metadata']['name']}", crd) for crd in crds]
