"""A slim Argo CD for the Argo CD e2e tier, built once.

bin/argocd        tests/cluster/argocd/main.go at ARGOCD_VERSION: the application-controller, the
                  repo-server and a loopback Redis (miniredis) as subcommands
bin/kustomize     the kustomize Argo CD ships (tests/cluster/kustomize/go.mod); the repo-server
                  runs it from PATH
bin/git-verify-wrapper.sh
                  from the Argo CD module's hack/; the repo-server calls it for every revision

Argo CD's gitops-engine at this release is not served by the Go module proxy; the wrapper go.mod
replaces it with the served master pseudo-version (its comment says which). The engine is
therefore a master commit, not the exact tree of the release.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from core.model.versions import Versions
from tests.cluster.build import HERE, Binary, build_binary, check_pin, module_dir, say

MODULE = "github.com/argoproj/argo-cd/v3"
ENGINE = "github.com/argoproj/argo-cd/gitops-engine"
WRAPPER = "hack/git-verify-wrapper.sh"


def argocd_binary(version: str) -> Binary:
    stamp = f"-X {MODULE}/common.version={version.removeprefix('v')}"
    return Binary("argocd", HERE / "argocd", ".", ("-s", "-w", stamp))


KUSTOMIZE = Binary("kustomize", HERE / "kustomize", "sigs.k8s.io/kustomize/kustomize/v5")


def engine_version() -> str:
    """The gitops-engine pseudo-version the wrapper go.mod replaces the release's with."""
    for line in (HERE / "argocd" / "go.mod").read_text().splitlines():
        if line.startswith(f"replace {ENGINE} =>"):
            return line.split()[-1]
    raise SystemExit(f"[cluster] argocd/go.mod does not replace {ENGINE}")


def build(cache: Path, versions: Versions, go: str) -> None:
    pins = versions.as_env()
    version = pins["ARGOCD_VERSION"]
    check_pin(HERE / "argocd", MODULE, "ARGOCD_VERSION", version)
    bin_dir = cache / "bin"
    say(f"Argo CD {version} with gitops-engine {engine_version()} (a master commit)")
    build_binary(argocd_binary(version), bin_dir, go)
    check_pin(
        KUSTOMIZE.module_dir, KUSTOMIZE.package, "KUSTOMIZE_VERSION", pins["KUSTOMIZE_VERSION"]
    )
    build_binary(KUSTOMIZE, bin_dir, go)
    wrapper = bin_dir / Path(WRAPPER).name
    marker = bin_dir / f"{wrapper.name}.version"
    if not (wrapper.exists() and marker.exists() and marker.read_text() == version):
        shutil.copyfile(module_dir(MODULE, version) / WRAPPER, wrapper)
        wrapper.chmod(0o755)
        marker.write_text(version)
