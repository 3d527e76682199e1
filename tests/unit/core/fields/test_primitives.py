"""Field paths and quantities."""

from __future__ import annotations

from decimal import Decimal

import pytest

from core.fields.errors import FieldError, Reason
from core.fields.paths import FieldPath
from core.model.quantity import format_limit, parse_quantity


def test_field_paths_use_the_kubernetes_spelling() -> None:
    at = FieldPath.root("spec", "provider", "overrides")

    assert str(at.child("spec", "template").index(0).child("securityContext")) == (
        "spec.provider.overrides.spec.template[0].securityContext"
    )
    assert (
        str(FieldPath.root("spec", "engine", "args").key("max-model-len"))
        == "spec.engine.args[max-model-len]"
    )
    assert (
        str(FieldPath.root("metadata", "annotations").child("airunway.ai/x"))
        == "metadata.annotations[airunway.ai/x]"
    )
    assert str(FieldPath()) == ""


def test_field_error_reads_like_the_api_server() -> None:
    error = FieldError(
        "spec.provider.overrides.resource.count",
        Reason.FORBIDDEN,
        "set spec.scaling.replicas instead",
    )

    assert (
        str(error)
        == "spec.provider.overrides.resource.count: Forbidden: set spec.scaling.replicas instead"
    )


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("500m", Decimal("0.5")),
        ("4", Decimal(4)),
        (4, Decimal(4)),
        ("4Ti", Decimal(4 * 2**40)),
        ("1.5Gi", Decimal("1.5") * 2**30),
        ("2e3", Decimal(2000)),
        ("1E", Decimal(10) ** 18),
        (".5", Decimal("0.5")),
        ("-1Gi", Decimal(-(2**30))),
        ("1k", Decimal(1000)),
    ],
)
def test_valid_quantities(text: object, value: Decimal) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["", "x", "1Gix", " 1", "1 ", "1gi", True, None, [], "1.2.3"])
def test_invalid_quantities(text: object) -> None:
    assert parse_quantity(text) is None


def test_limits_print_compactly() -> None:
    assert [format_limit(Decimal(v)) for v in (4 * 2**40, 512, 64, 1536 * 2**20)] == [
        "4Ti",
        "512",
        "64",
        "1536Mi",
    ]
