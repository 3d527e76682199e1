"""Runway's strict check against the real API server on every x-kubernetes-validations rule of
the schema pack: for each rule, at each schema path and served version it sits at, an object
the rule accepts and one it refuses (tests/support/crdcases.py). The API server judges each by
a server-side dry run with fieldValidation=Strict (a create; an update from the stored object
for transition rules; a status update for rules under status), and Runway's verdict and its
rule errors must be the API server's.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import kubernetes
import pytest

from core.model.versions import Versions
from kubeio.shipped import bundled_versions
from renderer.output.schemapack import load_pack
from renderer.output.strict import Schemas
from tests.support.cluster import Cluster
from tests.support.crdcases import Case, cases, format_cases, rule_sites

CASES = cases()
FORMATS = format_cases()
MESSAGES = frozenset(
    rule["message"]
    for entry in load_pack()
    for version in entry.crd["spec"]["versions"]
    for _, rule in rule_sites(version["schema"]["openAPIV3Schema"])
)

BLOCKED = "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"


@dataclass(frozen=True)
class Verdict:
    accepted: bool
    errors: tuple[str, ...]  # every cause, as "field: message"


def _verdict(call: Any) -> Verdict:
    try:
        call()
    except kubernetes.client.ApiException as err:
        body = json.loads(err.body or "{}")
        causes = (body.get("details") or {}).get("causes") or []
        return Verdict(
            False, tuple(sorted(f"{c.get('field')}: {c.get('message')}" for c in causes))
        )
    return Verdict(True, ())


def _judge(custom: Any, namespace: str, index: int, case: Case) -> Verdict:
    """The API server's verdict on one case, by dry run."""
    args = (case.group, case.version, namespace, case.plural)
    strict = {"dry_run": "All", "field_validation": "Strict"}
    obj = copy.deepcopy(case.obj)
    obj["metadata"] = {"name": f"case-{index}", "namespace": namespace}
    if case.old is None and not case.in_status:
        return _verdict(lambda: custom.create_namespaced_custom_object(*args, obj, **strict))
    stored = copy.deepcopy(case.old if case.old is not None else case.obj)
    stored["metadata"] = dict(obj["metadata"])
    stored.pop("status", None)
    created = custom.create_namespaced_custom_object(*args, stored)
    obj["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"]
    if case.in_status:
        return _verdict(
            lambda: custom.replace_namespaced_custom_object_status(
                *args, obj["metadata"]["name"], obj, **strict
            )
        )
    return _verdict(
        lambda: custom.replace_namespaced_custom_object(
            *args, obj["metadata"]["name"], obj, **strict
        )
    )


@pytest.fixture(scope="module")
def verdicts(cluster: Cluster, api: kubernetes.client.ApiClient) -> Iterator[list[Verdict]]:
    """The API server's verdict on every case, in one namespace (one batch of dry runs)."""
    namespace = "crd-rules"
    cluster.kubectl("create", "namespace", namespace)
    custom = kubernetes.client.CustomObjectsApi(api)
    everything = [*CASES, *FORMATS]
    try:
        with ThreadPoolExecutor(max_workers=4) as pool:  # a bounded batch against loopback
            yield list(
                pool.map(
                    lambda i: _judge(custom, namespace, i, everything[i]), range(len(everything))
                )
            )
    finally:
        cluster.kubectl("delete", "namespace", namespace, "--wait=false", check=False)


@pytest.fixture(scope="module")
def schemas() -> Schemas:
    return Schemas.from_pack(load_pack())


def _rule_errors(errors: tuple[str, ...] | list[str]) -> list[str]:
    """The errors that are a pack rule's (its message ends them), sorted."""
    return sorted(e for e in errors if any(e.endswith(m) for m in MESSAGES))


def test_every_rule_of_the_pack_has_a_passing_and_a_failing_case() -> None:
    covered = {(c.kind, c.version, c.path, c.message, c.passes) for c in CASES}
    sites = {  # a set: HelmRelease has two rules with one message at spec.kubeConfig
        (entry.crd["spec"]["names"]["kind"], version["name"], at, rule["message"])
        for entry in load_pack()
        for version in entry.crd["spec"]["versions"]
        for at, rule in rule_sites(version["schema"]["openAPIV3Schema"])
    }

    assert len(sites) == 340
    assert len(CASES) == 2 * len(sites)
    assert len({c.id for c in CASES}) == len(CASES)
    assert {passes for *_, passes in covered} == {True, False}


@pytest.mark.parametrize("index", range(len(CASES)), ids=[c.id for c in CASES])
def test_runway_judges_the_rule_as_the_api_server_does(
    index: int, verdicts: list[Verdict], schemas: Schemas
) -> None:
    case = CASES[index]
    pins: Versions = bundled_versions()
    server = verdicts[index]

    found = schemas.check(case.obj, kubernetes=pins.kubernetes, old=case.old)
    runway = [str(e) for e in found]

    # The case does what it says on the server: accepted, or refused by this very rule.
    assert server.accepted is case.passes, server.errors
    if case.blocked:
        assert server.errors[0].endswith(BLOCKED), server.errors
    elif not case.passes:
        assert any(e.endswith(case.message) for e in server.errors), server.errors
    # Runway agrees, with the API server's words for every rule error.
    assert (runway == []) is server.accepted, runway
    assert _rule_errors(runway) == _rule_errors(server.errors)


@pytest.mark.parametrize("index", range(len(FORMATS)), ids=[c.id for c in FORMATS])
def test_runway_judges_the_format_as_the_api_server_does(
    index: int, verdicts: list[Verdict], schemas: Schemas
) -> None:
    case = FORMATS[index]
    server = verdicts[len(CASES) + index]

    found = schemas.check(case.obj, kubernetes=bundled_versions().kubernetes)

    assert server.accepted is case.passes, server.errors
    assert (found == []) is server.accepted, [str(e) for e in found]
