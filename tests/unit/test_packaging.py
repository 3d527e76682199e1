"""What the wheel and the image ship: every package of the tree, and every data file in it."""

from __future__ import annotations

import fnmatch
import re
import tomllib

from tests.conftest import ROOT

SETUPTOOLS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_every_package_of_the_tree_is_listed() -> None:
    top = {p.split(".")[0] for p in SETUPTOOLS["packages"]}
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for room in top
        for init in (ROOT / room).rglob("__init__.py")
    }
    assert sorted(found) == sorted(SETUPTOOLS["packages"])


def data_files(package: str) -> list[str]:
    """The files of `package` that are not Python: in its folder or a folder that is not a
    package of its own, relative to the package."""
    folder = ROOT / package.replace(".", "/")
    out = [p.name for p in folder.iterdir() if p.is_file() and p.suffix not in (".py", ".pyc")]
    for sub in folder.iterdir():
        if sub.is_dir() and not (sub / "__init__.py").exists() and sub.name != "__pycache__":
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
    assert data_files("providers.vllm") == ["catalogs/vllm.json", "config.yaml"]


def test_the_image_copies_every_top_level_package() -> None:
    copied = re.findall(r"^COPY (\S+) \./\1$", (ROOT / "Dockerfile").read_text(), re.M)
    assert sorted(copied) == sorted({p.split(".")[0] for p in SETUPTOOLS["packages"]})
