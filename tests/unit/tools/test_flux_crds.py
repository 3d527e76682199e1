"""The Flux tier's CRD folder (tests/cluster/flux.py): both built controllers' CRDs and
helm-controller's HelmRelease CRD, copied once per set of module versions."""

from __future__ import annotations

from pathlib import Path

from kubeio.shipped import bundled_versions
from tests.cluster.flux import copy_crds, crd_modules, crds_dir


def test_the_tier_takes_the_helm_controller_crds_at_its_pin() -> None:
    pins = bundled_versions().as_env()

    assert crd_modules(pins) == [
        ("github.com/fluxcd/source-controller", pins["FLUX_SOURCE_CONTROLLER_VERSION"]),
        ("github.com/fluxcd/kustomize-controller", pins["FLUX_KUSTOMIZE_CONTROLLER_VERSION"]),
        ("github.com/fluxcd/helm-controller", pins["FLUX_HELM_CONTROLLER_VERSION"]),
    ]


def module_tree(root: Path, files: dict[str, list[str]]) -> dict[tuple[str, str], Path]:
    """A folder per module holding config/crd/bases/<file> (and a file that is not a CRD base)."""
    found = {}
    for module, names in files.items():
        folder = root / module.replace("/", "_")
        bases = folder / "config" / "crd" / "bases"
        bases.mkdir(parents=True)
        for name in names:
            (bases / name).write_text(f"# {module} {name}\n")
        (folder / "config" / "crd" / "kustomization.yaml").write_text("resources: []\n")
        found[(module, "v1.0.0")] = folder
    return found


def test_copy_crds_copies_every_base_once_and_then_keeps_them(tmp_path: Path) -> None:
    folders = module_tree(
        tmp_path / "mods",
        {
            "github.com/fluxcd/source-controller": [
                "source.toolkit.fluxcd.io_helmrepositories.yaml"
            ],
            "github.com/fluxcd/helm-controller": ["helm.toolkit.fluxcd.io_helmreleases.yaml"],
        },
    )
    modules = sorted(folders)
    dest = crds_dir(tmp_path / "cache")
    asked: list[tuple[str, str]] = []

    def locate(module: str, version: str) -> Path:
        asked.append((module, version))
        return folders[(module, version)]

    first = copy_crds(dest, modules, locate)
    again = copy_crds(dest, modules, locate)

    assert (first, again) == (2, -1)
    assert asked == modules  # the second run downloads nothing
    assert sorted(p.name for p in dest.iterdir()) == [
        ".complete",
        "helm.toolkit.fluxcd.io_helmreleases.yaml",
        "source.toolkit.fluxcd.io_helmrepositories.yaml",
    ]
    assert (dest / "helm.toolkit.fluxcd.io_helmreleases.yaml").read_text() == (
        "# github.com/fluxcd/helm-controller helm.toolkit.fluxcd.io_helmreleases.yaml\n"
    )
    assert (dest / ".complete").read_text() == "".join(f"{m}@{v}\n" for m, v in modules)


def test_a_new_module_set_replaces_the_folder(tmp_path: Path) -> None:
    folders = module_tree(
        tmp_path / "mods",
        {
            "github.com/fluxcd/source-controller": ["a.yaml"],
            "github.com/fluxcd/helm-controller": ["b.yaml"],
        },
    )
    dest = crds_dir(tmp_path / "cache")
    source = [("github.com/fluxcd/source-controller", "v1.0.0")]

    copy_crds(dest, source, lambda m, v: folders[(m, v)])
    count = copy_crds(dest, sorted(folders), lambda m, v: folders[(m, v)])

    assert count == 2
    assert sorted(p.name for p in dest.glob("*.yaml")) == ["a.yaml", "b.yaml"]
