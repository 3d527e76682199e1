"""The parts of the burst bench (bench/burst.py) that need no cluster: the shipped webhook
configurations pointed at a local server, the burst's ModelDeployments, how a create's answer
is counted, and percentiles."""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Any

import yaml

from tests.support.builders import model_deployment
from tests.support.paths import ROOT

SHIPPED_WEBHOOKS = ROOT / "kustomize" / "base" / "webhooks.yaml"
MODEL = "Qwen/Qwen2.5-7B-Instruct"
GGUF = "bartowski/Llama-3.2-1B-Instruct-GGUF/Llama-3.2-1B-Instruct-Q4_K_M.gguf"


def shipped_webhooks(url: str, text: str | None = None) -> list[dict[str, Any]]:
    """kustomize/base's Mutating- and ValidatingWebhookConfiguration as shipped (timeouts,
    failure policy, selectors), each hook's `clientConfig.service` replaced by `url` + its path:
    no Service routes to 127.0.0.1 in the test cluster, and the API server calls a URL with the
    same webhook client."""
    docs = [d for d in yaml.safe_load_all(text or SHIPPED_WEBHOOKS.read_text()) if d]
    out = []
    for doc in docs:
        config = copy.deepcopy(doc)
        for hook in config["webhooks"]:
            service = hook["clientConfig"].pop("service")
            hook["clientConfig"]["url"] = f"{url}{service['path']}"
        out.append(config)
    return out


def burst_models(namespace: str, count: int) -> list[dict[str, Any]]:
    """`count` ModelDeployments as users write them, cycling through six shapes: vLLM direct,
    llm-d disaggregated, KubeRay by automatic selection (2 GPUs), Dynamo, KAITO with vLLM, and
    KAITO with llama.cpp by automatic selection (no GPU)."""
    pd = {"prefill": {"gpu": {"count": 1}}, "decode": {"gpu": {"count": 1}}}
    shapes: list[dict[str, Any]] = [
        {"model_id": MODEL, "gpu": 1, "engine": "vllm", "provider": "vllm"},
        {"model_id": MODEL, "provider": "llmd", "mode": "disaggregated", "scaling": pd},
        {"model_id": MODEL, "gpu": 2},
        {"model_id": MODEL, "gpu": 1, "engine": "vllm", "provider": "dynamo"},
        {
            "model_id": "microsoft/Phi-4-mini-instruct",
            "gpu": 1,
            "engine": "vllm",
            "provider": "kaito",
        },
        {"model_id": GGUF},
    ]
    return [
        model_deployment(f"m{i:03d}", namespace, **copy.deepcopy(shapes[i % len(shapes)]))
        for i in range(count)
    ]


class Outcome(StrEnum):
    CREATED = "201"
    WEBHOOK_TIMEOUT = "webhook timeout"  # `failed calling webhook` ... `context deadline exceeded`
    WEBHOOK_ERROR = "webhook error"  # `failed calling webhook`, any other reason
    DENIED = "denied"  # the webhook answered and refused
    THROTTLED = "429"
    SERVER_ERROR = "5xx"
    OTHER = "other"
    NO_ANSWER = "no answer"  # the connection failed or timed out on the client's side


def classify(status: int, body: bytes) -> Outcome:
    """What one create's answer was, from its HTTP status and body (a Kubernetes Status)."""
    if status == 201:
        return Outcome.CREATED
    text = body.decode(errors="replace")
    if "failed calling webhook" in text:
        deadline = "context deadline exceeded" in text or "Client.Timeout" in text
        return Outcome.WEBHOOK_TIMEOUT if deadline else Outcome.WEBHOOK_ERROR
    if status == 429:
        return Outcome.THROTTLED
    if status >= 500:
        return Outcome.SERVER_ERROR
    if "denied the request" in text:
        return Outcome.DENIED
    return Outcome.OTHER


def nearest_rank(values: Sequence[float], q: float) -> float:
    """The q-quantile by nearest rank (p99 of 300 is the 297th smallest); NaN when empty."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[max(math.ceil(q * len(ordered)) - 1, 0)]


def status_message(body: bytes) -> str:
    """A Kubernetes Status body's message (the raw text if it is not one), on one line."""
    try:
        status = json.loads(body)
    except ValueError:
        return body.decode(errors="replace")[:300]
    message = status.get("message") if isinstance(status, Mapping) else None
    return str(message if message is not None else status)[:300].replace("\n", " ")


def connections_to(table: str, port: int) -> set[tuple[str, str]]:
    """The established TCP connections to local `port` in a /proc/net/tcp table, as (local,
    remote) address pairs (the kernel's hex spelling); a new pair is a new connection, and over
    TLS a new handshake."""
    wanted, out = f":{port:04X}", set()
    for line in table.splitlines()[1:]:
        fields = line.split()
        if len(fields) > 3 and fields[1].endswith(wanted) and fields[3] == "01":
            out.add((fields[1], fields[2]))
    return out
