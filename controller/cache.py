"""What the status controller holds of the cluster: the watched objects by (kind, namespace,
name), indexed by the ModelDeployment each belongs to, and what selection and rendering read of
each InferenceProviderConfig (so a status write alone rebuilds nothing).

An object is held compacted (`compact`): without its metadata.managedFields (nothing reads them;
client-go's informers drop them too, with TransformStripManagedFields), and with its keys and
short strings interned, so that the keys every object repeats ("metadata", "status", condition
types ...) and the values many repeat (namespaces, labels, "True") are held once, not once per
decoded object. The watch decodes each event on its own, so nothing is shared otherwise: a
ModelDeployment as decoded JSON holds about 11 KiB, compacted 5 (bench/RESULTS.md, issue 46)."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Mapping
from typing import Any

from controller.kinds import MODEL_DEPLOYMENTS, PROVIDER_CONFIGS, Kind
from core.rendering.common import LABEL_MODEL_DEPLOYMENT

SHORT = 64  # strings up to this length are interned (longer ones are rarely repeated)


def compact(value: Any) -> Any:
    """`value` (decoded JSON) with every key and every string of at most SHORT characters
    interned (sys.intern: CPython frees them when unused)."""
    if isinstance(value, dict):
        return {sys.intern(k): compact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [compact(v) for v in value]
    if isinstance(value, str) and len(value) <= SHORT:
        return sys.intern(value)
    return value


def held(obj: dict[str, Any]) -> dict[str, Any]:
    """What the cache holds of `obj`: compacted, without metadata.managedFields. An object
    nested too deeply to walk (a tenant's, say) is held as it came."""
    meta = obj.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        obj = {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}
    try:
        compacted: dict[str, Any] = compact(obj)
    except RecursionError:
        return obj
    return compacted


class Cache:
    """The watched objects by (kind, namespace, name), indexed by the ModelDeployment each
    belongs to (its airunway.ai/model-deployment label), and which kinds have listed once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._objects: dict[tuple[str, str, str], dict[str, Any]] = {}
        self._owners: dict[tuple[str, str], set[tuple[str, str, str]]] = {}
        self._synced: set[str] = set()
        self._counts: dict[str, int] = {}  # objects held per kind (read every /metrics scrape)

    @staticmethod
    def _key(kind: str, obj: Mapping[str, Any]) -> tuple[str, str, str]:
        meta = obj.get("metadata") or {}
        return (kind, str(meta.get("namespace") or ""), str(meta.get("name")))

    @staticmethod
    def _owner(key: tuple[str, str, str], obj: Mapping[str, Any]) -> tuple[str, str] | None:
        if key[0] in (MODEL_DEPLOYMENTS.kind, PROVIDER_CONFIGS.kind):
            return None
        label = ((obj.get("metadata") or {}).get("labels") or {}).get(LABEL_MODEL_DEPLOYMENT)
        return (key[1], str(label)) if label else None

    def _unset(self, key: tuple[str, str, str]) -> None:  # the lock is held
        old = self._objects.pop(key, None)
        if old is not None:
            self._counts[key[0]] -= 1
        owner = self._owner(key, old) if old is not None else None
        if owner is not None:
            keys = self._owners.get(owner)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._owners[owner]

    def _set(self, key: tuple[str, str, str], obj: dict[str, Any]) -> None:  # the lock is held
        """Hold `obj` (already `held`) at `key`."""
        self._unset(key)
        self._objects[key] = obj
        self._counts[key[0]] = self._counts.get(key[0], 0) + 1
        owner = self._owner(key, obj)
        if owner is not None:
            self._owners.setdefault(owner, set()).add(key)

    def put(self, kind: str, obj: dict[str, Any]) -> None:
        kept = held(obj)  # outside the lock: the watches and workers go on meanwhile
        with self._lock:
            self._set(self._key(kind, kept), kept)

    def drop(self, kind: str, namespace: str, name: str) -> None:
        with self._lock:
            self._unset((kind, namespace, name))

    def replace(self, kind: str, objects: list[dict[str, Any]]) -> None:
        kept = [held(obj) for obj in objects]
        with self._lock:
            for key in [k for k in self._objects if k[0] == kind]:
                self._unset(key)
            for obj in kept:
                self._set(self._key(kind, obj), obj)
            self._synced.add(kind)

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        with self._lock:
            return self._objects.get((kind, namespace, name))

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        with self._lock:
            return [o for (k, _, _), o in self._objects.items() if k == kind]

    def keys(self) -> list[tuple[str, str, str]]:
        """Every held object's (kind, namespace, name), sorted."""
        with self._lock:
            return sorted(self._objects)

    def counts(self) -> dict[str, int]:
        """How many objects of each kind are held."""
        with self._lock:
            return {kind: n for kind, n in self._counts.items() if n}

    def owned_by(self, namespace: str, md: str) -> dict[str, dict[str, Any]]:
        """`Kind/name` -> object for the upstream objects of ModelDeployment `namespace/md`."""
        with self._lock:
            keys = sorted(self._owners.get((namespace, md), ()))
            return {f"{k}/{n}": self._objects[(k, ns, n)] for k, ns, n in keys}

    def synced(self, kinds: tuple[Kind, ...]) -> bool:
        with self._lock:
            return all(k.kind in self._synced for k in kinds)


class ConfigMarks:
    """Each InferenceProviderConfig's generation and annotations (what selection and rendering
    read), and how many times one of them changed: the provider registry is rebuilt when that
    count moves, not on a status write (the health pass's heartbeat)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._marks: dict[str, tuple[Any, str]] = {}
        self._changes = 0

    def note(self, obj: Mapping[str, Any]) -> bool:
        """Record `obj`'s mark; whether it differs from the one recorded before."""
        meta = obj.get("metadata") or {}
        mark = (meta.get("generation"), json.dumps(meta.get("annotations") or {}, sort_keys=True))
        name = str(meta.get("name"))
        with self._lock:
            if self._marks.get(name) == mark:
                return False
            self._marks[name] = mark
            self._changes += 1
            return True

    @property
    def changes(self) -> int:
        with self._lock:
            return self._changes
