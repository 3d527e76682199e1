"""The output buttons every composing page shows (issue #41, "Output, GitOps first") and their
endpoints: download, patch, commit to a new branch (ui/branches.py) and apply as the signed-in
user (ui/applying.py).

How a page hands its Bundle over
--------------------------------
1. The page's module exposes how to build a Bundle from its own form::

       def bundle(form: Mapping[str, str]) -> ui.outputs.Bundle: ...

   `bundle` reads the very form the page previews from (its fields, its YAML editor) and raises
   ui.outputs.OutputError (or core.fields.errors.RunwayError) with a message for the user when
   the form does not make a bundle. SOURCES below names each page's source ("models",
   "install" for Providers, "gateway" for Gateway providers) and its module.
2. The page puts the fragment inside its <form>::

       {% with outputs_source="models" %}{% include "_outputs.html" %}{% endwith %}

   The fragment adds the `source` field and the CSRF token to the form, and asks
   POST /outputs/offer (with the whole form, on load and on every change) which buttons the
   site and the user's rights allow; each button POSTs the whole form to /outputs/<delivery>.

The source `manifest` is built in: a `manifest` field holding one ModelDeployment as YAML,
rendered as `runway render` renders it (its file goes to the first source folder).
"""

from __future__ import annotations

import datetime as dt
import importlib
import re
from collections.abc import Callable, Mapping
from typing import Any

from flask import Blueprint, Response, current_app, render_template, request

from core.fields.errors import RunwayError
from kubeio.registry import build_registry
from kubeio.shipped import bundled_versions
from kubeio.sources import parse_documents
from renderer.output.folders import HYDRATED_FILE
from renderer.output.render import RenderContext, render_one
from renderer.output.strict import Schemas
from ui import applying, branches
from ui.context import cluster, portal, schemas, viewer
from ui.outputs import (
    Bundle,
    OutputError,
    Planned,
    download_text,
    patch_text,
    relative_to_root,
    repo_root,
)

blueprint = Blueprint("outputs", __name__)
NAV = None  # no entry in the navigation: the composing pages include the fragment
SOURCES = {
    "models": "ui.pages.models",
    "install": "ui.pages.providers",
    "gateway": "ui.pages.gateway",
}
MANIFEST = "manifest"
MAX_MANIFEST = 256 * 1024  # characters of a manifest field
RENDERING = "runway.outputs.rendering"  # app.extensions: the registry and pins, once

Bundler = Callable[[Mapping[str, str]], Bundle]


def bundler(source: str) -> Bundler:
    if source == MANIFEST:
        return manifest_bundle
    name = SOURCES.get(source)
    found = getattr(importlib.import_module(name), "bundle", None) if name else None
    if found is None:
        raise OutputError(f"source {source[:40]!r} does not make bundles")
    made: Bundler = found
    return made


def _rendering() -> tuple[Any, Schemas, Any]:
    cached = current_app.extensions.get(RENDERING)
    if cached is None:
        cached = current_app.extensions[RENDERING] = (build_registry(), bundled_versions())
    registry, pins = cached
    return registry, schemas(), pins


def manifest_bundle(form: Mapping[str, str]) -> Bundle:
    """One ModelDeployment from the `manifest` field, rendered as `runway render` renders it:
    its file, and the hydrated object then its upstream objects to apply."""
    text = form.get(MANIFEST, "")
    if len(text) > MAX_MANIFEST:
        raise OutputError(f"manifest: longer than {MAX_MANIFEST} characters")
    docs = list(parse_documents(text, MANIFEST))
    if len(docs) != 1 or docs[0].obj.get("kind") != "ModelDeployment":
        raise OutputError("manifest: holds one ModelDeployment")
    obj = docs[0].obj
    registry, schemas, pins = _rendering()
    result = render_one(obj, previous=None, context=RenderContext(registry, schemas, pins))
    if result.error is not None:
        raise OutputError(f"{result.key}: {result.error}")
    order = [
        HYDRATED_FILE,
        *sorted(n for n in result.files if n not in (HYDRATED_FILE, "kustomization.yaml")),
    ]
    objects = tuple(d.obj for n in order for d in parse_documents(result.files[n], n))
    meta = obj.get("metadata") or {}
    name, namespace = str(meta.get("name") or ""), str(meta.get("namespace") or "default")
    settings = portal().settings
    folder = relative_to_root(settings, settings.sources[0]) if settings.sources else ""
    path = "/".join(p for p in (folder, namespace, f"{name}.yaml") if p)
    return Bundle(f"ModelDeployment {namespace}/{name}", (Planned(path, text),), objects)


def _bundle() -> Bundle:
    return bundler(request.form.get("outputs_source", ""))(request.form)


def _failed(err: Exception) -> tuple[str, int]:
    return render_template("_outputs_result.html", error=str(err)), 200


@blueprint.post("/outputs/offer")
def offer() -> tuple[str, int] | str:
    """Which buttons the site and the user's rights allow for the bundle the form makes."""
    settings = portal().settings
    try:
        made = _bundle()
    except (OutputError, RunwayError, ValueError) as err:
        return render_template(
            "_outputs_offer.html", problem=str(err), source=request.form.get("outputs_source", "")
        )
    apply_offer = None
    if settings.live and settings.actions and settings.apply_as_user:
        apply_offer = applying.offer(cluster(), viewer(), made)
    return render_template(
        "_outputs_offer.html",
        bundle=made,
        branch=settings.actions and bool(settings.repo),
        apply_offer=apply_offer,
        source=request.form.get("outputs_source", ""),
    )


@blueprint.post("/outputs/download")
def download() -> Response | tuple[str, int]:
    try:
        made = _bundle()
    except (OutputError, RunwayError, ValueError) as err:
        return _failed(err)
    answer = Response(download_text(made), mimetype="application/yaml")
    answer.headers["Content-Disposition"] = f'attachment; filename="{download_name(made)}"'
    return answer


def download_name(made: Bundle) -> str:
    """The file's own name for a bundle of one file (its path's last part), else
    runway-bundle.yaml; only characters a file name and the header take as they are."""
    if len(made.files) != 1:
        return "runway-bundle.yaml"
    name = re.sub(r"[^A-Za-z0-9._-]", "-", made.files[0].path.rsplit("/", 1)[-1])
    return name if name.endswith((".yaml", ".yml")) else "runway-bundle.yaml"


@blueprint.post("/outputs/patch")
def patch() -> tuple[str, int] | str:
    try:
        made = _bundle()
        text = patch_text(made, repo_root(portal().settings))
    except (OutputError, RunwayError, ValueError) as err:
        return _failed(err)
    return render_template("_outputs_result.html", patch=text, bundle=made)


@blueprint.post("/outputs/branch")
def branch() -> tuple[str, int] | str:
    settings = portal().settings
    if not (settings.actions and settings.repo):
        return _failed(
            OutputError("the site has not enabled committing to a branch (--actions --repo)")
        )
    try:
        made = _bundle()
        requested_by = viewer().username or "offline"
        pushed = branches.commit_branch(repo_root(settings), settings.remote, made, requested_by)
    except (OutputError, RunwayError, ValueError) as err:
        return _failed(err)
    return render_template("_outputs_result.html", pushed=pushed, bundle=made)


@blueprint.post("/outputs/apply")
def apply() -> tuple[str, int] | str:
    settings = portal().settings
    if not (settings.live and settings.actions and settings.apply_as_user):
        return _failed(
            OutputError(
                "the site has not enabled applying as the signed-in user (--actions --apply-as-user)"
            )
        )
    try:
        made = _bundle()
        outcome = applying.apply_as_user(cluster(), viewer(), made, dt.datetime.now(dt.UTC))
    except (OutputError, RunwayError, ValueError) as err:
        return _failed(err)
    return render_template("_outputs_result.html", outcome=outcome, bundle=made)
