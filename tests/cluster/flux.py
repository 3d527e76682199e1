"""Flux source-controller and kustomize-controller for the GitOps e2e tier, built once.

Each is built from its Go module at the pinned version (FLUX_SOURCE_CONTROLLER_VERSION,
FLUX_KUSTOMIZE_CONTROLLER_VERSION) through a wrapper module in tests/cluster/flux-*/, whose go.mod
carries the upstream's own replace lines (a module built as a dependency ignores them). Binaries
land in <cache>/bin with a stamp like kube-apiserver's; every CRD either controller watches lands
in <cache>/flux/crds (both controllers refuse to start without them), apart from the CRDs every
test cluster installs, so that only the Flux tier installs them.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from core.model.versions import Versions
from tests.cluster.build import HERE, Binary, build_binary, check_pin, module_dir, say

SOURCE = Binary("source-controller", HERE / "flux-source", "github.com/fluxcd/source-controller")
KUSTOMIZE = Binary(
    "kustomize-controller", HERE / "flux-kustomize", "github.com/fluxcd/kustomize-controller"
)
PINS = {SOURCE: "FLUX_SOURCE_CONTROLLER_VERSION", KUSTOMIZE: "FLUX_KUSTOMIZE_CONTROLLER_VERSION"}
# The CRDs each module ships (config/crd/bases): source-controller watches all of its kinds, and
# kustomize-controller watches GitRepository, OCIRepository, Bucket and ExternalArtifact sources.
CRD_GLOB = "config/crd/bases/*.yaml"


def crds_dir(cache: Path) -> Path:
    return cache / "flux" / "crds"


def build(cache: Path, versions: Versions, go: str) -> None:
    pins = versions.as_env()
    bin_dir = cache / "bin"
    for binary, pin in PINS.items():
        check_pin(binary.module_dir, binary.package, pin, pins[pin])
        build_binary(binary, bin_dir, go)
    dest = crds_dir(cache)
    marker = dest / ".complete"
    wanted = "".join(f"{b.package}@{pins[p]}\n" for b, p in PINS.items())
    if marker.exists() and marker.read_text() == wanted:
        say("CRDs flux: up to date")
        return
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for binary, pin in PINS.items():
        for path in sorted(module_dir(binary.package, pins[pin]).glob(CRD_GLOB)):
            shutil.copyfile(path, dest / path.name)
    marker.write_text(wanted)
    say(f"CRDs flux: {len(list(dest.glob('*.yaml')))} file(s)")
