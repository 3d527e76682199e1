"""The pods Runway's rendered objects template, as Pod Security admission sees them, and the level
each is declared to meet (tests/unit/providers/test_pod_security.py, tests/e2e/test_pod_security.py).

Where each kind keeps its pod template:
- Deployment and Job: spec.template;
- LeaderWorkerSet: the leader's and the workers' templates;
- RayService: the head's and each worker group's template;
- DynamoGraphDeployment: each service's extraPodSpec, a PodSpec whose mainContainer the operator
  merges into its container `main` (tests/support/dynamo_pods.py says what else it adds);
- Workspace: inference.template, which KAITO copies into the pod (a preset has none: KAITO builds
  that pod itself).
The endpoint picker's Deployment (<name>-epp) is the core's, not the provider's: its image runs as
a non-root user (core/rendering/inferencegateway.py), so it is declared restricted here."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from core.admission.pipeline import admit
from core.model.kinds import ModelDeployment, dig
from core.model.names import PICKER_SUFFIX
from core.model.plugin import PodSecurity, Provider
from core.rendering.assemble import render_model
from core.rendering.inferencegateway import GatewayTarget
from kubeio.shipped import bundled_versions
from tests.support.builders import shipped_registry
from tests.support.matrix import byo_registry, cases, kaito_cases

# The endpoint picker Runway renders beside a model behind the gateway.
PICKER = PodSecurity()


@dataclass(frozen=True, slots=True)
class Template:
    """One pod template among the rendered objects: where it is, the kind of the object holding
    it, and its pod spec."""

    where: str
    kind: str
    spec: Mapping[str, Any]

    def declared(self, provider: Provider) -> PodSecurity:
        """The Pod Security declaration its pods are held to."""
        if self.kind == "Deployment" and self.where.endswith(f"-{PICKER_SUFFIX}"):
            return PICKER
        return provider.pod_security.of(self.kind)

    def pod(self, name: str, namespace: str) -> dict[str, Any]:
        """A Pod of this template's spec, as the API server would receive it from the
        controller; its service account is left to the namespace's default."""
        spec = {k: v for k, v in self.spec.items() if k != "serviceAccountName"}
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace},
            "spec": spec,
        }


def templates(obj: Mapping[str, Any]) -> list[Template]:
    """Every pod template in one rendered object (none for kinds that template no pod)."""
    kind, name = str(obj.get("kind")), str(dig(obj, "metadata", "name"))
    spec = obj.get("spec") or {}
    at = f"{kind}/{name}"
    found: list[tuple[str, Any]] = []
    if kind in ("Deployment", "Job"):
        found = [(at, dig(spec, "template", "spec"))]
    elif kind == "LeaderWorkerSet":
        group = spec["leaderWorkerTemplate"]
        if "leaderTemplate" in group:
            found.append((f"{at} leader", dig(group, "leaderTemplate", "spec")))
        found.append((f"{at} workers", dig(group, "workerTemplate", "spec")))
    elif kind == "RayService":
        cluster = spec["rayClusterConfig"]
        found = [(f"{at} head", dig(cluster, "headGroupSpec", "template", "spec"))]
        found += [
            (f"{at} {g['groupName']}", dig(g, "template", "spec"))
            for g in cluster.get("workerGroupSpecs") or ()
        ]
    elif kind == "DynamoGraphDeployment":
        found = [
            (f"{at} {key}", _dynamo_pod(service["extraPodSpec"]))
            for key, service in sorted(spec["services"].items())
        ]
    elif kind == "Workspace" and dig(obj, "inference", "template") is not None:
        found = [(f"{at} inference.template", dig(obj, "inference", "template", "spec"))]
    return [Template(where, kind, pod) for where, pod in found]


def _dynamo_pod(extra: Mapping[str, Any]) -> dict[str, Any]:
    """The pod spec a service's extraPodSpec gives: its fields, and mainContainer as `main`."""
    pod = {k: v for k, v in extra.items() if k != "mainContainer"}
    return pod | {"containers": [{"name": "main", **extra["mainContainer"]}]}


def security_contexts(spec: Mapping[str, Any]) -> tuple[Any, list[tuple[str, Any]]]:
    """(the pod's securityContext, [(container, its securityContext)]), init containers first."""
    containers = [*spec.get("initContainers", ()), *spec["containers"]]
    return spec.get("securityContext"), [(c["name"], c.get("securityContext")) for c in containers]


@dataclass(frozen=True, slots=True)
class Written:
    """A pod template the render matrix writes: the case's id, its provider and the template."""

    ident: str
    provider: Provider
    template: Template

    @property
    def declared(self) -> PodSecurity:
        return self.template.declared(self.provider)


def written() -> list[Written]:
    """Every pod template the render matrix (tests/support/matrix.py cases) and the KAITO cases
    (kaito_cases, on both installs) render, gateway objects included."""
    shipped = shipped_registry()
    byo = byo_registry()
    inputs = [(ident, obj, shipped) for ident, obj in cases(shipped)] + [
        (case.ident, case.obj, shipped if case.auto_provisioning else byo) for case in kaito_cases()
    ]
    pins, target = bundled_versions(), GatewayTarget("inference", "gateways")
    found = []
    for ident, obj, registry in inputs:
        admission = admit(obj, registry=registry)
        assert admission.errors == (), ident
        md = ModelDeployment(admission.obj)
        provider = registry.plugins[md.provider_name]
        for rendered in render_model(md, registry, pins, target):
            found += [Written(ident, provider, t) for t in templates(rendered)]
    return found
