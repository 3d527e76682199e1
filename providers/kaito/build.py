"""The seed's build path for a Hugging Face GGUF on KAITO (`built` mode): a BuildKit Job per
model builds an aikit image holding the GGUF with aikit's BuildKit frontend and pushes it to the
in-cluster registry; the Workspace runs that image.

* The registry (REGISTRY_NAMESPACE/REGISTRY_NAME: a Deployment, a NodePort Service and a PVC) is
  once per cluster: registry_objects(), shipped as providers/kaito/registry.yaml and applied once
  by the platform team. A model's folder never holds it, so two built models never render the
  same object twice (each folder is one ModelDeployment's).
* The build: a ConfigMap holding the aikitfile and a Job running buildctl-daemonless.sh from the
  rootless BuildKit image at the release aikit builds against (aikit's go.mod), as BuildKit's own
  examples/kubernetes/job.rootless.yaml runs it. Its name carries a digest of what it builds, so
  another GGUF is another Job (a Job's pod template cannot change).
* Order: Argo CD applies the build (sync wave -1) and waits for the Job to complete before the
  Workspace (wave 1); everywhere else (Flux applies a folder at once) the Workspace's pod waits in
  an init container until the registry lists the image's tag, then the kubelet pulls it.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from core.model.kinds import ModelDeployment
from core.model.names import LABEL_MAX
from core.model.plugin import ProviderContext
from core.model.versions import Versions
from core.rendering.common import object_meta
from providers.kaito.aikit import Gguf, facts, frontend_image

REGISTRY_NAMESPACE = "runway-system"
REGISTRY_NAME = "runway-registry"
REGISTRY_PORT = 5000
# The kubelet pulls through the NodePort on localhost, which container runtimes reach over plain
# HTTP without configuration (AI Runway's backend/src/services/registry.ts does the same); BuildKit
# pushes to the Service by its cluster name.
REGISTRY_NODE_PORT = 30500
REGISTRY_SIZE = "50Gi"
SYNC_WAVE = "argocd.argoproj.io/sync-wave"
AIKITFILE = "aikitfile.yaml"
BUILD_SUFFIX = "-aikit-build"


def registry_image(pins: Versions) -> str:
    """distribution's registry image at REGISTRY_VERSION (it also holds the sh and wget the
    Workspace's init container waits with)."""
    return f"docker.io/library/registry:{pins.pin('registry')}"


def pushed_to() -> str:
    return f"{REGISTRY_NAME}.{REGISTRY_NAMESPACE}.svc.cluster.local:{REGISTRY_PORT}"


def image_tag(source: Gguf, tag: str) -> str:
    """<aikit tag>-<12 hex of the GGUF's URL>: another GGUF or aikit is another image and Job."""
    digest = hashlib.sha256(f"{tag}\n{source.ref}".encode()).hexdigest()[:12]
    return f"{tag}-{digest}"


def repository(md: ModelDeployment) -> str:
    return f"{md.namespace or 'default'}/{md.name}"


def built_image(md: ModelDeployment, source: Gguf, tag: str) -> str:
    """The image the Workspace runs: as the kubelet pulls it (the NodePort on localhost)."""
    return f"localhost:{REGISTRY_NODE_PORT}/{repository(md)}:{image_tag(source, tag)}"


def job_name(md: ModelDeployment, source: Gguf, tag: str) -> str:
    """<name>-<12 hex>-aikit-build, at most 63 characters: a Job's name is the value of its
    pods' job-name label (the model's name cut to fit)."""
    suffix = f"-{image_tag(source, tag).rsplit('-', 1)[-1]}{BUILD_SUFFIX}"
    return md.name[: LABEL_MAX - len(suffix)].rstrip("-") + suffix


def aikitfile(md: ModelDeployment, source: Gguf, context: ProviderContext, tag: str) -> str:
    """The aikitfile (aikit pkg/aikit/config/inference_specs.go InferenceConfig at the pin): one
    model from the GGUF's URL, CUDA when the model has GPUs, and a LocalAI config naming it as
    the runner would (the file name without .gguf), so every mode serves the same name. JSON is
    YAML: every value is quoted, whatever the URL holds."""
    spec: dict[str, Any] = {"apiVersion": "v1alpha1"}
    if md.gpu_count > 0:
        spec["runtime"] = "cuda"
    spec["models"] = [{"name": source.served, "source": source.ref}]
    config = [{"name": source.served, "backend": "llama-cpp", "parameters": {"model": source.file}}]
    spec["config"] = json.dumps(config)
    return f"#syntax={frontend_image(context, tag)}\n{json.dumps(spec, indent=1)}\n"


def build_objects(
    md: ModelDeployment, source: Gguf, context: ProviderContext, tag: str
) -> list[dict[str, Any]]:
    """The ConfigMap holding the aikitfile and the BuildKit Job pushing the image (wave -1)."""
    name = job_name(md, source, tag)
    config_meta = object_meta(md, name)
    config_meta["annotations"][SYNC_WAVE] = "-1"
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": config_meta,
        "data": {AIKITFILE: aikitfile(md, source, context, tag)},
    }
    job_meta = object_meta(md, name)
    job_meta["annotations"][SYNC_WAVE] = "-1"
    return [
        config_map,
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": job_meta,
            "spec": _job_spec(md, source, context, tag, name),
        },
    ]


def _job_spec(
    md: ModelDeployment, source: Gguf, context: ProviderContext, tag: str, name: str
) -> dict[str, Any]:
    image = f"docker.io/moby/buildkit:{facts(context).get('buildkit')}-rootless"
    user = {"runAsUser": 1000, "runAsGroup": 1000}
    output = f"type=image,name={pushed_to()}/{repository(md)}:{image_tag(source, tag)}"
    build = {
        "name": "buildkit",
        "image": image,
        "command": ["buildctl-daemonless.sh"],
        "args": [
            "build",
            "--frontend",
            "dockerfile.v0",
            "--local",
            "context=/workspace",
            "--local",
            "dockerfile=/workspace",
            "--opt",
            f"filename={AIKITFILE}",
            "--output",
            f"{output},push=true,registry.insecure=true",
        ],
        "env": [{"name": "BUILDKITD_FLAGS", "value": "--oci-worker-no-process-sandbox"}],
        "securityContext": {
            "seccompProfile": {"type": "Unconfined"},
            "appArmorProfile": {"type": "Unconfined"},
            **user,
        },
        "volumeMounts": [
            {"name": "workspace", "mountPath": "/workspace", "readOnly": True},
            {"name": "buildkitd", "mountPath": "/home/user/.local/share/buildkit"},
        ],
    }
    # The aikitfile copied out of the ConfigMap's volume (its files are symlinks into ..data)
    prepare = {
        "name": "prepare",
        "image": image,
        "command": ["cp", f"/aikitfile/{AIKITFILE}", f"/workspace/{AIKITFILE}"],
        "securityContext": dict(user),
        "volumeMounts": [
            {"name": "aikitfile", "mountPath": "/aikitfile", "readOnly": True},
            {"name": "workspace", "mountPath": "/workspace"},
        ],
    }
    return {
        "backoffLimit": 2,
        "template": {
            "metadata": {"labels": {"airunway.ai/model-deployment": md.name}},
            "spec": {
                "restartPolicy": "Never",
                "initContainers": [prepare],
                "containers": [build],
                "volumes": [
                    {"name": "aikitfile", "configMap": {"name": name}},
                    {"name": "workspace", "emptyDir": {}},
                    {"name": "buildkitd", "emptyDir": {}},
                ],
            },
        },
    }


def wait_for_image(md: ModelDeployment, source: Gguf, tag: str, image: str) -> dict[str, Any]:
    """An init container that waits until the registry lists the built tag (the order under
    Flux and kubectl, which apply a folder at once)."""
    url = f"http://{pushed_to()}/v2/{repository(md)}/tags/list"
    wanted = image_tag(source, tag)
    return {
        "name": "wait-for-image",
        "image": image,
        "command": [
            "sh",
            "-c",
            'until wget -qO- "$REGISTRY_TAGS" | grep -q "\\"$IMAGE_TAG\\""; do sleep 10; done',
        ],
        "env": [{"name": "REGISTRY_TAGS", "value": url}, {"name": "IMAGE_TAG", "value": wanted}],
    }


def registry_objects(pins: Versions) -> list[dict[str, Any]]:
    """The in-cluster registry, once per cluster: a PVC for its storage, a Deployment of one
    registry (Recreate: the claim is ReadWriteOnce) and a NodePort Service."""
    meta = {
        "name": REGISTRY_NAME,
        "namespace": REGISTRY_NAMESPACE,
        "labels": {"app.kubernetes.io/name": REGISTRY_NAME},
    }
    selector = {"app.kubernetes.io/name": REGISTRY_NAME}
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": dict(meta),
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": REGISTRY_SIZE}},
            "volumeMode": "Filesystem",
        },
    }
    container = {
        "name": "registry",
        "image": registry_image(pins),
        "ports": [{"containerPort": REGISTRY_PORT, "protocol": "TCP"}],
        "env": [{"name": "REGISTRY_STORAGE_DELETE_ENABLED", "value": "true"}],
        "volumeMounts": [{"name": "storage", "mountPath": "/var/lib/registry"}],
        "readinessProbe": {"httpGet": {"path": "/v2/", "port": REGISTRY_PORT}},
    }
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": dict(meta),
        "spec": {
            "replicas": 1,
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": selector},
            "template": {
                "metadata": {"labels": dict(selector)},
                "spec": {
                    "containers": [container],
                    "volumes": [
                        {"name": "storage", "persistentVolumeClaim": {"claimName": REGISTRY_NAME}}
                    ],
                },
            },
        },
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": dict(meta),
        "spec": {
            "type": "NodePort",
            "selector": selector,
            "ports": [
                {
                    "name": "registry",
                    "port": REGISTRY_PORT,
                    "targetPort": REGISTRY_PORT,
                    "nodePort": REGISTRY_NODE_PORT,
                    "protocol": "TCP",
                }
            ],
        },
    }
    return [claim, deployment, service]
