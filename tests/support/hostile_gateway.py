"""Generators of hostile input for the gateway and credential classes of issue #18, shared by
their unit tests and `make fuzz` (tests/fuzzing/gateway.py): LiteLLM answers of any shape,
credentials in the documented shapes, and every string position of a ModelDeployment."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from gateway.merge import DesiredModel, Owner
from gateway.sync import MANAGED_BY
from tests.support.builders import model_deployment

MODEL = DesiredModel("m", Owner("ExternalModelProvider", "gw", "p"), "https://api.example.com", "m")
OURS = {"id": MODEL.id, "runway_managed_by": MANAGED_BY, "runway_owner": str(MODEL.owner)}
DEEP = b"[" * 200_000 + b"]" * 200_000

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=20,
)
ENTRY = st.fixed_dictionaries(
    {},
    optional={
        "model_name": st.one_of(st.just("m"), JSON),
        "litellm_params": st.one_of(JSON, st.fixed_dictionaries({"model": JSON, "api_base": JSON})),
        "model_info": st.one_of(
            JSON, st.just(OURS), st.builds(lambda v: {**OURS, "mode": v}, JSON)
        ),
    },
)
LITELLM_INFO = st.one_of(
    JSON.map(lambda v: json.dumps(v).encode()),
    st.lists(st.one_of(ENTRY, JSON), max_size=5).map(lambda d: json.dumps({"data": d}).encode()),
    st.sampled_from(
        [DEEP, b"", b"{", b"\xff\xfe", b'{"data": [' + b"[" * 5000 + b"]" * 5000 + b"]}"]
    ),
)
LITELLM_MODELS = st.one_of(
    LITELLM_INFO,
    st.lists(st.one_of(JSON, st.just({"id": "m"})), max_size=4).map(
        lambda d: json.dumps({"data": d}).encode()
    ),
)


ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
B64 = ALNUM + "/+"
# Shapes only, generated from the documented forms; none is a real credential.
CREDENTIALS = st.one_of(
    st.text(alphabet=ALNUM, min_size=34, max_size=40).map(lambda t: "hf_" + t),
    st.text(alphabet=ALNUM, min_size=24, max_size=40).map(lambda t: "sk-proj-1" + t),
    st.text(alphabet=ALNUM, min_size=36, max_size=36).map(lambda t: "ghp_" + t),
    st.text(alphabet=ALNUM, min_size=20, max_size=24).map(lambda t: "glpat-" + t),
    st.text(alphabet=ALNUM.upper()[:36], min_size=16, max_size=16).map(lambda t: "AKIA" + t),
    st.text(alphabet=ALNUM, min_size=8, max_size=16).map(lambda t: f"redis://:{t}@cache:6379"),
    st.text(alphabet=ALNUM, min_size=8, max_size=16).map(lambda t: f"https://u:{t}@git.example"),
    st.text(alphabet=B64, min_size=40, max_size=40).map(lambda t: f"aws_secret_access_key={t}"),
    st.text(alphabet=ALNUM, min_size=12, max_size=30).map(
        lambda t: f"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOi{t}.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV"
    ),
)


def rich() -> dict[str, Any]:
    """A valid ModelDeployment with strings in many positions (values and keys)."""
    obj = model_deployment(
        "llama",
        "models",
        gpu=1,
        engine="vllm",
        provider="vllm",
        env=[{"name": "LOG_LEVEL", "value": "info"}],
        nodeSelector={"pool": "gpu"},
    )
    obj["metadata"]["labels"] = {"team": "ml"}
    obj["metadata"]["annotations"] = {"example.com/note": "hello"}
    obj["spec"]["engine"]["args"] = {"max-model-len": "8192"}
    obj["spec"]["engine"]["extraArgs"] = ["--enforce-eager"]
    return obj


def positions(obj: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], bool]]:
    """(path, is_key) of every string value and every map key under metadata and spec."""
    found: list[tuple[tuple[Any, ...], bool]] = []
    if isinstance(obj, dict):
        for key, value in obj.items():
            if path or key in ("metadata", "spec"):
                if path:
                    found.append(((*path, key), True))
                found += positions(value, (*path, key))
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            found += positions(value, (*path, i))
    elif isinstance(obj, str) and path[:2] not in (("metadata", "name"), ("metadata", "namespace")):
        found.append((path, False))
    return found


def plant(obj: dict[str, Any], where: tuple[tuple[Any, ...], bool], token: str) -> None:
    path, is_key = where
    parent: Any = obj
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    if is_key:
        parent[token] = parent.pop(last)
    else:
        parent[last] = token


POSITIONS = positions(rich())
