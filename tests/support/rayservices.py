"""The ModelDeployments whose RayServices the KubeRay checks cover: every example that selects
KubeRay, plus the serving modes, engine settings and shapes (a replica across nodes, a model
cache) no example covers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from core.admission.pipeline import admit
from core.model.kinds import ModelDeployment
from tests.support.builders import model_deployment, shipped_registry


def kuberay_cases(examples: Path) -> list[tuple[str, dict[str, Any]]]:
    """(id, ModelDeployment) pairs; `examples` is the examples folder."""
    registry = shipped_registry()
    found = [
        (path.name, doc)
        for path in sorted(examples.glob("*.yaml"))
        if not path.name.startswith("rejected-")
        for doc in yaml.safe_load_all(path.read_text())
        if doc
        and doc.get("kind") == "ModelDeployment"
        and ModelDeployment(admit(doc, registry=registry).obj).provider_name == "kuberay"
    ]
    built = [
        (
            "aggregated-1gpu-typed-args",
            model_deployment(
                "agg",
                gpu=1,
                provider="kuberay",
                engine={
                    "type": "vllm",
                    "enforceEager": True,
                    "contextLength": 8192,
                    "args": {"max-num-seqs": "16", "enable-chunked-prefill": ""},
                },
            ),
        ),
        (
            "multinode-model-cache",
            model_deployment(
                "mn",
                gpu=4,
                provider="kuberay",
                engine={"type": "vllm", "args": {"pipeline-parallel-size": "2"}},
                scaling={"replicas": 2},
                model={
                    "id": "org/model",
                    "storage": {
                        "volumes": [{"name": "cache", "purpose": "modelCache", "size": "100Gi"}]
                    },
                },
            ),
        ),
        (
            "disaggregated-multinode",
            model_deployment(
                "pdmn",
                provider="kuberay",
                mode="disaggregated",
                engine={"type": "vllm", "args": {"pipeline-parallel-size": "2"}},
                scaling={"prefill": {"gpu": {"count": 2}}, "decode": {"gpu": {"count": 4}}},
            ),
        ),
        (
            "disaggregated",
            model_deployment(
                "pd",
                provider="kuberay",
                mode="disaggregated",
                engine={"type": "vllm", "enforceEager": True},
                scaling={
                    "prefill": {"gpu": {"count": 1}, "replicas": 2},
                    "decode": {"gpu": {"count": 2}, "memory": "64Gi"},
                },
            ),
        ),
    ]
    return found + built
