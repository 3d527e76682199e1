"""The CI examples (ci-examples/): valid for their engine, offline, against the engine's own
schema (GitHub's workflow schema as SchemaStore publishes it, vendored by check-jsonschema), and
every `runway` command in them is one Runway's parser accepts, with the shards of the matrix
covering 1..N exactly."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import yaml

from cli.main import parse
from tests.support.paths import ROOT

WORKFLOW = ROOT / "ci-examples" / "github-actions" / "render-shards.yaml"
CHECK = Path(sys.executable).parent / "check-jsonschema"


def schema_check(workflow: Path) -> subprocess.CompletedProcess[str]:
    """check-jsonschema with GitHub's workflow schema, as vendored (no network)."""
    return subprocess.run(
        [str(CHECK), "--builtin-schema", "vendor.github-workflows", str(workflow)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_workflow_is_valid_against_githubs_schema() -> None:
    done = schema_check(WORKFLOW)

    assert (done.returncode, done.stdout.strip()) == (0, "ok -- validation done"), done.stdout


def test_a_broken_workflow_is_refused_by_the_same_check(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text(
        WORKFLOW.read_text().replace("runs-on: ubuntu-latest", "run-on: ubuntu-latest", 1)
    )

    assert schema_check(broken).returncode == 1


def test_every_runway_command_parses_and_the_matrix_covers_every_shard() -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    runs = [s["run"] for job in workflow["jobs"].values() for s in job["steps"] if "run" in s]
    shards = workflow["jobs"]["render"]["strategy"]["matrix"]["shard"]
    parsed = []
    for run in runs:
        for shard in shards:
            command = run.replace("${{ matrix.shard }}", str(shard))
            argv = shlex.split(command)
            assert argv[0] == "runway"
            parsed.append(parse(argv[1:]))

    render = [a for a in parsed if a.command == "render"]
    counts = {a.shard.count for a in render}
    assert counts == {len(shards)}
    assert sorted(a.shard.index for a in render) == list(range(1, len(shards) + 1))
    assert all(a.push == "origin" and a.branch == "main" for a in render)
    assert re.search(r"--shard \$\{\{ matrix\.shard \}\}/4", "\n".join(runs))
