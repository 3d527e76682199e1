"""The kinds the status controller watches: ModelDeployments, InferenceProviderConfigs,
ExternalModelProviders (what gateway-sync reads) and the upstream kinds of the providers' objects
(kubeio.objects), each with where it is listed: all namespaces or the controller's one.

What it watches is what it owns, nothing else:
- an upstream kind (Deployments, LeaderWorkerSets, the providers' kinds, the gateway's) is
  listed and watched with the label selector of Runway's managed-by label, so the API server
  never sends an object Runway did not render;
- Runway's own kinds (ModelDeployment, InferenceProviderConfig, ExternalModelProvider) carry no
  selector: every object of them is Runway's by its kind;
- ExternalModelProviders only wake a gateway sync in this process when their generation moves:
  they are watched as metadata alone (PartialObjectMetadata), never their spec or status;
- no Secret, ConfigMap, Service, Pod or EndpointSlice is watched or cached: what the process
  reads of them (a provider API key, health's operator pods) it reads when it needs it."""

from __future__ import annotations

from dataclasses import dataclass

from core.model.kinds import (
    EMP_GROUP,
    EXTERNAL_MODEL_PROVIDER_PLURAL,
    GROUP,
    INFERENCE_PROVIDER_CONFIG_PLURAL,
    MODEL_DEPLOYMENT_PLURAL,
    VERSION,
)
from core.rendering.common import LABEL_MANAGED_BY, MANAGED_BY
from kubeio.upstream import upstream_kinds
from kubeio.watch import Watched


@dataclass(frozen=True, slots=True)
class Kind:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True
    managed_only: bool = True  # only objects with Runway's managed-by label
    metadata_only: bool = False  # the objects' metadata alone (PartialObjectMetadata)

    def watched(self, namespace: str | None) -> Watched:
        """What the watch loop lists of this kind when the controller watches `namespace`
        (None: every namespace)."""
        return Watched(
            self.group,
            self.version,
            self.plural,
            namespace=namespace if self.namespaced else None,
            label_selector=f"{LABEL_MANAGED_BY}={MANAGED_BY}" if self.managed_only else None,
            metadata_only=self.metadata_only,
        )


MODEL_DEPLOYMENTS = Kind(
    GROUP, VERSION, MODEL_DEPLOYMENT_PLURAL, "ModelDeployment", managed_only=False
)
PROVIDER_CONFIGS = Kind(
    GROUP,
    VERSION,
    INFERENCE_PROVIDER_CONFIG_PLURAL,
    "InferenceProviderConfig",
    namespaced=False,
    managed_only=False,
)
UPSTREAM = tuple(Kind(*kind) for kind in upstream_kinds())
# What gateway-sync reads besides ModelDeployments and provider configs; watched so that a
# new generation wakes a gateway sync running in this process (--litellm-url): its metadata is
# all the controller reads of it (the sync reads the objects themselves).
EXTERNAL_MODEL_PROVIDERS = Kind(
    EMP_GROUP,
    VERSION,
    EXTERNAL_MODEL_PROVIDER_PLURAL,
    "ExternalModelProvider",
    managed_only=False,
    metadata_only=True,
)
KINDS = (MODEL_DEPLOYMENTS, PROVIDER_CONFIGS, EXTERNAL_MODEL_PROVIDERS, *UPSTREAM)
# A change of these kinds' spec (a new generation), or one created or deleted, changes what the
# gateway registers; a status write does not.
GATEWAY_INPUTS = (MODEL_DEPLOYMENTS, PROVIDER_CONFIGS, EXTERNAL_MODEL_PROVIDERS)
_WATCHED = frozenset((f"{k.group}/{k.version}", k.kind) for k in UPSTREAM)


def is_watched(api_version: str, kind: str) -> bool:
    """Whether the controller watches objects of this kind (sees them missing)."""
    return (api_version, kind) in _WATCHED
