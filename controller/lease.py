"""Leader election with a coordination.k8s.io/v1 Lease, as client-go's leaderelection does: the
holder renews the Lease every `renew` seconds; another candidate takes it over only once the
holder has not renewed for `duration` seconds. Every write carries the resourceVersion it read,
so two candidates racing for an expired Lease cannot both win."""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass

import kubernetes

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LeaseSettings:
    namespace: str
    name: str = "runway-status-controller"
    identity: str = ""
    duration: float = 15.0  # seconds a holder's claim lasts without renewal
    renew: float = 5.0  # seconds between a holder's renewals and a candidate's tries


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class LeaderElector:
    """One candidate. `try_acquire_or_renew` is called every `renew` seconds; it answers whether
    this candidate holds the Lease now."""

    def __init__(self, api: kubernetes.client.ApiClient, settings: LeaseSettings) -> None:
        self._api = kubernetes.client.CoordinationV1Api(api)
        self._settings = settings
        self.leading = False

    def try_acquire_or_renew(self) -> bool:
        s = self._settings
        now = _now()
        try:
            lease = self._api.read_namespaced_lease(s.name, s.namespace)
        except kubernetes.client.ApiException as err:
            if err.status != 404:
                return self._lost(f"reading the Lease failed: {err.status}")
            body = kubernetes.client.V1Lease(
                metadata=kubernetes.client.V1ObjectMeta(name=s.name, namespace=s.namespace),
                spec=self._spec(now, transitions=0, acquired=now),
            )
            try:
                self._api.create_namespaced_lease(s.namespace, body)
            except kubernetes.client.ApiException as created:
                return self._lost(f"another candidate created the Lease first ({created.status})")
            return self._won()
        spec = lease.spec or kubernetes.client.V1LeaseSpec()
        holder = spec.holder_identity or ""
        renewed = spec.renew_time or spec.acquire_time
        duration = spec.lease_duration_seconds or int(s.duration)
        expired = renewed is None or (now - renewed).total_seconds() > duration
        if holder and holder != s.identity and not expired:  # "" : released
            return self._lost(f"held by {holder}")
        transitions = (spec.lease_transitions or 0) + (0 if holder == s.identity else 1)
        acquired = spec.acquire_time if holder == s.identity and spec.acquire_time else now
        lease.spec = self._spec(now, transitions=transitions, acquired=acquired)
        try:  # the resourceVersion read above makes this a compare-and-swap
            self._api.replace_namespaced_lease(s.name, s.namespace, lease)
        except kubernetes.client.ApiException as err:
            return self._lost(f"the Lease changed under us ({err.status})")
        return self._won()

    def release(self) -> None:
        """Give the Lease up at shutdown (an empty holder), so a successor need not wait."""
        if not self.leading:
            return
        s = self._settings
        try:
            lease = self._api.read_namespaced_lease(s.name, s.namespace)
            if lease.spec is not None and lease.spec.holder_identity == s.identity:
                lease.spec.holder_identity = ""
                lease.spec.renew_time = None
                self._api.replace_namespaced_lease(s.name, s.namespace, lease)
        except kubernetes.client.ApiException as err:
            log.info("status-controller: releasing the Lease failed: %s", err.status)
        self.leading = False

    def _spec(
        self, now: dt.datetime, *, transitions: int, acquired: dt.datetime
    ) -> kubernetes.client.V1LeaseSpec:
        return kubernetes.client.V1LeaseSpec(
            holder_identity=self._settings.identity,
            lease_duration_seconds=int(self._settings.duration),
            acquire_time=acquired,
            renew_time=now,
            lease_transitions=transitions,
        )

    def _won(self) -> bool:
        if not self.leading:
            log.info("status-controller: %s leads", self._settings.identity)
        self.leading = True
        return True

    def _lost(self, why: str) -> bool:
        if self.leading:
            log.warning("status-controller: %s stopped leading: %s", self._settings.identity, why)
        self.leading = False
        return False
