"""The streamed render writes, byte for byte, what the render before it wrote.

tests/data/streamed/listing.json holds the sha256 of every file a first `render --commit` wrote
for one deterministic platform (many namespaces, every provider the bench's generator has, and
the examples), recorded with the render as it was before it streamed (issue #46). Each test
renders the same platform with the code of today and compares file by file: one full render,
and the same platform in shards, one after another in one repository, as N jobs would leave it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from core.rendering.inferencegateway import GatewayTarget
from kubeio.yamlio import dump_all
from renderer.flow import render
from renderer.output.ownership import SOURCES_FILE
from renderer.output.shard import Shard
from renderer.settings import RenderSettings
from tests.support.builders import model_deployment
from tests.support.paths import EXAMPLES

LISTING = Path(__file__).resolve().parent.parent / "data" / "streamed" / "listing.json"
MODELS = 300  # past STREAM_BLOBS (renderer.stages): the write stage streams its blobs
NAMESPACES = 47  # prime to the 3 providers: each namespace has models of each
# the command a folder's runway.metadata records (renderer.git.provenance): fixed, so that the
# listing does not depend on where the test's folders are
COMMAND = ("render", "sources", "--commit")


def platform(folder: Path) -> Path:
    """The sources: MODELS ModelDeployments over NAMESPACES namespaces, one file per namespace,
    by the providers of bench.render's generator (vLLM, llm-d, and none named: auto-selected,
    KubeRay for 2 GPUs), with a few sizes of each; and every example, the refused ones too."""
    providers = ("vllm", "llmd", None)
    files: dict[str, list[dict[str, Any]]] = {}
    for i in range(MODELS):
        provider = providers[i % 3]
        namespace = f"team{i % NAMESPACES:02}"
        gpu = 2 if provider is None else 1 + (i // 3) % 2
        engine: dict[str, Any] = {"type": "vllm"}
        if provider is not None:  # Ray Serve takes no vLLM flags
            engine["extraArgs"] = [f"--max-num-seqs={64 * (1 + i % 4)}"]
        body = model_deployment(f"m{i:05}", namespace, gpu=gpu, provider=provider, engine=engine)
        files.setdefault(namespace, []).append(body)
    folder.mkdir()
    for namespace, objects in files.items():
        (folder / f"{namespace}.yaml").write_text(dump_all(objects))
    for example in sorted(EXAMPLES.rglob("*.yaml")):
        shutil.copy(example, folder / f"example-{example.parent.name}-{example.name}")
    return folder


def listing(repo: Path, sources: Path) -> dict[str, str]:
    """sha256 of every file of the work tree but .git, by path; the committed tree must be
    exactly the files on disk. The record of sources names each source file by its absolute
    path (the sources lie outside the repository): the test's folder is written `sources/`."""
    out = {}
    for root, dirs, names in os.walk(repo):
        dirs[:] = [d for d in dirs if not (root == str(repo) and d == ".git")]
        for name in names:
            path = Path(root) / name
            body = path.read_bytes()
            if name == SOURCES_FILE:
                body = body.replace(f'"{sources}/'.encode(), b'"sources/')
            out[path.relative_to(repo).as_posix()] = hashlib.sha256(body).hexdigest()
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    assert status == ""
    return dict(sorted(out.items()))


def first_render(sources: Path, repo: Path, shard: Shard | None = None) -> None:
    settings = RenderSettings(
        sources=(str(sources),),
        repo=str(repo),
        commit=True,
        shard=shard,
        command=COMMAND,
        gateway=GatewayTarget("inference", "gateways"),
    )
    report = render(settings)
    assert report.committed is not None


def compared(got: dict[str, str], recorded: dict[str, str]) -> list[str]:
    """Each path that differs, is missing or is new, named."""
    return [
        f"{path}: {'missing' if path not in got else 'new' if path not in recorded else 'differs'}"
        for path in sorted(set(got) | set(recorded))
        if got.get(path) != recorded.get(path)
    ]


@pytest.fixture(scope="module")
def recorded() -> dict[str, str]:
    loaded = json.loads(LISTING.read_text())
    assert len(loaded) > MODELS * 4  # the record is of the whole platform
    return dict(loaded)


def test_a_first_render_writes_the_recorded_files(tmp_path: Path, recorded: dict[str, str]) -> None:
    sources, repo = platform(tmp_path / "sources"), tmp_path / "gitops"
    first_render(sources, repo)

    assert compared(listing(repo, sources), recorded) == []


def test_three_shards_in_turn_write_the_recorded_files(
    tmp_path: Path, recorded: dict[str, str]
) -> None:
    sources, repo = platform(tmp_path / "sources"), tmp_path / "gitops"
    for k in (2, 3, 1):
        first_render(sources, repo, Shard(k, 3))

    assert compared(listing(repo, sources), recorded) == []


def record(into: Path) -> None:
    """Writes the listing (run once, with the render the listing is of)."""
    import tempfile  # noqa: PLC0415 - recording only

    with tempfile.TemporaryDirectory() as tmp:
        sources, repo = platform(Path(tmp) / "sources"), Path(tmp) / "gitops"
        first_render(sources, repo)
        into.parent.mkdir(parents=True, exist_ok=True)
        into.write_text(json.dumps(listing(repo, sources), indent=1) + "\n")


if __name__ == "__main__":
    record(LISTING)
