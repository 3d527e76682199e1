"""Page 1, Models (compose): a form and a YAML editor kept in sync (ui/compose.py), and on every
change what `validate`, `explain` and `render` say of the object (ui/models_preview.py), a
catalog to start from (ui/models_catalog.py), in live mode how the GPU request fits the nodes
(ui/models_fit.py), and the outputs (the shared fragment of ui/pages/outputs.py, given the
Bundle `bundle` makes: download, a patch `git apply` takes, a new branch, apply as the user).

htmx: a form change posts the form and the editor's text to /models/form, which merges the
form into the object and answers the editor; an edit of the text posts to /models/yaml, which
answers the form's fields. Both swap the previews out of band. Every answer is a page: a bad
text is an error shown in the previews, never a 5xx."""

from __future__ import annotations

from collections.abc import Mapping
from itertools import groupby
from typing import Any

from flask import Blueprint, current_app, render_template, request

from kubeio.sources import parse_documents
from renderer.output.folders import HYDRATED_FILE
from ui.compose import FIELDS, ComposeError, blank, merged, parse, text_of, values_of
from ui.context import NavItem, cluster, portal, schemas
from ui.models_catalog import Sources, catalog, find, fingerprint, read_sources
from ui.models_fit import Fit, gpu_fit
from ui.models_output import bundle as output_bundle
from ui.models_output import planned_path
from ui.models_preview import DEFAULT_GATEWAY, Checker, Preview, gateway_target, preview
from ui.outputs import Bundle, OutputError, repo_root

blueprint = Blueprint("models", __name__)
NAV = NavItem("models.page", "Models", offline=True)
CHECKER = "runway.models"  # app.extensions: the page's Checker, built on first use
SOURCES = "runway.models.sources"  # app.extensions: (fingerprint, Sources) last read
GATEWAY_FIELD = "route_gateway"


def sources() -> Sources:
    """The source folders' documents, read again only when a file changed (every compose
    change asks: which file would the patch write, and what does its policy say)."""
    folders = portal().settings.sources
    key = fingerprint(folders)
    found = current_app.extensions.get(SOURCES)
    if key is not None and found is not None and found[0] == key:
        read: Sources = found[1]
        return read
    read = read_sources(folders)
    current_app.extensions[SOURCES] = (key, read)
    return read


def checker() -> Checker:
    found = current_app.extensions.get(CHECKER)
    if found is None:
        found = current_app.extensions[CHECKER] = Checker.build(sources().configs(), schemas())
    return found


def choices(values: Mapping[str, str]) -> dict[str, tuple[str, ...]]:
    """The options of each choice field: its closed set, plus the object's own value when it is
    none of them (so that the form never drops it; admission says what is wrong)."""
    known = {f.name: f.choices for f in FIELDS if f.kind == "choice"}
    known["provider"] = tuple(checker().registry.configs)
    return {
        name: options + ((values[name],) if values[name] and values[name] not in options else ())
        for name, options in known.items()
    }


def _previews(obj: Mapping[str, Any] | None, error: str, gateway: str) -> dict[str, Any]:
    """What the previews fragment is rendered with: the preview, or the error alone."""
    shown: Preview | None = None
    fit: Fit | None = None
    if obj is not None:
        shown = preview(obj, checker(), gateway_target(gateway), _written_to(obj))
        if portal().settings.live:
            fit = gpu_fit(shown.verdict["object"], cluster())
    return {"preview": shown, "error": error, "fit": fit, "live": portal().settings.live}


def _written_to(obj: Mapping[str, Any]) -> str | None:
    """The file the object's patch would write, absolute (None when there is none)."""
    settings = portal().settings
    try:
        return str(repo_root(settings) / planned_path(settings, sources(), obj))
    except OutputError:
        return None


def _fields(values: Mapping[str, str], gateway: str) -> dict[str, Any]:
    return {"FIELDS": FIELDS, "values": values, "choices": choices(values), "gateway": gateway}


@blueprint.get("/")
@blueprint.get("/models")
def page() -> str:
    found = sources()
    entries = catalog(found)
    picked = request.args.get("pick", "")
    entry = find(entries, picked) if picked else None
    obj = dict(entry.obj) if entry is not None else blank()
    values = values_of(obj)
    return render_template(
        "models.html",
        groups=[(group, list(items)) for group, items in groupby(entries, lambda e: e.group)],
        picked=picked if entry is not None else "",
        unknown=picked if picked and entry is None else "",
        problems=found.problems,
        text=text_of(obj),
        **_fields(values, DEFAULT_GATEWAY),
        **_previews(obj, "", DEFAULT_GATEWAY),
    )


@blueprint.post("/models/form")
def form_changed() -> str:
    """The form changed: merge it into the editor's object; answer the editor (and previews)."""
    text = request.form.get("yaml", "")
    gateway = request.form.get(GATEWAY_FIELD, DEFAULT_GATEWAY)
    try:
        obj: dict[str, Any] | None = merged(parse(text), _posted())
        error = ""
    except ComposeError as err:
        obj, error = None, f"{err} (fix the YAML first: the form changes the object it holds)"
    shown = text_of(obj) if obj is not None else text
    return render_template(
        "_models_changed.html", part="editor", text=shown, **_previews(obj, error, gateway)
    )


@blueprint.post("/models/yaml")
def yaml_changed() -> str:
    """The editor's text changed: parse it; answer the form's fields (and previews)."""
    text = request.form.get("yaml", "")
    gateway = request.form.get(GATEWAY_FIELD, DEFAULT_GATEWAY)
    try:
        obj: dict[str, Any] | None = parse(text)
        error = ""
    except ComposeError as err:
        obj, error = None, str(err)
    values = values_of(obj) if obj is not None else _posted_values()
    return render_template(
        "_models_changed.html",
        part="fields",
        **_fields(values, gateway),
        **_previews(obj, error, gateway),
    )


def _posted_values() -> dict[str, str]:
    """The form as posted: the fields stay as they are while the text does not parse."""
    posted = _posted()
    return {f.name: posted.get(f.name, "") for f in FIELDS}


def _posted() -> dict[str, str]:
    """The posted form, each field's last value."""
    return {name: request.form.getlist(name)[-1] for name in request.form}


def bundle(form: Mapping[str, str]) -> Bundle:
    """The outputs' Bundle (ui/pages/outputs.py) of the editor's object: its file (the source
    file that defines it, else a new one: ui/models_output.py) and, to apply, what render
    writes for it as the previews show it (the hydrated object, then its upstream objects), for
    the Gateway the form names. Refused while admission denies it or render refuses it."""
    try:
        obj = parse(form.get("yaml", ""))
    except ComposeError as err:
        raise OutputError(str(err)) from None
    try:
        made = output_bundle(portal().settings, sources(), obj)
    except OSError as err:  # the file that defines the object, read again: gone or unreadable
        raise OutputError(f"{err.filename or 'a source file'}: {err.strerror or err}") from None
    gateway = form.get(GATEWAY_FIELD, DEFAULT_GATEWAY)
    judged = preview(obj, checker(), gateway_target(gateway), _written_to(obj))
    if not judged.allowed:
        raise OutputError("admission denies this object (see the verdict): nothing is delivered")
    if judged.render_error is not None:
        raise OutputError(f"render refuses this object (see the previews): {judged.render_error}")
    files = sorted(
        (f for f in judged.files if f.ok is not None or f.path.endswith(f"/{HYDRATED_FILE}")),
        key=lambda f: (not f.path.endswith(f"/{HYDRATED_FILE}"), f.path),
    )
    objects = tuple(d.obj for f in files for d in parse_documents(f.text, f.path))
    return Bundle(made.title, made.files, objects)
