"""A stand-in for the Dynamo operator's pod building (tests/serving/test_dynamo_mocker.py): the main
container the operator would put in the pod of each service of a rendered DynamoGraphDeployment,
as a plain container dict that tests/support/kubelet.py runs.

What the operator does, and what this module writes down in its place. Dynamo's repository could
not be fetched at the v1.1.1 tag here (its snapshot is over this machine's limit), so the
operator's Go files were read at the stored commits named below, all under
github.com/ai-dynamo/dynamo deploy/operator/internal/; where a stored file is newer than 1.1.1 and
gates a default on the runtime's version, what the 1.1.1 runtime does not read is left out and
said so.
- Every component's base container (dynamo/component_common.go `getCommonContainer`, at
  015d780ba, lines 88-145): named `main`, command `/bin/sh -c`; env DYN_NAMESPACE (the graph's
  Dynamo namespace), DYN_COMPONENT (the service's componentType), DYN_PARENT_DGD_K8S_NAME and
  DYN_PARENT_DGD_K8S_NAMESPACE, POD_NAME, POD_NAMESPACE and POD_UID from the downward API, and
  DYN_DISCOVERY_BACKEND=kubernetes unless the operator's discovery backend is etcd.
- The Dynamo namespace (api/v1alpha1 `ComputeDynamoNamespace`): `<namespace>-<graph name>` with
  dots in the name turned into dashes.
- A frontend (dynamo/component_frontend.go `GetBaseContainer`, stored at 132ccbe, lines 31-32,
  35-41, 57-68, 86-99): command `python3`, args `-m dynamo.frontend`; port `http` 8000; readiness
  GET /health and liveness GET /live on it; env DYNAMO_PORT=8000, DYN_HTTP_PORT=8000 and
  DYN_NAMESPACE_PREFIX=<Dynamo namespace>. That stored version also adds a startup probe and
  DYN_NAMESPACE_PREFIX_STRICT behind runtime-version gates (lines 71-83, 101-106); the 1.1.1
  runtime reads no DYN_NAMESPACE_PREFIX_STRICT (neither the ai-dynamo 1.1.1 wheel nor its
  _core.abi3.so names it), so neither is written here.
- A worker (dynamo/component_worker.go `GetBaseContainer`, at 015d780ba, lines 30-41, 58-80,
  82-111): ports `system` 9090 and `nixl` 19090; readiness GET /health, liveness and startup GET
  /live on `system`; env DYN_SYSTEM_ENABLED=true, DYN_SYSTEM_USE_ENDPOINT_HEALTH_STATUS=
  ["generate"], DYN_SYSTEM_PORT=9090, DYN_HEALTH_CHECK_ENABLED=false and the NIXL telemetry trio.
- Port numbers and names (consts/consts.go, stored at 0367e404, lines 15-17, 22-23, 29-30):
  DynamoServicePort 8000 `http`, DynamoSystemPort 9090 `system`, DynamoNixlPort 19090 `nixl`.
- The service's own `extraPodSpec.mainContainer` is merged over that base (the operator's
  `mergeContainerByName`, deploy/operator/internal/dynamo): its image, command and args replace
  the base's when given, and its env wins over the base's by name; the service's `envs` are added
  to the container's env, by name, too.
- The Service in front of a frontend is named `<graph name>-<service name in lower case>` on port
  8000 (graph.go `GetDynamoComponentName`, the DynamoServicePort above), which is what Runway's
  gateway-sync registers for the mocker example.

What a kubelet then does with the downward API (the fieldRef env values) is
tests/support/kubelet.py's `launch(fields=pod_fields(...))`."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

SERVICE_PORT = 8000  # consts.go DynamoServicePort, port name `http`
SYSTEM_PORT = 9090  # consts.go DynamoSystemPort, port name `system`
NIXL_PORT = 19090  # consts.go DynamoNixlPort, port name `nixl`


def dynamo_namespace(graph: Mapping[str, Any]) -> str:
    """api/v1alpha1 ComputeDynamoNamespace: `<namespace>-<name>`, dots made dashes."""
    meta = graph["metadata"]
    return f"{meta['namespace']}-{str(meta['name']).replace('.', '-')}"


def component_name(graph: Mapping[str, Any], service: str) -> str:
    """graph.go GetDynamoComponentName: the component's (and its Service's) name."""
    return f"{graph['metadata']['name']}-{service.lower()}"


def service_host(graph: Mapping[str, Any], service: str) -> str:
    """The cluster DNS name of the Service the operator puts in front of `service`."""
    return f"{component_name(graph, service)}.{graph['metadata']['namespace']}.svc.cluster.local"


def _field(name: str, path: str) -> dict[str, Any]:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}


def _http_probe(path: str, port: str, period: int, timeout: int, failures: int) -> dict[str, Any]:
    return {
        "httpGet": {"path": path, "port": port},
        "periodSeconds": period,
        "timeoutSeconds": timeout,
        "failureThreshold": failures,
    }


def _merge_env(base: list[dict[str, Any]], over: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`over` wins by name; the base's order is kept and new names follow."""
    names = {e["name"] for e in over}
    return [e for e in base if e["name"] not in names] + list(over)


def _base(graph: Mapping[str, Any], component_type: str) -> dict[str, Any]:
    namespace = dynamo_namespace(graph)
    meta = graph["metadata"]
    env: list[dict[str, Any]] = [
        {"name": "DYN_NAMESPACE", "value": namespace},
        {"name": "DYN_COMPONENT", "value": component_type},
        {"name": "DYN_PARENT_DGD_K8S_NAME", "value": meta["name"]},
        {"name": "DYN_PARENT_DGD_K8S_NAMESPACE", "value": meta["namespace"]},
        _field("POD_NAME", "metadata.name"),
        _field("POD_NAMESPACE", "metadata.namespace"),
        _field("POD_UID", "metadata.uid"),
        {"name": "DYN_DISCOVERY_BACKEND", "value": "kubernetes"},
    ]
    container: dict[str, Any] = {"name": "main", "command": ["/bin/sh", "-c"], "env": env}
    if component_type == "frontend":
        container["command"] = ["python3"]
        container["args"] = ["-m", "dynamo.frontend"]
        container["ports"] = [{"name": "http", "containerPort": SERVICE_PORT, "protocol": "TCP"}]
        container["livenessProbe"] = {
            **_http_probe("/live", "http", 10, 1, 3),
            "initialDelaySeconds": 15,
        }
        container["readinessProbe"] = {
            **_http_probe("/health", "http", 10, 3, 3),
            "initialDelaySeconds": 10,
        }
        env += [
            {"name": "DYNAMO_PORT", "value": str(SERVICE_PORT)},
            {"name": "DYN_HTTP_PORT", "value": str(SERVICE_PORT)},
            {"name": "DYN_NAMESPACE_PREFIX", "value": namespace},
        ]
    elif component_type in ("worker", "prefill", "decode"):
        container["ports"] = [
            {"name": "system", "containerPort": SYSTEM_PORT, "protocol": "TCP"},
            {"name": "nixl", "containerPort": NIXL_PORT, "protocol": "TCP"},
        ]
        container["livenessProbe"] = _http_probe("/live", "system", 5, 4, 1)
        container["readinessProbe"] = _http_probe("/health", "system", 10, 4, 3)
        container["startupProbe"] = _http_probe("/live", "system", 10, 5, 720)
        env += [
            {"name": "DYN_SYSTEM_ENABLED", "value": "true"},
            {"name": "DYN_SYSTEM_USE_ENDPOINT_HEALTH_STATUS", "value": '["generate"]'},
            {"name": "DYN_SYSTEM_PORT", "value": str(SYSTEM_PORT)},
            {"name": "DYN_HEALTH_CHECK_ENABLED", "value": "false"},
            {"name": "NIXL_TELEMETRY_ENABLE", "value": "n"},
            {"name": "NIXL_TELEMETRY_EXPORTER", "value": "prometheus"},
            {"name": "NIXL_TELEMETRY_PROMETHEUS_PORT", "value": str(NIXL_PORT)},
        ]
    else:
        raise ValueError(
            f"componentType {component_type}: only frontend and workers are built here"
        )
    return container


def main_container(graph: Mapping[str, Any], service: str) -> dict[str, Any]:
    """The operator's `main` container of `service` (a key of spec.services) of `graph`."""
    spec = graph["spec"]["services"][service]
    container = _base(graph, spec["componentType"])
    own = copy.deepcopy(spec.get("extraPodSpec", {}).get("mainContainer") or {})
    for key in ("image", "command", "args", "workingDir", "volumeMounts"):
        if key in own:
            container[key] = own[key]
    container["env"] = _merge_env(container["env"], own.get("env") or [])
    container["env"] = _merge_env(container["env"], copy.deepcopy(spec.get("envs") or []))
    if "resources" in spec:
        container["resources"] = copy.deepcopy(spec["resources"])
    return container
