"""The jobs of the parser tier: every ModelDeployment of the render matrix, every admitted
example and the KubeRay checks' own cases, rendered with Runway's own code (admission, then the
provider's render), and from the rendered objects every launch the engines parse: each
container Runway starts with flags (tests/support/matrix.py's engine_args: the vLLM server of
llm-d and Direct vLLM, each `python3 -m dynamo.<module>`) and each serveConfigV2 application
of a RayService (its engine_kwargs)."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from core.admission.pipeline import admit
from core.model.kinds import ModelDeployment
from core.model.versions import Versions
from core.rendering.assemble import render_model
from core.rendering.inferencegateway import GatewayTarget
from core.selection.configs import ProviderRegistry
from tests.support.builders import model_deployment
from tests.support.matrix import cases as matrix_cases
from tests.support.matrix import engine_args
from tests.support.rayservices import kuberay_cases

TARGET = GatewayTarget("inference", "gateways")


def deployments(registry: ProviderRegistry, examples: Path) -> list[tuple[str, dict[str, Any]]]:
    """(case id, ModelDeployment): the matrix, the examples, the KubeRay cases no example covers
    and the engine switches no matrix case sets."""
    found = [(f"matrix/{ident}", obj) for ident, obj in matrix_cases(registry)]
    found += [
        (f"examples/{path.name}" + (f"#{n}" if n else ""), doc)
        for path in sorted(examples.glob("*.yaml"))
        for n, doc in enumerate(d for d in yaml.safe_load_all(path.read_text()) if d)
        if doc.get("kind") == "ModelDeployment"
    ]
    found += [
        (f"kuberay/{ident}", obj)
        for ident, obj in kuberay_cases(examples)
        if not ident.endswith(".yaml")  # the examples are above
    ]
    return found + switched(registry)


def switched(registry: ProviderRegistry) -> list[tuple[str, dict[str, Any]]]:
    """Each engine that takes flags with every switch Runway translates into one (prefix caching
    off, eager, trust-remote-code, a context length) and user args, aggregated."""
    engine = {
        "enablePrefixCaching": False,
        "enforceEager": True,
        "trustRemoteCode": True,
        "contextLength": 8192,
    }
    user = {
        "vllm": {"max-num-seqs": "16", "enable-chunked-prefill": ""},
        "sglang": {"max-running-requests": "16"},
        "trtllm": {},
    }
    out = []
    for name, config in sorted(registry.configs.items()):
        for kind in sorted(config.engines):
            if kind not in user or name == "kaito":
                continue
            spec = {"type": kind, **engine, "args": user[kind]}
            obj = model_deployment(f"{name}-{kind}-sw", gpu=2, provider=name, engine=spec)
            out.append((f"switched/{name}-{kind}", obj))
    return out


def launches(
    obj: dict[str, Any], registry: ProviderRegistry, pins: Versions
) -> list[dict[str, Any]]:
    """The parser jobs of one ModelDeployment (without ids); admission errors raise."""
    admission = admit(obj, registry=registry)
    if admission.errors:
        raise ValueError(f"not admitted: {admission.errors}")
    objects = render_model(ModelDeployment(admission.obj), registry, pins, TARGET)
    out: list[dict[str, Any]] = [
        {"entry": entry, "args": list(args)} for entry, args in engine_args(objects)
    ]
    out += [{"entry": "kuberay", "app": app} for app in ray_applications(objects)]
    return out


def ray_applications(objects: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every application of every RayService's serveConfigV2 (YAML, as the operator reads it)."""
    return [
        app
        for obj in objects
        if obj["kind"] == "RayService"
        for app in yaml.safe_load(obj["spec"]["serveConfigV2"])["applications"]
    ]


def jobs(
    registry: ProviderRegistry, pins: Versions, examples: Path
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """(jobs, case id -> why it has none): every launch of every case, each with an id
    `<case> <entry>#<n>` (n counts that entry's launches within the case)."""
    out: list[dict[str, Any]] = []
    empty: dict[str, str] = {}
    for case, obj in deployments(registry, examples):
        try:
            found = launches(obj, registry, pins)
        except ValueError as error:
            empty[case] = str(error)
            continue
        if not found:
            empty[case] = "no launch takes flags (KAITO owns its engines' arguments)"
        seen: dict[str, int] = {}
        for job in found:
            n = seen[job["entry"]] = seen.get(job["entry"], 0) + 1
            out.append({"id": f"{case} {job['entry']}#{n}", "case": case, **job})
    return out + controls(out), empty


def controls(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """For each entry point, its first launch with one flag (engine kwarg) no engine has: the
    parser must refuse it, or the tier proves nothing."""
    out = []
    for entry in sorted({j["entry"] for j in found}):
        job = copy.deepcopy(next(j for j in found if j["entry"] == entry))
        if entry == "kuberay":
            for config in _llm_configs(job["app"]):
                config["engine_kwargs"]["runway_no_such_kwarg"] = 1
        else:
            job["args"].append("--runway-no-such-flag")
        job.update(id=f"control/{entry}", case="control", expect="refused")
        out.append(job)
    return out


def _llm_configs(app: dict[str, Any]) -> list[dict[str, Any]]:
    args = app["args"]
    return [args[k] for k in ("prefill_config", "decode_config") if k in args] or list(
        args.get("llm_configs", [])
    )
