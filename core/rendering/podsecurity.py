"""The securityContext of the pods Runway writes, by what their image allows, and the Pod Security
levels (core/model/plugin.py PodSecurity) those pods then meet.

Pod Security's restricted level (kubernetes.io/docs/concepts/security/pod-security-standards)
asks of every container: allowPrivilegeEscalation false, capabilities.drop ["ALL"], runAsNonRoot
true and a RuntimeDefault (or Localhost) seccomp profile. Runway writes all four where the image
runs as a user Kubernetes can tell is not root (a numeric USER), and, where the image runs as root,
the two that change nothing a root process of these engines does: no privilege escalation (a
root process has nothing to gain by a setuid binary) and the runtime's default seccomp profile
(the one `docker run` applies, under which the engines' own images are documented to run). Such a
root pod keeps the runtime's default capabilities (which baseline allows), because root writing
the model cache on a volume another user owns needs them (CAP_DAC_OVERRIDE, CAP_FOWNER), and runs
as root (runAsNonRoot would stop it at start), so it meets baseline, not restricted: ROOT_REFUSED
is what restricted then refuses in it. Nothing here sets readOnlyRootFilesystem: vLLM writes its
caches (~/.cache) in the image's filesystem unless a volume is given for them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from core.model.plugin import PodSecurity, PodSecurityLevel

# What Pod Security's restricted level refuses in a pod Runway hardens for a root image, as the
# API server's admission words each check (k8s.io/pod-security-admission policy
# check_capabilities_restricted.go and check_runAsNonRoot.go).
ROOT_REFUSED = ("unrestricted capabilities", "runAsNonRoot != true")


@dataclass(frozen=True, slots=True)
class Hardening:
    """The securityContext fields a pod's image allows: `non_root` when it runs as a numeric
    non-root user (runAsNonRoot, and no capabilities: a non-root process has none to use)."""

    non_root: bool

    def pod(self) -> dict[str, Any]:
        out: dict[str, Any] = {"runAsNonRoot": True} if self.non_root else {}
        return out | {"seccompProfile": {"type": "RuntimeDefault"}}

    def container(self) -> dict[str, Any]:
        out: dict[str, Any] = {"allowPrivilegeEscalation": False}
        if self.non_root:
            out["capabilities"] = {"drop": ["ALL"]}
        return out


ROOT_IMAGE = Hardening(non_root=False)
NON_ROOT_IMAGE = Hardening(non_root=True)


def harden(pod_spec: Mapping[str, Any], hardening: Hardening) -> dict[str, Any]:
    """A copy of `pod_spec` with the pod's securityContext and that of each of its containers and
    init containers, as `hardening` gives them (fields already there are kept)."""
    out = dict(pod_spec)
    out["securityContext"] = hardening.pod() | dict(pod_spec.get("securityContext") or {})
    for key in ("initContainers", "containers"):
        if key in pod_spec:
            out[key] = [harden_container(c, hardening) for c in pod_spec[key]]
    return out


def harden_container(container: Mapping[str, Any], hardening: Hardening) -> dict[str, Any]:
    """A copy of `container` with the securityContext `hardening` gives it."""
    own = dict(container.get("securityContext") or {})
    return {**container, "securityContext": hardening.container() | own}


def root_image(reason: str) -> PodSecurity:
    """The level of pods hardened for a root image (ROOT_IMAGE), and why their image runs as
    root."""
    return PodSecurity(PodSecurityLevel.BASELINE, reason, ROOT_REFUSED)


# The pods that run the vLLM image (Direct vLLM's and llm-d's, with their LeaderWorkerSets).
VLLM_IMAGE = root_image(
    "the vLLM image runs as root: vllm/vllm-openai is the vllm-openai target of vLLM's "
    "docker/Dockerfile (`FROM vllm-openai-base AS vllm-openai`), and no stage of that file sets "
    "a USER; runAsNonRoot would stop it at start, and root keeps the runtime's default "
    "capabilities to write a model cache another user owns"
)
