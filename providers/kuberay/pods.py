"""KubeRay (v1.3.0, ray-operator/controllers/ray/common/pod.go labelPod) gives each pod its
group template's labels plus ray.io/node-type, ray.io/group, ray.io/cluster (which the template
cannot override) and a few more; Ray Serve's HTTP proxy on the head listens on 8000, so the pool
selects the head's labels. The model name each Ray Serve LLM config answers to is checked through
its serving container (invariants.py), as the route invariant reads every engine's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from core.model.kinds import dig
from core.model.plugin import PodGroup, Pods
from core.rendering.invariants import ref
from core.rendering.pods import template_port, template_selector

HEAD_LABELS = {"ray.io/node-type": "head", "ray.io/is-ray-node": "yes"}


def operator_pods(objects: Sequence[Mapping[str, Any]]) -> list[PodGroup]:
    groups = []
    for obj in objects:
        if obj.get("kind") == "RayService":
            head = dig(obj, "spec", "rayClusterConfig", "headGroupSpec", "template") or {}
            labels = {**(dig(head, "metadata", "labels") or {}), **HEAD_LABELS}
            where = f"{ref(obj)} head pods (template labels and KubeRay's ray.io labels)"
            groups.append(PodGroup(where, labels))
    return groups


PODS = Pods(template_selector, template_port, operator_pods)
