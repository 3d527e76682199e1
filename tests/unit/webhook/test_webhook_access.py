"""The access review of ExternalModelProvider admission (issue #40, item 2), without a cluster:
which webhook makes reviews, what a review's answer becomes, and that no userInfo shape raises.
The review against the real API server is tests/e2e/test_secret_consent.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from core.fields.errors import FieldError, Reason
from kubeio.users import User
from tests.support.builders import external_model_provider
from webhook.access import ClusterAccess, Review, Verdict, secret_access_errors
from webhook.app import access_for
from webhook.settings import Settings

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)


@dataclass
class Answers:
    """An authorizer that answers every review with `review` and records what it was asked."""

    review: Review
    asked: list[tuple[User, str, str]] = field(default_factory=list)

    def may_get(self, user: User, namespace: str, name: str) -> Review:
        self.asked.append((user, namespace, name))
        return self.review


def test_only_a_webhook_connected_to_a_cluster_reviews_access() -> None:
    assert access_for(Settings(providers=("providers",))) is None
    assert access_for(Settings()) is None
    assert isinstance(access_for(Settings(kubeconfig="kubeconfig")), ClusterAccess)
    assert isinstance(access_for(Settings(in_cluster=True)), ClusterAccess)


def test_each_verdict_and_what_was_asked() -> None:
    emp = external_model_provider("p", "aaa", credentialsSecretRef={"name": "db", "key": "k"})
    info = {
        "username": "tenant-a",
        "uid": "u-1",
        "groups": ["system:authenticated", 7],
        "extra": {"scopes": ["a", None], "bad": "x"},
    }
    user = User("tenant-a", "u-1", ("system:authenticated",), (("scopes", ("a",)),))
    outcomes = []
    for review in (
        Review(Verdict.ALLOWED),
        Review(Verdict.DENIED, "no RBAC rule"),
        Review(Verdict.UNKNOWN, "the API server answered 503 Service Unavailable"),
    ):
        answers = Answers(review)
        outcomes.append((secret_access_errors(emp, info, answers), answers.asked))

    assert outcomes == [
        ([], [(user, "aaa", "db")]),
        (
            [
                FieldError(
                    "spec.credentialsSecretRef.name",
                    Reason.FORBIDDEN,
                    'user "tenant-a" may not get Secret aaa/db; a provider can only use a '
                    "Secret its creator may read",
                )
            ],
            [(user, "aaa", "db")],
        ),
        (
            [
                FieldError(
                    "spec.credentialsSecretRef.name",
                    Reason.FORBIDDEN,
                    "could not check that the requesting user may get Secret aaa/db: the API "
                    "server answered 503 Service Unavailable; retry",
                )
            ],
            [(user, "aaa", "db")],
        ),
    ]


def test_a_provider_without_a_secret_asks_nothing() -> None:
    answers = Answers(Review(Verdict.DENIED))
    emp = external_model_provider("p", "aaa", credentialsSecretRef=None)

    assert (secret_access_errors(emp, {"username": "x"}, answers), answers.asked) == ([], [])


@settings(max_examples=300, deadline=None)
@given(JSON)
def test_no_user_info_shape_raises(info: Any) -> None:
    user = User.of(info)

    assert isinstance(user.username, str) and isinstance(user.uid, str)
    assert all(isinstance(g, str) for g in user.groups)
    assert all(isinstance(k, str) and all(isinstance(v, str) for v in vs) for k, vs in user.extra)
