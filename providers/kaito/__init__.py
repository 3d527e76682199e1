"""KAITO: one kaito.sh Workspace per ModelDeployment.

PROVIDER is this package as the core sees it (core/model/plugin.py): what its files offer, under
the names the core calls. No flag catalog: presets take no flags from the spec, and the llama.cpp
template always runs the user's image (there is no default to catalogue).
"""

from dataclasses import replace

from core.model.plugin import MultiNode, PodSecurity, PodSecurityLevel, Provider
from core.rendering.podsecurity import root_image
from providers.kaito.overrides import NAME, OVERRIDES
from providers.kaito.pods import PODS
from providers.kaito.render import render
from providers.kaito.rules import RULES
from providers.kaito.status import WATCHED, operator_service

# KAITO places a preset across nodes itself: it spans status.targetNodeCount nodes (what the
# preset's weights need of the instance type's GPUs) and writes pipeline-parallel-size as that
# count; a Workspace has no field that could ask for another.
MULTINODE = MultiNode(
    offered=False,
    why_not=(
        "kaito chooses a preset's parallelism itself: it spans as many GPU nodes as the "
        "preset's weights need on the instance type and sets pipeline-parallel-size to that "
        "node count (KAITO at KAITO_VERSION pkg/model/interface.go:395-427 configureParallelism, "
        "pkg/workspace/inference/preset_inferences.go:168-189), and a Workspace has no field to "
        "ask for another (api/v1beta1/workspace_types.go:87-106); a llama.cpp template runs one "
        "pod. Remove the key, or use a provider that offers multi-node serving"
    ),
)
# A preset's pods are KAITO's own, built from the Workspace, which has no pod fields: Runway
# declares nothing for them. What Runway writes: a llama.cpp Workspace's inference.template, which
# KAITO copies into the pod (render.py), and in built mode the image build Job (build.py).
POD_SECURITY = replace(
    root_image(
        "a llama.cpp Workspace's pods run aikit's runner or built image, or the user's, and its "
        "wait-for-image init container the registry image (docker.io/library/registry), none of "
        "them shown to run as a numeric non-root user; a preset's pods are KAITO's own (the "
        "Workspace has no pod fields), not declared by Runway"
    ),
    apart={
        "Job": PodSecurity(
            PodSecurityLevel.PRIVILEGED,
            "the image build (built mode) runs rootless BuildKit, which builds in a user "
            "namespace of its own: it needs the seccomp and AppArmor profiles Unconfined, as "
            "BuildKit's own rootless Job sets them (moby/buildkit "
            "examples/kubernetes/job.rootless.yaml)",
            ("forbidden AppArmor profile", "seccompProfile"),
        )
    },
)
PROVIDER = Provider(
    NAME,
    OVERRIDES,
    render,
    replace(PODS, operator_service=operator_service),
    WATCHED,
    rules=RULES,
    multinode=MULTINODE,
    pod_security=POD_SECURITY,
)
