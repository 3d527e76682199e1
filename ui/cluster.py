"""The portal's cluster side in live mode: who the signed-in user is (a TokenReview of the bearer
token the OIDC proxy forwards), clients that act AS that user (their token, never the portal's
rights), and whether the user may do something (a SelfSubjectAccessReview made with their token).

The portal's own rights (kustomize/ui) are used for the TokenReview and for cluster facts that
are not a tenant's (the CRDs present, the nodes' allocatable GPUs, the providers' operator pods);
every tenant object (ModelDeployments, their upstream objects, events, ExternalModelProviders) is
read and written with the user's own client, so a user sees and changes only what RBAC lets them.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import kubernetes

from kubeio.client import CALL_FAILURES, api_failure
from kubeio.users import User

TIMEOUT = 5.0  # seconds for any one API call a page makes
MAX_TOKEN = 16_384  # bytes of a forwarded bearer token; a longer one is not looked at
REVIEW_SECONDS = 60.0  # how long one TokenReview's answer is reused for the same token
REVIEW_ENTRIES = 1_024  # tokens remembered at most (the oldest is forgotten first)
TOKEN_HEADER = "X-Forwarded-Access-Token"


@dataclass(frozen=True, slots=True)
class Permission:
    allowed: bool
    reason: str = ""  # the authorizer's reason, or why no review could be made


class Headers(Protocol):
    def get(self, key: str) -> str | None: ...


def bearer_token(headers: Headers) -> str | None:
    """The token the proxy forwarded: `Authorization: Bearer` first (oauth2-proxy puts the
    OIDC ID token there, what the API server's OIDC authenticator accepts), else
    X-Forwarded-Access-Token (the provider's access token, which some API servers accept)."""
    scheme, _, value = (headers.get("Authorization") or "").partition(" ")
    token = value.strip() if scheme.lower() == "bearer" else ""
    token = token or headers.get(TOKEN_HEADER) or ""
    if not token or len(token) > MAX_TOKEN or not token.isascii() or not token.isprintable():
        return None
    return token


@dataclass
class Cluster:
    """The API server the portal is connected to. `connect` makes the portal's own client."""

    connect: Callable[[], kubernetes.client.ApiClient]
    clock: Callable[[], float] = time.monotonic
    _own: kubernetes.client.ApiClient | None = field(default=None, init=False)
    _reviews: OrderedDict[str, tuple[float, User | None]] = field(
        default_factory=OrderedDict, init=False
    )
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def own(self) -> kubernetes.client.ApiClient:
        with self._lock:
            if self._own is None:
                self._own = self.connect()
            return self._own

    def as_user(self, viewer: User) -> kubernetes.client.ApiClient:
        """A client to the same API server that authenticates with the user's token only (the
        portal's client certificate, token or exec plugin is not carried over)."""
        own = self.own().configuration
        config = kubernetes.client.Configuration()
        config.host = own.host
        config.ssl_ca_cert = own.ssl_ca_cert
        config.verify_ssl = own.verify_ssl
        config.tls_server_name = getattr(own, "tls_server_name", None)
        config.api_key = {"authorization": f"Bearer {viewer.token}"}
        return kubernetes.client.ApiClient(config)

    def viewer(self, token: str) -> User | None:
        """The user `token` belongs to (a TokenReview), None when the API server says it is not
        valid. A review that cannot be made raises (the page says the cluster is unreachable)."""
        key = hashlib.sha256(token.encode()).hexdigest()
        now = self.clock()
        with self._lock:
            hit = self._reviews.get(key)
            if hit is not None and now - hit[0] < REVIEW_SECONDS:
                return hit[1]
        found = self._review(token)
        with self._lock:
            self._reviews[key] = (now, found)
            self._reviews.move_to_end(key)
            while len(self._reviews) > REVIEW_ENTRIES:
                self._reviews.popitem(last=False)
        return found

    def _review(self, token: str) -> User | None:
        api = kubernetes.client.AuthenticationV1Api(self.own())
        body = kubernetes.client.V1TokenReview(
            spec=kubernetes.client.V1TokenReviewSpec(token=token)
        )
        status = api.create_token_review(body, _request_timeout=TIMEOUT).status
        if status is None or not status.authenticated or status.user is None:
            return None
        user = status.user
        return User(
            username=user.username or "",
            uid=user.uid or "",
            groups=tuple(user.groups or ()),
            extra=tuple(sorted((k, tuple(v or ())) for k, v in (user.extra or {}).items())),
            token=token,
        )

    def may(
        self,
        viewer: User,
        verb: str,
        resource: str,
        *,
        group: str = "",
        namespace: str = "",
        name: str = "",
    ) -> Permission:
        """Whether the user may `verb` the resource: a SelfSubjectAccessReview made with their
        own token, so the answer is the API server's for exactly that user."""
        api = kubernetes.client.AuthorizationV1Api(self.as_user(viewer))
        body = kubernetes.client.V1SelfSubjectAccessReview(
            spec=kubernetes.client.V1SelfSubjectAccessReviewSpec(
                resource_attributes=kubernetes.client.V1ResourceAttributes(
                    verb=verb,
                    group=group,
                    resource=resource,
                    namespace=namespace or None,
                    name=name or None,
                )
            )
        )
        try:
            status = api.create_self_subject_access_review(body, _request_timeout=TIMEOUT).status
        except CALL_FAILURES as err:
            return Permission(False, api_failure(err) or type(err).__name__)
        allowed = bool(status and status.allowed and not status.denied)
        return Permission(allowed, (status.reason or "") if status else "")
