"""kubeio.sources.is_runway_kind, the one rule of kinds every command that reads sources
follows (issue #40 item 17, class 7), on generated apiVersions and kinds: Runway's kinds are
read, other groups' skipped, anything else in Runway's groups refused with at most two known
kinds suggested, and the message stays one short line whatever the kind's size."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.fields.errors import SourceError
from core.model.kinds import EMP_GROUP, GROUP
from kubeio.sources import Document, is_runway_kind, runway_documents

KNOWN = {
    GROUP: ("ModelDeployment", "InferenceProviderConfig"),
    EMP_GROUP: ("ExternalModelProvider",),
}
SUGGESTIONS = {
    f"{g}/v1alpha1 {k}" for g, kinds in KNOWN.items() for k in kinds
}  # what "did you mean" may name
GROUPS = st.one_of(st.sampled_from([GROUP, EMP_GROUP, "", "apps", "x.airunway.ai"]), st.text())
KINDS = st.one_of(
    st.sampled_from(["ModelDeployment", "InferenceProviderConfig", "ExternalModelProvider"]),
    st.text(min_size=1, max_size=100),
    st.text(min_size=1, max_size=5).map(lambda t: t * 20_000),
)


def doc(api_version: object, kind: object) -> Document:
    return Document("a.yaml", 0, {"apiVersion": api_version, "kind": kind})


@given(group=GROUPS, version=st.sampled_from(["v1", "v1alpha1", "v2"]), kind=KINDS)
def test_every_kind_is_read_skipped_or_refused_by_its_group(
    group: str, version: str, kind: str
) -> None:
    api_version = f"{group}/{version}" if group else version
    if "/" in group:
        return  # not a group: the apiVersion's last "/" splits it elsewhere
    one = doc(api_version, kind)
    if group not in KNOWN:
        assert (is_runway_kind(one), runway_documents([one]).skipped) == (False, [one])
        return
    if kind in KNOWN[group]:
        assert (is_runway_kind(one), runway_documents([one]).runway) == (True, [one])
        return
    with pytest.raises(SourceError) as raised:
        is_runway_kind(one)
    shown = kind if len(kind) <= 63 else kind[:63] + "..."
    head = f"{shown} is not a kind of {group} (it has {', '.join(KNOWN[group])})"
    found = re.fullmatch(
        re.escape(head) + r"(?:; did you mean (.+)\?)?", raised.value.message, re.S
    )
    assert found is not None, raised.value.message
    named = found.group(1).split(" or ") if found.group(1) else []
    assert (raised.value.path, len(named) <= 2, set(named) <= SUGGESTIONS) == (
        "a.yaml (document 1)",
        True,
        True,
    )
    assert len(raised.value.message) < 300
    if len(kind) > 63:
        assert named == []


@pytest.mark.parametrize(
    ("api_version", "kind", "message"),
    [
        (
            "airunway.ai/v1alpha1",
            "ModelDeploymnet",
            "ModelDeploymnet is not a kind of airunway.ai (it has ModelDeployment, "
            "InferenceProviderConfig); did you mean airunway.ai/v1alpha1 ModelDeployment?",
        ),
        (
            "airunway.ai/v1alpha1",
            "ExternalModelProvider",
            "ExternalModelProvider is not a kind of airunway.ai (it has ModelDeployment, "
            "InferenceProviderConfig); did you mean gateway.tokenfactory.mirantis.com/v1alpha1 "
            "ExternalModelProvider?",
        ),
        (
            "gateway.tokenfactory.mirantis.com/v1",
            "Secret",
            "Secret is not a kind of gateway.tokenfactory.mirantis.com (it has "
            "ExternalModelProvider)",
        ),
        (
            None,
            "ConfigMap",
            "apiVersion None and kind ConfigMap: a Kubernetes object names both, as text",
        ),
        ("v1", 7, "apiVersion v1 and kind 7: a Kubernetes object names both, as text"),
    ],
)
def test_refusals_name_the_document_and_the_closest_kinds(
    api_version: object, kind: object, message: str
) -> None:
    with pytest.raises(SourceError) as raised:
        is_runway_kind(doc(api_version, kind))

    assert str(raised.value) == f"a.yaml (document 1): {message}"
