"""What LiteLLM holds, as the gateway sync last learned it: the entries runway created (by id),
every other entry, and the names /v1/models offers, with the time of the listing they came from.

A pass starts from a View: a new listing of LiteLLM, or (within the sync's `relist` seconds) the
previous pass's View with that pass's confirmed writes and deletes applied, so that a pass after
one change writes and confirms that one model and lists nothing (issue #46). The sync drops its
View whenever a pass ends with anything failed or unconfirmed: the next pass lists again.

Entries the sync owns carry a model_info.id starting with `runway:` AND
model_info.runway_managed_by; anything else (config.yaml models, entries made by hand or by
another tool) is foreign: never updated or deleted, and it keeps its name.

Pure: no I/O. Entries are the reduced ones of gateway.litellm (no key is ever in them).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gateway.merge import ID_PREFIX, Owner, Registration

MANAGED_BY = "runway-gateway-sync"
# What a View keeps of an entry written by the sync (the reduced fields; never litellm_params'
# api_key).
KEPT_PARAMS = ("model", "api_base")


def is_ours(listed: Mapping[str, Any]) -> bool:
    info = listed.get("model_info") or {}
    return str(info.get("id", "")).startswith(ID_PREFIX) and info.get("runway_managed_by") == (
        MANAGED_BY
    )


def registrations(listed: Iterable[Mapping[str, Any]], public: set[str]) -> list[Registration]:
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


@dataclass(frozen=True, slots=True)
class View:
    """Kept small, since it outlives a pass: our entries reduced, of every other entry only its
    id and (when /v1/models offers its name) its registration, and of /v1/models only the names
    an entry holds."""

    ours: Mapping[str, Mapping[str, Any]]  # by model_info.id
    foreign: tuple[Registration, ...]  # the entries runway did not create, under public names
    foreign_ids: frozenset[str]
    public: frozenset[str]
    listed_at: float  # the clock's time of the listing the View started from

    @classmethod
    def listed(cls, entries: Sequence[Mapping[str, Any]], public: set[str], at: float) -> View:
        """The View of one listing: /model/info's (reduced) entries and /v1/models' names."""
        ours = {str(e["model_info"]["id"]): e for e in entries if is_ours(e)}
        others = [e for e in entries if not is_ours(e)]
        held = {e.get("model_name") for e in entries}
        return cls(
            ours,
            tuple(registrations(others, public)),
            frozenset(str((e.get("model_info") or {}).get("id")) for e in others),
            frozenset(n for n in public if n in held),
            at,
        )

    def registrations(self) -> list[Registration]:
        return [*self.foreign, *registrations(self.ours.values(), set(self.public))]

    def after(self, deleted: Iterable[str], written: Iterable[Mapping[str, Any]]) -> View:
        """This View with the ids `deleted` gone and the confirmed `written` bodies held (their
        names public); a name no entry holds any more is no longer public."""
        ours = dict(self.ours)
        gone = {ours.pop(mid)["model_name"] for mid in deleted if mid in ours}
        added = set()
        for body in written:
            ours[str(body["model_info"]["id"])] = kept(body)
            added.add(body["model_name"])
        held = {r.served_name for r in self.foreign} | {e["model_name"] for e in ours.values()}
        public = (self.public - (gone - held)) | added
        return View(ours, self.foreign, self.foreign_ids, frozenset(public), self.listed_at)


def kept(body: Mapping[str, Any]) -> dict[str, Any]:
    """What a View keeps of a body the sync wrote: its reduced fields, never its key."""
    params = body.get("litellm_params") or {}
    return {
        "model_name": body["model_name"],
        "litellm_params": {k: params[k] for k in KEPT_PARAMS if k in params},
        "model_info": dict(body.get("model_info") or {}),
    }
