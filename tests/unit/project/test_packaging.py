"""What the wheel and the image ship: every package of the tree, and every data file in it."""

from __future__ import annotations

import fnmatch
import re
import tomllib

from tests.support.paths import ROOT

SETUPTOOLS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


# Folders of data only (flag catalogs, facts, the schema pack): packages without __init__.py,
# listed so that setuptools ships them and says nothing.
DATA_PACKAGES = sorted(
    p for p in SETUPTOOLS["packages"] if not (ROOT / p.replace(".", "/") / "__init__.py").exists()
)


def test_every_package_of_the_tree_is_listed() -> None:
    top = {p.split(".")[0] for p in SETUPTOOLS["packages"]}
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for room in top
        for init in (ROOT / room).rglob("__init__.py")
    }
    assert sorted(found | set(DATA_PACKAGES)) == sorted(SETUPTOOLS["packages"])
    assert DATA_PACKAGES == [
        "providers.dynamo.catalogs",
        "providers.kaito.facts",
        "providers.kuberay.catalogs",
        "providers.llmd.facts",
        "providers.vllm.catalogs",
        "renderer.output.schemas",
        "ui.static",
        "ui.templates",
    ]
    for package in DATA_PACKAGES:
        assert not list((ROOT / package.replace(".", "/")).glob("*.py")), package


def data_files(package: str) -> list[str]:
    """The files of `package` that are not Python: in its folder or a folder that is not a
    package of its own, relative to the package."""
    folder = ROOT / package.replace(".", "/")
    out = [p.name for p in folder.iterdir() if p.is_file() and p.suffix not in (".py", ".pyc")]
    for sub in folder.iterdir():
        listed = ".".join(sub.relative_to(ROOT).parts) in SETUPTOOLS["packages"]
        if (
            sub.is_dir()
            and not (sub / "__init__.py").exists()
            and sub.name != "__pycache__"
            and not listed
        ):
            out += [str(f.relative_to(folder)) for f in sub.rglob("*") if f.is_file()]
    return sorted(out)


def test_every_data_file_is_package_data() -> None:
    data = SETUPTOOLS["package-data"]
    unshipped = [
        f"{package}: {name}"
        for package in SETUPTOOLS["packages"]
        for name in data_files(package)
        if not any(fnmatch.fnmatch(name, pattern) for pattern in data.get(package, ()))
    ]
    assert unshipped == []
    assert data_files("providers.vllm") == ["config.yaml"]
    assert data_files("providers.vllm.catalogs") == ["vllm.json"]


def test_the_image_copies_every_top_level_package() -> None:
    copied = re.findall(r"^COPY (\S+) \./\1$", (ROOT / "Dockerfile").read_text(), re.M)
    assert sorted(copied) == sorted({p.split(".")[0] for p in SETUPTOOLS["packages"]})
