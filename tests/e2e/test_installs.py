"""A provider's install objects (core/rendering/installs.py) against a real API server: every
shipped config's Flux HelmRepository + HelmRelease and Argo CD Application is stored as written
(the CRDs of the schema pack, which every test cluster installs), so what the strict check passes
the API server takes too."""

from __future__ import annotations

import json
from typing import Any

import pytest

from core.checks.installation import Installation, read_installation
from core.rendering.installs import (
    Flavour,
    GitOpsSettings,
    InstallPlan,
    gitops_objects,
    plan_install,
)
from kubeio.shipped import bundled_config_objects
from kubeio.yamlio import dump_all
from tests.support.cluster import Cluster


@pytest.mark.parametrize("flavour", list(Flavour))
def test_every_shipped_install_object_is_stored_as_written(
    cluster: Cluster, namespace: str, flavour: Flavour
) -> None:
    settings = GitOpsSettings(flux_namespace=namespace, argocd_namespace=namespace)
    objects = []
    for config in bundled_config_objects():
        installation = read_installation(config)
        assert isinstance(installation, Installation)
        plan = plan_install(installation)
        assert isinstance(plan, InstallPlan)
        objects += gitops_objects(plan, flavour, settings)

    cluster.apply_manifests(dump_all(objects))

    stored = []
    for obj in objects:
        kind = obj["kind"].lower()
        got = json.loads(
            cluster.kubectl(
                "get", "-n", namespace, f"{kind}/{obj['metadata']['name']}", "-o", "json"
            ).stdout
        )
        stored.append({"spec": got["spec"], "kind": got["kind"]})
    kinds = {
        Flavour.FLUX: ["HelmRepository", "HelmRelease"] * 3,
        Flavour.ARGOCD: ["Application"] * 3,
    }
    assert sorted(o["kind"] for o in objects) == sorted(kinds[flavour])
    assert stored == [
        {"spec": merged(DEFAULTS.get(o["kind"], {}), o["spec"]), "kind": o["kind"]} for o in objects
    ]


# What the API server adds: the CRDs' defaults.
DEFAULTS: dict[str, dict[str, Any]] = {
    "HelmRepository": {"provider": "generic"},
    "HelmRelease": {"chart": {"spec": {"reconcileStrategy": "ChartVersion"}}},
}


def merged(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = value
    return out
