"""What `runway validate` says about one object: the Verdict of admission (mutate, then validate:
core.admission.entry.admit_object), placed in the document it was read from and judged by the
source repository's policy, and its text lines (its JSON form is the Verdict's own).
`runway validate` (cli/inspect.py) and the portal's Models page (ui/) both call these, so the
page says exactly what the command says."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, TextIO

from core.admission.verdict import Failure, Verdict
from core.fields.errors import FieldError, Reason, SourceError
from core.model.kinds import MODEL_DEPLOYMENT
from kubeio.policy import verdicts
from kubeio.sources import Document


def located(verdict: Verdict, doc: Document) -> Verdict:
    """`verdict` of the object of `doc`: its source is the document, its errors' fields are
    paths in that document."""
    return replace(
        verdict,
        source=doc.where,
        errors=tuple(replace(e, path=doc.field(e.path)) for e in verdict.errors),
    )


def deny_by_policy(judged: Sequence[Verdict], docs: Sequence[Document]) -> list[Verdict]:
    """Each verdict denied where the source repository's policy does not allow its object's
    document to define it (kubeio.policy, asked by `runway render` too), at its
    metadata.namespace."""
    return [
        verdict
        if why is None
        else verdict.denied_by([FieldError(doc.field("metadata.namespace"), Reason.FORBIDDEN, why)])
        for doc, verdict, why in zip(docs, judged, verdicts(docs), strict=True)
    ]


def judged_by_policy(verdict: Verdict, where: str, obj: Mapping[str, Any]) -> Verdict:
    """`verdict` of `obj` denied as `runway validate` of the file `where` would deny it: by the
    policy of its repository, or because that policy cannot be read (unusable input)."""
    try:
        return deny_by_policy([verdict], [Document(where, 0, dict(obj))])[0]
    except SourceError as err:
        return verdict.denied_by([Failure("", str(err))])


def print_verdict(verdict: Verdict, out: TextIO) -> None:
    """`runway validate`'s lines for one verdict, read from its JSON form."""
    result = verdict.as_json()
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
