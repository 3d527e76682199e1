"""The live tier for KAITO's built mode (providers/kaito/build.py): the in-cluster registry
(providers/kaito/registry.yaml) rolls out, a ModelDeployment in built mode is rendered with
`runway render`, and its objects are applied in the order of their Argo CD sync waves, as Argo CD
applies them: the aikitfile ConfigMap and the BuildKit Job first, the Workspace only once the Job
has completed.

What stands in: KWOK runs no containers. The registry's pod is Running without a registry in it,
and the BuildKit Job's pod goes Running then Succeeded (KWOK's pod-complete stage for pods a Job
owns) without BuildKit building or pushing anything; the Job controller then marks the Job
Complete. No KAITO operator runs (the Go module proxy does not serve it), so the Workspace is
accepted by the API server's strict check and stays as applied. What this shows is that every
object applies strictly, the registry schedules with its claim, and the order holds.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import yaml

from cli.main import main
from kubeio.yamlio import dump
from tests.support.cluster import Cluster
from tests.support.live import persistent_volume
from tests.support.paths import EXAMPLES, ROOT
from tests.support.wait import wait_until

TIMEOUT = 120
WAVE = "argocd.argoproj.io/sync-wave"
BUILT = {"kaito.airunway.ai/gguf-mode": "built"}
GGUF = "bartowski/Llama-3.2-1B-Instruct-GGUF/Llama-3.2-1B-Instruct-Q4_K_M.gguf"


def get(cluster: Cluster, *what: str) -> dict[str, Any]:
    done = cluster.kubectl("get", *what, "-o", "json", check=False)
    return yaml.safe_load(done.stdout) if done.returncode == 0 else {}


def rendered_objects(tmp_path: Path, namespace: str) -> list[dict[str, Any]]:
    doc = yaml.safe_load((EXAMPLES / "cpu-llamacpp.yaml").read_text())
    doc["metadata"] = {"name": "llama-gguf-built", "namespace": namespace, "annotations": BUILT}
    doc["spec"]["model"] = {"id": GGUF}  # a Hugging Face GGUF, built in the cluster
    del doc["spec"]["image"]
    (tmp_path / "sources").mkdir()
    (tmp_path / "sources" / "md.yaml").write_text(dump(doc))
    argv = ["render", str(tmp_path / "sources"), "--repo", str(tmp_path / "repo")]
    assert main(argv) == 0
    folder = tmp_path / "repo" / "rendered" / namespace / doc["metadata"]["name"]
    return [
        yaml.safe_load(p.read_text())
        for p in sorted(folder.glob("*.yaml"))
        if p.name not in ("kustomization.yaml", "modeldeployment.yaml")
    ]


def registry_available(cluster: Cluster) -> bool:
    cluster.alive("kube-controller-manager")
    status = get(cluster, "deployment/runway-registry", "-n", "runway-system").get("status", {})
    return status.get("availableReplicas") == 1


def test_the_build_job_completes_before_the_workspace_is_applied(
    live_cluster: Cluster, tmp_path: Path
) -> None:
    cluster = live_cluster
    cluster.kubectl("create", "namespace", "runway-system", check=False)
    assert cluster.strict_apply(persistent_volume("runway-registry", "50Gi")).returncode == 0
    for obj in yaml.safe_load_all((ROOT / "providers/kaito/registry.yaml").read_text()):
        done = cluster.strict_apply(obj)
        assert (done.returncode, done.stderr) == (0, "")
    wait_until(lambda: registry_available(cluster), timeout=TIMEOUT, what="the registry rolled out")

    namespace = f"kaito-build-{uuid.uuid4().hex[:8]}"
    cluster.kubectl("create", "namespace", namespace)
    objects = rendered_objects(tmp_path, namespace)
    waves: dict[int, list[dict[str, Any]]] = {}
    for obj in objects:
        waves.setdefault(int(obj["metadata"]["annotations"].get(WAVE, "0")), []).append(obj)
    assert {w: sorted(o["kind"] for o in objs) for w, objs in waves.items()} == {
        -1: ["ConfigMap", "Job"],
        1: ["Workspace"],
    }
    (job,) = [o for o in waves[-1] if o["kind"] == "Job"]

    applied: list[str] = []
    for wave in sorted(waves):
        for obj in waves[wave]:
            done = cluster.strict_apply(obj)
            assert (done.returncode, done.stderr) == (0, ""), obj["kind"]
            applied.append(obj["kind"])
        for built in (o for o in waves[wave] if o["kind"] == "Job"):
            name = built["metadata"]["name"]

            def complete(name: str = name) -> bool:
                cluster.alive("kube-controller-manager")
                cluster.alive("kwok")
                conditions = get(cluster, f"job/{name}", "-n", namespace).get("status", {})
                return any(
                    c["type"] == "Complete" and c["status"] == "True"
                    for c in conditions.get("conditions", [])
                )

            wait_until(complete, timeout=TIMEOUT, what=f"Job {name} Complete")
            assert get(cluster, "workspace", "-n", namespace)["items"] == []

    assert applied == ["ConfigMap", "Job", "Workspace"]
    pods = get(cluster, "pods", "-n", namespace, "-l", f"job-name={job['metadata']['name']}")
    assert [p["status"]["phase"] for p in pods["items"]] == ["Succeeded"]
    workspace = get(cluster, "workspace/llama-gguf-built", "-n", namespace)
    (container,) = workspace["inference"]["template"]["spec"]["containers"]
    output = job["spec"]["template"]["spec"]["containers"][0]["args"][-1].split(",")
    tag = output[1].removeprefix("name=").rsplit(":", 1)[1]  # the tag the Job pushes
    assert container["image"] == f"localhost:30500/{namespace}/llama-gguf-built:{tag}"
    cluster.kubectl("delete", "namespace", namespace, "--wait=false")
