"""Gateway objects for a ModelDeployment with spec.gateway.enabled: true (Gateway API Inference
Extension): an InferencePool over the model's pods with its endpoint picker, an HTTPRoute that
matches the model-name header, and, when asked, an Istio DestinationRule for the picker. A
provider that manages its own pool (Dynamo) gets only the route, plus a ReferenceGrant when the
pool lives in another namespace. A model with a pool of its own (spec.gateway.poolRef) gets
only the route, to that pool; a model with a Gateway of its own (spec.gateway.gatewayRef) attaches
its route there instead of to the Gateway the render is given (both in the model's namespace:
core/checks/gateway.py). Fields the API server would default are written out, so the live
objects equal what Git holds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.checks.gateway import gateway_ref, pool_ref
from core.model.kinds import DEFAULT_NAMESPACE, ModelDeployment, dig
from core.model.names import PICKER_SUFFIX, child_name
from core.model.plugin import UpstreamKind
from core.model.servednames import served_name
from core.model.versions import Versions
from core.rendering.common import object_meta
from core.rendering.podsecurity import NON_ROOT_IMAGE, harden

if TYPE_CHECKING:
    from core.selection.configs import ProviderRegistry

POOL_GROUP = "inference.networking.k8s.io"
# The gateway's objects a ModelDeployment's status reads (core/status gateway_state): the core
# renders them for every provider.
GATEWAY_KINDS = (
    UpstreamKind(POOL_GROUP, "v1", "inferencepools", "InferencePool"),
    UpstreamKind("gateway.networking.k8s.io", "v1", "httproutes", "HTTPRoute"),
)
ROUTE_HEADER = "X-Gateway-Model-Name"
EPP_PORT, EPP_HEALTH_PORT = 9002, 9003
# The picker's configuration when the provider config gives none: GAIE <GAIE_VERSION>'s own
# default (pkg/epp/config/loader/defaults.go loadDefaultConfig, also its chart's
# default-plugins.yaml), written out because a configuration without plugins is not defaulted:
# the picker would build a profile of max-score-picker alone and pick at random. The scorers read
# the model servers' vLLM metrics (/metrics on the pool's port), which the data layer collects.
DEFAULT_PICKER_CONFIG = """\
apiVersion: inference.networking.x-k8s.io/v1alpha1
kind: EndpointPickerConfig
plugins:
- type: queue-scorer
- type: kv-cache-utilization-scorer
- type: prefix-cache-scorer
schedulingProfiles:
- name: default
  plugins:
  - pluginRef: queue-scorer
    weight: 2
  - pluginRef: kv-cache-utilization-scorer
    weight: 2
  - pluginRef: prefix-cache-scorer
    weight: 3
"""


@dataclass(frozen=True, slots=True)
class GatewayTarget:
    """The Gateway routes attach to, and whether Istio needs a DestinationRule for the picker."""

    name: str
    namespace: str
    istio: bool = False


def parse_gateway(text: str, *, istio: bool = False) -> GatewayTarget | str:
    """`NAMESPACE/NAME` as `runway render --gateway` takes it, or why it is not one."""
    namespace, _, name = text.partition("/")
    if not namespace or not name or "/" in name:
        return f"expected NAMESPACE/NAME, got {text!r}"
    return GatewayTarget(name, namespace, istio)


def is_enabled(md: ModelDeployment, registry: ProviderRegistry) -> bool:
    """Only an explicit `spec.gateway.enabled: true` renders gateway objects (never for a
    provider's test backend, such as Dynamo's mocker, which serves through a standalone Frontend,
    as in AI Runway)."""
    return dig(md.spec, "gateway", "enabled") is True and not registry.runs_test_backend(md)


def capabilities_of(md: ModelDeployment, registry: ProviderRegistry) -> Mapping[str, Any]:
    """The gateway capabilities of a hydrated ModelDeployment's provider and engine."""
    config = registry.get(md.provider_name)
    return config.gateway(md.engine_type) if config is not None else {}


def render_gateway(
    md: ModelDeployment,
    capabilities: Mapping[str, Any],
    target: GatewayTarget,
    pins: Versions,
    *,
    port: int,
    selector: Mapping[str, str],
    picker_config: str | None = None,
    served_as: str | None = None,
) -> list[dict[str, Any]]:
    """The gateway objects for one hydrated ModelDeployment; `port` is the model server's port,
    `selector` the labels of its serving pods (the provider's pool_selector) and
    `picker_config` the picker's EndpointPickerConfig when the provider chooses it (its
    picker_config hook), else the capabilities' configData; `served_as` the name the operator
    serves the model under, when it decides it (the provider's served_as hook)."""
    namespace = md.namespace
    target = model_gateway(md, target)
    own_pool = pool_ref(md)
    if capabilities.get("managesInferencePool"):
        pool = _pattern(capabilities.get("inferencePoolNamePattern") or "{name}", md)
        pool_namespace = _pattern(capabilities.get("inferencePoolNamespace") or "{namespace}", md)
        objects: list[dict[str, Any]] = []
    elif own_pool is not None:  # the user's InferencePool and picker: the route only
        pool, pool_namespace, objects = own_pool, namespace, []
    else:  # renders_pool
        pool, pool_namespace = md.name, namespace
        objects = [
            _pool(md, port, selector),
            *_picker(md, capabilities, pins, picker_config),
            *(_destination_rule(md) if target.istio else []),
        ]
    if not dig(md.spec, "gateway", "httpRouteRef"):
        objects.append(_route(md, capabilities, target, pool, pool_namespace, served_as=served_as))
    if pool_namespace != namespace:
        objects.append(_grant(md, pool, pool_namespace))
    return objects


def renders_pool(md: ModelDeployment, capabilities: Mapping[str, Any]) -> bool:
    """Whether Runway renders `md`'s InferencePool (and its picker): not when the provider's
    operator makes the pool, nor when the user brings one (spec.gateway.poolRef). The status
    checks the pool's acceptance only then."""
    return not capabilities.get("managesInferencePool") and pool_ref(md) is None


def model_gateway(md: ModelDeployment, offered: GatewayTarget) -> GatewayTarget:
    """The Gateway `md`'s route attaches to: its own (spec.gateway.gatewayRef, in its namespace
    as core/checks/gateway.py holds it) or else the one the platform offers (`offered`)."""
    ref = gateway_ref(md)
    if ref is None:
        return offered
    return GatewayTarget(ref[1], ref[0], offered.istio)


def _pattern(pattern: str, md: ModelDeployment) -> str:
    return pattern.replace("{name}", md.name).replace("{namespace}", md.namespace)


def _pool(md: ModelDeployment, port: int, selector: Mapping[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": f"{POOL_GROUP}/v1",
        "kind": "InferencePool",
        "metadata": object_meta(md, md.name),
        "spec": {
            "selector": {"matchLabels": dict(selector)},
            "targetPorts": [{"number": port}],
            "endpointPickerRef": {
                "group": "",
                "kind": "Service",
                "name": child_name(md.name, PICKER_SUFFIX),
                "port": {"number": EPP_PORT},
                "failureMode": "FailClose",
            },
        },
    }


def configured_picker_config(capabilities: Mapping[str, Any]) -> str | None:
    """The configData of the capabilities' endpointPicker, if any."""
    value = (capabilities.get("endpointPicker") or {}).get("configData")
    return str(value) if value else None


def _picker(
    md: ModelDeployment,
    capabilities: Mapping[str, Any],
    pins: Versions,
    config: str | None,
) -> list[dict[str, Any]]:
    name = child_name(md.name, PICKER_SUFFIX)
    picker = capabilities.get("endpointPicker") or {}
    image = (
        picker.get("image") or f"registry.k8s.io/gateway-api-inference-extension/epp:{pins.gaie}"
    )
    labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/instance": md.name}
    meta = object_meta(md, name, labels=labels)
    rules = [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
        {
            "apiGroups": [POOL_GROUP],
            "resources": ["inferencepools"],
            "verbs": ["get", "list", "watch"],
        },
        {
            "apiGroups": ["inference.networking.x-k8s.io"],
            "resources": ["inferenceobjectives", "inferencemodelrewrites"],
            "verbs": ["get", "list", "watch"],
        },
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "verbs": ["create", "get", "update"],
        },
    ]
    container = {
        "name": "epp",
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "args": [
            "--pool-name",
            md.name,
            "--pool-namespace",
            md.namespace,
            "--zap-encoder",
            "json",
            "--config-file",
            "/config/default-plugins.yaml",
            "--tracing=false",
        ],
        "ports": [
            {"name": "grpc", "containerPort": EPP_PORT, "protocol": "TCP"},
            {"name": "grpc-health", "containerPort": EPP_HEALTH_PORT, "protocol": "TCP"},
        ],
        "env": [
            {
                "name": "NAMESPACE",
                "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}},
            },
            {
                "name": "POD_NAME",
                "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}},
            },
        ],
        "livenessProbe": {
            "grpc": {"port": EPP_HEALTH_PORT, "service": "inference-extension"},
            "initialDelaySeconds": 30,
            "periodSeconds": 10,
            "failureThreshold": 5,
        },
        "readinessProbe": {
            "grpc": {"port": EPP_HEALTH_PORT, "service": "inference-extension"},
            "initialDelaySeconds": 10,
            "periodSeconds": 5,
        },
        "volumeMounts": [{"name": "config", "mountPath": "/config"}],
    }
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": meta,
            "rules": rules,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": meta,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": md.namespace}],
        },
        *_metrics_auth(md, labels),
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": meta,
            "data": {
                "default-plugins.yaml": config
                or configured_picker_config(capabilities)
                or DEFAULT_PICKER_CONFIG
            },
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": meta,
            "spec": {
                "replicas": 1,
                "strategy": {"type": "Recreate"},
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    # Both pickers shipped run as user 65532: GAIE's epp image on
                    # distroless/static:nonroot (its Dockerfile's BASE_IMAGE), llm-d's
                    # inference scheduler with USER 65532:65532 (its Dockerfile).
                    "spec": harden(
                        {
                            "serviceAccountName": name,
                            "terminationGracePeriodSeconds": 130,
                            "containers": [container],
                            "volumes": [{"name": "config", "configMap": {"name": name}}],
                        },
                        NON_ROOT_IMAGE,
                    ),
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": meta,
            "spec": {
                "type": "ClusterIP",
                "selector": labels,
                "ports": [
                    {
                        "name": "grpc-ext-proc",
                        "port": EPP_PORT,
                        "targetPort": EPP_PORT,
                        "protocol": "TCP",
                        "appProtocol": "kubernetes.io/h2c",
                    }
                ],
            },
        },
    ]


def metrics_auth_name(md: ModelDeployment) -> str:
    """The cluster-scoped name of a picker's metrics-auth ClusterRole and ClusterRoleBinding:
    `<namespace>.<name>-epp`. GAIE's chart joins release and namespace with a dash
    (config/charts/epplib/templates/_helpers.tpl:22-26), which two tenants can make collide
    (`a-b` in `c`, `a` in `b-c`); neither a namespace (an RFC 1123 label) nor a
    ModelDeployment name (a DNS-1035 label) holds a dot, so this name is one picker's alone and
    no tenant's model can take over another's binding."""
    return f"{md.namespace or DEFAULT_NAMESPACE}.{child_name(md.name, PICKER_SUFFIX)}"


def _metrics_auth(md: ModelDeployment, labels: Mapping[str, str]) -> list[dict[str, Any]]:
    """What the picker needs to guard its /metrics: GAIE <GAIE_VERSION> defaults
    MetricsEndpointAuth to true (pkg/epp/server/options.go:116), and the picker then puts
    controller-runtime's WithAuthenticationAndAuthorization filter on its metrics server
    (cmd/epp/runner/runner.go:276-279), which asks the API server with a TokenReview and a
    SubjectAccessReview for every scrape. Both are cluster-scoped creates, so only a
    ClusterRole can grant them; its chart grants exactly these two
    (config/charts/epplib/templates/_rbac.yaml:3-38). The chart's third rule (get on the
    nonResourceURL /metrics) is what a scraper needs, not the picker, and is not granted here:
    the scraper's own identity needs it. Nothing else cluster-wide is ever rendered for a
    model, so a tenant's render grants no cluster right beyond these two creates."""
    name = metrics_auth_name(md)
    meta = object_meta(md, name, labels=labels)
    meta.pop("namespace", None)
    return [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": meta,
            "rules": [
                {
                    "apiGroups": ["authentication.k8s.io"],
                    "resources": ["tokenreviews"],
                    "verbs": ["create"],
                },
                {
                    "apiGroups": ["authorization.k8s.io"],
                    "resources": ["subjectaccessreviews"],
                    "verbs": ["create"],
                },
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": meta,
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": name,
            },
            "subjects": [
                {
                    "kind": "ServiceAccount",
                    "name": child_name(md.name, PICKER_SUFFIX),
                    "namespace": md.namespace,
                }
            ],
        },
    ]


def _destination_rule(md: ModelDeployment) -> list[dict[str, Any]]:
    name = child_name(md.name, PICKER_SUFFIX)
    return [
        {
            "apiVersion": "networking.istio.io/v1",
            "kind": "DestinationRule",
            "metadata": object_meta(md, name),
            "spec": {
                "host": f"{name}.{md.namespace}.svc.cluster.local",
                "trafficPolicy": {"tls": {"mode": "SIMPLE", "insecureSkipVerify": True}},
            },
        }
    ]


def _route(
    md: ModelDeployment,
    capabilities: Mapping[str, Any],
    target: GatewayTarget,
    pool: str,
    pool_namespace: str,
    *,
    served_as: str | None,
) -> dict[str, Any]:
    backend: dict[str, Any] = {
        "group": POOL_GROUP,
        "kind": "InferencePool",
        "name": pool,
        "weight": 1,
    }
    if pool_namespace != md.namespace:
        backend["namespace"] = pool_namespace
    parent = {
        "group": "gateway.networking.k8s.io",
        "kind": "Gateway",
        "name": target.name,
        "namespace": target.namespace,
    }
    match = {
        "path": {"type": "PathPrefix", "value": "/"},
        "headers": [
            {
                "type": "Exact",
                "name": ROUTE_HEADER,
                "value": served_name(md, capabilities, served_as),
            }
        ],
    }
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": object_meta(md, md.name),
        "spec": {
            "parentRefs": [parent],
            "rules": [
                {"matches": [match], "backendRefs": [backend], "timeouts": {"request": "300s"}}
            ],
        },
    }


def _grant(md: ModelDeployment, pool: str, pool_namespace: str) -> dict[str, Any]:
    meta = object_meta(md, f"{pool}-{md.namespace}")
    meta["namespace"] = pool_namespace
    return {
        "apiVersion": "gateway.networking.k8s.io/v1beta1",
        "kind": "ReferenceGrant",
        "metadata": meta,
        "spec": {
            "from": [
                {
                    "group": "gateway.networking.k8s.io",
                    "kind": "HTTPRoute",
                    "namespace": md.namespace,
                }
            ],
            "to": [{"group": POOL_GROUP, "kind": "InferencePool", "name": pool}],
        },
    }
