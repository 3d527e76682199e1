"""The KubeRay operator, built by `make cluster` from ray-operator at KUBERAY_VERSION, running
against the test API server: leader election off, metrics and health probes on free loopback
ports, the test cluster's admin kubeconfig. Stopped by its PID.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from core.admission.pipeline import admit
from core.model.kinds import ModelDeployment
from core.model.plugin import ProviderContext
from core.model.versions import Versions
from core.selection.configs import ProviderRegistry
from kubeio.shipped import bundled_versions
from providers.modules import plugins
from tests.cluster.build import module_dir
from tests.support.cluster import Cluster, _get, binaries_dir, free_port, terminate
from tests.support.wait import wait_until

PLUGINS = {plugin.name: plugin for plugin in plugins()}
PINS = bundled_versions()
IMAGE = f"rayproject/ray-llm:{PINS.pin('ray')}-py311-cu128"
Gpus = tuple[tuple[str, str], ...]
Pod = tuple[str, str, str, Gpus]

BINARY = "kuberay-operator"
MODULE = "github.com/ray-project/kuberay/ray-operator"
# The operator also runs a RayJob controller, and its manager does not start while a watched
# kind is not served. Runway never renders RayJobs, so the cluster does not install that CRD;
# this tier installs it from the operator's own module at the pin.
WATCHED_ONLY_CRDS = ("config/crd/bases/ray.io_rayjobs.yaml",)
START_TIMEOUT = 60


@dataclass
class Operator:
    process: subprocess.Popen[bytes]
    log_path: Path
    logs: list[IO[bytes]] = field(default_factory=list)

    def running(self) -> bool:
        """True while it runs; raises with its log tail once it has exited."""
        code = self.process.poll()
        if code is not None:
            raise RuntimeError(f"kuberay-operator exited with {code}:\n{self.log_tail()}")
        return True

    def log_tail(self, limit: int = 4000) -> str:
        return self.log_path.read_text(errors="replace")[-limit:]

    def stop(self) -> int:
        code = terminate(self.process)
        for log in self.logs:
            log.close()
        return code


def operator_binary() -> Path:
    return binaries_dir() / BINARY


def unavailable_reason() -> str | None:
    """Why the tier cannot run here, or None. Without Go it cannot be built; with Go, a missing
    binary means `make cluster` was not run (the tier then fails, it is not skipped)."""
    if operator_binary().exists():
        return None
    return f"{BINARY} not built in {binaries_dir()}; run `make cluster`" + (
        "" if shutil.which("go") else " (needs Go)"
    )


def install_watched_crds(cluster: Cluster, versions: Versions) -> None:
    source = module_dir(MODULE, f"v{versions.pin('kuberay').lstrip('v')}")
    for name in WATCHED_ONLY_CRDS:
        cluster.apply_manifests((source / name).read_text())
    wait_until(lambda: _established(cluster, "rayjobs.ray.io"), timeout=60, what="rayjobs CRD")


def _established(cluster: Cluster, name: str) -> bool:
    # Polled rather than `kubectl wait`, which errors while a fresh CRD has no conditions yet.
    crd = json.loads(cluster.kubectl("get", "crd", name, "-o", "json").stdout)
    conditions = crd.get("status", {}).get("conditions") or []
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)


def start_operator(cluster: Cluster, workdir: Path) -> Operator:
    """The operator, started and answering its readiness probe."""
    metrics, probe = free_port(), free_port()
    log = (workdir / "kuberay-operator.log").open("wb")
    process = subprocess.Popen(
        [
            str(operator_binary()),
            "--enable-leader-election=false",
            f"--metrics-addr=127.0.0.1:{metrics}",
            f"--health-probe-bind-address=127.0.0.1:{probe}",
            "--log-stdout-encoder=console",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=workdir,
        env=dict(os.environ) | {"KUBECONFIG": str(cluster.kubeconfig)},
        start_new_session=True,
    )
    operator = Operator(process, workdir / "kuberay-operator.log", [log])
    try:
        wait_until(
            lambda: operator.running() and _get(f"http://127.0.0.1:{probe}/readyz"),
            timeout=START_TIMEOUT,
            what="kuberay-operator /readyz",
        )
    except BaseException:
        operator.stop()
        raise
    return operator


def rendered(
    doc: dict[str, Any], namespace: str, registry: ProviderRegistry
) -> list[dict[str, Any]]:
    """What the KubeRay provider renders for `doc` in `namespace`: the RayService first, then the
    claims of its sized volumes."""
    source = doc | {"metadata": doc["metadata"] | {"namespace": namespace}}
    admission = admit(source, registry=registry)
    assert admission.errors == ()
    md = ModelDeployment(admission.obj)
    return PLUGINS[md.provider_name].render(md, PINS, ProviderContext("kuberay"))


def rayservice(doc: dict[str, Any], namespace: str, registry: ProviderRegistry) -> dict[str, Any]:
    (service,) = [o for o in rendered(doc, namespace, registry) if o["kind"] == "RayService"]
    return service


def get_json(cluster: Cluster, *args: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(cluster.kubectl("get", *args, "-o", "json").stdout)
    return data


def expected_pods(doc: dict[str, Any]) -> list[Pod]:
    """What the ModelDeployment asks for: one head (no GPU) and each worker group's replicas,
    each replica spanning pipeline-parallel-size worker pods."""
    spec = doc["spec"]
    nodes = int(((spec.get("engine") or {}).get("args") or {}).get("pipeline-parallel-size", 1))
    gpu_type = (spec.get("resources") or {}).get("gpu", {}).get("type", "nvidia.com/gpu")

    def gpus(count: int) -> Gpus:
        return ((f"limits:{gpu_type}", str(count)), (f"requests:{gpu_type}", str(count)))

    pods: list[Pod] = [("head", "headgroup", IMAGE, ())]
    if (spec.get("serving") or {}).get("mode") == "disaggregated":
        for role in ("prefill", "decode"):
            part = spec["scaling"][role]
            count = int(part.get("replicas", 1)) * nodes
            pods += [("worker", f"{role}-workers", IMAGE, gpus(part["gpu"]["count"]))] * count
    else:
        count = int((spec.get("scaling") or {}).get("replicas", 1)) * nodes
        pods += [("worker", "gpu-workers", IMAGE, gpus(spec["resources"]["gpu"]["count"]))] * count
    return sorted(pods)
