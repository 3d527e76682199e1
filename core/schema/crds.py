"""The openAPIV3Schema of Runway's three CRDs, as data.

One source for the offline structural check (`runway validate` stands in for the API server) and
for the CRD manifests under kustomize/. Defaults declared here are the ones `defaults.py` fills,
so a hydrated object looks exactly like what the API server would store.
"""

from __future__ import annotations

from typing import Any

from core.model.kinds import (
    EXTERNAL_MODEL_PROVIDERS,
    INFERENCE_PROVIDER_CONFIGS,
    MODEL_DEPLOYMENTS,
    VERSION,
    ApiKind,
)
from core.model.names import ANNOTATIONS_MAX
from core.schema.structural import MAX_KEY_LENGTH

Schema = dict[str, Any]

DNS_LABEL = r"^[a-z0-9]([a-z0-9\-]*[a-z0-9])?$"
ENGINES = ("vllm", "sglang", "trtllm", "llamacpp")
SERVING_MODES = ("aggregated", "disaggregated")
API_FORMATS = ("openai-chat", "openai-responses", "anthropic-messages")

# Bounds on every string, list and map of a ModelDeployment spec that a selection rule or an
# admission check can read (issue #40, item 3). They are this CRD's, so the API server enforces
# them; admission's structure check (core.admission.hydrate) refuses past them by field path
# before any CEL rule runs; and the rule cost estimate (core.cel.cost) takes every field at its
# bound. Each is above anything AI Runway's examples and webhook test objects use.
NAME = 253  # a Kubernetes object name (DNS subdomain, RFC 1123): Secrets, PVCs, routes
LABEL = 63  # a DNS label and a label value
# A qualified key (labels, annotations, node selectors, tolerations): a DNS-subdomain prefix,
# "/", a 63-character name. Also the longest key of any map below (core.schema.structural).
QUALIFIED_KEY = MAX_KEY_LENGTH
# huggingface_hub's REPO_ID_REGEX (src/huggingface_hub/utils/_validators.py, validate_repo_id)
# allows "namespace/repo_name" with a repo name of `[\w\-.]{1,96}` and a namespace the regex
# does not bound; 256 leaves a namespace as long again as the name, and custom ids the same.
MODEL_ID = 256
# An image reference: distribution/reference bounds the name at 255 characters
# (NameTotalLengthMax), a tag at 128 and a sha512 digest is 135: 520 in all.
IMAGE = 1024
QUANTITY = 128  # as core.model.quantity.MAX_LENGTH: longer strings are no quantity
PATH = 4096  # PATH_MAX on Linux: mount paths, file paths
# One engine argument or environment value: long enough for inline JSON configs and chat
# templates (vLLM's --chat-template, --kv-transfer-config, a few KiB), far below the request.
VALUE = 32_768
SHORT = 64  # API versions, resource names, enum-like words (toleration operator, effect)
# Entry counts. The largest flag catalog Runway ships (providers/vllm/catalogs/vllm.json) has
# 433 flags: 512 args hold every flag once; extraArgs twice that, a flag and a value each.
ARGS = 512
EXTRA_ARGS = 1024
ENV = 256  # containers have no bound of their own; a few dozen is a large deployment
ENTRIES = 64  # node selectors, tolerations, pod labels
ANNOTATIONS = 1024  # the API server bounds their size (256 KiB together), not their number
# InferenceProviderConfig: AI Runway's configs hold at most 4 rules; all of one config's rules
# together are held to one cost limit (core.cel.rules.CONFIG_COST_LIMIT) anyway. The same
# number as core.selection.configs.MAX_RULES, which refuses more before the schema check.
RULES = 64
# ExternalModelProvider: a URL as browsers and proxies take it (RFC 9110 recommends at least
# 8,000 octets; 2,048 is the common practical bound), and the models of one connection (a
# large gateway offers a few hundred; the status of each is written in one object).
URL = 2048
MODELS = 1000


def _obj(props: Schema, *, required: tuple[str, ...] = (), **extra: Any) -> Schema:
    out: Schema = {"type": "object", "properties": props, **extra}
    if required:
        out["required"] = list(required)
    return out


def _ref() -> Schema:
    """A reference to a namespaced object by name (the namespace defaults to the referrer's)."""
    return _obj(
        {"name": _str(maxLength=NAME), "namespace": _str(maxLength=LABEL)}, required=("name",)
    )


def _open(schema: Schema) -> Schema:
    """Keep fields the schema does not declare (status written by other controllers)."""
    return {**schema, "x-kubernetes-preserve-unknown-fields": True}


def _str(**extra: Any) -> Schema:
    return {"type": "string", **extra}


def _int(**extra: Any) -> Schema:
    return {"type": "integer", "format": "int32", **extra}


def _bool(**extra: Any) -> Schema:
    return {"type": "boolean", **extra}


def _list(items: Schema, **extra: Any) -> Schema:
    return {"type": "array", "items": items, **extra}


def _map(values: Schema | None = None, *, entries: int | None = None) -> Schema:
    """A map; with `entries`, at most that many, and keys of at most QUALIFIED_KEY characters
    (maxProperties: core.schema.structural bounds the keys of every map that declares it)."""
    out: Schema = {"type": "object", "additionalProperties": values or _str()}
    if entries is not None:
        out["maxProperties"] = entries
    return out


def _quantity() -> Schema:
    return {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "x-kubernetes-int-or-string": True,
        "pattern": r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$",
    }


def _key_ref(*, optional: bool = True) -> Schema:
    props: Schema = {"key": _str(maxLength=NAME), "name": _str(maxLength=NAME)}
    if optional:
        props["optional"] = _bool()
    return _obj(props, required=("key",))


def _env_var() -> Schema:
    value_from = _obj(
        {
            "configMapKeyRef": _key_ref(),
            "fieldRef": _obj(
                {"apiVersion": _str(maxLength=SHORT), "fieldPath": _str(maxLength=PATH)},
                required=("fieldPath",),
            ),
            "fileKeyRef": _obj(
                {
                    "key": _str(maxLength=NAME),
                    "optional": _bool(),
                    "path": _str(maxLength=PATH),
                    "volumeName": _str(maxLength=LABEL),
                },
                required=("key", "path", "volumeName"),
            ),
            "resourceFieldRef": _obj(
                {
                    "containerName": _str(maxLength=LABEL),
                    "divisor": _quantity(),
                    "resource": _str(maxLength=SHORT),
                },
                required=("resource",),
            ),
            "secretKeyRef": _key_ref(),
        }
    )
    return _obj(
        {"name": _str(maxLength=NAME), "value": _str(maxLength=VALUE), "valueFrom": value_from},
        required=("name",),
    )


def _toleration() -> Schema:
    return _obj(
        {
            "effect": _str(maxLength=SHORT),
            "key": _str(maxLength=QUALIFIED_KEY),
            "operator": _str(maxLength=SHORT),
            "tolerationSeconds": {"type": "integer", "format": "int64"},
            "value": _str(maxLength=LABEL),
        }
    )


def _gpu() -> Schema:
    return _obj(
        {
            "count": _int(minimum=0, default=0),
            "type": _str(maxLength=QUALIFIED_KEY, default="nvidia.com/gpu"),
        }
    )


def _volume() -> Schema:
    return _obj(
        {
            "name": _str(maxLength=63, pattern=DNS_LABEL),
            "claimName": _str(maxLength=NAME),
            "mountPath": _str(maxLength=PATH),
            "purpose": _str(enum=["modelCache", "compilationCache", "custom"], default="custom"),
            "readOnly": _bool(default=False),
            "size": _quantity(),
            "storageClassName": _str(maxLength=NAME),
            "accessMode": _str(
                enum=["ReadWriteOnce", "ReadWriteMany", "ReadOnlyMany", "ReadWriteOncePod"]
            ),
        },
        required=("name",),
    )


def _component_scaling() -> Schema:
    return _obj(
        {"replicas": _int(minimum=0, default=1), "gpu": _gpu(), "memory": _str(maxLength=QUANTITY)}
    )


def model_deployment_spec() -> Schema:
    """ModelDeployment .spec (airunway.ai/v1alpha1), field for field as AI Runway users write it."""
    model = _obj(
        {
            "id": _str(maxLength=MODEL_ID),
            "servedName": _str(maxLength=NAME),
            "source": _str(enum=["huggingface", "custom"], default="huggingface"),
            "storage": _obj(
                {
                    "volumes": _list(
                        _volume(),
                        maxItems=8,
                        **{"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
                    )
                }
            ),
        }
    )
    engine = _obj(
        {
            "type": _str(enum=list(ENGINES)),
            "image": _str(maxLength=IMAGE),
            "contextLength": _int(minimum=1),
            "trustRemoteCode": _bool(default=False),
            "enablePrefixCaching": _bool(default=True),
            "enforceEager": _bool(default=False),
            "args": _map(_str(maxLength=VALUE), entries=ARGS),
            "extraArgs": _list(_str(maxLength=VALUE), maxItems=EXTRA_ARGS),
        },
        default={},
    )
    provider = _obj(
        {
            "name": _str(maxLength=LABEL),
            "overrides": {"x-kubernetes-preserve-unknown-fields": True},
        }
    )
    return _obj(
        {
            "model": model,
            "provider": provider,
            "engine": engine,
            "serving": _obj(
                {"mode": _str(enum=list(SERVING_MODES), default="aggregated")}, default={}
            ),
            "scaling": _obj(
                {
                    "replicas": _int(minimum=0, default=1),
                    "prefill": _component_scaling(),
                    "decode": _component_scaling(),
                }
            ),
            "resources": _obj(
                {"gpu": _gpu(), "memory": _str(maxLength=QUANTITY), "cpu": _str(maxLength=QUANTITY)}
            ),
            "image": _str(maxLength=IMAGE),
            "env": _list(_env_var(), maxItems=ENV),
            "podTemplate": _obj(
                {
                    "metadata": _obj(
                        {
                            "labels": _map(_str(maxLength=LABEL), entries=ENTRIES),
                            # The API server's own bound, all annotations together (bytes);
                            # core.model.names checks it in bytes.
                            "annotations": _map(
                                _str(maxLength=ANNOTATIONS_MAX), entries=ANNOTATIONS
                            ),
                        }
                    )
                }
            ),
            "secrets": _obj({"huggingFaceToken": _str(maxLength=NAME)}),
            "gateway": _obj(
                {
                    "enabled": _bool(),
                    "modelName": _str(maxLength=NAME),
                    "httpRouteRef": _str(maxLength=NAME),
                    # AI Runway #94 and #97 (open there): a Gateway and an InferencePool of the
                    # model's own; core/checks/gateway.py keeps both in its namespace.
                    "gatewayRef": _ref(),
                    "poolRef": _ref(),
                }
            ),
            "nodeSelector": _map(_str(maxLength=LABEL), entries=ENTRIES),
            "tolerations": _list(_toleration(), maxItems=ENTRIES),
        },
        required=("model",),
    )


def _condition() -> Schema:
    """A metav1.Condition."""
    return _obj(
        {
            "type": _str(minLength=1),
            "status": _str(enum=["True", "False", "Unknown"]),
            "reason": _str(),
            "message": _str(),
            "lastTransitionTime": _str(format="date-time"),
            "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0},
        },
        required=("type", "status"),
    )


def model_deployment_status() -> Schema:
    """What core/status/modeldeployment.py writes (AI Runway's status tree); open, so the
    fields AI Runway's controller wrote (image, provider.resourceName, ...) are kept.

    Defaulted to `{observedGeneration: 0}`: the API server applies it whenever it reads a
    ModelDeployment that has no status (no status controller has written one yet), so kstatus
    (Flux's health check, with no expression) reads "generation 1, observed 0": InProgress,
    never Current, until the status controller has reported on the object's generation."""
    count = {"type": "integer", "format": "int32", "minimum": 0}
    return _open(
        {
            **_obj(
                {
                    "phase": _str(
                        enum=["Pending", "Deploying", "Running", "Failed", "Terminating"]
                    ),
                    "message": _str(),
                    "observedGeneration": {"type": "integer", "format": "int64"},
                    "provider": _open(_obj({"name": _str(), "selectedReason": _str()})),
                    "engine": _open(_obj({"type": _str(), "selectedReason": _str()})),
                    "replicas": _obj({"desired": count, "ready": count, "available": count}),
                    "endpoint": _obj({"service": _str(), "port": _int(minimum=0, maximum=65535)}),
                    "gateway": _open(_obj({"endpoint": _str(), "modelName": _str()})),
                    "conditions": _list(
                        _condition(),
                        **{"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
                    ),
                }
            ),
            "default": {"observedGeneration": 0},
        }
    )


def inference_provider_config_spec() -> Schema:
    """InferenceProviderConfig .spec: per-engine capabilities and CEL selection rules."""
    gateway = _obj(
        {
            "managesInferencePool": _bool(),
            "inferencePoolNamePattern": _str(maxLength=NAME),
            "inferencePoolNamespace": _str(maxLength=LABEL),
            "endpointPicker": _obj(
                {"image": _str(maxLength=IMAGE), "configData": _str(maxLength=VALUE)}
            ),
            "ignoresServedName": _bool(),
        }
    )
    engine = _obj(
        {
            "name": _str(enum=list(ENGINES)),
            "servingModes": _list(_str(enum=list(SERVING_MODES)), maxItems=len(SERVING_MODES)),
            "apiFormats": _list(_str(enum=list(API_FORMATS)), maxItems=len(API_FORMATS)),
            "gpuSupport": _bool(),
            "cpuSupport": _bool(),
            "requiresCRD": _bool(),
            "gateway": gateway,
        },
        required=("name",),
    )
    rule = _obj(
        {"condition": _str(minLength=1, maxLength=1024), "priority": _int(minimum=0, default=0)},
        required=("condition",),
    )
    return _obj(
        {
            "capabilities": _obj(
                {
                    "engines": _list(
                        engine,
                        maxItems=len(ENGINES),
                        **{"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
                    )
                }
            ),
            "selectionRules": _list(rule, maxItems=RULES),
        }
    )


def inference_provider_config_status() -> Schema:
    return _open(
        _obj(
            {
                "ready": _bool(),
                "version": _str(),
                "lastHeartbeat": _str(format="date-time"),
                "upstreamCRDVersion": _str(),
                "upstreamSchemaHash": _str(),
                "conditions": _list(
                    _condition(),
                    **{"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
                ),
            }
        )
    )


def external_model_provider_spec() -> Schema:
    """ExternalModelProvider .spec: one connection (base URL + Secret) and the models it offers."""
    model = _obj(
        {
            "servedName": _str(minLength=1, maxLength=253),
            "upstreamModel": _str(maxLength=MODEL_ID),
            "mode": _str(enum=["chat", "completion", "embedding"], default="chat"),
        },
        required=("servedName",),
    )
    return _obj(
        {
            "baseURL": _str(minLength=1, maxLength=URL),
            "credentialsSecretRef": _obj(
                {
                    "name": _str(minLength=1, maxLength=NAME),
                    "key": _str(minLength=1, maxLength=NAME, default="apiKey"),
                },
                required=("name",),
            ),
            "models": _list(model, minItems=1, maxItems=MODELS),
            # Declared only so that an inline key reaches admission and is refused by name;
            # undeclared, the API server would prune it silently and admit the object.
            "apiKey": _str(description="Never set: admission refuses inline credentials."),
        },
        required=("baseURL", "models"),
    )


# The phases the gateway sync writes. Degraded (a reachability probe found the provider down) is
# reserved by the design (seed 004) but nothing produces it yet.
EMP_PHASES = ("Pending", "Ready", "Conflict", "Failed", "Degraded")


def external_model_provider_status() -> Schema:
    """Written only by `runway gateway-sync`, through the status subresource."""
    condition = _condition()
    model = _obj(
        {
            "servedName": _str(),
            "id": _str(description="model_info.id of the LiteLLM entry"),
            "registered": _bool(description="confirmed in LiteLLM's /model/info"),
            "reason": _str(),
            "claimants": _list(_str(), description="every object claiming this servedName"),
        },
        required=("servedName", "registered"),
    )
    return _open(
        _obj(
            {
                "phase": _str(enum=list(EMP_PHASES)),
                "message": _str(),
                "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0},
                "conditions": _list(
                    condition,
                    **{"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
                ),
                "models": _list(model),
            }
        )
    )


def _crd(
    resource: ApiKind,
    *,
    scope: str,
    spec: Schema,
    status: Schema,
    columns: list[dict[str, str]],
    short_names: tuple[str, ...] = (),
) -> dict[str, Any]:
    group, plural, kind = resource.group, resource.plural, resource.kind
    names: dict[str, Any] = {
        "kind": kind,
        "listKind": f"{kind}List",
        "plural": plural,
        "singular": kind.lower(),
    }
    if short_names:
        names["shortNames"] = list(short_names)
    root = _obj(
        {
            "apiVersion": _str(),
            "kind": _str(),
            "metadata": {"type": "object"},
            "spec": spec,
            "status": status,
        },
        required=("spec",),
    )
    version = {
        "name": VERSION,
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": root},
        "subresources": {"status": {}},
        "additionalPrinterColumns": [
            *columns,
            {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        ],
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {"group": group, "names": names, "scope": scope, "versions": [version]},
    }


def custom_resource_definitions() -> list[dict[str, Any]]:
    """The three CRDs Runway ships, in install order."""
    return [
        _crd(
            MODEL_DEPLOYMENTS,
            scope="Namespaced",
            spec=model_deployment_spec(),
            status=model_deployment_status(),
            columns=[  # AI Runway's order; provider and engine as admission stamps them
                {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
                {"name": "Provider", "type": "string", "jsonPath": ".spec.provider.name"},
                {"name": "Engine", "type": "string", "jsonPath": ".spec.engine.type"},
                {"name": "Replicas", "type": "integer", "jsonPath": ".status.replicas.ready"},
            ],
        ),
        _crd(
            INFERENCE_PROVIDER_CONFIGS,
            scope="Cluster",
            spec=inference_provider_config_spec(),
            status=inference_provider_config_status(),
            columns=[{"name": "Ready", "type": "boolean", "jsonPath": ".status.ready"}],
        ),
        _crd(
            EXTERNAL_MODEL_PROVIDERS,
            scope="Namespaced",
            spec=external_model_provider_spec(),
            status=external_model_provider_status(),
            columns=[
                {"name": "Base URL", "type": "string", "jsonPath": ".spec.baseURL"},
                {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
                {
                    "name": "Requested By",
                    "type": "string",
                    "jsonPath": ".metadata.annotations.gateway\\.tokenfactory\\.mirantis\\.com/requested-by",
                },
            ],
            short_names=("emp",),
        ),
    ]
