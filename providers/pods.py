"""The serving pods each provider's upstream operator creates, at the pinned versions: which
labels they carry (what an InferencePool may select) and which port the model server listens on.

The rules, per provider:
  llmd, vllm  Runway renders the Deployments itself: the pods carry the template labels
              (airunway.ai/model-deployment, app.kubernetes.io/component, podTemplate labels);
              the server listens on --port 8000.
  kaito       KAITO (v0.10.0, pkg/workspace/manifests/manifests.go) labels the preset
              StatefulSet's pods with kaito.sh/workspace=<Workspace name> only; a template
              Workspace's pods get the template's labels plus that one. Presets serve on 5000
              (consts.PortInferenceServer); Runway's llama.cpp template passes --address=:5000.
  dynamo      The Dynamo operator creates and owns the InferencePool (managesInferencePool), so
              Runway renders no pool and no selector.
  kuberay     KubeRay (v1.3.0, ray-operator/controllers/ray/common/pod.go labelPod) gives each
              pod its group template's labels plus ray.io/node-type, ray.io/group,
              ray.io/cluster (which the template cannot override) and a few more; Ray Serve's
              HTTP proxy on the head listens on 8000, so the pool selects the head's labels.
"""

from __future__ import annotations

from providers.model import ModelDeployment
from providers.rendering import HTTP_PORT, LABEL_MODEL_DEPLOYMENT

KAITO_WORKSPACE_LABEL = "kaito.sh/workspace"
KAITO_PORT = 5000
RAY_HEAD_LABELS = {"ray.io/node-type": "head", "ray.io/is-ray-node": "yes"}


def pool_selector(md: ModelDeployment) -> dict[str, str]:
    """Labels every serving pod of `md` carries once its operator has created it."""
    if md.provider_name == "kaito":
        return {KAITO_WORKSPACE_LABEL: md.name}
    return {LABEL_MODEL_DEPLOYMENT: md.name}


def model_port(md: ModelDeployment) -> int:
    """The port the model server in those pods listens on."""
    return KAITO_PORT if md.provider_name == "kaito" else HTTP_PORT
