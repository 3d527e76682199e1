"""The strict check of custom kinds runs their CRD's rules and formats (renderer/output/strict.py)."""

from __future__ import annotations

from typing import Any

from renderer.output.schemapack import load_pack
from renderer.output.strict import Schemas

KUBERNETES = "v1.37.2"


def route(**rule: Any) -> dict[str, Any]:
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": "r", "namespace": "models"},
        "spec": {"parentRefs": [{"name": "gw"}], "rules": [rule]},
    }


def test_a_custom_kind_is_checked_against_its_crd_rules() -> None:
    schemas = Schemas.from_pack(load_pack())
    broken = route(
        backendRefs=[{"name": "svc"}], timeouts={"request": "1s", "backendRequest": "2s"}
    )

    found = [str(e) for e in schemas.check(broken, kubernetes=KUBERNETES)]

    assert found == [  # a node's rules, then its fields in name order
        "spec.rules[0].backendRefs[0]: Invalid value: Must have port for Service reference",
        "spec.rules[0].timeouts: Invalid value: backendRequest timeout cannot be longer than "
        "request timeout",
    ]
    assert (
        schemas.check(route(backendRefs=[{"name": "svc", "port": 80}]), kubernetes=KUBERNETES) == []
    )


def test_no_rule_runs_after_a_blocking_schema_error() -> None:
    schemas = Schemas.from_pack(load_pack())
    broken = route(
        backendRefs=[{"name": "svc"}], matches=[{"path": {"type": "Prefix", "value": "/"}}]
    )

    found = [(e.path, e.reason) for e in schemas.check(broken, kubernetes=KUBERNETES)]

    assert found == [("spec.rules[0].matches[0].path.type", "Unsupported value")]


def test_a_transition_rule_runs_only_against_the_stored_object() -> None:
    schemas = Schemas.from_pack(load_pack())
    head = {
        "rayStartParams": {},
        "template": {"spec": {"containers": [{"name": "h", "image": "i"}]}},
    }

    def cluster(managed_by: str) -> dict[str, Any]:
        return {
            "apiVersion": "ray.io/v1",
            "kind": "RayCluster",
            "metadata": {"name": "c"},
            "spec": {"headGroupSpec": head, "managedBy": managed_by},
        }

    moved = cluster("kueue.x-k8s.io/multikueue")
    stored = cluster("ray.io/kuberay-operator")

    assert schemas.check(moved, kubernetes=KUBERNETES) == []
    assert [str(e) for e in schemas.check(moved, kubernetes=KUBERNETES, old=stored)] == [
        'spec.managedBy: Invalid value: "kueue.x-k8s.io/multikueue": the managedBy field is '
        "immutable"
    ]
