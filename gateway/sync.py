"""Reconcile the desired model list into LiteLLM through its management API.

One pass: what LiteLLM holds (gateway.view: a listing of /model/info and /v1/models, or within
`relist` seconds the previous pass's View) -> delete the entries this sync created that are no
longer desired (including names that became ambiguous) -> create (/model/new) or update
(/model/update) the desired ones that differ, keys read from their Secrets and sent by value ->
confirm every written entry. Only a confirmed entry is Ready: a 500 from /model/new is
re-checked, never taken as the outcome (LiteLLM issue 38556).

Scale (issue #46): LiteLLM 1.108.7 registers one model per request (POST /model/new takes one
Deployment, litellm/proxy/management_endpoints/model_management_endpoints.py:2500-2508; no route
of the proxy takes several, and /config/update neither applies a model_list nor runs without
its database, proxy_server.py:18859-18915), so deletes and writes go out WRITERS at a time over
the client's kept-alive connections. Confirmation is one listing per round when more than
LOOKUPS entries wait, else one GET /model/info?litellm_model_id=ID per waiting entry (the
router's lookup by id, proxy_server.py:17063-17074): an entry LiteLLM's router holds is routed
under its model_name, which /v1/models lists (llm_router.get_model_names()). Entries that were
not written and that the View shows as sent need no request at all.

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
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from core.fields.errors import shown
from core.model.kinds import EXTERNAL_MODEL_PROVIDER
from gateway.apikeys import SecretSource, SecretUnavailable
from gateway.litellm import LiteLLM, NoLookup, WriteFailed
from gateway.merge import Conflict, DesiredModel, Owner, Plan, model_id, settle
from gateway.status import ModelResult, RegistrationOutcome
from gateway.view import MANAGED_BY, View, Visible, is_ours
from kubeio.repeats import Repeats, at_most

__all__ = ["MANAGED_BY", "Syncer", "entry"]

log = logging.getLogger(__name__)

CONFIRM_INTERVAL = 0.2
WRITERS = 4  # requests to LiteLLM at once (a pool of kept-alive connections)
LOOKUPS = 16  # entries confirmed one by one; more are confirmed with one listing per round
T = TypeVar("T")
R = TypeVar("R")
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


@dataclass(frozen=True, slots=True)
class Written:
    """What writing one entry did: the action taken ("new", "update"), or the failure."""

    action: str | None = None
    failure: WriteFailed | None = None


@dataclass
class Syncer:
    """Holds the LiteLLM client, the Secret source, and across passes of a loop: a keyed
    fingerprint of what was last sent per entry, so a rotated key is re-sent exactly once (a new
    process, --once, re-sends every key once, which is idempotent), and the View the last pass
    ended with, trusted for `relist` seconds after its listing (0: every pass lists)."""

    litellm: LiteLLM
    secrets: SecretSource
    confirm_timeout: float = 10.0
    clock: Callable[[], float] = time.monotonic
    sent: dict[str, str] = field(default_factory=dict)
    relist: float = 0.0
    view: View | None = None

    def reconcile(self, plan: Plan) -> list[ModelResult]:
        """One pass; the outcome of every desired model and every conflicting claim. The plan is
        first settled against what LiteLLM routes now (an established owner keeps its name)."""
        view, self.view = self._start(), None  # no View survives a pass that raises
        plan = settle(plan, view.registrations())
        results = _conflict_results(plan)
        bodies = self._bodies(plan, view, results)
        models = {m.id: m for m in plan.models}
        stale = sorted(set(view.ours) - set(bodies))
        dropped = _fanout(self._delete, stale)
        gone = Repeats(log)
        for mid, failure in zip(stale, dropped, strict=True):
            if failure is None:
                self.sent.pop(mid, None)
                log.info("gateway-sync deleted id=%s", mid)
            else:
                gone.add(f"gateway-sync delete failed: {failure}", mid)
        gone.flush()
        order = sorted(bodies)
        actions = {m: a for m in order if (a := self._action(bodies[m], view)) is not None}
        todo = sorted(actions)
        sent = _fanout(lambda m: self._write(bodies[m], actions[m]), todo)
        written = dict(zip(todo, sent, strict=True))
        failures = self._logged(written, bodies)
        # Not written: LiteLLM holds it as sent (_action); it waits only if its name is not public.
        waiting = set(written) | {m for m in order if bodies[m]["model_name"] not in view.public}
        confirmed = (set(bodies) - waiting) | self._confirm(
            {m: bodies[m] for m in waiting}, failures
        )
        for mid in order:
            results.append(_written_result(models[mid], mid in confirmed, failures.get(mid)))
        if confirmed == set(bodies) and not failures and not any(dropped):
            self.view = view.after(stale, [bodies[m] for m in sorted(waiting)])
        return sorted(results, key=lambda r: (r.owner, r.served_name))

    def _start(self) -> View:
        """The View the last pass ended with while it is fresh, else a new listing."""
        now = self.clock()
        if self.view is not None and now - self.view.listed_at < self.relist:
            return self.view
        listed = self.litellm.model_info()
        return View.listed(listed, self.litellm.public_models(), now)

    def _bodies(
        self, plan: Plan, view: View, results: list[ModelResult]
    ) -> dict[str, dict[str, Any]]:
        """The /model/new body of every desired model that can be written; a result for each
        that cannot (its Secret unreadable, or its id held by an entry runway did not create)."""
        foreign = view.foreign_ids
        bodies: dict[str, dict[str, Any]] = {}
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
        return bodies

    def _logged(
        self, written: Mapping[str, Written], bodies: Mapping[str, Mapping[str, Any]]
    ) -> dict[str, WriteFailed]:
        """One line per write done (in id order), the failed ones grouped; the fingerprints of
        what was sent remembered; the failures by id."""
        failures: dict[str, WriteFailed] = {}
        lines = Repeats(log)
        for mid, done in written.items():
            if done.failure is not None:
                failures[mid] = done.failure
                lines.add(
                    f"gateway-sync write failed: {done.failure} (re-checked in /model/info)", mid
                )
            elif done.action is not None:
                self.sent[mid] = self._fingerprint(bodies[mid])
                log.info(
                    "gateway-sync %s id=%s served=%s", done.action, mid, bodies[mid]["model_name"]
                )
        lines.flush()
        return failures

    def _fingerprint(self, body: Mapping[str, Any]) -> str:
        """A keyed digest of what /model/info does not show back of an entry: its key (every
        other field of a body is in Visible, compared as such)."""
        key = json.dumps([body["model_info"]["id"], body["litellm_params"].get("api_key")])
        return hmac.new(self.litellm.master_key.encode(), key.encode(), hashlib.sha256).hexdigest()

    def _delete(self, mid: str) -> WriteFailed | None:
        try:
            self.litellm.delete(mid)
        except WriteFailed as err:
            return err
        return None

    def _action(self, body: Mapping[str, Any], view: View) -> str | None:
        """What writing `body` takes, LiteLLM as `view` shows it: "new", "replace" (delete and
        new: model_info is kept as created by /model/update), "update", or None (nothing)."""
        mid = str(body["model_info"]["id"])
        existing = view.ours.get(mid)
        if existing is None:
            return "new"
        held, wanted = Visible.of(existing), Visible.of(body)
        if held.recorded != wanted.recorded:
            return "replace"
        if held != wanted or self.sent.get(mid) != self._fingerprint(body):
            return "update"
        return None

    def _write(self, body: Mapping[str, Any], action: str) -> Written:
        """One entry written as `action` says (runs in a writer thread: it changes nothing of
        the Syncer's)."""
        mid = str(body["model_info"]["id"])
        try:
            if action == "replace":
                self.litellm.delete(mid)
            if action in ("new", "replace"):
                self.litellm.new(body)
                return Written("new")
            self.litellm.update(
                {
                    "model_name": body["model_name"],
                    "litellm_params": body["litellm_params"],
                    "model_info": {"id": mid},
                }
            )
        except WriteFailed as err:
            return Written(failure=err)
        return Written("update")

    def _confirm(
        self, bodies: Mapping[str, Mapping[str, Any]], failures: Mapping[str, WriteFailed]
    ) -> set[str]:
        """The ids of `bodies` LiteLLM shows as written, polling until all are or the confirm
        timeout passes."""
        deadline = self.clock() + self.confirm_timeout
        confirmed: set[str] = set()
        while bodies:
            confirmed |= self._shown({m: b for m, b in bodies.items() if m not in confirmed})
            if confirmed == set(bodies) or self.clock() >= deadline:
                break
            time.sleep(CONFIRM_INTERVAL)
        for mid in sorted(set(failures) & confirmed):
            # A write that answered an error but took effect (LiteLLM issue 38556).
            self.sent[mid] = self._fingerprint(bodies[mid])
        return confirmed

    def _shown(self, bodies: Mapping[str, Mapping[str, Any]]) -> set[str]:
        """The ids of `bodies` LiteLLM shows with the sent values: one lookup each when they are
        few (and LiteLLM has the lookup), else in /model/info with the name in /v1/models (one
        listing)."""
        if len(bodies) <= LOOKUPS:
            try:
                found = {mid: self.litellm.deployment(mid) for mid in bodies}
            except NoLookup:
                found = None  # no lookup by id in front of this LiteLLM: the listing tells
            if found is not None:
                return {
                    mid
                    for mid, body in bodies.items()
                    if (held := found[mid]) is not None
                    and is_ours(held)
                    and Visible.of(held) == Visible.of(body)
                }
        listed = {  # only the entries waiting: the rest of the answer is dropped at once
            str(e["model_info"]["id"]): e
            for e in self.litellm.model_info()
            if is_ours(e) and str(e["model_info"]["id"]) in bodies
        }
        public = self.litellm.public_models()
        return {
            mid
            for mid, body in bodies.items()
            if mid in listed
            and Visible.of(listed[mid]) == Visible.of(body)
            and body["model_name"] in public
        }


def _fanout(work: Callable[[T], R], items: Iterable[T]) -> list[R]:
    """`work` of each item, in the items' order, WRITERS at a time (inline for one item); the
    first exception raised ends it."""
    todo = list(items)
    if len(todo) <= 1:
        return [work(item) for item in todo]
    with ThreadPoolExecutor(max_workers=min(WRITERS, len(todo))) as pool:
        futures = [pool.submit(work, item) for item in todo]
        try:
            return [future.result() for future in futures]
        except BaseException:
            # LiteLLM unavailable: the requests not yet sent are not sent (each would wait out
            # its timeout), as the first failure ended a pass when writes went one at a time.
            pool.shutdown(cancel_futures=True)
            raise


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
