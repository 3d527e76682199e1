"""Tenants cannot take each other's names (issue #18, item 13 and class 6): served names are
literal, and what LiteLLM routes now decides a contested name: the established owner keeps it,
every newcomer is refused."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from core.model.servednames import LITERAL
from core.selection.configs import ProviderRegistry
from gateway.merge import Conflict, Owner, Plan, Registration, Skipped, plan, settle
from kubeio.registry import build_registry
from tests.support.builders import external_model_provider
from tests.support.gatewaymodels import EMP, MD, md, provider_model, run

PLATFORM = Owner(EMP, "gw", "platform")
TENANT = Owner(EMP, "gw", "tenant")


def emp(name: str, *served: str) -> dict[str, Any]:
    return external_model_provider(name, "gw", models=[{"servedName": s} for s in served])


def test_the_established_owner_keeps_its_name_and_the_newcomer_is_refused(
    shipped: ProviderRegistry,
) -> None:
    result = run(shipped, [], [emp("platform", "gpt-4o"), emp("tenant", "gpt-4o", "mine")])

    settled = settle(result, [Registration("gpt-4o", PLATFORM, "runway:emp:gw:platform:gpt-4o")])

    assert settled.models == (
        provider_model("platform", "gpt-4o"),
        provider_model("tenant", "mine"),
    )
    assert settled.conflicts == (Conflict("gpt-4o", (PLATFORM, TENANT), str(PLATFORM), PLATFORM),)


def test_an_established_model_deployment_keeps_its_name_against_a_provider(
    shipped: ProviderRegistry,
) -> None:
    result = run(shipped, [md("llama", "shared")], [emp("tenant", "shared")])
    llama = Owner(MD, "models", "llama")

    settled = settle(result, [Registration("shared", llama, "runway:md:models:llama:shared")])

    assert [m.owner for m in settled.models] == [llama]
    assert settled.conflicts == (Conflict("shared", (TENANT, llama), str(llama), llama),)


def test_when_no_claimant_is_registered_nobody_gets_the_name(shipped: ProviderRegistry) -> None:
    result = run(shipped, [], [emp("platform", "gpt-4o"), emp("tenant", "gpt-4o")])

    settled = settle(result, [Registration("other", Owner(EMP, "gw", "x"), "runway:x")])

    assert settled == result
    assert (settled.models, settled.conflicts) == (
        (),
        (Conflict("gpt-4o", (PLATFORM, TENANT)),),
    )


def test_two_registered_claimants_leave_the_conflict_unresolved(shipped: ProviderRegistry) -> None:
    result = run(shipped, [], [emp("platform", "gpt-4o"), emp("tenant", "gpt-4o")])

    settled = settle(
        result,
        [Registration("gpt-4o", PLATFORM, "runway:a"), Registration("gpt-4o", TENANT, "runway:b")],
    )

    assert settled == result


def test_a_name_routed_to_an_entry_runway_did_not_create_refuses_every_claimant(
    shipped: ProviderRegistry,
) -> None:
    result = run(shipped, [], [emp("tenant", "config-model", "mine")])

    settled = settle(result, [Registration("config-model", None, "config-1")])

    assert settled.models == (provider_model("tenant", "mine"),)
    assert settled.conflicts == (
        Conflict("config-model", (TENANT,), "LiteLLM entry config-1 (not created by runway)", None),
    )


def test_a_registered_owner_that_no_longer_claims_the_name_hands_it_on(
    shipped: ProviderRegistry,
) -> None:
    result = run(shipped, [], [emp("tenant", "gpt-4o")])

    settled = settle(result, [Registration("gpt-4o", PLATFORM, "runway:emp:gw:platform:gpt-4o")])

    assert (settled.models, settled.conflicts) == ((provider_model("tenant", "gpt-4o"),), ())


def test_wildcard_served_names_are_refused_by_the_merge(shipped: ProviderRegistry) -> None:
    """Objects read from files or stored before admission refused wildcards never register."""
    result = run(
        shipped,
        [
            md("catchall", "*"),
            md("prefix", "ok", gateway={"enabled": True, "modelName": "openai/*"}),
        ],
        [emp("tenant", "*", "gpt-4o")],
    )

    assert (result.models, result.conflicts) == ((), ())
    assert [(s.owner, s.served_name, s.reason) for s in result.skipped] == [
        (
            TENANT,
            None,
            f"spec.models[0].servedName: Invalid value: {LITERAL}",
        ),
        (
            Owner(MD, "models", "catchall"),
            None,
            f"rejected, so not served: spec.model.servedName: Invalid value: {LITERAL}",
        ),
        (
            Owner(MD, "models", "prefix"),
            None,
            f"rejected, so not served: spec.gateway.modelName: Invalid value: {LITERAL}",
        ),
    ]


def test_a_pattern_name_that_bypassed_admission_is_skipped_by_name(
    shipped: ProviderRegistry,
) -> None:
    """A ModelDeployment whose name comes from model.id (no servedName): the merge's own check."""
    obj = md("raw", "")
    obj["spec"]["model"] = {"id": "org/*", "source": "custom"}
    obj["spec"]["engine"] = {"type": "vllm", "image": "vllm/vllm-openai:v0.11.0"}

    result = plan([obj], [], registry=shipped, pins=None)  # type: ignore[arg-type]  # never rendered

    assert result == Plan(
        skipped=(Skipped(Owner(MD, "models", "raw"), f"name 'org/*' {LITERAL}", "org/*"),)
    )


NAMES = st.sampled_from(["a", "b", "c"])
OWNERS = st.sampled_from([Owner(EMP, "gw", n) for n in ("p", "q", "r")])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(OWNERS, NAMES), max_size=8),
    st.lists(st.tuples(st.one_of(st.none(), OWNERS), NAMES), max_size=5),
)
def test_settling_never_deregisters_the_one_established_claimant(
    claims: list[tuple[Owner, str]], registered: list[tuple[Owner | None, str]]
) -> None:
    by_owner: dict[Owner, list[str]] = {}
    for owner, name in claims:
        by_owner.setdefault(owner, []).append(name)
    providers = [emp(o.name, *names) for o, names in sorted(by_owner.items())]
    shipped = build_registry([], flags={})
    result = plan([], providers, registry=shipped, pins=None)  # type: ignore[arg-type]
    entries = [Registration(n, o, f"id-{i}") for i, (o, n) in enumerate(registered)]

    settled = settle(result, entries)

    desired = {(m.served_name, m.owner) for m in settled.models}
    assert len(desired) == len({m.served_name for m in settled.models})  # one owner per name
    for name in {n for _, n in claims}:
        claimants = [o for o, n in claims if n == name]
        # A registered owner that no longer claims the name is stale: it holds nothing.
        holders = {o for o, n in registered if n == name and (o is None or o in claimants)}
        if None in holders:  # LiteLLM routes it elsewhere: no runway claimant joins that group
            assert not any(n == name for n, _ in desired)
        elif len(holders) == 1 and (keeper := next(iter(holders))) in claimants:
            assert (name, keeper) in desired  # the established owner keeps it
        elif len(claimants) > 1:
            assert not any(n == name for n, _ in desired)  # refused for everybody
        else:
            assert desired >= {(name, claimants[0])}
