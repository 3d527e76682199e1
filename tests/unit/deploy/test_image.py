"""`make image` and `make image-push` (docs/image.md): the Dockerfile built with the first OCI
builder on PATH (docker, podman, buildah, nerdctl), tagged as the chart deploys it.

No container engine runs here: stand-in builders (scripts that record their arguments) on a PATH
of their own prove the exact command lines, and a PATH with none proves the error."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.support.paths import ROOT

MAKE = shutil.which("make")
BUILDERS = ("docker", "podman", "buildah", "nerdctl")

pytestmark = pytest.mark.skipif(MAKE is None, reason="make is not installed")


def chart_image() -> str:
    image = yaml.safe_load((ROOT / "charts" / "runway" / "values.yaml").read_text())["image"]
    return f"{image['repository']}:{image['tag']}"


def path_with(tmp_path: Path, *builders: str) -> str:
    """A PATH holding awk (the Makefile reads values.yaml with it) and stand-in builders that
    append `<name> <args>` to tmp_path/calls."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    awk = shutil.which("awk")
    assert awk is not None
    (bin_dir / "awk").symlink_to(awk)
    for name in builders:
        script = bin_dir / name
        script.write_text(f'#!/bin/sh\necho "{name} $*" >> "{tmp_path}/calls"\n')
        script.chmod(0o755)
    return str(bin_dir)


def make(path: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    assert MAKE is not None
    environ = {k: v for k, v in os.environ.items() if k not in ("IMAGE", "PUSH", "MAKEFLAGS")}
    return subprocess.run(
        [MAKE, "--no-print-directory", "-C", str(ROOT), *args],
        env={**environ, "PATH": path, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def calls(tmp_path: Path) -> list[str]:
    log = tmp_path / "calls"
    return log.read_text().splitlines() if log.exists() else []


def test_the_default_tag_is_the_image_the_chart_deploys() -> None:
    chart = yaml.safe_load((ROOT / "charts" / "runway" / "Chart.yaml").read_text())

    assert chart_image() == f"runway-webhook:{chart['appVersion']}"


@pytest.mark.parametrize("index", range(len(BUILDERS)), ids=BUILDERS)
def test_make_image_builds_with_the_first_builder_present(tmp_path: Path, index: int) -> None:
    builder = BUILDERS[index]
    done = make(path_with(tmp_path, *BUILDERS[index:]), "image")

    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert done.stdout.splitlines() == [f"{builder} build -t {chart_image()} ."]
    assert calls(tmp_path) == [f"{builder} build -t {chart_image()} ."]


def test_image_names_the_tag_and_image_push_pushes_it(tmp_path: Path) -> None:
    path = path_with(tmp_path, "podman", "nerdctl")

    pushed = make(path, "image-push", IMAGE="registry.example.com/platform/runway:1.2.3")
    also_pushed = make(path, "image", PUSH="1")

    assert (pushed.returncode, pushed.stderr, also_pushed.returncode) == (0, "", 0)
    assert calls(tmp_path) == [
        "podman build -t registry.example.com/platform/runway:1.2.3 .",
        "podman push registry.example.com/platform/runway:1.2.3",
        f"podman build -t {chart_image()} .",
        f"podman push {chart_image()}",
    ]


def test_without_a_builder_make_image_names_the_ones_it_looked_for(tmp_path: Path) -> None:
    done = make(path_with(tmp_path), "image")

    assert done.returncode == 2
    assert done.stdout == ""
    first, second = done.stderr.splitlines()
    assert (
        first
        == "make image: no OCI image builder on PATH (looked for docker podman buildah nerdctl)"
    )
    assert re.fullmatch(r"make: \*\*\* \[Makefile:\d+: image\] Error 1", second), second
    assert calls(tmp_path) == []
