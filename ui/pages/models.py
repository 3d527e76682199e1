"""Page 1, Models (compose): a form and a YAML editor kept in sync (ui/compose.py), and on every
change what `validate`, `explain` and `render` say of the object (ui/models_preview.py), a
catalog to start from (ui/models_catalog.py), in live mode how the GPU request fits the nodes
(ui/models_fit.py), and the outputs: download and a patch `git apply` takes (ui/outputs.py).

htmx: a form change posts the form and the editor's text to /models/form, which merges the
form into the object and answers the editor; an edit of the text posts to /models/yaml, which
answers the form's fields. Both swap the previews out of band. Every answer is a page: a bad
text is an error shown in the previews, never a 5xx."""

from __future__ import annotations

from collections.abc import Mapping
from itertools import groupby
from typing import Any

from flask import Blueprint, Response, current_app, render_template, request

from ui.compose import FIELDS, ComposeError, blank, merged, parse, text_of, values_of
from ui.context import NavItem, cluster, portal
from ui.models_catalog import Sources, catalog, find, fingerprint, read_sources
from ui.models_fit import Fit, gpu_fit
from ui.models_output import bundle, filename, planned_path
from ui.models_preview import DEFAULT_GATEWAY, Checker, Preview, gateway_target, preview
from ui.outputs import OutputError, download_text, patch_text, repo_root

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
        found = current_app.extensions[CHECKER] = Checker.build(sources().configs())
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
        obj: dict[str, Any] | None = merged(parse(text), request.form)
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
    return {f.name: request.form.get(f.name, "") for f in FIELDS}


@blueprint.post("/models/patch")
def patch() -> str:
    return render_template("_models_output.html", **_delivered())


def _delivered() -> dict[str, Any]:
    """The patch of the editor's object against the repository, or why there is none."""
    try:
        obj = parse(request.form.get("yaml", ""))
    except ComposeError as err:
        return {"error": str(err)}
    settings = portal().settings
    try:
        made = bundle(settings, sources(), obj)
        root = repo_root(settings)
        where = str(root / made.files[0].path)
        judged = preview(obj, checker(), gateway_target(""), where)
        if not judged.allowed:
            return {"error": "admission denies this object (see the verdict): no patch is made"}
        text = patch_text(made, root)
    except (OutputError, OSError, UnicodeDecodeError) as err:
        return {"error": str(err)}
    return {"bundle": made, "patch": text, "name": filename(obj, ".patch")}


@blueprint.post("/models/download")
def download() -> Response | tuple[str, int]:
    """The composed object as a YAML file, an attachment named after it."""
    try:
        obj = parse(request.form.get("yaml", ""))
        made = bundle(portal().settings, sources(), obj)
    except (ComposeError, OutputError, OSError, UnicodeDecodeError) as err:
        return render_template("error.html", code=400, reason=str(err)), 400
    return _attachment(download_text(made), filename(obj, ".yaml"), "application/yaml")


@blueprint.post("/models/patch.diff")
def patch_file() -> Response | tuple[str, int]:
    found = _delivered()
    if "error" in found:
        return render_template("error.html", code=400, reason=found["error"]), 400
    return _attachment(found["patch"], found["name"], "text/x-diff")


def _attachment(text: str, name: str, mimetype: str) -> Response:
    answer = Response(text, mimetype=mimetype)
    answer.headers["Content-Disposition"] = f'attachment; filename="{name}"'
    return answer
