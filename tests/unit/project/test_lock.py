"""The image's locks (requirements/*.lock, `make lock`): every package pinned with hashes, the
runtime lock agrees with pyproject.toml's dependencies, the tested virtualenv runs exactly the
locked versions (`make install` installs the lock first), and the Dockerfile installs from the
locks with hashes required, on a base pinned by its full tag, with git inside."""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.support.paths import ROOT

REQUIREMENTS = ROOT / "requirements"
ENTRY = re.compile(
    r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)((?:\s*\\\n\s+--hash=sha256:[0-9a-f]{64})+)", re.M
)


def locked(path: Path) -> dict[str, tuple[str, int]]:
    """{canonical name: (version, number of hashes)} of a pip-compile lock; an AssertionError
    for any requirement line that is not `name==version` followed by sha256 hashes."""
    text = path.read_text()
    found: dict[str, tuple[str, int]] = {
        canonicalize_name(m[1]): (m[2], m[3].count("--hash=")) for m in ENTRY.finditer(text)
    }
    requirement_lines = [
        line for line in text.splitlines() if line and not line.startswith((" ", "#"))
    ]
    assert len(requirement_lines) == len(found), requirement_lines
    return found


def test_every_locked_package_is_pinned_with_hashes() -> None:
    for name in (
        "runtime.lock",
        "build.lock",
        "serving-vllm.lock",
        "serving-vllm-cpu.lock",
        "serving-dynamo.lock",
    ):
        entries = locked(REQUIREMENTS / name)
        assert entries, name
        assert [n for n, (_, hashes) in entries.items() if hashes == 0] == []


def test_the_runtime_lock_satisfies_every_dependency_of_pyproject() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    entries = locked(REQUIREMENTS / "runtime.lock")
    unmet = []
    for line in project["dependencies"]:
        requirement = Requirement(line)
        version = entries.get(canonicalize_name(requirement.name), ("", 0))[0]
        if not version or not requirement.specifier.contains(version, prereleases=True):
            unmet.append((line, version))
    assert unmet == []


def test_the_tested_virtualenv_runs_exactly_the_locked_runtime() -> None:
    entries = locked(REQUIREMENTS / "runtime.lock")
    installed = {}
    for name in entries:
        try:
            installed[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            installed[name] = "missing"
    assert installed == {n: v for n, (v, _) in entries.items()}


def test_the_build_lock_pins_the_build_backend_pyproject_names() -> None:
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    entries = locked(REQUIREMENTS / "build.lock")
    unmet = [
        line
        for line in requires
        if not Requirement(line).specifier.contains(
            entries.get(canonicalize_name(Requirement(line).name), ("0", 0))[0]
        )
        or canonicalize_name(Requirement(line).name) not in entries
    ]
    assert unmet == []


def test_the_dockerfile_installs_only_from_the_locks_on_a_pinned_base_with_git() -> None:
    lines = [
        line.strip()
        for line in (ROOT / "Dockerfile").read_text().replace("\\\n", " ").splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    (base,) = [line.split("=", 1)[1] for line in lines if line.startswith("ARG PYTHON_IMAGE=")]
    # A full patch version and a Debian release: not a tag that moves (3.11-slim, latest).
    assert re.fullmatch(r"python:3\.11\.\d+-slim-[a-z]+(@sha256:[0-9a-f]{64})?", base), base
    assert [line for line in lines if line.startswith("FROM")] == [
        "FROM ${PYTHON_IMAGE} AS build",
        "FROM ${PYTHON_IMAGE}",
    ]
    installs = [
        part.strip()
        for line in lines
        if line.startswith("RUN")
        for part in line.removeprefix("RUN").split("&&")
        if "pip install" in part
    ]
    assert installs == [
        "pip install --no-cache-dir --require-hashes --no-deps -r requirements/build.lock",
        "pip install --no-cache-dir --require-hashes --no-deps --prefix=/install"
        " -r requirements/runtime.lock",
        "pip install --no-cache-dir --no-deps --no-build-isolation --prefix=/install .",
    ]
    assert any("apt-get install -y --no-install-recommends git" in line for line in lines)
