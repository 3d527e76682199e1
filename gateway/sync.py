"""Reconcile the desired model list into LiteLLM through its management API.

One pass: read LiteLLM's entries (/model/info) -> delete the entries this sync created that are no
longer desired (including names that became ambiguous) -> create (/model/new) or update
(/model/update) the desired ones, keys read from their Secrets and sent by value -> confirm every
written entry in /model/info and its name in /v1/models. Only a confirmed entry is Ready: a 500
from /model/new is re-checked, never taken as the outcome (LiteLLM issue 38556).

Entries the sync owns carry a model_info.id starting with `runway:` AND
model_info.runway_managed_by; anything else (config.yaml models, entries made by hand or by
another tool) is never updated or deleted.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.fields.errors import shown
from core.model.kinds import EXTERNAL_MODEL_PROVIDER
from gateway.apikeys import SecretSource, SecretUnavailable
from gateway.litellm import LiteLLM, WriteFailed
from gateway.merge import (
    ID_PREFIX,
    Conflict,
    DesiredModel,
    Owner,
    Plan,
    Registration,
    model_id,
    settle,
)
from gateway.status import ModelResult, RegistrationOutcome
from kubeio.repeats import Repeats, at_most

log = logging.getLogger(__name__)

MANAGED_BY = "runway-gateway-sync"
CONFIRM_INTERVAL = 0.2
# The LiteLLM provider prefix per kind: external providers speak the OpenAI API and need their key;
# in-cluster engines are OpenAI-compatible servers without a key (hosted_vllm sends none).
PROVIDER_PREFIX = {EXTERNAL_MODEL_PROVIDER: "openai"}
IN_CLUSTER_PREFIX = "hosted_vllm"


def entry(model: DesiredModel, key: str | None) -> dict[str, Any]:
    """The /model/new body for one desired model (holds the key: never log or print it)."""
    prefix = PROVIDER_PREFIX.get(model.owner.kind, IN_CLUSTER_PREFIX)
    params: dict[str, Any] = {
        "model": f"{prefix}/{model.upstream_model}",
        "api_base": model.api_base,
    }
    if key is not None:
        params["api_key"] = key
    info: dict[str, Any] = {
        "id": model.id,
        "mode": model.mode,
        "runway_managed_by": MANAGED_BY,
        "runway_owner": str(model.owner),
    }
    if model.requested_by is not None:
        info["requested_by"] = model.requested_by
    return {"model_name": model.served_name, "litellm_params": params, "model_info": info}


def is_ours(listed: Mapping[str, Any]) -> bool:
    info = listed.get("model_info") or {}
    return str(info.get("id", "")).startswith(ID_PREFIX) and info.get("runway_managed_by") == (
        MANAGED_BY
    )


def registrations(listed: Sequence[Mapping[str, Any]], public: set[str]) -> list[Registration]:
    """What LiteLLM routes now: every entry of /model/info whose name /v1/models offers, with its
    runway owner (None for an entry runway did not create). An entry of ours whose recorded
    owner does not parse counts as foreign: it is never handed to a claimant by a guess."""
    found = []
    for entry in listed:
        name = entry.get("model_name")
        if not isinstance(name, str) or name not in public:
            continue
        info = entry.get("model_info") or {}
        owner = _recorded_owner(info.get("runway_owner")) if is_ours(entry) else None
        found.append(Registration(name, owner, str(info.get("id") or "")))
    return found


def _recorded_owner(value: Any) -> Owner | None:
    parts = value.split("/") if isinstance(value, str) else []
    return Owner(*parts) if len(parts) == 3 and all(parts) else None


@dataclass(frozen=True, slots=True)
class Routing:
    """Where an entry sends requests: what /model/update changes in place."""

    model_name: Any
    model: Any  # the LiteLLM provider prefix and the upstream model
    api_base: Any


@dataclass(frozen=True, slots=True)
class Recorded:
    """The model_info runway records: kept as created by /model/update (a change replaces the
    entry)."""

    mode: Any
    owner: Any
    requested_by: Any


@dataclass(frozen=True, slots=True)
class Visible:
    """What /model/info shows back of an entry (keys are stripped there)."""

    routing: Routing
    recorded: Recorded

    @classmethod
    def of(cls, body: Mapping[str, Any]) -> Visible:
        params = body.get("litellm_params") or {}
        info = body.get("model_info") or {}
        return cls(
            Routing(body.get("model_name"), params.get("model"), params.get("api_base")),
            Recorded(info.get("mode"), info.get("runway_owner"), info.get("requested_by")),
        )


@dataclass
class Syncer:
    """Holds the LiteLLM client, the Secret source, and (across passes of a loop) a keyed
    fingerprint of what was last sent per entry, so a rotated key is re-sent exactly once. A new
    process (--once) re-sends every key once, which is idempotent."""

    litellm: LiteLLM
    secrets: SecretSource
    confirm_timeout: float = 10.0
    clock: Callable[[], float] = time.monotonic
    sent: dict[str, str] = field(default_factory=dict)

    def reconcile(self, plan: Plan) -> list[ModelResult]:
        """One pass; the outcome of every desired model and every conflicting claim. The plan is
        first settled against what LiteLLM routes now (an established owner keeps its name)."""
        listed = self.litellm.model_info()
        plan = settle(plan, registrations(listed, self.litellm.public_models()))
        results = _conflict_results(plan)
        current = {str(e["model_info"]["id"]): e for e in listed if is_ours(e)}
        foreign = {str((e.get("model_info") or {}).get("id")) for e in listed if not is_ours(e)}
        del listed  # one answer at a time in memory (the confirmation reads /model/info again)
        bodies: dict[str, dict[str, Any]] = {}
        models = {m.id: m for m in plan.models}
        for model in plan.models:
            try:
                key = self.secrets.value(model.secret) if model.secret else None
            except SecretUnavailable as err:
                results.append(_result(model, RegistrationOutcome.SECRET_UNAVAILABLE, str(err)))
                continue
            if model.id in foreign:
                reason = f"LiteLLM already has an entry {model.id} that runway did not create"
                results.append(_result(model, RegistrationOutcome.REGISTRATION_FAILED, reason))
                continue
            bodies[model.id] = entry(model, key)
        gone = Repeats(log)
        for stale in sorted(set(current) - set(bodies)):
            self._delete(stale, gone)
        gone.flush()
        failures: dict[str, WriteFailed] = {}
        lines = Repeats(log)
        for mid in sorted(bodies):
            failure = self._write(bodies[mid], current.get(mid))
            if failure is not None:
                failures[mid] = failure
                lines.add(f"gateway-sync write failed: {failure} (re-checked in /model/info)", mid)
        lines.flush()
        confirmed = self._confirm(bodies, failures)
        for mid in sorted(bodies):
            results.append(_written_result(models[mid], mid in confirmed, failures.get(mid)))
        return sorted(results, key=lambda r: (r.owner, r.served_name))

    def _fingerprint(self, body: Mapping[str, Any]) -> str:
        canonical = json.dumps(body, sort_keys=True).encode()
        return hmac.new(self.litellm.master_key.encode(), canonical, hashlib.sha256).hexdigest()

    def _delete(self, mid: str, lines: Repeats) -> None:
        try:
            self.litellm.delete(mid)
        except WriteFailed as err:
            lines.add(f"gateway-sync delete failed: {err}", mid)
            return
        self.sent.pop(mid, None)
        log.info("gateway-sync deleted id=%s", mid)

    def _write(
        self, body: dict[str, Any], existing: Mapping[str, Any] | None
    ) -> WriteFailed | None:
        mid = str(body["model_info"]["id"])
        fingerprint = self._fingerprint(body)
        try:
            if existing is not None and Visible.of(existing).recorded != Visible.of(body).recorded:
                # model_info is kept as created by /model/update: replace the entry instead.
                self.litellm.delete(mid)
                existing = None
            if existing is None:
                self.litellm.new(body)
                action = "new"
            elif Visible.of(existing) != Visible.of(body) or self.sent.get(mid) != fingerprint:
                self.litellm.update(
                    {
                        "model_name": body["model_name"],
                        "litellm_params": body["litellm_params"],
                        "model_info": {"id": mid},
                    }
                )
                action = "update"
            else:
                return None
        except WriteFailed as err:
            return err
        self.sent[mid] = fingerprint
        log.info("gateway-sync %s id=%s served=%s", action, mid, body["model_name"])
        return None

    def _confirm(
        self, bodies: Mapping[str, Mapping[str, Any]], failures: Mapping[str, WriteFailed]
    ) -> set[str]:
        """The ids LiteLLM shows as written (in /model/info with the sent values, and the name in
        /v1/models), polling until all are or the confirm timeout passes."""
        deadline = self.clock() + self.confirm_timeout
        while True:
            listed = {  # only the entries written: the rest of the answer is dropped at once
                str(e["model_info"]["id"]): e
                for e in self.litellm.model_info()
                if is_ours(e) and str(e["model_info"]["id"]) in bodies
            }
            public = self.litellm.public_models()
            confirmed = {
                mid
                for mid, body in bodies.items()
                if mid in listed
                and Visible.of(listed[mid]) == Visible.of(body)
                and body["model_name"] in public
            }
            if confirmed == set(bodies) or self.clock() >= deadline:
                for mid in sorted(set(failures) & confirmed):
                    # A write that answered an error but took effect (LiteLLM issue 38556).
                    self.sent[mid] = self._fingerprint(bodies[mid])
                return confirmed
            time.sleep(CONFIRM_INTERVAL)


def _result(model: DesiredModel, outcome: RegistrationOutcome, message: str) -> ModelResult:
    return ModelResult(
        model.served_name,
        model.owner,
        model.id,
        outcome,
        f'servedName "{model.served_name}": {message}',
        requested_by=model.requested_by,
    )


def _written_result(
    model: DesiredModel, confirmed: bool, failure: WriteFailed | None
) -> ModelResult:
    if confirmed:
        return _result(model, RegistrationOutcome.REGISTERED, "registered and confirmed in LiteLLM")
    if failure is not None:
        why = f"{failure}, and the model is not in LiteLLM's /model/info"
        return _result(model, RegistrationOutcome.REGISTRATION_FAILED, why)
    return _result(
        model, RegistrationOutcome.NOT_CONFIRMED, "written, not yet confirmed in /model/info"
    )


def _conflict_message(conflict: Conflict, owner: Owner) -> str:
    others = at_most([str(o) for o in conflict.others(owner)])
    newcomers = at_most([str(o) for o in conflict.others(owner) if o != conflict.kept])
    also = f"; also claimed by {newcomers}" if newcomers else ""
    if conflict.holder is None:
        return (
            f'servedName "{conflict.served_name}" is also claimed by {others}; '
            "no claimant is registered"
        )
    return (
        f'servedName "{conflict.served_name}" is already registered in LiteLLM by '
        f"{conflict.holder}, which keeps it; this claim is refused{also}"
    )


def _conflict_results(plan: Plan) -> list[ModelResult]:
    """One result per conflicting claim; one log line per claimant, holder and rivals, naming
    MAX_NAMES of the names they contend for (a tenant's 1,000 names are one line, not 1,000)."""
    results = []
    served: dict[tuple[Owner, str, str], list[str]] = {}
    for conflict in plan.conflicts:
        for owner in sorted(set(conflict.claimants) - {conflict.kept}):
            message = _conflict_message(conflict, owner)
            rivals = at_most([str(o) for o in conflict.others(owner)], separator=",") or "none"
            key = (owner, conflict.holder or "none", rivals)
            served.setdefault(key, []).append(conflict.served_name)
            results.append(
                ModelResult(
                    conflict.served_name,
                    owner,
                    model_id(owner, conflict.served_name),
                    RegistrationOutcome.CONFLICT,
                    message,
                    conflict.claimants,
                )
            )
    for (owner, holder, rivals), names in served.items():
        log.warning(
            "gateway-sync conflict served=%s claimant=%s holder=%s others=%s%s",
            at_most([shown(n) for n in names], separator=","),
            owner,
            holder,
            rivals,
            f" ({len(names)} servedNames)" if len(names) > 1 else "",
        )
    return results
