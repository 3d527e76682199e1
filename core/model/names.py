"""Kubernetes name rules, and the names Runway derives from a ModelDeployment's.

The API server refuses an object whose name, namespace or labels break its kind's rule, and
kustomize refuses a tree with an empty or odd resource path. Admission (the webhook, `runway
validate`) and the renderer both run `check_model_deployment_names`, so a name that cannot be
rendered is denied where it is written, naming the field, and never reaches Git.

Generated child names (`<name>-epp`, `<name>-prefill`, ...) are not shortened with a hash: they
are names people type (`kubectl logs deploy/<name>-epp`, the picker's Service DNS name) and are
referred to from other objects, so instead the parent's name is bounded by its longest child.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Any

from core.fields.errors import FieldError, Reason
from core.fields.paths import FieldPath
from core.model.kinds import ModelDeployment, dig

LABEL_MAX = 63  # DNS labels and label values
SUBDOMAIN_MAX = 253
ANNOTATIONS_MAX = 256 * 1024  # bytes of keys and values, all annotations of one object together
PICKER_SUFFIX = "epp"  # the endpoint picker's objects: <name>-epp
ROLE_SUFFIXES = ("decode", "prefill")  # disaggregated components: <name>-<role>
_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL_VALUE = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")


class NameRule(StrEnum):
    """The name formats of Kubernetes (k8s.io/apimachinery/pkg/util/validation)."""

    LABEL = "an RFC 1123 label"  # namespaces
    DNS1035 = "a DNS-1035 label"  # Services
    SUBDOMAIN = "an RFC 1123 subdomain"  # most objects


_SHAPES = {
    NameRule.LABEL: (_LABEL, LABEL_MAX, "lower-case letters, digits and '-', starting and ending with a letter or digit"),
    NameRule.DNS1035: (_DNS1035, LABEL_MAX, "lower-case letters, digits and '-', starting with a letter and ending with a letter or digit"),
    NameRule.SUBDOMAIN: (_SUBDOMAIN, SUBDOMAIN_MAX, "dot-separated RFC 1123 labels: lower-case letters, digits and '-'"),
}  # fmt: skip


def name_problem(value: object, rule: NameRule, limit: int | None = None) -> str | None:
    """Why `value` is not a name of `rule` (at most `limit` characters), or None."""
    pattern, most, letters = _SHAPES[rule]
    most = most if limit is None else min(most, limit)
    if not isinstance(value, str) or not value:
        return "must be a non-empty string"
    if len(value) > most:
        return f"must be at most {most} characters, not {len(value)}"
    if not pattern.fullmatch(value):
        return f"must be {rule}: {letters}"
    return None


def label_value_problem(value: object) -> str | None:
    """Why `value` is not a label value (empty, or at most 63 of [A-Za-z0-9_.-] around an
    alphanumeric start and end), or None."""
    if not isinstance(value, str):
        return "a label value must be a string"
    if len(value) > LABEL_MAX:
        return f"a label value must be at most {LABEL_MAX} characters, not {len(value)}"
    if value and not _LABEL_VALUE.fullmatch(value):
        return "a label value must be letters, digits, '-', '_' and '.', starting and ending with a letter or digit"
    return None


def label_key_problem(key: str) -> str | None:
    """Why `key` is not a label key ([prefix/]name: a subdomain prefix, a name as a value), or None."""
    prefix, slash, name = key.rpartition("/")
    if slash and name_problem(prefix, NameRule.SUBDOMAIN) is not None:
        return "a label key's prefix must be an RFC 1123 subdomain of at most 253 characters"
    if not name or label_value_problem(name) is not None:
        return "a label key's name must be 1-63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit"
    return None


def check_annotations(annotations: Mapping[Any, Any], at: FieldPath) -> list[FieldError]:
    """One annotations map as the API server checks it: every key a qualified name (compared in
    lower case), every value a string, and at most 256 KiB of UTF-8 keys and values together."""
    errors = []
    size = 0
    for key in sorted(annotations, key=str):
        value = annotations[key]
        if not isinstance(key, str):
            problem: str | None = "an annotation key must be a string"
        elif not isinstance(value, str):
            problem = "an annotation value must be a string"
        else:
            problem = label_key_problem(key.lower())
            problem = problem and problem.replace("a label key", "an annotation key")
            size += len(key.encode("utf-8", "surrogatepass"))
            size += len(value.encode("utf-8", "surrogatepass"))
        if problem:
            errors.append(FieldError(str(at.key(str(key))), Reason.INVALID, problem))
    if size > ANNOTATIONS_MAX:
        detail = (
            f"may hold at most {ANNOTATIONS_MAX} bytes of keys and values together, not {size}; "
            "keep bulk data out of annotations"
        )
        errors.append(FieldError(str(at), Reason.TOO_LONG, detail))
    return errors


def child_name(parent: str, suffix: str) -> str:
    """The name of an object Runway derives from its ModelDeployment's."""
    return f"{parent}-{suffix}"


def child_suffixes(md: ModelDeployment) -> list[str]:
    """The suffixes Runway appends to this ModelDeployment's name, in what it renders."""
    suffixes = list(ROLE_SUFFIXES) if md.is_disaggregated else []
    if dig(md.spec, "gateway", "enabled") is True:
        suffixes.append(PICKER_SUFFIX)
    return suffixes


def check_model_deployment_names(md: ModelDeployment) -> list[FieldError]:
    """metadata.name is a DNS-1035 label short enough for every name derived from it (Services
    are named after it, and it is the value of the airunway.ai/model-deployment label);
    metadata.namespace an RFC 1123 label; spec.podTemplate's labels valid labels."""
    longest = max((len(child_name("", s)) for s in child_suffixes(md)), default=0)
    errors = _check_meta(md.obj, NameRule.DNS1035, LABEL_MAX - longest)
    if longest and errors and errors[0].path == "metadata.name" and "at most" in errors[0].detail:
        child = max(child_suffixes(md), key=len)
        detail = f"{errors[0].detail} (the generated {child_name('<name>', child)} must fit in {LABEL_MAX})"
        errors[0] = FieldError("metadata.name", Reason.INVALID, detail)
    labels = dig(md.spec, "podTemplate", "metadata", "labels")
    at = FieldPath.root("spec", "podTemplate", "metadata", "labels")
    return errors + (check_labels(labels, at) if isinstance(labels, Mapping) else [])


def check_model_deployment_annotations(md: ModelDeployment) -> list[FieldError]:
    """metadata.annotations and spec.podTemplate.metadata.annotations as the API server checks
    them (`check_annotations`): on every write, as the API server does."""
    errors = []
    for at in (("metadata",), ("spec", "podTemplate", "metadata")):
        annotations = dig(md.obj, *at, "annotations")
        if isinstance(annotations, Mapping):
            errors += check_annotations(annotations, FieldPath.root(*at, "annotations"))
    return errors


def check_object_names(obj: Mapping[str, Any], rule: NameRule) -> list[FieldError]:
    """metadata.name of `rule`, and metadata.namespace (when set) an RFC 1123 label."""
    return _check_meta(obj, rule, None)


def _check_meta(obj: Mapping[str, Any], rule: NameRule, limit: int | None) -> list[FieldError]:
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    name = meta.get("name")
    if name is None or name == "":
        errors = [FieldError("metadata.name", Reason.REQUIRED, "a name is required")]
    else:
        problem = name_problem(name, rule, limit)
        errors = [FieldError("metadata.name", Reason.INVALID, problem)] if problem else []
    namespace = meta.get("namespace")
    if namespace is not None and namespace != "":
        problem = name_problem(namespace, NameRule.LABEL)
        if problem:
            errors.append(FieldError("metadata.namespace", Reason.INVALID, problem))
    return errors


def check_labels(labels: Mapping[Any, Any], at: FieldPath) -> list[FieldError]:
    """Every key and value of one labels map, in key order."""
    errors = []
    for key in sorted(labels, key=str):
        problem = label_key_problem(key) if isinstance(key, str) else "a label key must be a string"
        problem = problem or label_value_problem(labels[key])
        if problem:
            errors.append(FieldError(str(at.key(str(key))), Reason.INVALID, problem))
    return errors


def rule_of(kind: object) -> NameRule:
    """The name rule of a rendered kind: Services and Namespaces are labels, the rest subdomains."""
    return {"Service": NameRule.DNS1035, "Namespace": NameRule.LABEL}.get(
        str(kind), NameRule.SUBDOMAIN
    )


def rendered_name_problems(objects: Iterable[Mapping[str, Any]]) -> list[str]:
    """Every rendered object's name, namespace, labels and annotations (its own and its pod
    template's) against its kind's rule: the last check before Git, whatever produced it."""
    problems = []
    for obj in objects:
        meta = obj.get("metadata") or {}
        what = f"{obj.get('kind')}/{meta.get('name')}"
        errors = check_object_names(obj, rule_of(obj.get("kind")))
        if isinstance(meta.get("labels"), Mapping):
            errors += check_labels(meta["labels"], FieldPath.root("metadata", "labels"))
        template = dig(obj, "spec", "template", "metadata", "labels")
        if isinstance(template, Mapping):
            errors += check_labels(
                template, FieldPath.root("spec", "template", "metadata", "labels")
            )
        for at in (("metadata",), ("spec", "template", "metadata")):
            annotations = dig(obj, *at, "annotations")
            if isinstance(annotations, Mapping):
                errors += check_annotations(annotations, FieldPath.root(*at, "annotations"))
        problems += [f"{what} {error}" for error in errors]
    return problems
