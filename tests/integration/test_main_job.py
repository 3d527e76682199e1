"""The README's main job, exactly as written there, on a machine without Go or a cluster: it
validates and renders every shipped example strictly, commits, and exits 0."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.support.paths import EXAMPLES, ROOT

SCRATCH = "/tmp/runway-gitops"  # the README's repository path; each test uses its own instead


def readme_commands() -> list[str]:
    """The `runway validate` and `runway render` lines of the README's first shell block."""
    text = (ROOT / "README.md").read_text()
    block = re.search(r"## The two commands\n\n```sh\n(.*?)```", text, re.DOTALL)
    assert block is not None
    lines = [line.split("  #")[0].strip() for line in block.group(1).splitlines()]
    return [line for line in lines if re.match(r"\.venv/bin/runway (validate|render) ", line)]


def test_the_readme_main_job_renders_and_commits_every_example(tmp_path: Path) -> None:
    commands = readme_commands()
    repo = tmp_path / "gitops"
    # No Go (it lives in /usr/local/go), no kubeconfig, no Git identity: a fresh machine.
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(tmp_path)}

    runs = [
        subprocess.run(
            ["bash", "-c", command.replace(SCRATCH, str(repo))],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        for command in commands
    ]

    assert commands == [
        ".venv/bin/runway validate examples/*.yaml",
        ".venv/bin/runway render examples/*.yaml --repo /tmp/runway-gitops --commit --gateway gateways/inference",
    ]
    assert [(r.returncode, r.stderr) for r in runs] == [(0, ""), (0, "")]
    assert runs[0].stdout.splitlines()[-1] == "16 allowed, 0 denied"
    assert (
        runs[1]
        .stdout.splitlines()[-1]
        .startswith(
            "16 rendered (0 unchanged since the last render), 0 failed; files: 93 added, 0 changed, "
            "0 removed; commit "
        )
    )
    log = subprocess.run(
        ["git", "-C", str(repo), "log", "--format=%s"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert log.stdout.splitlines() == [
        "runway render: 93 added, 0 changed, 0 removed"
    ]  # 76 + runway-sources.json + a runway.metadata per ModelDeployment folder (16)
    folders = sorted(p.name for p in (repo / "rendered" / "models").iterdir() if p.is_dir())
    assert len(folders) == len(list(EXAMPLES.glob("*.yaml"))) == 16
