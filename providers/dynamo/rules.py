"""Dynamo: the admission rules of its own Runway applies beyond layer 2 of the overrides. Its
workers serve under the spec's name (the Provider default: Runway passes --served-model-name)."""

from __future__ import annotations

from collections.abc import Mapping

from core.fields.errors import FieldError, Reason
from core.fields.paths import FieldPath
from core.model.kinds import PIPELINE_PARALLEL, Engine, ModelDeployment, dig
from core.model.plugin import ProviderContext, Rules
from providers.dynamo.render import behind_gateway, is_test_backend, worker_names

OVERRIDES = FieldPath.root("spec", "provider", "overrides")
PIPELINE_PARALLEL_AT = FieldPath.root("spec", "engine", "args").key(PIPELINE_PARALLEL)


def admission_checks(
    md: ModelDeployment, context: ProviderContext, old: ModelDeployment | None
) -> tuple[list[FieldError], list[str]]:
    """Dynamo's own rules: a volume mounts read-write (the pinned DGD's volumeMounts have no
    readOnly); the Frontend's and the picker's own sizing apply only where that service runs;
    the mocker test backend simulates vLLM only, and serves through a standalone Frontend, so a
    gateway asked for is ignored."""
    errors = _sized_services(md) + _multinode(md)
    warnings = [
        f"spec.model.storage.volumes[{i}].readOnly is not honoured by Dynamo: its operator "
        "mounts every volume read-write (the DynamoGraphDeployment's volumeMounts have no readOnly)"
        for i, volume in enumerate(md.volumes)
        if volume.get("readOnly") is True
    ]
    if md.pipeline_parallel > 1 and not is_test_backend(md):
        warnings.append(
            f"spec.engine.args.pipeline-parallel-size: each replica spans {md.pipeline_parallel} "
            "nodes: the Dynamo operator places a multinode service through Grove or "
            "LeaderWorkerSet, which the dynamo-platform chart must have enabled (its defaults "
            "leave both off)"
        )
    if not is_test_backend(md):
        return errors, warnings
    if md.pipeline_parallel > 1:
        detail = (
            "the dynamo mocker test backend simulates each worker in one pod with no GPUs, so "
            "it places no replica across nodes"
        )
        errors.append(FieldError(str(PIPELINE_PARALLEL_AT), Reason.FORBIDDEN, detail))
    if md.engine_type and md.engine_type != Engine.VLLM:
        detail = "the dynamo mocker test backend only supports the vllm engine"
        errors.append(FieldError("spec.engine.type", Reason.UNSUPPORTED, detail))
    if dig(md.spec, "gateway", "enabled") is True:
        warnings.append(
            "spec.gateway.enabled is ignored by the dynamo mocker test backend: it serves through "
            "a standalone Frontend, with no endpoint picker and no gateway objects"
        )
    return errors, warnings


def _sized_services(md: ModelDeployment) -> list[FieldError]:
    """overrides.frontend sizes the standalone Frontend, which runs only without a gateway
    (behind one each worker serves through its own frontend sidecar); overrides.epp configures
    Dynamo's endpoint picker, which runs only behind one. Either where its service does not run
    would be dropped without a word."""
    overrides = md.overrides if isinstance(md.overrides, Mapping) else {}
    gateway = behind_gateway(md)
    if gateway and "frontend" in overrides:
        detail = (
            "behind a gateway Dynamo runs no standalone Frontend (each worker serves through its "
            "own frontend sidecar, chosen by the endpoint picker), so frontend sizes nothing: "
            "remove it, or size the picker with epp.replicas"
        )
        return [FieldError(str(OVERRIDES.child("frontend")), Reason.FORBIDDEN, detail)]
    if not gateway and "epp" in overrides:
        detail = (
            "Dynamo's endpoint picker (the Epp service) runs only behind a gateway "
            "(spec.gateway.enabled: true, and not with the mocker test backend); without one "
            "the standalone Frontend routes: remove epp, or size the Frontend with frontend"
        )
        return [FieldError(str(OVERRIDES.child("epp")), Reason.FORBIDDEN, detail)]
    return []


def _multinode(md: ModelDeployment) -> list[FieldError]:
    """spec.provider.overrides.spec.services.<name>.multinode (AI Runway's documented way to ask
    Dynamo for nodes) is merged into the graph, so it must say what Runway renders: a worker's
    nodeCount equals spec.engine.args.pipeline-parallel-size. Any other count breaks the
    operator's arithmetic (deploy/operator/internal/dynamo/backend_vllm.go
    needsTensorParallelMultinodeLaunch: the multi-node launch is injected only when TP x PP
    exceeds the GPUs of one container), leaving N pods that each load the whole model or wait
    for ranks that never come; a multinode on a service that is no worker places nothing."""
    services = dig(md.overrides if isinstance(md.overrides, Mapping) else {}, "spec", "services")
    if not isinstance(services, Mapping):
        return []
    workers = set(worker_names(md))
    nodes = md.pipeline_parallel
    errors: list[FieldError] = []
    for name, service in services.items():
        multinode = service.get("multinode") if isinstance(service, Mapping) else None
        if multinode is None:
            continue
        at = OVERRIDES.child("spec", "services").key(str(name)).child("multinode")
        if str(name) not in workers:
            detail = (
                f"{name} is not a worker service Runway renders for this model "
                f"({', '.join(sorted(workers))}): multinode places a worker's replicas across "
                "nodes; set spec.engine.args.pipeline-parallel-size instead"
            )
            errors.append(FieldError(str(at), Reason.FORBIDDEN, detail))
            continue
        count = multinode.get("nodeCount") if isinstance(multinode, Mapping) else None
        if count is not None and count != nodes:
            detail = (
                f"must equal spec.engine.args.pipeline-parallel-size ({nodes}"
                f"{', absent' if nodes == 1 else ''}): Runway renders each replica across that "
                "many nodes with tensor parallel = spec.resources.gpu.count on each, and the "
                "Dynamo operator launches across nodes only when tensor x pipeline parallel "
                "exceeds one pod's GPUs (deploy/operator/internal/dynamo/backend_vllm.go "
                "needsTensorParallelMultinodeLaunch); set pipeline-parallel-size to the nodes "
                "you want instead"
            )
            errors.append(FieldError(str(at.child("nodeCount")), Reason.INVALID, detail))
    return errors


RULES = Rules(admission_checks)
