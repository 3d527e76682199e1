"""Issue #40, item 6: admission reads an InferenceProviderConfig's `airunway.ai/health`
annotation as the status controller does, selectors included, and denies one the controller
could not check, naming the annotation. Before, `"app in (a, b"` was admitted."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from core.admission.configs import check_provider_config
from core.checks.labelselectors import problem
from core.fields.errors import FieldError, Reason
from tests.support.builders import provider_config

AT = "metadata.annotations[airunway.ai/health]"
SELECTORS = st.one_of(
    st.sampled_from(["app=op", "app in (a, b)", "app in (a, b", "a b", "!x", "x>1", "x<a", ""]),
    st.text(st.sampled_from("ax=!(), <>1-/."), max_size=12),
)


def with_health(selectors: list[str], namespace: str = "ops") -> dict[str, object]:
    health = {"operatorPods": [{"namespace": namespace, "selectors": selectors}]}
    return provider_config("p", annotations={"airunway.ai/health": json.dumps(health)})


@given(st.lists(SELECTORS, max_size=4))
def test_a_config_is_denied_exactly_when_a_selector_would_be_refused(selectors: list[str]) -> None:
    errors = check_provider_config(with_health(selectors))

    bad = [(j, why) for j, s in enumerate(selectors) if (why := problem(s)) is not None]
    expected = [
        FieldError(
            AT,
            Reason.INVALID,
            f"airunway.ai/health: operatorPods[0].selectors[{j}] is not a label "
            f"selector the API server accepts: {why}",
        )
        for j, why in bad[:1]
    ]
    assert errors == expected


def test_the_reported_selector_and_a_bad_namespace_are_denied() -> None:
    assert check_provider_config(with_health(["app in (a, b"])) == [
        FieldError(
            AT,
            Reason.INVALID,
            "airunway.ai/health: operatorPods[0].selectors[0] is not a label selector the API "
            "server accepts: unable to parse requirement: found '', expected: ',' or ')'",
        )
    ]
    assert check_provider_config(with_health(["app=op"], namespace="Ops/x")) == [
        FieldError(
            AT,
            Reason.INVALID,
            "airunway.ai/health: operatorPods[0].namespace must be a namespace name",
        )
    ]
    assert check_provider_config(with_health(["app=op"])) == []
