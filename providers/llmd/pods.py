"""llm-d: Runway renders the Deployments itself, so the pods carry the template labels
(airunway.ai/model-deployment, app.kubernetes.io/component, llm-d.ai/role when split, podTemplate
labels) and the pods' http port is 8000 (vLLM's, or the decode pods' routing sidecar's).

The picker of a disaggregated pool runs llm-d-inference-scheduler v<LLMD_VERSION>'s own P/D
configuration (deploy/config/pd-epp-config.yaml): a prefill and a decode profile, each filtered
by llm-d.ai/role and scored on prefix-cache hits (weight 2) and queue depth (weight 1);
pd-profile-handler runs the prefill profile only when prefix-based-pd-decider finds more than 16
uncached prompt tokens (upstream's default threshold), and prefill-header-handler tells the decode
pod's sidecar which prefill pod to ask. primaryPort is left out: it is for data-parallel pods
(0, its default, means the pool's port)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from core.fields.errors import FieldError, Reason
from core.model.kinds import PIPELINE_PARALLEL, ModelDeployment
from core.model.plugin import ProviderContext, Rules
from core.rendering.leaderworkerset import multinode_checks

PD_PROFILE_HANDLER = "pd-profile-handler"


@dataclass(frozen=True, slots=True)
class PDFacts:
    """llm-d-inference-scheduler's P/D facts at the pin (providers/llmd/facts/pd.json, from
    `make facts`): the picker configuration, the role label and its values, the filters that
    select on it, and the routing sidecar's image, flags and connectors."""

    picker_config: Mapping[str, Any]
    role_label: str
    roles: Mapping[str, str]
    filters: Mapping[str, str]
    sidecar_image: str
    sidecar_flags: Mapping[str, Mapping[str, Any]]
    connectors: tuple[str, ...]


def pd_facts(context: ProviderContext) -> PDFacts:
    """The P/D facts the registry hands the llm-d plug-in (shipped with the package)."""
    pd: Mapping[str, Any] = context.facts["pd"]
    sidecar = pd["sidecar"]
    return PDFacts(
        pd["pickerConfig"],
        str(pd["roleLabel"]),
        dict(pd["roles"]),
        dict(pd["filters"]),
        str(sidecar["image"]),
        dict(sidecar["flags"]),
        tuple(sidecar["connectors"]),
    )


def picker_config(
    md: ModelDeployment, configured: str | None, context: ProviderContext
) -> str | None:
    """Aggregated: the provider config's. Disaggregated: upstream's P/D configuration, unless
    the provider config's is a P/D configuration of its own (it names pd-profile-handler)."""
    if md.is_disaggregated and PD_PROFILE_HANDLER not in (configured or ""):
        config = pd_facts(context).picker_config
        return yaml.safe_dump(dict(config), sort_keys=False, default_flow_style=False)
    return configured


def sidecar_flag_problems(args: Sequence[str], facts: PDFacts, where: str) -> list[str]:
    """Arguments the pinned routing sidecar would refuse: Go's flag package stops the process
    at a flag it does not define, a bool given as a separate word, or (cmd/pd-sidecar) a
    connector it does not support."""
    problems = []
    for arg in args:
        name, has_value, value = arg.lstrip("-").partition("=")
        flag = facts.sidecar_flags.get(name)
        if not arg.startswith("-") or flag is None:
            problems.append(f"{where} {arg!r}: the pinned routing sidecar defines no such flag")
        elif flag["type"] != "bool" and not has_value:
            problems.append(f"{where} {arg!r}: give the value as {arg}=<value>")
        elif name == "connector" and value not in facts.connectors:
            supported = ", ".join(facts.connectors)
            problems.append(f"{where} {arg!r}: the sidecar supports {supported}")
    return problems


def admission_checks(
    md: ModelDeployment, context: ProviderContext, old: ModelDeployment | None
) -> tuple[list[FieldError], list[str]]:
    """A replica across nodes is a LeaderWorkerSet group (core/rendering/leaderworkerset.py
    multinode_checks), for the aggregated shape only: a disaggregated model's decode pod pairs
    its routing sidecar (cmd/pd-sidecar) and NIXL side channel with one vLLM in the same pod,
    and llm-d's own multi-node P/D (guides/wide-ep-lws) spreads data and expert parallel ranks
    over the group, not Ray pipeline stages."""
    errors = multinode_checks(md)
    if md.is_disaggregated and md.pipeline_parallel > 1:
        errors.append(
            FieldError(
                f"spec.engine.args.{PIPELINE_PARALLEL}",
                Reason.UNSUPPORTED,
                "llm-d places a replica across nodes for aggregated serving only: a "
                "disaggregated decode pod pairs its routing sidecar and NIXL side channel with "
                "one vLLM in the pod (llm-d-inference-scheduler cmd/pd-sidecar), and llm-d's own "
                "multi-node P/D (guides/wide-ep-lws) runs data and expert parallel ranks, not "
                "pipeline stages; use spec.serving.mode aggregated, or tensor parallel on one node",
            )
        )
    return errors, []


RULES = Rules(admission_checks, picker_config=picker_config)
