"""Property: whatever the installation annotation holds, reading it gives typed values or a
bounded list of FieldErrors, never an exception; and whatever is read and planned gives objects
that pass the schema pack's strict check."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.checks.installation import (
    INSTALLATION_ANNOTATION,
    MAX_ERRORS,
    Installation,
    read_installation,
)
from core.fields.errors import FieldError
from core.rendering.installs import (
    Flavour,
    InstallPlan,
    gitops_objects,
    helm_commands,
    plan_install,
)
from kubeio.shipped import bundled_versions
from renderer.output.schemapack import load_pack
from renderer.output.strict import Schemas, check_objects

SCHEMAS = Schemas.from_pack(load_pack())
KUBERNETES = bundled_versions().kubernetes

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.sampled_from([2**63, -(2**63) - 1, 10**40])
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
JSON = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=30,
)
STORABLE = st.recursive(  # values Kubernetes stores (integers within int64)
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=30,
)
NAMES = st.sampled_from(["a", "charts", "b-1", "Bad", "", "x" * 60, "a.b"])
FIELDS = {
    "name": NAMES,
    "url": st.sampled_from(
        ["https://charts.example.com", "http://10.0.0.1:8080/x", "oci://r/c", "x"]
    ),
    "chart": st.sampled_from(["charts/a", "a/b", "charts/c", "https://x.example.com/c.tgz", "a b"]),
    "version": st.sampled_from(["1.0.0", "v0.1.2-rc.1+b", "^1", "", "latest"]),
    "namespace": NAMES,
    "createNamespace": st.booleans() | SCALARS,
    "skipCrds": st.booleans(),
    "values": st.dictionaries(
        st.sampled_from(["a", "a.b", "a.b.c", "d_e", "f-g.h", "x[0]", ""]), JSON, max_size=4
    ),
    "title": st.text(max_size=8),
    "description": st.text(max_size=8),
    "command": st.text(max_size=8),
    "defaultNamespace": NAMES,
}


def shaped(keys: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    """Objects of AI Runway's shape with some fields present, each value near the edge."""
    return st.fixed_dictionaries({}, optional={k: FIELDS[k] for k in keys})


INSTALLATIONS = st.fixed_dictionaries(
    {},
    optional={
        "description": st.text(max_size=20) | SCALARS,
        "defaultNamespace": NAMES,
        "helmRepos": st.lists(shaped(["name", "url"]) | JSON, max_size=3),
        "helmCharts": st.lists(
            shaped(
                ["name", "chart", "version", "namespace", "createNamespace", "skipCrds", "values"]
            ),
            max_size=3,
        ),
        "steps": st.lists(shaped(["title", "description", "command"]), max_size=3),
        "bogus": JSON,
    },
)

# Near-valid installations: mostly readable and plannable, so the strict check sees values of
# every JSON shape in Flux `values` and Argo CD `valuesObject`.
GOOD_NAMES = st.sampled_from(["a", "b-1", "operator", "x" * 53])
VALID_CHARTS = st.lists(
    st.fixed_dictionaries(
        {
            "name": GOOD_NAMES,
            "chart": st.sampled_from(["charts/a", "charts/op-erator", "more/b"]),
            "version": st.sampled_from(["1.0.0", "v0.1.2-rc.1+b"]),
            "namespace": st.sampled_from(["ns", "kube-system", "x" * 63]),
        },
        optional={
            "createNamespace": st.booleans(),
            "skipCrds": st.booleans(),
            "values": st.dictionaries(
                st.sampled_from(["a", "b.c", "d_e", "f-g.h.i", "j.k"]), STORABLE, max_size=4
            ),
        },
    ),
    max_size=3,
    unique_by=lambda c: c["name"],
)
VALID = st.fixed_dictionaries(
    {
        "helmRepos": st.just(
            [
                {"name": "charts", "url": "https://charts.example.com/stable"},
                {"name": "more", "url": "http://10.0.0.1:8080"},
            ]
        ),
        "helmCharts": VALID_CHARTS,
    },
    optional={
        "steps": st.lists(
            st.fixed_dictionaries(
                {"title": st.text(min_size=1, max_size=8), "description": st.text(min_size=1)},
                optional={"command": st.text(max_size=8)},
            ),
            max_size=2,
        )
    },
)


def outcome(annotation: str) -> Installation | list[FieldError]:
    found = read_installation({"metadata": {"annotations": {INSTALLATION_ANNOTATION: annotation}}})
    if isinstance(found, list):
        assert 0 < len(found) <= MAX_ERRORS
        assert all(isinstance(e, FieldError) for e in found)
    else:
        assert isinstance(found, Installation)
    return found


@settings(max_examples=300, deadline=None)
@given(JSON)
def test_any_json_value_reads_to_values_or_errors(value: Any) -> None:
    outcome(json.dumps(value))


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_any_text_reads_to_values_or_errors(text: str) -> None:
    outcome(text)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(VALID | INSTALLATIONS)
def test_whatever_is_read_and_planned_passes_the_strict_check(installation: dict[str, Any]) -> None:
    found = outcome(json.dumps(installation))
    if not isinstance(found, Installation):
        return
    plan = plan_install(found)
    if not isinstance(plan, InstallPlan):
        assert len(plan) > 0 and all(isinstance(e, FieldError) for e in plan)
        return
    assert len(helm_commands(plan)) == 2 * len(plan.repos()) + len(plan.releases)
    for flavour in Flavour:
        objects = gitops_objects(plan, flavour)
        checked = check_objects(objects, SCHEMAS, kubernetes=KUBERNETES)
        assert [errors for _, errors in checked] == [[]] * len(objects)


@pytest.mark.parametrize("repeat", [3_000])
def test_the_error_list_is_bounded(repeat: int) -> None:
    noisy = {f"unknown{i}": i for i in range(repeat)}

    found = read_installation(
        {"metadata": {"annotations": {INSTALLATION_ANNOTATION: json.dumps(noisy)}}}
    )

    assert isinstance(found, list)
    assert len(found) == MAX_ERRORS
