"""Every upstream CRD obtained at its pinned version is installed, and accepts a minimal object."""

from __future__ import annotations

import os
from typing import Any

import pytest
import yaml

from providers.versions import Versions
from renderer.sources import bundled_versions
from tests.cluster.build import UNAVAILABLE, UPSTREAMS, cache_dir
from tests.support.cluster import Cluster
from tests.support.drift import missing_from


def minimal_objects(namespace: str) -> list[dict[str, Any]]:
    def obj(api_version: str, kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
        return {
            "apiVersion": api_version,
            "kind": kind,
            "metadata": {"name": name, "namespace": namespace},
            "spec": spec,
        }

    return [
        obj(
            "gateway.networking.k8s.io/v1",
            "Gateway",
            "gw",
            {
                "gatewayClassName": "istio",
                "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}],
            },
        ),
        obj(
            "gateway.networking.k8s.io/v1",
            "HTTPRoute",
            "route",
            {
                "parentRefs": [{"name": "gw"}],
                "rules": [
                    {
                        "matches": [
                            {
                                "path": {"type": "PathPrefix", "value": "/"},
                                "headers": [
                                    {"type": "Exact", "name": "X-Gateway-Model-Name", "value": "m"}
                                ],
                            }
                        ],
                        "backendRefs": [
                            {
                                "group": "inference.networking.k8s.io",
                                "kind": "InferencePool",
                                "name": "pool",
                            }
                        ],
                        "timeouts": {"request": "300s"},
                    }
                ],
            },
        ),
        obj(
            "gateway.networking.k8s.io/v1beta1",
            "ReferenceGrant",
            "grant",
            {
                "from": [
                    {
                        "group": "gateway.networking.k8s.io",
                        "kind": "HTTPRoute",
                        "namespace": "models",
                    }
                ],
                "to": [{"group": "inference.networking.k8s.io", "kind": "InferencePool"}],
            },
        ),
        obj(
            "inference.networking.k8s.io/v1",
            "InferencePool",
            "pool",
            {
                "selector": {"matchLabels": {"airunway.ai/model-deployment": "m"}},
                "targetPorts": [{"number": 8000}],
                "endpointPickerRef": {"name": "m-epp", "port": {"number": 9002}},
            },
        ),
        obj(
            "inference.networking.x-k8s.io/v1alpha2",
            "InferenceObjective",
            "objective",
            {"poolRef": {"name": "pool"}},
        ),
        obj(
            "ray.io/v1",
            "RayService",
            "ray",
            {
                "rayClusterConfig": {
                    "headGroupSpec": {
                        "rayStartParams": {},
                        "template": {
                            "spec": {
                                "containers": [
                                    {"name": "ray-head", "image": "registry.example.com/ray:1"}
                                ]
                            }
                        },
                    }
                }
            },
        ),
        obj(
            "networking.istio.io/v1",
            "DestinationRule",
            "epp",
            {
                "host": "m-epp.models.svc.cluster.local",
                "trafficPolicy": {"tls": {"mode": "SIMPLE", "insecureSkipVerify": True}},
            },
        ),
    ]


def test_every_obtainable_upstream_is_in_the_cache_at_its_pinned_version() -> None:
    versions: Versions = bundled_versions()
    crds = cache_dir(dict(os.environ)) / "crds"

    present = sorted(
        p.parent.name + "@" + p.name for p in crds.glob("*/*") if (p / ".complete").exists()
    )

    assert present == sorted(f"{u.name}@{u.version(versions)}" for u in UPSTREAMS)
    assert sorted(UNAVAILABLE) == ["dynamo", "kaito"]


@pytest.mark.parametrize(
    "index",
    range(7),
    ids=[
        "Gateway",
        "HTTPRoute",
        "ReferenceGrant",
        "InferencePool",
        "InferenceObjective",
        "RayService",
        "DestinationRule",
    ],
)
def test_upstream_kind_accepts_a_minimal_valid_object(
    index: int, cluster: Cluster, namespace: str
) -> None:
    obj = minimal_objects(namespace)[index]

    done = cluster.strict_apply(obj)
    stored = yaml.safe_load(
        cluster.kubectl(
            "get",
            f"{obj['kind'].lower()}.{obj['apiVersion'].split('/')[0]}/{obj['metadata']['name']}",
            "-n",
            namespace,
            "-o",
            "yaml",
        ).stdout
    )

    assert (done.returncode, done.stderr) == (0, "")
    assert missing_from(obj["spec"], stored["spec"]) == []
