"""classify_write_error on the messages the e2e tier records from a real API server."""

from __future__ import annotations

import pytest

from core.schema.upstream import classify_write_error

CREATE = 'ModelDeployment in version "v1alpha1" cannot be handled as a ModelDeployment: strict decoding error: unknown field "spec.bogus"'
MERGE = 'ModelDeployment.airunway.ai "m" is invalid: strict decoding error: unknown field "spec.model.revision", unknown field "spec.x"'
APPLY = 'failed to create typed patch object (ns/web; apps/v1, Kind=Deployment): .spec.template.spec.containers[name="web"].imagePulPolicy: field not declared in schema'


@pytest.mark.parametrize(
    ("message", "field"),
    [
        (CREATE, "spec.bogus"),
        (MERGE, "spec.model.revision"),
        (APPLY, 'spec.template.spec.containers[name="web"].imagePulPolicy'),
        ("field not declared in schema", ""),
    ],
    ids=["create-400", "merge-patch-422", "apply-500", "no-field-named"],
)
def test_unknown_field_messages_are_incompatible_upstream(message: str, field: str) -> None:
    classified = classify_write_error(message)

    assert classified is not None
    assert (classified.field, classified.message) == (field, message)


@pytest.mark.parametrize(
    "message",
    [
        'ModelDeployment.airunway.ai "m" is invalid: spec.scaling.replicas: Invalid value: -1: should be greater than or equal to 0',
        'HTTPRoute.gateway.networking.k8s.io "r" is invalid: spec.rules[0].matches[0].path: Invalid value: "object": value must be an absolute path',
        "admission webhook denied the request: unknown field in our own words",
        "",
    ],
    ids=["openapi-minimum", "cel-rule", "webhook-denial", "empty"],
)
def test_other_failures_are_not_incompatible_upstream(message: str) -> None:
    assert classify_write_error(message) is None
