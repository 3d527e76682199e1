"""The upstream CRDs on the test cluster: every kind Runway renders is installed from the schema
pack (the schemas users get), the GitOps tools' CRDs from the cache, and each kind accepts a
minimal object."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
import yaml

from core.model.versions import Versions
from kubeio.shipped import bundled_versions
from renderer.output.schemapack import load_pack
from renderer.output.strict import Schemas
from tests.cluster.build import UPSTREAMS, cache_dir
from tests.support.cluster import Cluster
from tests.support.drift import missing_from
from tools.schemapack import strip_schema


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
        {
            "apiVersion": "kaito.sh/v1beta1",
            "kind": "Workspace",
            "metadata": {"name": "ws", "namespace": namespace},
            "resource": {"labelSelector": {"matchLabels": {"apps": "phi"}}},
            "inference": {"preset": {"name": "phi-4-mini-instruct"}},
        },
        obj(
            "nvidia.com/v1alpha1",
            "DynamoGraphDeployment",
            "dgd",
            {
                "backendFramework": "vllm",
                "services": {
                    "Frontend": {"componentType": "frontend", "replicas": 1},
                    "VllmWorker": {
                        "componentType": "worker",
                        "replicas": 1,
                        "resources": {"limits": {"gpu": "1"}},
                    },
                },
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


def test_the_gitops_tools_crds_are_in_the_cache_at_their_pinned_versions() -> None:
    versions: Versions = bundled_versions()
    crds = cache_dir(dict(os.environ)) / "crds"

    present = sorted(
        p.parent.name + "@" + p.name for p in crds.glob("*/*") if (p / ".complete").exists()
    )

    assert sorted(u.name for u in UPSTREAMS) == [
        "argo-cd",
        "flux-kustomize-controller",
        "flux-source-controller",
    ]
    assert set(present) >= {f"{u.name}@{u.version(versions)}" for u in UPSTREAMS}


def test_the_cluster_serves_exactly_the_schemas_of_the_pack(cluster: Cluster) -> None:
    listed = json.loads(cluster.kubectl("get", "crd", "-o", "json").stdout)["items"]
    served = Schemas.from_crds(("cluster", crd) for crd in listed)
    pack = Schemas.from_pack(load_pack())

    def normalized(schema: Any) -> Any:
        """The API server stores a schema through Go types, which drop an empty `required` list
        (omitempty); that is one difference allowed, and it means the same. The other: the
        description texts of Argo CD's Application CRD, which every test cluster installs from
        Argo CD's own file after the pack's (tests/cluster/build.py UPSTREAMS)."""
        if isinstance(schema, dict):
            return {
                k: normalized(v) for k, v in schema.items() if not (k == "required" and v == [])
            }
        if isinstance(schema, list):
            return [normalized(v) for v in schema]
        return schema

    differing = sorted(
        f"{api} {kind}"
        for api, kind in pack.by_kind
        if normalized(strip_schema(served.by_kind.get((api, kind))))
        != normalized(pack.by_kind[(api, kind)])
    )

    assert len(pack.by_kind) == 22  # 14 CRDs, each served version
    assert differing == []


KINDS = [
    "Gateway",
    "HTTPRoute",
    "ReferenceGrant",
    "InferencePool",
    "InferenceObjective",
    "RayService",
    "Workspace",
    "DynamoGraphDeployment",
    "DestinationRule",
]


@pytest.mark.parametrize("index", range(len(KINDS)), ids=KINDS)
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
    # apiVersion: read back at the preferred version (ReferenceGrant is written as v1beta1).
    assert missing_from({k: v for k, v in obj.items() if k != "apiVersion"}, stored, "") == []
