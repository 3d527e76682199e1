"""What the Flux and the Argo CD tiers share (tests/e2e/test_flux.py, test_argocd.py): the
sources they render into their namespace, the Git repository the controller follows, and reading
back what the controller applied."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kubeio.yamlio import dump
from renderer.apply import folders
from tests.support.builders import external_model_provider
from tests.support.cluster import Cluster
from tests.support.e2e import RUNWAY
from tests.support.gitserver import GitServer
from tests.support.paths import EXAMPLES

SOURCES = ("vllm-multi-gpu.yaml", "llmd-explicit.yaml", "vllm-direct-explicit.yaml")
RAY_SERVICE = "rayservice.ray.io/llama-70b"
READY_CONDITION = {
    "type": "Ready",
    "status": "True",
    "reason": "SetByTheTest",
    "message": "stands in for the KubeRay operator",
    "lastTransitionTime": "2026-01-01T00:00:00Z",
}


# What the KubeRay operator reports for a RayService whose Serve application runs (the status
# the shipped health checks and Runway's KubeRay status mapping read).
RUNNING_RAY_STATUS = {
    "conditions": [READY_CONDITION],
    "activeServiceStatus": {"applicationStatuses": {"llm": {"status": "RUNNING"}}},
}


def write_sources(directory: Path, namespace: str, names: tuple[str, ...] = SOURCES) -> Path:
    """The examples, moved to `namespace`, plus one ExternalModelProvider."""
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    for name in names:
        doc = yaml.safe_load((EXAMPLES / name).read_text())
        doc["metadata"]["namespace"] = namespace
        (directory / name).write_text(dump(doc))
    (directory / "emp.yaml").write_text(dump(external_model_provider("openai", namespace)))
    return directory


@dataclass
class Tier:
    """A cluster, a Git server with the repository `url` the controller follows, and the
    working folder; every model lives in `namespace`."""

    cluster: Cluster
    git: GitServer
    url: str
    work: Path
    namespace: str

    @property
    def repo(self) -> Path:
        return self.work / "repo"

    @property
    def rendered(self) -> Path:
        return self.repo / "rendered"

    def render_and_push(self, sources: Path) -> str:
        """`runway render --push`; the commit it pushed."""
        done = subprocess.run(
            [
                str(RUNWAY),
                "render",
                str(sources),
                "--repo",
                str(self.repo),
                "--gateway",
                "gateways/inference",
                "--istio",
                "--push",
                self.url,
                "-o",
                "json",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return self.git.head("gitops")

    def get(self, *what: str) -> dict[str, Any]:
        found: dict[str, Any] = json.loads(
            self.cluster.kubectl("get", *what, "-o", "json", "--show-managed-fields").stdout
        )
        return found

    def stand_in_for_kuberay(self) -> None:
        """No KubeRay operator runs on this cluster: once the RayService exists, the test reports
        it Ready with its application running, as the operator would (the shipped health checks
        and the status controller read that)."""
        found = self.cluster.kubectl(
            "get", RAY_SERVICE, "-n", self.namespace, "-o", "json", check=False
        )
        if found.returncode != 0 or "conditions" in json.loads(found.stdout).get("status", {}):
            return
        set_status(self, RAY_SERVICE, RUNNING_RAY_STATUS)

    def reported(self) -> bool:
        """Whether the status controller has reported on every ModelDeployment's generation."""
        listed = self.get("modeldeployments.airunway.ai", "-n", self.namespace)["items"]
        return bool(listed) and all(
            (md.get("status") or {}).get("observedGeneration") == md["metadata"]["generation"]
            for md in listed
        )


def rendered_objects(root: Path) -> list[dict[str, Any]]:
    return [obj for _, objects in folders(root) for obj in objects]


def ref(obj: dict[str, Any]) -> str:
    """How kustomize-controller names an object in its change set: Kind/namespace/name."""
    meta = obj["metadata"]
    return f"{obj['kind']}/{meta.get('namespace', '')}/{meta['name']}".replace("//", "/")


def resource(obj: dict[str, Any]) -> str:
    group = obj["apiVersion"].rpartition("/")[0]
    return f"{obj['kind'].lower()}.{group}".rstrip(".")


def live(tier: Tier, obj: dict[str, Any]) -> dict[str, Any]:
    return tier.get(f"{resource(obj)}/{obj['metadata']['name']}", "-n", tier.namespace)


def exists(tier: Tier, obj: dict[str, Any]) -> bool:
    done = tier.cluster.kubectl(
        "get", f"{resource(obj)}/{obj['metadata']['name']}", "-n", tier.namespace, check=False
    )
    if done.returncode == 0:
        return True
    assert "NotFound" in done.stderr, done.stderr
    return False


def fingerprint(tier: Tier, objects: list[dict[str, Any]]) -> dict[str, Any]:
    """resourceVersion and managedFields entries of every object (what a no-op must not move)."""
    out = {}
    for obj in objects:
        meta = live(tier, obj)["metadata"]
        out[ref(obj)] = (
            meta["resourceVersion"],
            [
                (m["manager"], m["operation"], m.get("subresource", ""))
                for m in meta["managedFields"]
            ],
        )
    return out


def set_status(tier: Tier, what: str, status: dict[str, Any]) -> None:
    tier.cluster.kubectl(
        "patch",
        what,
        "-n",
        tier.namespace,
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": status}),
    )


def changed_files(repo: Path, older: str, newer: str) -> dict[str, str]:
    """Files of the rendered tree that changed between two revisions: {path: A|M|D}."""
    done = subprocess.run(
        ["git", "-C", str(repo), "diff", "--name-status", older, newer, "--", "rendered"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return {line.split("\t")[1]: line.split("\t")[0] for line in done.stdout.splitlines()}


def objects_in(repo: Path, revision: str, path: str) -> list[dict[str, Any]]:
    text = subprocess.run(
        ["git", "-C", str(repo), "show", f"{revision}:{path}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    return [d for d in yaml.safe_load_all(text) if isinstance(d, dict) and "metadata" in d]


def refuses_field(cluster: Cluster, path: Path, field: str) -> bool:
    """Whether the served schema refuses `field` in the object at `path` (a dry run; conflicts
    with a previous test's field managers are forced, so only the schema can refuse)."""
    done = cluster.kubectl(
        "apply",
        "--server-side",
        "--force-conflicts",
        "--validate=strict",
        "--dry-run=server",
        "-f",
        str(path),
        check=False,
    )
    if done.returncode == 0:
        return False
    assert (
        f"{field}: field not declared in schema" in done.stderr
        or f'unknown field "{field}"' in done.stderr
    ), done.stderr
    return True
