"""spec.provider.overrides: layer 1 (every provider), and how it runs with each provider's layer 2
(whose own cases are tests/unit/providers/test_overrides.py)."""

from __future__ import annotations

from typing import Any

import pytest

from core.admission.validation import check_spec
from core.checks.overrides import check_global, without_blocked
from core.fields.errors import FieldError, Reason
from core.fields.paths import FieldPath
from core.selection.configs import ProviderRegistry
from providers.kuberay import PROVIDER as KUBERAY
from tests.support.builders import model_deployment

AT = FieldPath.root("spec", "provider", "overrides")
SECURITY = '"{}" may not be set through overrides: it is security-sensitive'
SIZING = (
    '"{}" may not be set through overrides: it would bypass the admission limits; '
    "use spec.scaling and spec.resources instead"
)


def layer1(overrides: Any) -> list[tuple[str, Reason, str]]:
    return [(e.path, e.reason, e.detail) for e in check_global(overrides, AT)]


@pytest.mark.parametrize(
    ("overrides", "kind"),
    [([], "array"), ("spec: {}", "string"), (3, "integer"), (True, "boolean")],
    ids=["array", "string", "number", "bool"],
)
def test_overrides_must_be_an_object(overrides: Any, kind: str) -> None:
    assert layer1(overrides) == [
        ("spec.provider.overrides", Reason.INVALID, f"overrides must be a JSON object, not {kind}")
    ]


def test_object_without_blocked_keys_passes_layer1() -> None:
    assert (
        layer1({"spec": {"template": {"spec": {"containers": [{"name": "vllm", "env": []}]}}}})
        == []
    )


def test_security_key_inside_an_array_is_reported_with_its_index() -> None:
    overrides = {
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {"name": "a"},
                        {"name": "b", "securityContext": {"privileged": True}},
                    ]
                }
            }
        }
    }

    assert layer1(overrides) == [
        (
            "spec.provider.overrides.spec.template.spec.containers[1].securityContext",
            Reason.FORBIDDEN,
            SECURITY.format("securityContext"),
        )
    ]


@pytest.mark.parametrize(
    "key",
    sorted(
        [
            "securityContext",
            "serviceAccountName",
            "serviceAccount",
            "hostNetwork",
            "hostPID",
            "hostIPC",
            "automountServiceAccountToken",
            "nodeName",
            "priorityClassName",
            "runtimeClassName",
            "hostPath",
            "hostPort",
        ]
    ),
)
def test_every_security_key_is_rejected_at_any_depth(key: str) -> None:
    assert layer1({"spec": {"a": [{"b": {key: "x"}}]}}) == [
        (f"spec.provider.overrides.spec.a[0].b.{key}", Reason.FORBIDDEN, SECURITY.format(key))
    ]


@pytest.mark.parametrize("key", ["replicas", "resources"])
def test_sizing_keys_are_rejected(key: str) -> None:
    assert layer1({"frontend": {key: 4}}) == [
        (f"spec.provider.overrides.frontend.{key}", Reason.FORBIDDEN, SIZING.format(key))
    ]


def test_a_rejected_subtree_is_reported_once_and_errors_keep_document_order() -> None:
    overrides = {
        "securityContext": {"securityContext": {}, "hostNetwork": True},
        "spec": {"replicas": 3, "x": [{"hostPID": True}]},
    }

    assert [path for path, _, _ in layer1(overrides)] == [
        "spec.provider.overrides.securityContext",
        "spec.provider.overrides.spec.replicas",
        "spec.provider.overrides.spec.x[0].hostPID",
    ]


def test_layer1_walks_arbitrarily_deep_input_without_recursion() -> None:
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(20000):
        node["x"] = {}
        node = node["x"]
    node["hostNetwork"] = True

    errors = check_global(deep, AT)

    assert [(e.reason, e.path.endswith(".x.hostNetwork")) for e in errors] == [
        (Reason.FORBIDDEN, True)
    ]


def test_layer2_sees_only_what_layer1_let_through() -> None:
    assert without_blocked(
        {"epp": {"replicas": 2, "image": "i"}, "a": [{"nodeName": "n", "b": 1}]}
    ) == {
        "epp": {"image": "i"},
        "a": [{"b": 1}],
    }


def test_a_sized_root_leaves_its_own_sizing_keys_to_layer2_and_nothing_else() -> None:
    """A provider's sized roots (Overrides.sized) type and bound their own replicas/resources in
    its layer 2; the global rule still refuses sizing keys anywhere else, beneath them included,
    and security keys everywhere."""
    overrides = {
        "front": {
            "replicas": 2,
            "resources": {"cpu": "4", "replicas": 3, "hostPath": "/"},
        },
        "spec": {"services": {"W": {"replicas": 9}}},
        "other": {"replicas": 1},
    }
    sized = frozenset({"front"})

    assert [(e.path, e.reason, e.detail) for e in check_global(overrides, AT, sized)] == [
        (
            "spec.provider.overrides.front.resources.replicas",
            Reason.FORBIDDEN,
            SIZING.format("replicas"),
        ),
        (
            "spec.provider.overrides.front.resources.hostPath",
            Reason.FORBIDDEN,
            SECURITY.format("hostPath"),
        ),
        (
            "spec.provider.overrides.spec.services.W.replicas",
            Reason.FORBIDDEN,
            SIZING.format("replicas"),
        ),
        ("spec.provider.overrides.other.replicas", Reason.FORBIDDEN, SIZING.format("replicas")),
    ]
    assert without_blocked(overrides, sized) == {
        "front": {"replicas": 2, "resources": {"cpu": "4"}},
        "spec": {"services": {"W": {}}},
        "other": {},
    }


def test_without_a_sized_root_its_sizing_keys_are_refused_as_before() -> None:
    overrides = {"front": {"replicas": 2, "resources": {"cpu": "4"}}}

    assert layer1(overrides) == [
        ("spec.provider.overrides.front.replicas", Reason.FORBIDDEN, SIZING.format("replicas")),
        ("spec.provider.overrides.front.resources", Reason.FORBIDDEN, SIZING.format("resources")),
    ]
    assert without_blocked(overrides) == {"front": {}}


def test_messages_never_echo_override_values(shipped: ProviderRegistry) -> None:
    secret = "hf_s3cr3tT0k3nValue"
    overrides = {"routerMode": secret, "epp": {"image": 7, "token": secret}, "env": secret}
    obj = model_deployment(gpu=1, provider="dynamo", overrides=overrides, gateway={"enabled": True})

    errors = check_spec(obj, registry=shipped).errors

    assert len(errors) == 4
    assert all(secret not in str(e) for e in errors)


# -- layer 1 with each provider's layer 2 (tests/unit/providers/test_overrides.py) ----------


def test_kuberay_accepts_and_ignores_what_passes_layer1_with_a_warning(
    shipped: ProviderRegistry,
) -> None:
    obj = model_deployment(gpu=2, provider="kuberay", overrides={"anything": {"goes": 1}})

    verdict = check_spec(obj, registry=shipped)

    assert KUBERAY.overrides.check({"anything": 1}, AT) == []
    assert verdict.errors == ()
    assert verdict.warnings == ("spec.provider.overrides is ignored by provider kuberay",)


def test_kuberay_overrides_still_pass_through_layer1(shipped: ProviderRegistry) -> None:
    obj = model_deployment(gpu=2, provider="kuberay", overrides={"head": {"hostNetwork": True}})

    assert check_spec(obj, registry=shipped).errors == (
        FieldError(
            "spec.provider.overrides.head.hostNetwork",
            Reason.FORBIDDEN,
            SECURITY.format("hostNetwork"),
        ),
    )


def test_layer1_and_layer2_errors_come_together(shipped: ProviderRegistry) -> None:
    overrides = {"resource": {"count": 3}, "spec": {"template": {"spec": {"hostIPC": True}}}}
    obj = model_deployment(gpu=1, provider="kaito", overrides=overrides)

    assert [e.path for e in check_spec(obj, registry=shipped).errors] == [
        "spec.provider.overrides.spec.template.spec.hostIPC",
        "spec.provider.overrides.spec",
        "spec.provider.overrides.resource.count",
    ]


def test_null_overrides_are_no_overrides(shipped: ProviderRegistry) -> None:
    obj = model_deployment(gpu=1, provider="kaito")
    obj["spec"]["provider"]["overrides"] = None

    assert check_spec(obj, registry=shipped).errors == ()
