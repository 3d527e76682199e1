"""KubeRay (v1.3.0, ray-operator/controllers/ray/common/pod.go labelPod) gives each pod its
group template's labels plus ray.io/node-type, ray.io/group, ray.io/cluster (which the template
cannot override) and a few more; Ray Serve's HTTP proxy on the head listens on 8000, so the pool
selects the head's labels."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from core.model.kinds import dig
from core.model.plugin import PodGroup, Pods
from core.rendering.invariants import ref
from core.rendering.pods import template_port, template_selector

HEAD_LABELS = {"ray.io/node-type": "head", "ray.io/is-ray-node": "yes"}


def _model_ids(service: Mapping[str, Any]) -> list[str]:
    """The model_id of every LLM config in the RayService's Ray Serve config."""
    try:
        config = json.loads(dig(service, "spec", "serveConfigV2") or "{}")
    except (TypeError, ValueError):
        return []  # not JSON: the schema and Ray's own checks speak for it
    ids = []
    for app in config.get("applications") or () if isinstance(config, dict) else ():
        args = app.get("args") if isinstance(app, dict) else None
        if not isinstance(args, dict):
            continue
        llm = args.get("llm_configs") or [v for v in args.values() if isinstance(v, dict)]
        for entry in llm if isinstance(llm, list) else ():
            model_id = (
                dig(entry, "model_loading_config", "model_id") if isinstance(entry, dict) else None
            )
            if isinstance(model_id, str):
                ids.append(model_id)
    return ids


def operator_pods(objects: Sequence[Mapping[str, Any]]) -> list[PodGroup]:
    groups = []
    for obj in objects:
        if obj.get("kind") == "RayService":
            head = dig(obj, "spec", "rayClusterConfig", "headGroupSpec", "template") or {}
            labels = {**(dig(head, "metadata", "labels") or {}), **HEAD_LABELS}
            where = f"{ref(obj)} head pods (template labels and KubeRay's ray.io labels)"
            serves = tuple(sorted(set(_model_ids(obj))))
            at = f"{ref(obj)} spec.serveConfigV2 model_id"
            groups.append(PodGroup(where, labels, serves=serves, serves_at=at))
    return groups


PODS = Pods(template_selector, template_port, operator_pods)
