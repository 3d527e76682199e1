"""The `airunway.ai/installation` and `airunway.ai/documentation-url` annotations of an
InferenceProviderConfig: how the provider's upstream operator is installed, read into typed values.

AI Runway's format (JSON; its InstallationInfo type, controller/api/v1alpha1 of
github.com/ai-runway/airunway): `{"description", "defaultNamespace", "helmRepos": [{"name",
"url"}], "helmCharts": [{"name" (the release), "chart" ("<repo>/<chart>" or a URL), "version",
"namespace", "createNamespace", "skipCrds", "fetchUrl", "preCrdUrls", "preInstallMissingCrds",
"values"}], "steps": [{"title", "command", "description"}]}`. A chart's `values` are Helm
`--set-json` overrides: each key a dotted values path, each value the JSON set there; they are
also read as the one nested values document the GitOps objects carry.

Reading is bounded (text size, list lengths, string lengths, nesting) and strict (an unknown
field is an error: a typo must not silently drop a setting). Every problem is a FieldError with
the annotation's path, e.g. `metadata.annotations[airunway.ai/installation].helmCharts[0].version`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from core.fields.errors import FieldError, Reason, shown
from core.fields.paths import FieldPath
from core.model.names import NameRule, name_problem
from core.model.urls import url_problem

INSTALLATION_ANNOTATION = "airunway.ai/installation"
DOCUMENTATION_ANNOTATION = "airunway.ai/documentation-url"
MAX_INSTALLATION_BYTES = 64 * 1024
MAX_REPOS = 16
MAX_CHARTS = 16
MAX_STEPS = 32
MAX_VALUES = 128  # --set-json keys of one chart
MAX_DEPTH = 32  # nesting of one value
MAX_TEXT = 4096  # descriptions and commands
MAX_SHORT = 256  # titles, chart references
MAX_ERRORS = 64
RELEASE_MAX = 53  # Helm's limit on a release name
_INT64 = 2**63
# An exact chart version (SemVer 2, optional leading v): a range would install whatever is
# newest, and the same config must install the same chart.
_VERSION = re.compile(
    r"v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?"
)
# One --set-json key: dot-separated names, no list index, escape or separator Helm would read.
_VALUES_PATH = re.compile(r"[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*")
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class HelmRepo:
    """A Helm repository a chart is installed from: the name charts refer to it by, its URL."""

    name: str
    url: str


@dataclass(frozen=True, slots=True)
class HelmChart:
    """One chart of an installation, as `helm install` and the GitOps objects take it."""

    release: str  # AI Runway's `name`
    chart: str
    version: str  # "" : not given
    namespace: str
    create_namespace: bool = False
    skip_crds: bool = False
    fetch_url: str = ""
    pre_crd_urls: tuple[str, ...] = ()
    pre_install_missing_crds: bool = False
    # (--set-json key, the value's JSON text), in key order
    set_json: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class InstallStep:
    title: str
    description: str
    command: str = ""


@dataclass(frozen=True, slots=True)
class Installation:
    """A provider's installation; empty when the config carries no annotation."""

    description: str = ""
    default_namespace: str = ""
    repos: tuple[HelmRepo, ...] = ()
    charts: tuple[HelmChart, ...] = ()
    steps: tuple[InstallStep, ...] = ()
    documentation_url: str = ""


def annotation_path(key: str = INSTALLATION_ANNOTATION) -> FieldPath:
    return FieldPath.root("metadata", "annotations").key(key)


def read_installation(config: Mapping[str, Any]) -> Installation | list[FieldError]:
    """The installation an InferenceProviderConfig's annotations describe, or every problem."""
    metadata = config.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    if not isinstance(annotations, Mapping):
        annotations = {}
    errors: list[FieldError] = []
    docs = annotations.get(DOCUMENTATION_ANNOTATION)
    doc_url = ""
    if docs is not None:
        why = _url(docs) if isinstance(docs, str) else "must be a string"
        if why is None:
            doc_url = docs
        else:
            errors.append(
                FieldError(str(annotation_path(DOCUMENTATION_ANNOTATION)), Reason.INVALID, why)
            )
    text = annotations.get(INSTALLATION_ANNOTATION)
    if text is None:
        return errors or Installation(documentation_url=doc_url)
    data = _decode(text, errors)
    if data is _UNREAD:
        return errors[:MAX_ERRORS]
    found = _installation(data, annotation_path(), errors)
    if errors:
        return errors[:MAX_ERRORS]
    return Installation(**found, documentation_url=doc_url)


_UNREAD = object()  # the annotation's text is not JSON Runway reads (JSON null is data)


def _decode(text: object, errors: list[FieldError]) -> Any:
    """The annotation's JSON, or _UNREAD (an error says why)."""
    at = str(annotation_path())
    if not isinstance(text, str):
        errors.append(FieldError(at, Reason.INVALID, "must be a string holding JSON"))
        return _UNREAD
    if len(text.encode("utf-8", "surrogatepass")) > MAX_INSTALLATION_BYTES:
        errors.append(
            FieldError(
                at, Reason.TOO_LONG, f"may not be longer than {MAX_INSTALLATION_BYTES} bytes"
            )
        )
        return _UNREAD
    try:
        return json.loads(
            text,
            parse_constant=_refuse_constant,
            parse_float=_finite,
            object_pairs_hook=_unique_keys,
        )
    except json.JSONDecodeError as err:
        errors.append(
            FieldError(at, Reason.INVALID, f"is not JSON: {err.msg} at character {err.pos}")
        )
    except RecursionError:
        errors.append(FieldError(at, Reason.INVALID, "nests too deeply"))
    except ValueError as err:  # a duplicate key, NaN or Infinity, an integer too long to read
        errors.append(
            FieldError(at, Reason.INVALID, f"is not JSON Runway reads: {shown(str(err), 120)}")
        )
    return _UNREAD


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{shown(text)} is out of range")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {shown(key)!r}")
        out[key] = value
    return out


def _fields(
    data: Any, at: FieldPath, known: frozenset[str], errors: list[FieldError]
) -> Mapping[str, Any] | None:
    """`data` as an object with only `known` fields, or None (an error said why)."""
    if not isinstance(data, Mapping):
        errors.append(FieldError(str(at), Reason.INVALID, "must be a JSON object"))
        return None
    for key in sorted(set(data) - known)[:MAX_ERRORS]:
        errors.append(
            FieldError(
                str(at.child(shown(key))),
                Reason.UNKNOWN_FIELD,
                "not a field of AI Runway's installation format",
            )
        )
    return data


def _list(
    data: Mapping[str, Any], name: str, at: FieldPath, most: int, errors: list[FieldError]
) -> list[Any]:
    value = data.get(name)
    if value is None:
        return []
    if not isinstance(value, list):
        errors.append(FieldError(str(at.child(name)), Reason.INVALID, "must be a JSON array"))
        return []
    if len(value) > most:
        errors.append(
            FieldError(
                str(at.child(name)),
                Reason.TOO_MANY,
                f"must have at most {most} items, not {len(value)}",
            )
        )
        return []
    return value


def _text(
    data: Mapping[str, Any],
    name: str,
    at: FieldPath,
    errors: list[FieldError],
    *,
    required: bool = False,
    most: int = MAX_TEXT,
    check: Callable[[str], str | None] | None = None,
) -> str:
    value = data.get(name)
    where = str(at.child(name))
    if value is None or value == "":
        if required:
            errors.append(FieldError(where, Reason.REQUIRED, "must be given"))
        return ""
    if not isinstance(value, str):
        errors.append(FieldError(where, Reason.INVALID, "must be a string"))
        return ""
    if len(value) > most:
        errors.append(
            FieldError(where, Reason.TOO_LONG, f"may not be longer than {most} characters")
        )
        return ""
    why = check(value) if check is not None else None
    if why is not None:
        errors.append(FieldError(where, Reason.INVALID, f"{shown(value)!r} {why}"))
        return ""
    return value


def _flag(data: Mapping[str, Any], name: str, at: FieldPath, errors: list[FieldError]) -> bool:
    value = data.get(name, False)
    if not isinstance(value, bool):
        errors.append(FieldError(str(at.child(name)), Reason.INVALID, "must be true or false"))
        return False
    return value


_INSTALLATION = frozenset({"description", "defaultNamespace", "helmRepos", "helmCharts", "steps"})
_REPO = frozenset({"name", "url"})
_CHART = frozenset(
    {"name", "chart", "version", "namespace", "createNamespace", "skipCrds", "fetchUrl"}
    | {"preCrdUrls", "preInstallMissingCrds", "values"}
)
_STEP = frozenset({"title", "command", "description"})


def _installation(data: Any, at: FieldPath, errors: list[FieldError]) -> dict[str, Any]:
    found = _fields(data, at, _INSTALLATION, errors)
    if found is None:
        return {}
    description = _text(found, "description", at, errors)
    default_namespace = _text(found, "defaultNamespace", at, errors, check=_namespace)
    raw_repos, repos = _items(
        found, "helmRepos", at, errors, most=MAX_REPOS, known=_REPO, read=_repo
    )
    raw_charts, charts = _items(
        found, "helmCharts", at, errors, most=MAX_CHARTS, known=_CHART, read=_chart
    )
    _, steps = _items(found, "steps", at, errors, most=MAX_STEPS, known=_STEP, read=_step)
    _unique(raw_repos, at.child("helmRepos"), errors)
    _unique(raw_charts, at.child("helmCharts"), errors)
    return {
        "description": description,
        "default_namespace": default_namespace,
        "repos": repos,
        "charts": charts,
        "steps": steps,
    }


def _items(
    data: Mapping[str, Any],
    name: str,
    at: FieldPath,
    errors: list[FieldError],
    *,
    most: int,
    known: frozenset[str],
    read: Callable[[Mapping[str, Any], FieldPath, list[FieldError]], _T],
) -> tuple[list[Any], tuple[_T, ...]]:
    """The list `name` as given, and each of its items that is an object with only `known`
    fields that `read` takes without a new error (an item with any error is left out)."""
    raw = _list(data, name, at, most, errors)
    kept: list[_T] = []
    for i, item in enumerate(raw):
        where = at.child(name).index(i)
        found = _fields(item, where, known, errors)
        if found is None:
            continue
        before = len(errors)
        value = read(found, where, errors)
        if len(errors) == before:
            kept.append(value)
    return raw, tuple(kept)


def _unique(items: list[Any], at: FieldPath, errors: list[FieldError]) -> None:
    """Each `name` once in a list (repository names, release names)."""
    seen: set[str] = set()
    for i, item in enumerate(items):
        name = item.get("name") if isinstance(item, Mapping) else None
        if isinstance(name, str) and name:
            if name in seen:
                errors.append(
                    FieldError(str(at.index(i).child("name")), Reason.DUPLICATE, repr(shown(name)))
                )
            seen.add(name)


def _namespace(value: str) -> str | None:
    why = name_problem(value, NameRule.LABEL)
    return None if why is None else f"is not a namespace name: {why}"


def _release(value: str) -> str | None:
    why = name_problem(value, NameRule.LABEL, RELEASE_MAX)
    return None if why is None else f"is not a Helm release name: {why}"


def _repo_name(value: str) -> str | None:
    why = name_problem(value, NameRule.LABEL)
    return None if why is None else f"is not a repository name: {why}"


def _url(value: str) -> str | None:
    found = url_problem(value)
    if found is None:
        return None
    why, credential = found
    return (
        "must not carry credentials: everyone who may read the config reads them"
        if credential
        else why
    )


def _version(value: str) -> str | None:
    if _VERSION.fullmatch(value):
        return None
    return "is not an exact chart version (SemVer such as 1.2.3): a range would install whatever is newest"


def _chart_ref(value: str) -> str | None:
    if any(ord(c) < 0x21 or ord(c) == 0x7F for c in value):
        return "must not contain whitespace or control characters"
    return None


def _repo(found: Mapping[str, Any], at: FieldPath, errors: list[FieldError]) -> HelmRepo:
    name = _text(found, "name", at, errors, required=True, check=_repo_name)
    url = _text(found, "url", at, errors, required=True, check=_url)
    return HelmRepo(name, url)


def _chart(found: Mapping[str, Any], at: FieldPath, errors: list[FieldError]) -> HelmChart:
    release = _text(found, "name", at, errors, required=True, check=_release)
    chart = _text(found, "chart", at, errors, required=True, most=MAX_SHORT, check=_chart_ref)
    version = _text(found, "version", at, errors, most=MAX_SHORT, check=_version)
    namespace = _text(found, "namespace", at, errors, required=True, check=_namespace)
    fetch_url = _text(found, "fetchUrl", at, errors, check=_url)
    pre_crds = tuple(
        _text({"url": u}, "url", at.child("preCrdUrls").index(i), errors, required=True, check=_url)
        for i, u in enumerate(_list(found, "preCrdUrls", at, MAX_REPOS, errors))
    )
    set_json = _set_json(found.get("values"), at.child("values"), errors)
    flags = {
        "create_namespace": _flag(found, "createNamespace", at, errors),
        "skip_crds": _flag(found, "skipCrds", at, errors),
        "pre_install_missing_crds": _flag(found, "preInstallMissingCrds", at, errors),
    }
    return HelmChart(
        release,
        chart,
        version,
        namespace,
        fetch_url=fetch_url,
        pre_crd_urls=pre_crds,
        set_json=set_json,
        **flags,
    )


def _step(found: Mapping[str, Any], at: FieldPath, errors: list[FieldError]) -> InstallStep:
    title = _text(found, "title", at, errors, required=True, most=MAX_SHORT)
    description = _text(found, "description", at, errors, required=True)
    command = _text(found, "command", at, errors)
    return InstallStep(title, description, command)


def _set_json(values: Any, at: FieldPath, errors: list[FieldError]) -> tuple[tuple[str, str], ...]:
    """The --set-json overrides, key order, each value as compact JSON text; every key a dotted
    values path and no key inside another's value (Helm would apply them in order, and the
    nested document would depend on it)."""
    if values is None:
        return ()
    if not isinstance(values, Mapping):
        errors.append(
            FieldError(str(at), Reason.INVALID, "must be a JSON object of --set-json values paths")
        )
        return ()
    if len(values) > MAX_VALUES:
        errors.append(
            FieldError(
                str(at), Reason.TOO_MANY, f"must have at most {MAX_VALUES} keys, not {len(values)}"
            )
        )
        return ()
    keys = sorted(values)
    out = []
    for key in keys:
        where = str(at.key(shown(key)))
        if len(key) > MAX_SHORT or not _VALUES_PATH.fullmatch(key):
            errors.append(
                FieldError(
                    where,
                    Reason.INVALID,
                    "must be a dotted Helm values path (letters, digits, '_' and '-' between dots)",
                )
            )
            continue
        if _depth(values[key]) > MAX_DEPTH:
            errors.append(
                FieldError(where, Reason.INVALID, f"nests deeper than {MAX_DEPTH} levels")
            )
            continue
        big = _out_of_range(values[key])
        if big is not None:
            errors.append(FieldError(where, Reason.INVALID, big))
            continue
        out.append(
            (
                key,
                json.dumps(values[key], sort_keys=True, separators=(",", ":"), ensure_ascii=False),
            )
        )
    for i, key in enumerate(keys):
        for other in keys[i + 1 :]:
            if other.startswith(key + "."):
                errors.append(
                    FieldError(
                        str(at.key(shown(other))),
                        Reason.DUPLICATE,
                        f"is inside {shown(key)!r}, which is set too",
                    )
                )
    return tuple(out)


def _depth(value: Any) -> int:
    """How deeply a decoded JSON value nests (bounded walk, no recursion)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level)
        if level > MAX_DEPTH:
            return level
        if isinstance(item, Mapping):
            stack.extend((v, level + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, level + 1) for v in item)
    return deepest


def _out_of_range(value: Any) -> str | None:
    """Why a value cannot be stored in a Kubernetes object and checked (an integer past int64, a
    key with a NUL character), or None."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, bool):
            continue
        if isinstance(item, int) and not -_INT64 <= item < _INT64:
            return "holds an integer outside the 64-bit range Kubernetes stores"
        if isinstance(item, Mapping):
            if any("\x00" in key for key in item if isinstance(key, str)):
                # cel-expr-python reads a key up to its NUL: "" and "\x00" would be one key, and
                # the HelmRelease's rules could not be checked
                return "holds a key with a NUL character"
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None
