"""Flux source-controller and kustomize-controller for the GitOps e2e tier, built once.

Each is built from its Go module at the pinned version (FLUX_SOURCE_CONTROLLER_VERSION,
FLUX_KUSTOMIZE_CONTROLLER_VERSION) through a wrapper module in tests/cluster/flux-*/, whose go.mod
carries the upstream's own replace lines (a module built as a dependency ignores them). Binaries
land in <cache>/bin with a stamp like kube-apiserver's; every CRD either controller watches lands
in <cache>/flux/crds (both controllers refuse to start without them), apart from the CRDs every
test cluster installs, so that only the Flux tier installs them.

helm-controller is not built: the tier cannot fetch a chart anyway. Only its HelmRelease CRD
(module github.com/fluxcd/helm-controller at FLUX_HELM_CONTROLLER_VERSION) joins the others, so
that kustomize-controller can apply a HelmRelease committed to Git (a provider's install, from
the portal's Providers page).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from pathlib import Path

from core.model.versions import Versions
from tests.cluster.build import HERE, Binary, build_binary, check_pin, module_dir, say

SOURCE = Binary("source-controller", HERE / "flux-source", "github.com/fluxcd/source-controller")
KUSTOMIZE = Binary(
    "kustomize-controller", HERE / "flux-kustomize", "github.com/fluxcd/kustomize-controller"
)
PINS = {SOURCE: "FLUX_SOURCE_CONTROLLER_VERSION", KUSTOMIZE: "FLUX_KUSTOMIZE_CONTROLLER_VERSION"}
HELM_CONTROLLER = "github.com/fluxcd/helm-controller"
# The CRDs each module ships (config/crd/bases): source-controller watches all of its kinds, and
# kustomize-controller watches GitRepository, OCIRepository, Bucket and ExternalArtifact sources.
CRD_GLOB = "config/crd/bases/*.yaml"


def crds_dir(cache: Path) -> Path:
    return cache / "flux" / "crds"


def crd_modules(pins: Mapping[str, str]) -> list[tuple[str, str]]:
    """(module, version) of every Go module whose CRDs the Flux tier installs."""
    built = [(binary.package, pins[pin]) for binary, pin in PINS.items()]
    return [*built, (HELM_CONTROLLER, pins["FLUX_HELM_CONTROLLER_VERSION"])]


def copy_crds(
    dest: Path,
    modules: list[tuple[str, str]],
    locate: Callable[[str, str], Path] = module_dir,
) -> int:
    """Every CRD file of `modules` into `dest` (made afresh unless its marker names exactly
    these module versions); how many files it holds."""
    marker = dest / ".complete"
    wanted = "".join(f"{module}@{version}\n" for module, version in modules)
    if marker.exists() and marker.read_text() == wanted:
        return -1
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for module, version in modules:
        for path in sorted(locate(module, version).glob(CRD_GLOB)):
            shutil.copyfile(path, dest / path.name)
    marker.write_text(wanted)
    return len(list(dest.glob("*.yaml")))


def build(cache: Path, versions: Versions, go: str) -> None:
    pins = versions.as_env()
    bin_dir = cache / "bin"
    for binary, pin in PINS.items():
        check_pin(binary.module_dir, binary.package, pin, pins[pin])
        build_binary(binary, bin_dir, go)
    copied = copy_crds(crds_dir(cache), crd_modules(pins))
    say("CRDs flux: up to date" if copied < 0 else f"CRDs flux: {copied} file(s)")
