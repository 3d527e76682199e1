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

from core.model.kinds import ModelDeployment
from core.rendering.pods import no_operator_pods, template_port, template_selector

pool_selector = template_selector
model_port = template_port
operator_pods = no_operator_pods

PD_PROFILE_HANDLER = "pd-profile-handler"
PD_PICKER_CONFIG = """\
apiVersion: inference.networking.x-k8s.io/v1alpha1
kind: EndpointPickerConfig
featureGates:
- prepareDataPlugins
plugins:
- type: prefill-header-handler
- type: prefix-cache-scorer
  parameters:
    maxPrefixBlocksToMatch: 256
    lruCapacityPerServer: 31250
- type: queue-scorer
- type: prefill-filter
- type: decode-filter
- type: max-score-picker
- type: prefix-based-pd-decider
  parameters:
    nonCachedTokens: 16
- type: pd-profile-handler
  parameters:
    deciderPluginName: prefix-based-pd-decider
schedulingProfiles:
- name: prefill
  plugins:
  - pluginRef: prefill-filter
  - pluginRef: max-score-picker
  - pluginRef: prefix-cache-scorer
    weight: 2
  - pluginRef: queue-scorer
    weight: 1
- name: decode
  plugins:
  - pluginRef: decode-filter
  - pluginRef: max-score-picker
  - pluginRef: prefix-cache-scorer
    weight: 2
  - pluginRef: queue-scorer
    weight: 1
"""


def picker_config(md: ModelDeployment, configured: str | None) -> str | None:
    """Aggregated: the provider config's. Disaggregated: upstream's P/D configuration, unless
    the provider config's is a P/D configuration of its own (it names pd-profile-handler)."""
    if md.is_disaggregated and PD_PROFILE_HANDLER not in (configured or ""):
        return PD_PICKER_CONFIG
    return configured
