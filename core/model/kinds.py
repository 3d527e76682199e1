"""Read-only typed views over the plain dicts of Runway's three kinds.

The wire format stays a dict (so nothing unknown is lost); views only read. Accessors tolerate
missing parents and wrong types (they answer the default), because they also run on objects that
the structural check has already rejected.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Any, NamedTuple

GROUP = "airunway.ai"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
MODEL_DEPLOYMENT = "ModelDeployment"
INFERENCE_PROVIDER_CONFIG = "InferenceProviderConfig"
EMP_GROUP = "gateway.tokenfactory.mirantis.com"
EMP_API_VERSION = f"{EMP_GROUP}/{VERSION}"
EXTERNAL_MODEL_PROVIDER = "ExternalModelProvider"
# The resource names of the three kinds in the API server's paths (all served at VERSION).
MODEL_DEPLOYMENT_PLURAL = "modeldeployments"
INFERENCE_PROVIDER_CONFIG_PLURAL = "inferenceproviderconfigs"
EXTERNAL_MODEL_PROVIDER_PLURAL = "externalmodelproviders"


class ApiKind(NamedTuple):
    """A kind as the API server's custom-object calls name it: Runway's own three below, and
    the upstream kinds a provider renders (core.model.plugin.UpstreamKind)."""

    group: str
    version: str
    plural: str
    kind: str


MODEL_DEPLOYMENTS = ApiKind(GROUP, VERSION, MODEL_DEPLOYMENT_PLURAL, MODEL_DEPLOYMENT)
INFERENCE_PROVIDER_CONFIGS = ApiKind(
    GROUP, VERSION, INFERENCE_PROVIDER_CONFIG_PLURAL, INFERENCE_PROVIDER_CONFIG
)
EXTERNAL_MODEL_PROVIDERS = ApiKind(
    EMP_GROUP, VERSION, EXTERNAL_MODEL_PROVIDER_PLURAL, EXTERNAL_MODEL_PROVIDER
)
DEFAULT_GPU_TYPE = "nvidia.com/gpu"
# The namespace the API server gives an object without one, and why an object of another API
# group is skipped (admission, validate and the render say the same).
DEFAULT_NAMESPACE = "default"
NOT_RUNWAYS = "not a kind of Runway's API groups"

# Where the selection is stamped (status would be dropped at admission; see DESIGN.md).
ANNOTATION_ENGINE_SELECTION = "airunway.ai/engine-selection"
ANNOTATION_ENGINE_REASON = "airunway.ai/engine-selected-reason"
ANNOTATION_PROVIDER_SELECTION = "airunway.ai/provider-selection"
ANNOTATION_PROVIDER_REASON = "airunway.ai/provider-selected-reason"


class Engine(StrEnum):
    VLLM = "vllm"
    SGLANG = "sglang"
    TRTLLM = "trtllm"
    LLAMACPP = "llamacpp"


ENGINE_PREFERENCE = (Engine.VLLM, Engine.SGLANG, Engine.TRTLLM, Engine.LLAMACPP)


class ServingMode(StrEnum):
    AGGREGATED = "aggregated"
    DISAGGREGATED = "disaggregated"


class ModelSource(StrEnum):
    HUGGINGFACE = "huggingface"
    CUSTOM = "custom"


class VolumePurpose(StrEnum):
    MODEL_CACHE = "modelCache"
    COMPILATION_CACHE = "compilationCache"
    CUSTOM = "custom"


class Choice(StrEnum):
    """How a selection was made; the value of the *-selection annotations."""

    EXPLICIT = "explicit"
    AUTO = "auto"


def dig(obj: Any, *keys: str) -> Any:
    """obj[k1][k2]..., or None as soon as a level is missing or not an object."""
    for key in keys:
        # Decoded JSON is dicts: the exact type check first spares the (slower) ABC check on
        # every level of every read (selection reads the spec dozens of times per admission).
        if type(obj) is not dict and not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


# The spec.engine.args key that asks for pipeline parallelism, and so for a replica across nodes.
PIPELINE_PARALLEL = "pipeline-parallel-size"


def positive_whole(value: Any) -> int | None:
    """A positive whole number written as an integer or as its decimal digits ("2"), the way
    spec.engine.args values come; None for anything else (0, "-1", "2.0", true, "٢")."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value > 0 else None
    if isinstance(value, str) and 0 < len(value) <= 9 and value.isascii() and value.isdigit():
        number = int(value)
        return number if number > 0 else None
    return None


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _map(value: Any) -> Mapping[str, Any]:
    return value if type(value) is dict or isinstance(value, Mapping) else {}


def _list(value: Any) -> Sequence[Any]:
    return value if isinstance(value, list) else ()


class _View:
    """What every view has: the dict it reads, and the object's name and namespace."""

    __slots__ = ("obj",)

    def __init__(self, obj: Mapping[str, Any]) -> None:
        self.obj = obj

    @property
    def name(self) -> str:
        return _str(dig(self.obj, "metadata", "name"))

    @property
    def namespace(self) -> str:
        return _str(dig(self.obj, "metadata", "namespace"))


class ModelDeployment(_View):
    """A view of one ModelDeployment dict."""

    __slots__ = ()

    @property
    def annotations(self) -> Mapping[str, Any]:
        return _map(dig(self.obj, "metadata", "annotations"))

    @property
    def spec(self) -> Mapping[str, Any]:
        return _map(self.obj.get("spec"))

    @property
    def model_id(self) -> str:
        return _str(dig(self.spec, "model", "id"))

    @property
    def model_source(self) -> str:
        return _str(dig(self.spec, "model", "source")) or ModelSource.HUGGINGFACE

    @property
    def served_name(self) -> str:
        return _str(dig(self.spec, "model", "servedName"))

    @property
    def engine_type(self) -> str:
        return _str(dig(self.spec, "engine", "type"))

    @property
    def engine(self) -> Mapping[str, Any]:
        return _map(self.spec.get("engine"))

    @property
    def legacy_image(self) -> str:
        return _str(self.spec.get("image"))

    @property
    def image_override(self) -> str:
        """spec.engine.image, else the legacy spec.image."""
        return _str(self.engine.get("image")) or self.legacy_image

    @property
    def serving_mode(self) -> str:
        return _str(dig(self.spec, "serving", "mode")) or ServingMode.AGGREGATED

    @property
    def is_disaggregated(self) -> bool:
        return self.serving_mode == ServingMode.DISAGGREGATED

    @property
    def gpu_count(self) -> int:
        return _int(dig(self.spec, "resources", "gpu", "count"))

    @property
    def pipeline_parallel(self) -> int:
        """The nodes (pods) one replica spans: spec.engine.args["pipeline-parallel-size"], the
        key AI Runway's own UI writes; each of those pods gets spec.resources.gpu.count GPUs and
        runs tensor parallel over them. 1 when absent or not a positive whole number (admission
        refuses those: core/checks/parallel.py)."""
        return positive_whole(self.engine_args.get(PIPELINE_PARALLEL)) or 1

    @property
    def engine_args(self) -> Mapping[str, Any]:
        return _map(self.engine.get("args"))

    @property
    def needs_gpu(self) -> bool:
        """GPU placement as selection sees it: a GPU count, or disaggregated serving."""
        return self.gpu_count > 0 or self.is_disaggregated

    @property
    def provider_name(self) -> str:
        return _str(dig(self.spec, "provider", "name"))

    @property
    def overrides(self) -> Any:
        return dig(self.spec, "provider", "overrides")

    @property
    def volumes(self) -> Sequence[Mapping[str, Any]]:
        return [
            v
            for v in _list(dig(self.spec, "model", "storage", "volumes"))
            if isinstance(v, Mapping)
        ]

    @property
    def recorded_provider(self) -> str:
        """The provider this object already runs on: spec, else AI Runway's status record."""
        return self.provider_name or _str(dig(self.obj, "status", "provider", "name"))

    @property
    def recorded_engine(self) -> str:
        return self.engine_type or _str(dig(self.obj, "status", "engine", "type"))


class InferenceProviderConfig(_View):
    """A view of one InferenceProviderConfig dict (cluster-scoped; name == provider name)."""

    __slots__ = ()

    @property
    def engines(self) -> Sequence[Mapping[str, Any]]:
        return [
            e
            for e in _list(dig(self.obj, "spec", "capabilities", "engines"))
            if isinstance(e, Mapping)
        ]

    @property
    def rules(self) -> Sequence[Mapping[str, Any]]:
        return [r for r in _list(dig(self.obj, "spec", "selectionRules")) if isinstance(r, Mapping)]

    @property
    def ready(self) -> bool:
        """status.ready when a status exists; a config without status (shipped, GitOps) is ready."""
        status = self.obj.get("status")
        if not isinstance(status, Mapping) or "ready" not in status:
            return True
        return status.get("ready") is True


class ExternalModelProvider(_View):
    """A view of one ExternalModelProvider dict (gateway.tokenfactory.mirantis.com/v1alpha1)."""

    __slots__ = ()

    @property
    def base_url(self) -> str:
        return _str(dig(self.obj, "spec", "baseURL"))

    @property
    def secret_name(self) -> str:
        return _str(dig(self.obj, "spec", "credentialsSecretRef", "name"))

    @property
    def secret_key(self) -> str:
        return _str(dig(self.obj, "spec", "credentialsSecretRef", "key")) or "apiKey"

    @property
    def served_names(self) -> list[str]:
        models = _list(dig(self.obj, "spec", "models"))
        return [_str(m.get("servedName")) for m in models if isinstance(m, Mapping)]
