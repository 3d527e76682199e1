"""A KWOK pod backed by a real process (tests/serving/test_live_serving.py): the stand-in kubelet
(tests/support/kubelet.py) runs the rendered container, and a fake node of its own makes the
cluster's own controllers describe that process.

How the pod's address reaches the Service, and why no EndpointSlice of our own is written:
- KWOK (sigs.k8s.io/kwok v0.8.0) gives a scheduled pod the address `PodIPsWith` returns
  (kustomize/stage/pod/fast/pod-ready.yaml:80-82, the `podIP` of its statusTemplate), which takes the
  next address of a pool over the node's `spec.podCIDRs` (else `spec.podCIDR`, else its --cidr):
  pkg/kwok/controllers/pod_controller.go:778-815 (funcPodIPsWith). A new pool hands out the
  network's address plus one first (pkg/kwok/controllers/utils.go:56-69, ipPool.new).
- So a fake node whose podCIDR is the /30 whose first host address is the process's address
  gives the KWOK pod exactly that address. The controller-manager's EndpointSlice controller
  (running here: tests/support/live.py CONTROLLERS) then lists it in the Service's own
  EndpointSlice from the Service's selector, ready when the pod is Ready, as on a real node.
- The alternative, an EndpointSlice of our own beside the controller's (with a managed-by label
  other than the controller's, the controller leaves it alone: k8s.io/endpointslice v0.37.2, the
  staging copy of Kubernetes v1.37.2, reconciler.go:660-665 ManagedByController), would leave
  KWOK's made-up address in the Service's own slice, and readiness would not gate ours; a
  selector-less mirror Service would not be the rendered Service. The node's podCIDR needs
  neither, and the process's address then appears in the Endpoints the cluster itself writes.
- The node starts unschedulable: the pod stays Pending, and the status controller cannot see a
  Ready pod, until the rendered readiness probe passes against the process (uncordon then)."""

from __future__ import annotations

import ipaddress
import json
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from tests.support import kubelet
from tests.support.cluster import Cluster
from tests.support.litellm import MASTER_KEY, Proxy, runway
from tests.support.live import FakeNode, node_manifest
from tests.support.servingtier import Pods

SERVICE_NAME_LABEL = "kubernetes.io/service-name"  # the label EndpointSlices name their Service by


def first_host_range(address: str) -> str:
    """The /30 whose first host address (its network address plus one) is `address`."""
    network = ipaddress.ip_network(f"{address}/30", strict=False)
    assert network.network_address + 1 == ipaddress.ip_address(address), (
        f"{address} is not the first host of a /30 (its last octet must be 1 modulo 4)"
    )
    return str(network)


def run_at_first_host(pods: Pods, name: str, spec: kubelet.Launch) -> kubelet.Pod:
    """Run `spec` as pod `name` on the tier's pod network at an address that is the first host of
    a /30 (last octet 1 modulo 4: first_host_range), tracked by `pods` like pods.run's."""
    # kubelet.Network.address(index) is .(index + 1): an index divisible by 4 gives .4k+1
    index = next(i for i in range(4, 250, 4) if i not in pods.used)
    return pods.run(name, spec, index=index)


def backing_node(name: str, pod_address: str) -> dict[str, Any]:
    """A fake GPU node (as tests/support/live.py registers them) whose only pod address is
    `pod_address`, created unschedulable (cordoned)."""
    node = node_manifest(FakeNode(name, 8, "p5.48xlarge", "NVIDIA-H100-80GB-HBM3"))
    node["spec"] |= {"podCIDR": first_host_range(pod_address), "unschedulable": True}
    node["spec"]["podCIDRs"] = [node["spec"]["podCIDR"]]
    return node


def pods_of(cluster: Cluster, namespace: str, selector: dict[str, str]) -> list[dict[str, Any]]:
    labels = ",".join(f"{k}={v}" for k, v in sorted(selector.items()))
    listed = cluster.kubectl("get", "pods", "-n", namespace, "-l", labels, "-o", "json").stdout
    items: list[dict[str, Any]] = json.loads(listed)["items"]
    return items


def is_ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or ()
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def ready_endpoints(cluster: Cluster, namespace: str, service: str) -> list[tuple[str, int]]:
    """(address, port) of every ready endpoint in the Service's EndpointSlices, what kube-proxy
    programs for it."""
    listed = cluster.kubectl(
        "get",
        "endpointslices.discovery.k8s.io",
        "-n",
        namespace,
        "-l",
        f"{SERVICE_NAME_LABEL}={service}",
        "-o",
        "json",
    ).stdout
    found = []
    for piece in json.loads(listed)["items"]:
        ports = [p["port"] for p in piece.get("ports") or ()]
        for endpoint in piece.get("endpoints") or ():
            if (endpoint.get("conditions") or {}).get("ready") is True:
                found += [(address, port) for address in endpoint["addresses"] for port in ports]
    return sorted(found)


def sync_from_cluster(proxy: Proxy, cluster: Cluster) -> tuple[int, dict[str, Any], str]:
    """`runway gateway-sync --once -o json` reading the ModelDeployments from `cluster` (not from
    files) into `proxy`: (exit status, the report, stderr)."""
    key = proxy.workdir / "master-key"
    key.write_text(MASTER_KEY)
    done = runway(
        "gateway-sync",
        "--litellm-url",
        proxy.url,
        "--kubeconfig",
        str(cluster.kubeconfig),
        "--once",
        "-o",
        "json",
        key_file=key,
    )
    report: dict[str, Any] = json.loads(done.stdout) if done.stdout.strip() else {}
    return done.returncode, report, done.stderr


def first_token_seconds(proxy: Proxy, model: str, max_tokens: int) -> float:
    """Seconds from sending a streamed chat completion to LiteLLM until its first chunk with
    text arrives (a measurement; the test asserts the non-streamed answer)."""
    body = {
        "model": model,
        "messages": [{"role": "user", "content": "Say something."}],
        "max_tokens": max_tokens,
        "ignore_eos": True,
        "stream": True,
    }
    request = urllib.request.Request(
        proxy.url + "/v1/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {MASTER_KEY}", "Content-Type": "application/json"},
        method="POST",
    )
    began = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            for raw in response:
                line = raw.decode().strip()
                if not line.startswith("data:") or line == "data: [DONE]":
                    continue
                choices = json.loads(line[len("data:") :]).get("choices") or [{}]
                if (choices[0].get("delta") or {}).get("content"):
                    return time.monotonic() - began
    except urllib.error.HTTPError as err:
        raise AssertionError(f"{model}: streamed chat {err.code}: {err.read()[:2000]!r}") from err
    raise AssertionError(f"{model}: the stream ended without a token")


def session_rss_bytes(leader: int) -> int:
    """The resident memory of every process in the session `leader` started (a pod's processes:
    kubelet.start runs each pod in a session of its own)."""
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[3]) != leader:  # field 6 of /proc/PID/stat, the session id
                continue
            status = (stat.parent / "status").read_text()
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1]) * 1024
    return total
