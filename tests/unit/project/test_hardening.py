"""Hardening (issue #13): a regression test and a hypothesis property per input class.

The example counts are bounded here; `make fuzz` runs the same strategies 100,000 times.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonpatch
import pytest
from flask.testing import FlaskClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli.main import main
from core.admission.pipeline import admit, json_patch
from core.fields.errors import Reason, SourceError
from core.model.quantity import parse_quantity, quantity_problem
from core.selection.configs import ProviderRegistry
from kubeio.sources import parse_documents
from tests.support import limits
from tests.support.builders import model_deployment, shipped_registry
from tests.support.generated import (
    any_request_reviews,
    credential_objects,
    json_values,
    out_of_range_objects,
    secret_names,
    yaml_with_duplicate,
)
from tests.support.limits import Case
from tests.support.webhook import review
from webhook.app import create_app
from webhook.settings import Settings

BOUNDED = settings(
    max_examples=40,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
REGISTRY = shipped_registry()


@pytest.fixture(scope="module")
def client() -> Iterator[FlaskClient]:
    yield create_app(Settings()).test_client()


def _post(client: FlaskClient, path: str, document: Any) -> tuple[int, Any]:
    answer = client.post(path, data=json.dumps(document), content_type="application/json")
    return answer.status_code, answer.get_json()


# Class 1: DELETE/CONNECT (and every other operation) with any object.


@pytest.mark.parametrize("operation", ["DELETE", "CONNECT"])
@pytest.mark.parametrize("obj", [[1, 2], "a string", 7], ids=["list", "string", "number"])
@pytest.mark.parametrize("path", ["/mutate", "/validate"])
def test_object_that_is_not_an_object_is_denied_not_crashed(
    operation: str, obj: Any, path: str, client: FlaskClient
) -> None:
    document = review(model_deployment(), operation=operation, uid="u")
    document["request"]["object"] = obj

    assert _post(client, path, document) == (
        200,
        {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": {
                "uid": "u",
                "allowed": False,
                "status": {"code": 400, "message": "request.object must be an object or null"},
            },
        },
    )


def test_delete_with_null_object_is_allowed(client: FlaskClient) -> None:
    document = review(model_deployment(), operation="DELETE", uid="u", old=model_deployment())
    document["request"]["object"] = None

    assert _post(client, "/validate", document)[1]["response"] == {"uid": "u", "allowed": True}


@BOUNDED
@given(document=any_request_reviews(), path=st.sampled_from(["/mutate", "/validate"]))
def test_any_request_gets_an_admission_review_with_its_uid(
    document: dict[str, Any], path: str, client: FlaskClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.clear()
    with caplog.at_level(logging.ERROR):
        status, answer = _post(client, path, document)

    assert status == 200
    assert (answer["apiVersion"], answer["kind"]) == ("admission.k8s.io/v1", "AdmissionReview")
    assert answer["response"]["uid"] == document["request"]["uid"]
    assert answer["response"].get("status", {}).get("code") != 500
    assert [r.getMessage() for r in caplog.records] == []


# Class 2: numbers outside what Kubernetes holds.


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (
            "1e1000000",
            "out of range: a quantity must be at most 2^63-1 (9223372036854775807) in magnitude",
        ),
        ("1e" + "9" * 5000, "not a valid resource quantity: longer than 128 characters"),
        (
            "9223372036854775808",
            "out of range: a quantity must be at most 2^63-1 (9223372036854775807) in magnitude",
        ),
        ("1e1.5", "not a valid resource quantity (such as 4, 500m, 32Gi)"),
        (
            "123456789e999999",
            "out of range: a quantity must be at most 2^63-1 (9223372036854775807) in magnitude",
        ),
        ("4Ti", None),
        ("1e-1000000", None),
    ],
    ids=[
        "big-exponent",
        "5000-digit-exponent",
        "past-int64",
        "fractional-exponent",
        "past-emax",
        "4Ti",
        "tiny",
    ],
)
def test_quantity_problems_are_named_never_raised(value: str, problem: str | None) -> None:
    assert quantity_problem(value) == problem
    assert (parse_quantity(value) is None) == (problem is not None)


def test_huge_memory_is_denied_by_field_in_validate(tmp_path: Path, capsys: Any) -> None:
    obj = model_deployment("big", gpu=1, memory="1e1000000")
    obj["spec"]["resources"]["memory"] = "1e1000000"
    obj["spec"]["scaling"] = {"replicas": 2**64}
    source = tmp_path / "md.yaml"
    source.write_text(json.dumps(obj))

    code = main(["validate", str(source)])

    out = capsys.readouterr().out
    assert code == 1
    assert out.splitlines()[:2] == [
        "ns/big: denied",
        "  spec.scaling.replicas: Invalid value: integer out of range (Kubernetes integers are 64-bit: -2^63 to 2^63-1)",
    ]


@BOUNDED
@given(case=out_of_range_objects())
def test_out_of_range_numbers_are_denied_with_their_field(case: tuple[dict[str, Any], str]) -> None:
    obj, field = case

    result = admit(obj, registry=REGISTRY)

    assert result.allowed is False
    assert field in [e.path for e in result.errors]
    assert {e.reason for e in result.errors if e.path == field} == {Reason.INVALID}


@BOUNDED
@given(case=out_of_range_objects())
def test_out_of_range_numbers_are_denied_by_the_validating_webhook(
    case: tuple[dict[str, Any], str], client: FlaskClient
) -> None:
    obj, field = case

    status, answer = _post(client, "/validate", review(obj))

    assert status == 200
    assert answer["response"]["allowed"] is False
    assert answer["response"]["status"]["code"] == 403
    assert f"{field}: Invalid value: " in answer["response"]["status"]["message"]


# Class 9: duplicate keys in YAML.


def test_two_spec_blocks_are_refused_naming_file_document_and_key() -> None:
    text = "apiVersion: v1\nkind: A\n---\nkind: B\nspec: {}\nspec:\n  x: 1\n"

    with pytest.raises(SourceError) as raised:
        list(parse_documents(text, "models.yaml"))

    assert str(raised.value) == (
        'models.yaml: document 2: not valid YAML at line 6, column 1: duplicate key "spec"'
    )


@pytest.mark.parametrize("key", ["on", "no", "null", "true"])
def test_a_duplicate_key_that_yaml_reads_as_a_boolean_or_null_is_named_as_written(key: str) -> None:
    text = (
        f"apiVersion: airunway.ai/v1alpha1\nkind: ModelDeployment\nspec:\n  {key}: 1\n  {key}: 2\n"
    )

    with pytest.raises(SourceError) as err:
        list(parse_documents(text, "in.yaml"))

    assert str(err.value) == (
        f'in.yaml: document 1: not valid YAML at line 5, column 3: duplicate key "{key}"'
    )


def test_merge_keys_are_not_duplicates() -> None:
    text = "base: &b {a: 1}\nuse:\n  <<: *b\n  a: 2\n"

    assert [d.obj for d in parse_documents(text, "f.yaml")] == [{"base": {"a": 1}, "use": {"a": 2}}]


@BOUNDED
@given(case=yaml_with_duplicate())
def test_any_duplicate_key_is_refused(case: tuple[str, int, str]) -> None:
    text, document, key = case

    with pytest.raises(SourceError) as raised:
        list(parse_documents(text, "in.yaml"))

    message = str(raised.value)
    assert message.startswith(f"in.yaml: document {document}: not valid YAML at line ")
    assert message.endswith(f': duplicate key "{key}"')


# Class 10: credentials by value.


@BOUNDED
@given(case=credential_objects())
def test_credentials_by_value_are_denied_with_their_field(case: tuple[dict[str, Any], str]) -> None:
    obj, field = case

    result = admit(obj, registry=REGISTRY)

    assert result.allowed is False
    assert [e.path for e in result.errors] == [field]
    assert "Secret" in result.errors[0].detail  # the pointer to a Secret, whichever check


@BOUNDED
@given(name=secret_names)
def test_secret_names_are_accepted(name: str) -> None:
    obj = model_deployment(
        gpu=1, engine="vllm", provider="vllm", secrets={"huggingFaceToken": name}
    )

    assert admit(obj, registry=REGISTRY).errors == ()


def test_secret_key_ref_name_must_be_a_secret_name(shipped: ProviderRegistry) -> None:
    env = [{"name": "T", "valueFrom": {"secretKeyRef": {"name": "Not_A_Name", "key": "t"}}}]
    obj = model_deployment(gpu=1, engine="vllm", provider="vllm", env=env)

    assert [(e.path, e.reason) for e in admit(obj, registry=shipped).errors] == [
        ("spec.env[0].valueFrom.secretKeyRef.name", Reason.INVALID)
    ]


# The patch builder: any two objects.

json_objects = st.dictionaries(st.text(max_size=6), json_values, max_size=5)


@BOUNDED
@given(before=json_objects, after=json_objects)
def test_json_patch_turns_before_into_after(before: dict[str, Any], after: dict[str, Any]) -> None:
    patch = json_patch(before, after)

    assert jsonpatch.apply_patch(copy.deepcopy(before), patch) == after
    assert json_patch(after, copy.deepcopy(after)) == []


# Every class at the input limits (tests/support/limits.py): the right answer, whatever the size.
# (Their CPU time is `python -m bench`'s; no test here is timed.)

TOO_MANY = (
    "spec: Too many: the object holds more than 10000 values (map entries and list items, at any "
    "depth); Runway's objects need a few hundred: keep bulk data out of them"
)
# The annotations admission stamps on the limits' ModelDeployment (it counts toward the bound).
STAMPED = sum(
    len(k) + len(v) for k, v in admit(limits.plain_model(), registry=REGISTRY).obj["metadata"]["annotations"].items()
)  # fmt: skip
AT_THE_LIMITS: dict[str, tuple[bool, str | None]] = {  # allowed, message
    "3 MiB object, DELETE": (True, None),
    "values past the limit": (False, TOO_MANY),
    "3 MiB of empty lists": (False, TOO_MANY),
    "the most values allowed": (True, None),
    "the deepest nesting allowed": (True, None),
    "the most numbers allowed, at their bounds": (True, None),
    "a 3 MiB value, every literal": (True, None),
    "a 3 MiB value ending in a token": (
        False,
        "spec.provider.overrides.spec.notes: Forbidden: looks like a GitHub token "
        "(ghp_/gho_/ghu_/ghs_/ghr_...); put the value in a Secret and reference it "
        "(env[].valueFrom.secretKeyRef), never inline",
    ),
    "an env value past its bound": (
        False,
        "spec.env[0].value: Too long: may not be longer than 32768",
    ),
    "9,000 unknown engine flags": (
        False,
        "spec.engine.args: Too many: must have at most 512 entries",
    ),
    "the most unknown flags allowed": (
        False,
        "; ".join(
            [
                f"spec.engine.args[max-model-lenx{i:05d}]: Invalid value: --max-model-lenx{i:05d} is not a "
                "flag of vllm 0.33.0" + ("; did you mean --max-model-len?" if i < 16 else "")
                for i in range(32)
            ]
            + [
                "spec.engine: Invalid value: 1504 more flags are not flags of vllm 0.33.0 (only the first 32 are named)"
            ]
        ),
    ),
    "3 MiB of annotations": (
        False,
        "metadata.annotations: Too long: may hold at most 262144 bytes of keys and values "
        f"together, not {len('example.com/notes') + limits.ANNOTATION + STAMPED}; keep bulk data out of "
        "annotations",
    ),
    "ExternalModelProvider, 3 MiB of models": (False, TOO_MANY),
    "InferenceProviderConfig, 3 MiB of rules": (
        False,
        "spec.selectionRules: Too many: must have at most 64 items, has 3252",
    ),
}


@pytest.fixture(scope="module")
def at_the_limits() -> dict[tuple[str, str], Case]:
    return {(c.kind, c.name): c for c in limits.cases()}


@pytest.mark.parametrize(
    ("kind", "name"),
    [(kind, name) for kind, name, *_ in limits.BUILDERS],
    ids=[f"{kind}:{name}" for kind, name, *_ in limits.BUILDERS],
)
def test_a_review_at_the_input_limits_gets_the_right_answer(
    kind: str, name: str, at_the_limits: dict[tuple[str, str], Case], client: FlaskClient
) -> None:
    case = at_the_limits[kind, name]
    allowed, message = AT_THE_LIMITS[name]
    expected: dict[str, Any] = {"uid": case.document["request"]["uid"], "allowed": allowed}
    if message is not None:
        expected["status"] = {"code": 403, "message": message}

    status, answer = _post(client, case.path, case.document)
    answer["response"].pop("patch", None)  # a mutation's patch: compared by the mutate tests
    answer["response"].pop("patchType", None)

    assert (status, answer["response"]) == (200, expected)
