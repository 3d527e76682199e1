"""The engine sets of the parser tier and their cached virtualenvs (`.venv-parsers-<set>`).

Each set's requirements come from core/model/versions.env and from the pinned wheels' own
metadata (the vLLM and SGLang ai-dynamo's extras pin, the vLLM ray[llm] requires), so a pin
bump rebuilds the set. A virtualenv is built once: `pip download` of the requirements with
their dependencies into .cache/parsers/wheels/<set> (PyPI's default wheels: torch with its
CUDA libraries, since PyPI serves no CPU build), then an offline `pip install` from there. Its
stamp records the requirements and what building it cost (download size and time, install time,
disk size), which the report prints.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tools.flags import download, extra_pin, ray_vllm

STAMP = ".installed.json"


@dataclass(frozen=True)
class EngineSet:
    """One virtualenv: what it installs and which entry points it parses."""

    name: str
    requirements: tuple[str, ...]
    entries: tuple[str, ...]
    why: str

    def venv(self, root: Path) -> Path:
        return root / f".venv-parsers-{self.name}"

    def python(self, root: Path) -> Path:
        return self.venv(root) / "bin" / "python"


def engine_sets(pins: Mapping[str, str], wheels: Path) -> list[EngineSet]:
    """The five sets at the pins; `wheels` caches the two wheels whose metadata is read."""
    dynamo = pins["DYNAMO_VERSION"]
    dynamo_wheel = download(f"ai-dynamo=={dynamo}", wheels / "metadata")
    ray_wheel = download(f"ray=={pins['RAY_VERSION']}", wheels / "metadata")
    base = (f"ai-dynamo=={dynamo}", "uvloop")
    return [
        EngineSet(
            "vllm",
            (f"vllm=={pins['VLLM_VERSION'].lstrip('v')}",),
            ("vllm",),
            "the vllm/vllm-openai image of llm-d and Direct vLLM (`vllm serve`)",
        ),
        EngineSet(
            "dynamo-vllm",
            (*base, f"vllm=={extra_pin(dynamo_wheel, 'vllm', 'vllm')}"),
            ("dynamo-vllm", "dynamo-frontend"),
            "Dynamo's vllm-runtime image: the vLLM workers and every frontend sidecar",
        ),
        EngineSet(
            "dynamo-sglang",
            (*base, f"sglang=={extra_pin(dynamo_wheel, 'sglang', 'sglang')}"),
            ("dynamo-sglang",),
            "Dynamo's sglang-runtime image: the SGLang workers",
        ),
        EngineSet(
            "dynamo",
            base,
            ("dynamo-trtllm", "dynamo-mocker"),
            "ai-dynamo alone: the TRT-LLM workers (the pinned tensorrt-llm is not on PyPI) and "
            "the mocker (dynamo-planner image, no engine)",
        ),
        EngineSet(
            "ray",
            # boto3: ray.llm's LLMConfig module imports it; the ray-llm image has it, the extra
            # does not name it
            (f"ray[llm]=={pins['RAY_VERSION']}", f"vllm=={ray_vllm(ray_wheel)}", "boto3"),
            ("kuberay",),
            "the ray-llm image: Ray Serve LLM and the vLLM ray[llm] requires",
        ),
    ]


def stamp(engine: EngineSet, root: Path) -> dict[str, Any] | None:
    """The built set's record, when it was built with these requirements."""
    path = engine.venv(root) / STAMP
    if not path.exists():
        return None
    record: dict[str, Any] = json.loads(path.read_text())
    return record if record.get("requirements") == list(engine.requirements) else None


def ensure(engine: EngineSet, root: Path, wheels: Path, *, keep_wheels: bool) -> dict[str, Any]:
    """Build `engine`'s virtualenv unless its stamp matches; returns the stamp. The downloaded
    wheels are deleted once installed unless `keep_wheels` (together the five sets' wheels
    and virtualenvs would need twice the disk)."""
    built = stamp(engine, root)
    if built is not None:
        return built
    venv, house = engine.venv(root), wheels / engine.name
    shutil.rmtree(venv, ignore_errors=True)
    house.mkdir(parents=True, exist_ok=True)
    print(f"parsers: building {venv.name}: {' '.join(engine.requirements)}", flush=True)
    started = time.monotonic()
    _pip(
        sys.executable,
        "download",
        "--quiet",
        "--no-cache-dir",
        "-d",
        str(house),
        *engine.requirements,
    )
    downloaded = time.monotonic()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(engine.python(root))
    _pip(
        python, "install", "--quiet", "--no-index", "--find-links", str(house), *engine.requirements
    )
    record = {
        "requirements": list(engine.requirements),
        "download_seconds": round(downloaded - started, 1),
        "download_bytes": size(house),
        "install_seconds": round(time.monotonic() - downloaded, 1),
        "venv_bytes": size(venv),
    }
    (venv / STAMP).write_text(json.dumps(record, indent=1) + "\n")
    if not keep_wheels:
        shutil.rmtree(house)
    return record


def _pip(python: str, *args: str) -> None:
    subprocess.run([python, "-m", "pip", *args], check=True, timeout=3600)


def size(path: Path) -> int:
    """Bytes on disk under `path` (files only, symlinks not followed)."""
    return sum(p.lstat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())
