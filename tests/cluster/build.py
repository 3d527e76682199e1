"""`make cluster`: build the test cluster's binaries, and fetch the GitOps tools' CRDs, once.

Everything lands in the cache directory (default `.cache/cluster`, or $RUNWAY_CLUSTER_CACHE):
  bin/kube-apiserver, bin/kube-controller-manager, bin/kube-scheduler
                                        from tests/cluster/kubernetes/go.mod, stamped with the pin
  bin/etcd, bin/kuberay-operator, bin/lws-controller, bin/helm
                                        from tests/cluster/{etcd,kuberay,lws,helm}/go.mod
  bin/kwok, kwok/stages.yaml            KWOK's fake nodes and pod lifecycles (tests/cluster/kwok.py)
  bin/argocd, bin/kustomize, ...        a slim Argo CD (tests/cluster/argocd.py)
  bin/source-controller, ...            Flux (tests/cluster/flux.py)
  bin/kstatus                           Flux's kstatus status.Compute (tests/cluster/kstatus)
  argolua.compiled                      Argo CD's Lua health test compiled into the Go build cache
                                        (tests/cluster/argolua.py)
  crds/<upstream>/<version>/*.yaml      Argo CD and Flux CRDs from their Go modules at the pins
The CRDs of the kinds Runway renders are not fetched here: the test cluster installs them from
Runway's schema pack (renderer/output/schemas/, `make schemas`), so the e2e tier tests exactly the
schemas users get.
A second run does nothing: each binary carries a stamp of its go.mod, go.sum and Go version, and
each CRD folder a marker. Versions come from core/model/versions.env only.

Exit status: 0 built (or already built); 1 failed. Without Go: 1 when CI=true, else 0 with a
loud warning (the e2e tier then skips, loudly, on a developer machine only).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from core.model.versions import Versions  # noqa: E402  (the project root is on the path only now)

HERE = ROOT / "tests" / "cluster"
HEARTBEAT_SECONDS = 30
BUILD_TIMEOUT_SECONDS = 3600


def cache_dir(env: Mapping[str, str]) -> Path:
    return Path(env.get("RUNWAY_CLUSTER_CACHE") or ROOT / ".cache" / "cluster")


@dataclass(frozen=True)
class Binary:
    name: str
    module_dir: Path
    package: str
    ldflags: tuple[str, ...] = ()  # `-X` stamps; part of the binary's stamp


KUBERNETES = HERE / "kubernetes"
KUBERNETES_MODULE = "k8s.io/kubernetes"
# Where Kubernetes binaries keep their version (what /version and `--version` report); the
# release build sets them from git (hack/lib/version.sh), a module build has to set them itself.
VERSION_PACKAGES = ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")
KUBERNETES_COMMANDS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler")
HELM_MODULE = "helm.sh/helm/v4"
LWS_MODULE = "sigs.k8s.io/lws"
# Flux's kstatus: kustomize-controller imports github.com/fluxcd/cli-utils/pkg/kstatus (Flux's fork
# of sigs.k8s.io/cli-utils), at the version its wrapper module selects.
KSTATUS_MODULE = "github.com/fluxcd/cli-utils"


def kubernetes_ldflags(version: str) -> tuple[str, ...]:
    """The version stamp of a Kubernetes release. The module proxy records no commit for
    k8s.io/kubernetes, so gitCommit is left empty rather than the `$Format:%H$` placeholder."""
    major, minor = version.removeprefix("v").split(".")[:2]
    values = {
        "gitVersion": version,
        "gitMajor": major,
        "gitMinor": minor,
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",
    }
    return tuple(
        f"-X {pkg}.{key}={value}" for pkg in VERSION_PACKAGES for key, value in values.items()
    )


def binaries(versions: Versions) -> tuple[Binary, ...]:
    stamp = kubernetes_ldflags(versions.kubernetes)
    return (
        *(
            Binary(c, KUBERNETES, f"{KUBERNETES_MODULE}/cmd/{c}", stamp)
            for c in KUBERNETES_COMMANDS
        ),
        Binary("etcd", HERE / "etcd", "."),
        # The KubeRay operator (its go.mod has a `tool` line for the pinned ray-operator module).
        Binary("kuberay-operator", HERE / "kuberay", "github.com/ray-project/kuberay/ray-operator"),
        # The LeaderWorkerSet controller (a `tool` line for sigs.k8s.io/lws/cmd at LWS_VERSION),
        # stamped as LWS's Makefile stamps its manager (pkg/version.GitVersion).
        Binary(
            "lws-controller",
            HERE / "lws",
            LWS_MODULE + "/cmd",
            (f"-X {LWS_MODULE}/pkg/version.GitVersion={versions.as_env()['LWS_VERSION']}",),
        ),
        # Helm, for the chart tests (tests/e2e/test_helm.py); stamped as its Makefile does.
        Binary(
            "helm",
            HERE / "helm",
            HELM_MODULE + "/cmd/helm",
            (f"-X {HELM_MODULE}/internal/version.version={versions.as_env()['HELM_VERSION']}",),
        ),
        # status.Compute of Flux's kstatus over objects on stdin (tests/e2e/test_kstatus.py).
        Binary("kstatus", HERE / "kstatus", "."),
    )


def required_version(module_dir: Path, module: str) -> str:
    """The version a wrapper go.mod requires of `module`."""
    text = (module_dir / "go.mod").read_text()
    found = re.search(rf"^\s*(?:require\s+)?{re.escape(module)} (v\S+)", text, re.M)
    if found is None:
        raise SystemExit(f"[cluster] {module_dir}/go.mod does not require {module}")
    return found.group(1)


def check_pin(module_dir: Path, module: str, pin: str, value: str) -> None:
    version = required_version(module_dir, module)
    if version != value:
        raise SystemExit(
            f"[cluster] {module_dir.name}/go.mod requires {module} {version} but {pin}={value}: "
            f"run `go get {module}@{value}` there"
        )


@dataclass(frozen=True)
class Upstream:
    """Where an upstream keeps its CRDs inside its Go module."""

    name: str
    module: str
    pin: str  # KEY of core/model/versions.env
    files: tuple[str, ...]  # paths inside the module (globs allowed)

    def version(self, versions: Versions) -> str:
        value = versions.as_env()[self.pin]
        return value if value.startswith("v") else f"v{value}"


UPSTREAMS = (
    Upstream(
        "argo-cd",
        "github.com/argoproj/argo-cd/v3",
        "ARGOCD_VERSION",
        (
            "manifests/crds/application-crd.yaml",
            "manifests/crds/applicationset-crd.yaml",
            "manifests/crds/appproject-crd.yaml",
        ),
    ),
    Upstream(
        "flux-source-controller",
        "github.com/fluxcd/source-controller",
        "FLUX_SOURCE_CONTROLLER_VERSION",
        ("config/crd/bases/source.toolkit.fluxcd.io_gitrepositories.yaml",),
    ),
    Upstream(
        "flux-kustomize-controller",
        "github.com/fluxcd/kustomize-controller",
        "FLUX_KUSTOMIZE_CONTROLLER_VERSION",
        ("config/crd/bases/kustomize.toolkit.fluxcd.io_kustomizations.yaml",),
    ),
)


def _only_crds(path: Path) -> bool:
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    return bool(docs) and all(
        isinstance(d, dict) and d.get("kind") == "CustomResourceDefinition" for d in docs
    )


def say(message: str) -> None:
    print(f"[cluster] {message}", flush=True)


def go_env() -> dict[str, str]:
    env = dict(os.environ)
    env["GOTOOLCHAIN"] = "local"  # never fetch another Go; go.mod asks for what this one has
    env.setdefault("GOFLAGS", "-mod=readonly")
    return env


def run_with_heartbeat(argv: Sequence[str], *, cwd: Path, what: str) -> None:
    """Run a long command, printing a line every HEARTBEAT_SECONDS so nobody thinks it hung."""
    start = time.monotonic()
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(argv, cwd=cwd, env=go_env(), stdout=log, stderr=subprocess.STDOUT)
        while True:
            try:
                code = proc.wait(timeout=HEARTBEAT_SECONDS)
                break
            except subprocess.TimeoutExpired:
                elapsed = time.monotonic() - start
                if elapsed > BUILD_TIMEOUT_SECONDS:
                    proc.kill()
                    proc.wait()
                    raise SystemExit(f"[cluster] {what}: gave up after {elapsed:.0f}s") from None
                say(f"{what}: still working ({elapsed:.0f}s)")
        if code != 0:
            log.seek(0)
            tail = log.read().decode(errors="replace")[-4000:]
            raise SystemExit(f"[cluster] {what} failed (exit {code}):\n{tail}")
    say(f"{what}: done in {time.monotonic() - start:.0f}s")


def go_version() -> str:
    done = subprocess.run(
        ["go", "version"], capture_output=True, text=True, check=True, env=go_env(), timeout=60
    )
    return done.stdout.strip()


def stamp_of(binary: Binary, go: str) -> str:
    digest = hashlib.sha256(go.encode())
    for name in ("go.mod", "go.sum", "main.go"):
        path = binary.module_dir / name
        if path.exists():
            digest.update(path.read_bytes())
    digest.update("\n".join(binary.ldflags).encode())
    return digest.hexdigest()


def check_kstatus_pin() -> None:
    """tests/cluster/kstatus computes status with the kstatus Flux's kustomize-controller runs."""
    flux = required_version(HERE / "flux-kustomize", KSTATUS_MODULE)
    ours = required_version(HERE / "kstatus", KSTATUS_MODULE)
    if ours != flux:
        raise SystemExit(
            f"[cluster] kstatus/go.mod requires {KSTATUS_MODULE} {ours} but kustomize-controller "
            f"(flux-kustomize/go.mod) uses {flux}: run `go get {KSTATUS_MODULE}@{flux}` there"
        )


def build_binaries(cache: Path, versions: Versions) -> None:
    go = go_version()
    check_pin(KUBERNETES, KUBERNETES_MODULE, "KUBERNETES_VERSION", versions.kubernetes)
    check_pin(HERE / "helm", HELM_MODULE, "HELM_VERSION", versions.as_env()["HELM_VERSION"])
    check_pin(HERE / "lws", LWS_MODULE, "LWS_VERSION", versions.as_env()["LWS_VERSION"])
    check_kstatus_pin()
    for binary in binaries(versions):
        build_binary(binary, cache / "bin", go)


def build_binary(binary: Binary, bin_dir: Path, go: str) -> None:
    """`go build` one binary into bin_dir, unless its stamp says it is up to date."""
    bin_dir = bin_dir.resolve()  # `go build` runs in the module folder
    bin_dir.mkdir(parents=True, exist_ok=True)
    target, stamp_file = bin_dir / binary.name, bin_dir / f"{binary.name}.stamp"
    stamp = stamp_of(binary, go)
    if target.exists() and stamp_file.exists() and stamp_file.read_text() == stamp:
        say(f"{binary.name}: up to date")
        return
    say(f"{binary.name}: building with {go} (the first build takes minutes)")
    partial = bin_dir / f".{binary.name}.partial"
    ldflags = ["-ldflags", " ".join(binary.ldflags)] if binary.ldflags else []
    run_with_heartbeat(
        ["go", "build", "-trimpath", *ldflags, "-o", str(partial), binary.package],
        cwd=binary.module_dir,
        what=f"go build {binary.name}",
    )
    partial.replace(target)
    stamp_file.write_text(stamp)


def module_dir(module: str, version: str) -> Path:
    """Download one module version through the Go module proxy; its folder in the module cache."""
    with tempfile.TemporaryDirectory() as scratch:
        env = go_env() | {"GOFLAGS": "-mod=mod"}
        done = subprocess.run(
            ["go", "mod", "download", "-json", f"{module}@{version}"],
            cwd=scratch,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
    info = json.loads(done.stdout or "{}")
    if done.returncode != 0 or "Dir" not in info:
        reason = info.get("Error") or done.stderr.strip() or "no module folder reported"
        raise SystemExit(f"[cluster] cannot download {module}@{version}: {reason}")
    return Path(info["Dir"])


def fetch_crds(cache: Path, versions: Versions) -> None:
    for upstream in UPSTREAMS:
        version = upstream.version(versions)
        dest = cache / "crds" / upstream.name / version
        if (dest / ".complete").exists():
            say(f"CRDs {upstream.name} {version}: up to date")
            continue
        source = module_dir(upstream.module, version)
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        copied = 0
        for pattern in upstream.files:
            for path in sorted(source.glob(pattern)):
                if _only_crds(path):
                    shutil.copyfile(path, dest / path.name)
                    copied += 1
        if copied == 0:
            raise SystemExit(
                f"[cluster] {upstream.module}@{version} holds none of {upstream.files}"
            )
        (dest / ".complete").write_text(f"{upstream.module}@{version}\n")
        say(f"CRDs {upstream.name} {version}: {copied} file(s) from {upstream.module}")


def main(env: Mapping[str, str]) -> int:
    if shutil.which("go") is None:
        message = "Go is not installed: the e2e tier (real kube-apiserver + etcd) cannot be built"
        if env.get("CI", "").lower() == "true":
            print(f"[cluster] ERROR: {message}", file=sys.stderr)
            return 1
        print(
            f"[cluster] WARNING: {message}; e2e tests will be SKIPPED on this machine",
            file=sys.stderr,
        )
        return 0
    versions = Versions.parse((ROOT / "core" / "model" / "versions.env").read_text())
    cache = cache_dir(env)
    say(f"cache: {cache}; Kubernetes {versions.kubernetes}, etcd {versions.etcd}")
    build_binaries(cache, versions)
    fetch_crds(cache, versions)
    # They import this module.
    from tests.cluster import argocd, argolua, flux, kwok  # noqa: PLC0415

    go = go_version()
    flux.build(cache, versions, go)
    kwok.build(cache, versions, go)
    argocd.build(cache, versions, go)
    argolua.build(cache, versions, go)
    return 0


if __name__ == "__main__":
    sys.exit(main(os.environ))
