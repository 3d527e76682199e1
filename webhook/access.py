"""Whether the user who creates or changes an ExternalModelProvider may read the Secret it names
(issue #40, item 2): a SubjectAccessReview for `get` on that Secret, asked as that user
(request.userInfo: username, uid, groups, extra) of the API server the webhook is connected to.

Without this check, admission was a confused deputy's first half: a tenant who may create
ExternalModelProviders but not read Secrets could name any Secret in its namespace and a base URL
of its own, and the gateway sync (which may read Secrets) would send the value there. The sync's
own guard is the consent label on the Secret (gateway/apikeys.py); this is the second, per user.

The webhook runs without an API server when its provider configs come from directories (a static
source): then there is no one to ask, no review is made, and the consent label is the only guard
(docs/security.md). A review that cannot be made (the API server unreachable or refusing the
webhook's own request) denies the admission: fail closed, with a message to retry.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

import kubernetes
import urllib3

from core.fields.errors import FieldError, Reason, shown
from core.model.kinds import dig
from kubeio.client import api_failure, unreached
from kubeio.users import User

SECRET_PATH = "spec.credentialsSecretRef.name"
REVIEW_TIMEOUT = 5.0  # seconds for one SubjectAccessReview (the webhook's own timeout is 10)


class Verdict(StrEnum):
    ALLOWED = "allowed"
    DENIED = "denied"
    UNKNOWN = "unknown"  # the review could not be made


@dataclass(frozen=True, slots=True)
class Review:
    verdict: Verdict
    reason: str = ""  # the authorizer's reason, or why no review could be made


class SecretAccess(Protocol):
    def may_get(self, user: User, namespace: str, name: str) -> Review: ...


@dataclass
class ClusterAccess:
    """SubjectAccessReviews through the API server (the webhook's ServiceAccount may create
    them; kustomize/base/rbac.yaml). The client is made at the first review."""

    connect: Callable[[], kubernetes.client.ApiClient]
    timeout: float = REVIEW_TIMEOUT
    _api: kubernetes.client.ApiClient | None = field(default=None, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def _client(self) -> kubernetes.client.AuthorizationV1Api:
        with self._lock:
            if self._api is None:
                self._api = self.connect()
            return kubernetes.client.AuthorizationV1Api(self._api)

    def may_get(self, user: User, namespace: str, name: str) -> Review:
        body = kubernetes.client.V1SubjectAccessReview(
            spec=kubernetes.client.V1SubjectAccessReviewSpec(
                user=user.username,
                uid=user.uid or None,
                groups=list(user.groups) or None,
                extra={k: list(v) for k, v in user.extra} or None,
                resource_attributes=kubernetes.client.V1ResourceAttributes(
                    namespace=namespace, verb="get", group="", resource="secrets", name=name
                ),
            )
        )
        try:
            answer = self._client().create_subject_access_review(
                body, _request_timeout=self.timeout
            )
        except (
            kubernetes.client.ApiException,
            urllib3.exceptions.HTTPError,
            OSError,
            kubernetes.config.ConfigException,
        ) as err:
            return Review(Verdict.UNKNOWN, api_failure(err) or unreached(err))
        status = answer.status
        allowed = bool(status and status.allowed and not status.denied)
        reason = (status.reason or "") if status else ""
        return Review(Verdict.ALLOWED if allowed else Verdict.DENIED, reason)


def secret_access_errors(
    obj: Mapping[str, Any], user_info: Any, access: SecretAccess
) -> list[FieldError]:
    """A Forbidden error at spec.credentialsSecretRef.name unless the requesting user may get the
    Secret the provider names (in the provider's namespace); none when it names none."""
    name = dig(obj, "spec", "credentialsSecretRef", "name")
    namespace = dig(obj, "metadata", "namespace")
    if not isinstance(name, str) or not name or not isinstance(namespace, str) or not namespace:
        return []
    user = User.of(user_info)
    review = access.may_get(user, namespace, name)
    where = f"Secret {namespace}/{shown(name)}"
    if review.verdict == Verdict.ALLOWED:
        return []
    if review.verdict == Verdict.UNKNOWN:
        detail = f"could not check that the requesting user may get {where}: {review.reason}; retry"
        return [FieldError(SECRET_PATH, Reason.FORBIDDEN, detail)]
    return [
        FieldError(
            SECRET_PATH,
            Reason.FORBIDDEN,
            f'user "{shown(user.username)}" may not get {where}; a provider can only use a '
            "Secret its creator may read",
        )
    ]
