"""What the serving tier's tests share (tests/serving): the engines' virtualenvs from `make
serving`, the examples rendered with `runway render`, the stand-in models, the pods run by the
stand-in kubelet (tests/support/kubelet.py), and the real LiteLLM proxy that reaches them.

The stand-ins every case shares, each named again in the test that relies on it:
- weights: tests/support/standin_model.py (random weights and a tokenizer trained here, under the
  real model id, in the Hugging Face cache layout; HF_HUB_OFFLINE=1 so nothing is downloaded);
- the image: the engine's PyPI package in a virtualenv (kubelet.IMAGES says which, per image);
- cluster networking: each pod runs in a network namespace of its own, reached at its veth
  address; the Service's cluster DNS name resolves to that address through a hosts file that only
  LiteLLM sees (a private mount namespace), which also stands in for kube-proxy (the Service's
  port must equal the container port it targets, which this module checks)."""

from __future__ import annotations

import shutil
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support import kubelet
from tests.support.litellm import MASTER_KEY, RUNWAY, Proxy, runway
from tests.support.wait import wait_until

ROOT = kubelet.ROOT
SERVING = kubelet.SERVING
MODELS = SERVING / "models" / "hf"  # HF_HOME of the stand-in models
RUNS = SERVING / "run"  # one folder per pod: its overlay and its log
ENGINES = {"vllm": SERVING / "vllm", "dynamo": SERVING / "dynamo"}
READY_TIMEOUT = 600  # vLLM on 2 shared cores: about 60 s alone, several minutes beside other work


def engine_python(name: str) -> Path:
    """The engine's virtualenv interpreter; its absence fails (the tier never skips)."""
    python = ENGINES[name] / "bin" / "python"
    if not (ENGINES[name] / ".installed").exists() or not python.exists():
        pytest.fail(
            f"serving tier: {ENGINES[name]} is missing; run `make serving` (make test does)",
            pytrace=False,
        )
    return python


def standin(model_id: str) -> Path:
    """The stand-in model for `model_id` under MODELS (made once, reused while unchanged)."""
    out = subprocess.run(
        [
            str(engine_python("vllm")),
            str(ROOT / "tests/support/standin_model.py"),
            str(MODELS),
            model_id,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return Path(out.stdout.strip())


@dataclass
class Rendered:
    """A tree written by `runway render`."""

    repo: Path

    @property
    def tree(self) -> Path:
        return self.repo / "rendered"

    def folder(self, namespace: str, name: str) -> Path:
        return self.tree / namespace / name

    def objects(self, namespace: str, name: str) -> list[dict[str, Any]]:
        return [
            yaml.safe_load(path.read_text())
            for path in sorted(self.folder(namespace, name).glob("*.yaml"))
            if path.name != "kustomization.yaml"
        ]

    def one(self, namespace: str, name: str, kind: str, object_name: str) -> dict[str, Any]:
        found = [
            o
            for o in self.objects(namespace, name)
            if o["kind"] == kind and o["metadata"]["name"] == object_name
        ]
        assert len(found) == 1, (
            kind,
            object_name,
            [o["kind"] for o in self.objects(namespace, name)],
        )
        return found[0]


def render(repo: Path, *examples: str, gateway: str | None = None) -> Rendered:
    """`runway render --repo REPO examples/...`, which must render every one."""
    extra = ["--gateway", gateway] if gateway else []
    out = subprocess.run(
        [
            str(RUNWAY),
            "render",
            "--repo",
            str(repo),
            *extra,
            *(str(ROOT / "examples" / e) for e in examples),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    return Rendered(repo)


def template_of(workload: Mapping[str, Any]) -> Mapping[str, Any]:
    """The pod template of a Deployment, or of a LeaderWorkerSet's workers."""
    spec = workload["spec"]
    if "template" in spec:
        return dict(spec["template"])
    return dict(spec["leaderWorkerTemplate"]["workerTemplate"])


def stops_before_ready(pod: kubelet.Pod, container: Mapping[str, Any]) -> str:
    """The pod's process exits, non-zero, before its rendered startup probe ever answers: the
    tier's wait (wait_probe) says so, and its message is returned."""
    try:
        wait_probe(pod, container, "startupProbe")
    except AssertionError as stopped:
        assert pod.process.returncode not in (0, None), pod.output()
        return str(stopped)
    raise AssertionError(f"pod {pod.name} started and answered its startup probe")


def container_of(workload: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The container `name` of a Deployment's or a LeaderWorkerSet leader's pod template."""
    template = template_of(workload)
    found = [c for c in template["spec"]["containers"] if c["name"] == name]
    assert len(found) == 1, [c["name"] for c in template["spec"]["containers"]]
    return dict(found[0])


def pod_spec_of(workload: Mapping[str, Any]) -> dict[str, Any]:
    """The pod spec of a Deployment's (or a LeaderWorkerSet worker's) template."""
    template = template_of(workload)
    return dict(template["spec"])


# Another Service in the model's namespace, named as anyone may name one (another team's Direct
# vLLM model called `vllm`, say), with the cluster IP the API server would give it.
NEIGHBOUR = {
    "metadata": {"name": "vllm", "namespace": "models"},
    "spec": {
        "clusterIP": "10.96.0.7",
        "ports": [{"name": "http", "port": 8000, "protocol": "TCP"}],
    },
}


def volume_sources(
    workload: Mapping[str, Any], claims: Mapping[str, Path], base: Path
) -> dict[str, kubelet.Volume]:
    """What backs each volume of the pod template, as kubelet would back it: a claim's folder from
    `claims` (claimName: folder), an emptyDir of medium Memory a tmpfs of its sizeLimit, any
    other emptyDir a fresh folder under `base`."""
    template = template_of(workload)
    folders: dict[str, kubelet.Volume] = {}
    for volume in template["spec"].get("volumes") or []:
        name, empty = volume["name"], volume.get("emptyDir")
        if "persistentVolumeClaim" in volume:
            folders[name] = claims[volume["persistentVolumeClaim"]["claimName"]]
        elif empty is not None and empty.get("medium") == "Memory":
            # no sizeLimit: the node's memory bounds it; tmpfs's own default (half) here
            folders[name] = kubelet.Memory(str(empty.get("sizeLimit", "50%")))
        elif empty is not None:
            folder = base / "volumes" / name
            folder.mkdir(parents=True, exist_ok=True)
            folders[name] = folder
        else:
            raise AssertionError(f"volume {name}: the serving tier runs claims and emptyDirs only")
    return folders


def port_of(container: Mapping[str, Any], port: int | str) -> int:
    """A probe's or a Service's port, by number or by the container port's name."""
    if isinstance(port, int) or str(port).isdigit():
        return int(port)
    found = [p["containerPort"] for p in container.get("ports") or [] if p.get("name") == port]
    assert len(found) == 1, (port, container.get("ports"))
    return int(found[0])


def http_status(url: str, timeout: float = 2) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return int(response.status)
    except urllib.error.HTTPError as err:
        return err.code
    except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
        return None


def wait_probe(
    pod: kubelet.Pod, container: Mapping[str, Any], probe: str = "readinessProbe"
) -> float:
    """Run the container's rendered probe (httpGet path and port) until it answers 2xx, as the
    kubelet gates readiness on it; fails with the pod's log if the process exits first. Returns
    the seconds it took."""
    get = container[probe]["httpGet"]
    url = pod.url(port_of(container, get["port"])) + get["path"]
    began = time.monotonic()

    def ready() -> bool:
        if not pod.alive():
            raise AssertionError(f"pod {pod.name} exited {pod.process.returncode}:\n{pod.output()}")
        status = http_status(url)
        return status is not None and 200 <= status < 300

    wait_until(ready, timeout=READY_TIMEOUT, interval=1, what=f"{pod.name} {probe} {url}")
    return time.monotonic() - began


@dataclass
class Pods:
    """The tier's pods on one pod network: each gets a fresh folder and an address of its own;
    all stop, and the network goes, at the end."""

    net: kubelet.Network | None = None
    running: list[kubelet.Pod] = field(default_factory=list)
    used: set[int] = field(default_factory=set)

    def network(self) -> kubelet.Network:
        """The pod network, made on first use (a host-side server may bind its gateway first)."""
        if self.net is None:
            self.net = kubelet.network()
        return self.net

    def run(self, name: str, spec: kubelet.Launch, *, index: int | None = None) -> kubelet.Pod:
        """Run `spec` as pod `name` at address `index` of the pod network (the first free one
        when not given)."""
        net = self.network()
        if index is None:
            index = next(i for i in range(1, 250) if i not in self.used)
        assert index not in self.used, f"pod address {index} is taken"
        self.used.add(index)
        base = RUNS / name
        shutil.rmtree(base, ignore_errors=True)  # a fresh container: nothing from a previous run
        pod = kubelet.start(name, spec, base, net, index)
        self.running.append(pod)
        return pod

    def stop(self, pod: kubelet.Pod) -> None:
        pod.stop()
        self.running.remove(pod)
        self.used.discard(int(pod.ip.rsplit(".", 1)[1]) - 1)

    def stop_all(self) -> None:
        for pod in list(self.running):
            self.stop(pod)
        if self.net is not None:
            self.net.remove()
            self.net = None


@dataclass
class Gateway:
    """The real LiteLLM proxy, with the hosts file it alone resolves names through."""

    proxy: Proxy
    hosts: Path
    names: dict[str, str] = field(default_factory=dict)

    def resolve(self, name: str, address: str) -> None:
        """Make `name` resolve to `address` for the proxy (the file is rewritten in place: the
        proxy's bind mount follows the inode)."""
        self.names[name] = address
        kubelet.hosts_file(self.hosts, self.names)

    def sync(
        self, *sources: Path, gateway_url: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """`runway gateway-sync --once` from rendered folders into the proxy."""
        key = self.proxy.workdir / "master-key"
        key.write_text(MASTER_KEY)
        extra = ["--gateway-url", gateway_url] if gateway_url else []
        args = ["gateway-sync", "--litellm-url", self.proxy.url, "--once", *extra]
        for source in sources:
            args += ["--from", str(source)]
        return runway(*args, key_file=key)

    def api_bases(self, model: str) -> list[str]:
        """Where the proxy sends `model`: the api_base of each of its entries for that name."""
        status, body = self.proxy.call("/model/info")
        assert status == 200, body
        return sorted(
            str(e["litellm_params"].get("api_base"))
            for e in body["data"]
            if e["model_name"] == model
        )

    def chat(self, model: str, max_tokens: int) -> tuple[int, Any]:
        """A chat completion through the proxy: (HTTP status, body)."""
        return self.proxy.call(
            "/v1/chat/completions",
            {
                "model": model,
                "messages": [{"role": "user", "content": "Say something."}],
                "max_tokens": max_tokens,
                # A stand-in's random weights may draw its end-of-text token at any step; vLLM's
                # sampling parameter keeps generating, so the count is the one asked for.
                "ignore_eos": True,
            },
        )

    def answers(self, model: str, max_tokens: int) -> str:
        """A chat completion through the proxy answers: HTTP 200, `model` named,
        `completion_tokens` == `max_tokens`; returns the text."""
        status, body = self.chat(model, max_tokens)
        assert status == 200, body
        named, text, tokens = completion_of(body)
        assert (named, tokens) == (model, max_tokens), body
        return text


def service_host(service: Mapping[str, Any]) -> str:
    meta = service["metadata"]
    return f"{meta['name']}.{meta['namespace']}.svc.cluster.local"


def check_service_reaches(service: Mapping[str, Any], container: Mapping[str, Any]) -> int:
    """The Service's port, once it is shown to forward to the same port of the container (the one
    thing kube-proxy would do that the hosts-file stand-in does not)."""
    ports = service["spec"]["ports"]
    assert len(ports) == 1, ports
    target = port_of(container, ports[0].get("targetPort", ports[0]["port"]))
    assert target == ports[0]["port"], (
        f"Service port {ports[0]['port']} forwards to {target}: the hosts-file stand-in for "
        "kube-proxy only reaches equal ports"
    )
    return int(ports[0]["port"])


def completion_of(body: Mapping[str, Any]) -> tuple[str, str, int]:
    """(model, content, completion_tokens) of a chat completion."""
    return (
        body["model"],
        body["choices"][0]["message"]["content"] or "",
        body["usage"]["completion_tokens"],
    )
