"""Pipeline parallelism: a replica across several nodes, asked for as
spec.engine.args["pipeline-parallel-size"] (the key AI Runway's own UI writes for multi-node).

Each of the P pods of a replica gets spec.resources.gpu.count GPUs and runs tensor parallel over
them, so GPUs per pod x pods = tensor parallel x pipeline parallel. Whether and how the pods are
placed is the provider's (its MultiNode role value, its render and its own admission rules); the
core refuses what no provider can run: a size that is not a positive whole number, more than one
node without GPUs, and more than one node where the provider places a replica on one.
"""

from __future__ import annotations

from core.fields.errors import FieldError, Reason
from core.fields.paths import FieldPath
from core.model.kinds import PIPELINE_PARALLEL, ModelDeployment, positive_whole
from core.model.plugin import Provider

AT = FieldPath.root("spec", "engine", "args").key(PIPELINE_PARALLEL)


def check_pipeline_parallel(md: ModelDeployment, plugin: Provider | None) -> list[FieldError]:
    """The core's rules on spec.engine.args.pipeline-parallel-size (none when it is absent)."""
    if PIPELINE_PARALLEL not in md.engine_args:
        return []
    if positive_whole(md.engine_args[PIPELINE_PARALLEL]) is None:
        detail = (
            "must be a positive whole number: the nodes one replica spans, each running tensor "
            "parallel over spec.resources.gpu.count GPUs"
        )
        return [FieldError(str(AT), Reason.INVALID, detail)]
    nodes = md.pipeline_parallel
    if nodes == 1:
        return []
    if not md.needs_gpu:
        detail = (
            f"a replica across {nodes} nodes needs GPUs on each: set spec.resources.gpu.count "
            "(pipeline parallelism splits the model's layers over GPUs, not CPUs)"
        )
        return [FieldError(str(AT), Reason.INVALID, detail)]
    if plugin is not None and not plugin.multinode.offered:
        detail = (
            f"provider {plugin.name} cannot run a replica across {nodes} nodes: "
            f"{plugin.multinode.why_not}"
        )
        return [FieldError(str(AT), Reason.FORBIDDEN, detail)]
    return []
