"""A multi-node vLLM replica as a LeaderWorkerSet group, for every provider whose vLLM pods Runway
renders itself (llm-d's and Direct vLLM's): one replica spans P pods, P =
spec.engine.args["pipeline-parallel-size"], each with spec.resources.gpu.count GPUs.

LeaderWorkerSet is a shared upstream here, as Deployment is: no provider's kind. Facts at
LWS_VERSION (sigs.k8s.io/lws, tag v0.9.0):
  - the controller labels every leader pod leaderworkerset.sigs.k8s.io/worker-index "0" and
    selects leaders by it itself (pkg/controllers/leaderworkerset_controller.go:416-419); the pod
    webhook gives workers their own index (pkg/webhooks/pod_webhook.go:135-140), so the Service
    and the InferencePool select leaders only with that label;
  - the pod webhook sets LWS_LEADER_ADDRESS on every container of the group
    (pkg/utils/pod/pod_utils.go:132-146): the leader's stable DNS name, which the workers join;
  - startupPolicy LeaderCreated (the CRD's default, written out: no drift) starts the workers
    with the leader; LeaderReady would wait for a leader whose vLLM cannot serve before its
    workers have joined;
  - restartPolicy RecreateGroupOnPodRestart (the CRD's default, written out): a Ray cluster that
    lost a node does not heal, so the whole group restarts, as LWS's own vLLM example sets
    (docs/examples/vllm/GPU/lws.yaml);
  - networkConfig.subdomainPolicy UniquePerReplica: with the webhook's default, Shared, the
    controller creates a headless Service named after the LeaderWorkerSet
    (pkg/controllers/leaderworkerset_controller.go:213-216), the name of the Service Runway
    renders for the leaders; UniquePerReplica gives each group its own headless Service named
    after its leader pod (pkg/controllers/pod_controller.go:116-117), which LWS_LEADER_ADDRESS
    names (the webhook sets the leader's subdomain to its own name, pod_webhook.go:110-113).
The launch is vLLM's own multi-node recipe (examples/online_serving/multi-node-serving.sh, run by
LWS's vLLM example): a Ray head on the leader, `ray start --address=<leader>:6379 --block` on each
worker, and on the leader `vllm serve` with --tensor-parallel-size (GPUs per pod),
--pipeline-parallel-size P and --distributed-executor-backend ray; vLLM waits for the Ray
placement group of TP x PP GPUs before it loads the model (vllm/v1/executor/ray_utils.py
_wait_until_pg_ready), so the leader needs no wait of its own. Every pod of the group gets the
model cache (spec.model.storage) and the cache variables: each Ray worker loads its own stage.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from core.fields.errors import FieldError, Reason
from core.model.kinds import ModelDeployment, dig
from core.model.plugin import PodGroup, Pods, Server, UpstreamKind
from core.model.versions import Versions
from core.rendering.common import (
    LABEL_MODEL_DEPLOYMENT,
    deployment_and_service,
    engine_pod_spec,
    object_meta,
    pod_annotations,
    pod_labels,
    pod_volumes,
)
from core.rendering.engines import SERVING_CONTAINER, vllm_container, vllm_pod_container
from core.rendering.pods import template_port, template_selector

LEADERWORKERSETS = UpstreamKind(
    "leaderworkerset.x-k8s.io", "v1", "leaderworkersets", "LeaderWorkerSet"
)
WORKER_INDEX = "leaderworkerset.sigs.k8s.io/worker-index"
LEADER_LABELS = {WORKER_INDEX: "0"}
LEADER_ADDRESS = "LWS_LEADER_ADDRESS"
RAY_PORT = 6379  # the Ray head's port in vLLM's multi-node-serving.sh
WORKER_CONTAINER = "ray-worker"
# The leader runs a Ray head, then execs vLLM with the container's args ("$@"; "vllm" is $0).
LEADER_COMMAND = ("/bin/sh", "-c", f'ray start --head --port={RAY_PORT} && exec vllm serve "$@"')
RAY_EXECUTOR = ("--distributed-executor-backend", "ray")
EXECUTOR_KEY = "distributed-executor-backend"
_TEMPLATE = "spec.leaderWorkerTemplate.leaderTemplate"
# Access modes that a group's pods on several nodes cannot share (Kubernetes' PersistentVolume
# access modes: ReadWriteOnce is one node's, ReadWriteOncePod one pod's).
ONE_WRITER = {"ReadWriteOnce": "node", "ReadWriteOncePod": "pod"}
# The LWS webhook's defaults (pkg/webhooks/leaderworkerset_webhook.go:61-70), written out: no drift.
ROLLOUT = {
    "type": "RollingUpdate",
    "rollingUpdateConfiguration": {"maxUnavailable": 1, "maxSurge": 0, "partition": 0},
}


def is_multinode(md: ModelDeployment) -> bool:
    return md.pipeline_parallel > 1


def leader_selector(md: ModelDeployment) -> dict[str, str]:
    """The labels the pool selects: the template's, and, for a multi-node model, the leader's
    worker index (a worker pod serves nothing)."""
    return template_selector(md) | (LEADER_LABELS if is_multinode(md) else {})


def leader_pods(objects: Sequence[Mapping[str, Any]]) -> list[PodGroup]:
    """The leader pods the LWS controller creates from each rendered LeaderWorkerSet: the
    leader template's labels and the worker index it adds."""
    return [
        PodGroup(
            f"LeaderWorkerSet/{dig(o, 'metadata', 'name')} {_TEMPLATE}.metadata.labels "
            f"(and {WORKER_INDEX}: 0, the LWS controller's)",
            {**(dig(o, *_TEMPLATE.split("."), "metadata", "labels") or {}), **LEADER_LABELS},
        )
        for o in objects
        if o.get("kind") == LEADERWORKERSETS.kind
    ]


# The pods of a provider whose vLLM pods Runway renders as Deployments or LeaderWorkerSets.
VLLM_PODS = Pods(leader_selector, template_port, leader_pods)


def serving_containers(obj: Mapping[str, Any]) -> list[Server]:
    """The leader's vLLM container of a rendered LeaderWorkerSet; one replica of it spans the
    group's `size` pods."""
    if obj.get("kind") != LEADERWORKERSETS.kind:
        return []
    template = dig(obj, *_TEMPLATE.split(".")) or {}
    nodes = int(dig(obj, "spec", "leaderWorkerTemplate", "size") or 1)
    labels = {**(dig(template, "metadata", "labels") or {}), **LEADER_LABELS}
    return [
        Server(obj, f"{_TEMPLATE}.spec.containers[{i}]", c, labels, nodes=nodes)
        for i, c in enumerate(dig(template, "spec", "containers") or ())
        if c.get("name") == SERVING_CONTAINER
    ]


def multinode_checks(md: ModelDeployment) -> list[FieldError]:
    """What a LeaderWorkerSet replica cannot honour: Deployment overrides (the pods are not a
    Deployment's), a claim Runway creates that only one node or pod may mount (every pod of the
    group mounts the model cache), and another executor than Ray (vLLM's multi-node recipe runs
    on Ray)."""
    if not is_multinode(md):
        return []
    errors = []
    if dig(md.spec, "provider", "overrides", "spec") is not None:
        errors.append(
            FieldError(
                "spec.provider.overrides.spec",
                Reason.UNSUPPORTED,
                f"a replica across {md.pipeline_parallel} nodes (pipeline-parallel-size) is a "
                "LeaderWorkerSet group, not a Deployment: the Deployment overrides do not apply",
            )
        )
    errors += [
        FieldError(
            f"spec.model.storage.volumes[{i}].accessMode",
            Reason.UNSUPPORTED,
            f"{volume['accessMode']} lets one {ONE_WRITER[volume['accessMode']]} mount the claim, "
            f"but every pod of a replica across {md.pipeline_parallel} nodes mounts it: use "
            "ReadWriteMany (the default) or ReadOnlyMany",
        )
        for i, volume in enumerate(md.volumes)
        if volume.get("accessMode") in ONE_WRITER
    ]
    executor = md.engine_args.get(EXECUTOR_KEY)
    if executor is not None and str(executor) != "ray":
        errors.append(
            FieldError(
                f"spec.engine.args.{EXECUTOR_KEY}",
                Reason.UNSUPPORTED,
                f"{executor!s} cannot span nodes here: a replica across {md.pipeline_parallel} "
                "nodes runs vLLM's multi-node recipe on Ray (examples/online_serving/"
                "multi-node-serving.sh); leave it out or set ray",
            )
        )
    return errors


def worker_container(
    md: ModelDeployment,
    pins: Versions,
    *,
    gpus: int,
    memory: str | None,
    mounts: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """A worker of the group: a Ray node joining the leader's head, with the leader's image,
    GPUs, environment and mounts (it loads its own pipeline stage)."""
    container = vllm_pod_container(
        md, pins, WORKER_CONTAINER, gpus=gpus, memory=memory, mounts=mounts
    )
    container["command"] = ["ray"]
    container["args"] = ["start", f"--address=$({LEADER_ADDRESS}):{RAY_PORT}", "--block"]
    return container


def leaderworkerset_and_service(
    md: ModelDeployment,
    name: str,
    pins: Versions,
    *,
    gpus: int,
    memory: str | None,
    replicas: int,
    component: str = "server",
) -> list[dict[str, Any]]:
    """The LeaderWorkerSet `name` (`replicas` groups of md.pipeline_parallel pods) running
    `md`'s vLLM across each group, and the Service of its leaders."""
    volumes, mounts = pod_volumes(md, gpus=gpus)
    executor = () if EXECUTOR_KEY in md.engine_args else RAY_EXECUTOR  # the user's own: ray
    leader = vllm_container(
        md, pins, gpus=gpus, memory=memory, mounts=mounts, host=True, extra_args=executor
    )
    leader["command"] = [*LEADER_COMMAND, "vllm"]
    worker = worker_container(md, pins, gpus=gpus, memory=memory, mounts=mounts)
    selector = {LABEL_MODEL_DEPLOYMENT: md.name, "app.kubernetes.io/component": component}
    spec = {
        "replicas": replicas,
        "startupPolicy": "LeaderCreated",
        "networkConfig": {"subdomainPolicy": "UniquePerReplica"},
        "rolloutStrategy": dict(ROLLOUT),
        "leaderWorkerTemplate": {
            "size": md.pipeline_parallel,
            "restartPolicy": "RecreateGroupOnPodRestart",
            "leaderTemplate": _template(md, selector, leader, volumes),
            "workerTemplate": _template(md, selector, worker, volumes),
        },
    }
    # The Service deployment_and_service gives a Deployment of these pods, selecting leaders.
    _, service = deployment_and_service(md, name, leader, replicas=replicas, component=component)
    service["spec"]["selector"] = selector | LEADER_LABELS
    lws = {
        "apiVersion": f"{LEADERWORKERSETS.group}/{LEADERWORKERSETS.version}",
        "kind": LEADERWORKERSETS.kind,
        "metadata": object_meta(md, name),
        "spec": spec,
    }
    return [lws, service]


def _template(
    md: ModelDeployment,
    selector: Mapping[str, str],
    container: Mapping[str, Any],
    volumes: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    pod_spec = engine_pod_spec(md, [container])
    if volumes:
        pod_spec["volumes"] = [dict(v) for v in volumes]
    template: dict[str, Any] = {
        "metadata": {"labels": pod_labels(md, **selector)},
        "spec": pod_spec,
    }
    if pod_annotations(md):
        template["metadata"]["annotations"] = pod_annotations(md)
    return template
