"""The answer of admission for one object of any kind, as one typed value with one JSON form.

The webhook turns a Verdict into its AdmissionResponse, `runway validate` prints its JSON form
(`validate -o json`, one element of the array) or its text, and the tests compare that form.
What only an edge knows is added there: the document an object came from (`source`, and field
paths made paths in that document), a repository policy's or an access review's denial
(`denied_by`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from core.admission.hydrate import Hydration
from core.admission.pipeline import Admission, json_patch
from core.admission.validation import Operation
from core.fields.errors import FieldError
from core.model.kinds import (
    DEFAULT_NAMESPACE,
    EMP_GROUP,
    EXTERNAL_MODEL_PROVIDER,
    GROUP,
    INFERENCE_PROVIDER_CONFIG,
    MODEL_DEPLOYMENT,
    ModelDeployment,
    dig,
)
from core.selection.choice import Decision

# The kinds admission knows, by API group and kind; the other two are cluster-scoped or
# namespaced as their CRDs say (core/schema/crds.py).
Kind = tuple[str, str]
MD: Kind = (GROUP, MODEL_DEPLOYMENT)
IPC: Kind = (GROUP, INFERENCE_PROVIDER_CONFIG)
EMP: Kind = (EMP_GROUP, EXTERNAL_MODEL_PROVIDER)
NAMESPACED = (MD, EMP)
# The namespace the API server gives a namespaced object written without one.


class Step(StrEnum):
    """Which webhook's share of admission a verdict is: the API server calls the mutating
    webhook, then the validating one; `runway validate`, the render and the merge run both."""

    MUTATE = "mutate"  # defaults and selection, as a patch (ModelDeployments only)
    VALIDATE = "validate"  # every rule; the object is not changed
    ADMIT = "admit"  # both, in that order


@dataclass(frozen=True, slots=True)
class Failure:
    """A check that could not run for this object (it raised): its message, at `path`."""

    path: str
    message: str

    def __str__(self) -> str:
        return self.message


Problem = FieldError | Failure


@dataclass(frozen=True, slots=True)
class Verdict:
    """Allowed or denied, and why, for `obj` (as given; `old`: the stored version, an UPDATE).
    `admitted` is the object after admission (None: `obj` unchanged); `mutated` says it is
    `obj` with mutation's changes, whose JSONPatch is `patch()`. `engine` and `provider` are
    what mutation stamped (`hydration`). `skipped` says why admission has nothing to say
    about the kind."""

    obj: Mapping[str, Any]
    old: Mapping[str, Any] | None
    allowed: bool
    errors: tuple[Problem, ...] = ()
    warnings: tuple[str, ...] = ()
    admitted: Mapping[str, Any] | None = None
    mutated: bool = False
    skipped: str | None = None
    source: str | None = None  # where the object was read (a document of a file)
    # A ModelDeployment's mutation: its decisions and its own problems (`explain` traces it).
    hydration: Hydration | None = field(default=None, compare=False, repr=False)
    # the ModelDeployment pipeline's own answer, for a later admission to reuse (`known`)
    admission: Admission | None = field(default=None, compare=False, repr=False)

    @classmethod
    def failed(cls, obj: Mapping[str, Any], old: Mapping[str, Any] | None, detail: str) -> Verdict:
        """Denied because admitting `obj` raised: `detail` is its one error."""
        return cls(obj, old, False, (Failure("", detail),))

    @property
    def operation(self) -> Operation:
        return Operation.UPDATE if self.old is not None else Operation.CREATE

    @property
    def object(self) -> Mapping[str, Any]:
        """The object as admission leaves it."""
        return self.admitted if self.admitted is not None else self.obj

    @property
    def engine(self) -> Decision | None:
        """The engine mutation stamped (or kept), if it got that far."""
        return self.hydration.engine if self.hydration is not None else None

    @property
    def provider(self) -> Decision | None:
        """The provider mutation stamped (or kept), if it got that far."""
        return self.hydration.provider if self.hydration is not None else None

    @property
    def selection(self) -> str | None:
        """How the provider was chosen ("explicit" or "auto"), when mutation chose one."""
        return self.provider.choice.value if self.provider is not None else None

    def patch(self) -> list[dict[str, Any]]:
        """The RFC 6902 operations mutation applies to `obj` (none when it changed nothing)."""
        if not self.mutated or self.admitted is None:
            return []
        return json_patch(self.obj, self.admitted)

    def denied_by(self, errors: Sequence[Problem]) -> Verdict:
        """This verdict with `errors` of a check only an edge can make added (none: as it is)."""
        if not errors:
            return self
        return replace(self, allowed=False, errors=self.errors + tuple(errors))

    def as_json(self) -> dict[str, Any]:
        """The one JSON form: an element of the documented `runway validate -o json` array."""
        namespace = ModelDeployment(self.obj).namespace
        namespaced = kind_of(self.obj) in NAMESPACED
        return {
            "apiVersion": self.obj.get("apiVersion"),
            "kind": self.obj.get("kind"),
            "name": name_of(self.obj),
            "namespace": (namespace or DEFAULT_NAMESPACE) if namespaced else (namespace or None),
            "source": self.source,
            "operation": self.operation.value,
            "allowed": self.allowed,
            "skipped": self.skipped,
            "errors": [problem_json(e) for e in self.errors],
            "warnings": list(self.warnings),
            "patch": self.patch(),
            "object": dict(self.object),
        }


def problem_json(problem: Problem) -> dict[str, str]:
    """An error as `validate -o json` shows it: its field, and the rest of its line."""
    if isinstance(problem, Failure):
        return {"field": problem.path, "message": problem.message}
    return {"field": problem.path, "message": f"{problem.reason}: {problem.detail}"}


def kind_of(obj: Mapping[str, Any]) -> tuple[str | None, Any]:
    """The API group (`airunway.ai/v1alpha1` -> `airunway.ai`; `v1` -> "") and kind of `obj`."""
    api_version = obj.get("apiVersion")
    if not isinstance(api_version, str):
        return None, obj.get("kind")
    group, slash, _ = api_version.rpartition("/")
    return (group if slash else ""), obj.get("kind")


def name_of(obj: Mapping[str, Any]) -> str:
    """metadata.name, as text even when it is not a string (the check says what is wrong)."""
    found = dig(obj, "metadata", "name")
    return found if isinstance(found, str) else str(found)
