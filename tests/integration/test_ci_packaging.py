"""Runway packaged for CI (issue #45, docs/ci.md): the GitHub Action (action.yml) and the
pre-commit hooks (.pre-commit-hooks.yaml).

The action: valid against GitHub's action metadata schema (SchemaStore's, as check-jsonschema
vendors it: no network), and run step by step on a workspace with a good and a bad
ModelDeployment by tests/support/actionrunner.py, which stands in for GitHub's runner (there is
none here: it runs each `run:` step with bash as the runner does, substitutes the expressions it
knows and refuses any other; it may skip actions/setup-python only, which downloads a Python
from GitHub, for the reason SETUP_PYTHON gives). Runway is the one on PATH (`install: false`:
this checkout's code), so the action's own `if:` leaves out setup-python and the install step:
that step's `pip install` of the action's checkout is what pre-commit does below (language:
python), once per snapshot, and running it here too would add 20 to 100 s to every run.

The hooks: run by pre-commit itself (the pinned package) from a snapshot of this checkout,
installed once into .cache/pre-commit (tests/support/precommit.py), on a repository holding
Runway's objects beside YAML files that are not Kubernetes objects.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.support.actionrunner import ActionRun, Unknown, run_action
from tests.support.ciformats import REFUSED, WHY, junit_errors, sarif_errors
from tests.support.paths import EXAMPLES, ROOT
from tests.support.precommit import HookRepository, git, git_env, hook_repository, pre_commit

# YAML a repository holds that is no Kubernetes object: validate refuses it as unusable input.
WORKFLOW = "name: ci\non: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps: []\n"
TEMPLATE = "metadata:\n  name: {{ .Release.Name }}\n"
CONFIG_MAP = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n"
EXAMPLE_WORKFLOW = ROOT / "ci-examples" / "github-actions" / "pull-request.yaml"
SETUP_PYTHON = (
    "actions/setup-python downloads a Python build from GitHub, which cannot be reached here; "
    "the python3 on PATH stands in for it"
)


def check_jsonschema(schema: str, path: Path) -> subprocess.CompletedProcess[str]:
    """check-jsonschema with one of the schemas it vendors (no network)."""
    return subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_action_is_valid_against_githubs_action_schema() -> None:
    done = check_jsonschema("vendor.github-actions", ROOT / "action.yml")

    assert (done.returncode, done.stdout.strip()) == (0, "ok -- validation done"), done.stdout


def test_a_broken_action_is_refused_by_the_same_check(tmp_path: Path) -> None:
    broken = tmp_path / "action.yml"
    broken.write_text((ROOT / "action.yml").read_text().replace("using: composite", "using: x"))

    done = check_jsonschema("vendor.github-actions", broken)

    assert done.returncode == 1
    assert "$.runs.using: 'x' is not one of" in done.stdout


def test_the_example_workflow_is_valid_and_uses_the_actions_inputs_and_outputs() -> None:
    """ci-examples/github-actions/pull-request.yaml: valid against GitHub's workflow schema; the
    step that uses the action gives only inputs it declares (the required ones included), and
    the steps after it read only outputs it declares."""
    done = check_jsonschema("vendor.github-workflows", EXAMPLE_WORKFLOW)
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    (job,) = yaml.safe_load(EXAMPLE_WORKFLOW.read_text())["jobs"].values()
    (gate,) = [s for s in job["steps"] if s.get("id") == "runway"]
    read = set(re.findall(r"steps\.runway\.outputs\.([\w-]+)", EXAMPLE_WORKFLOW.read_text()))
    required = {name for name, spec in action["inputs"].items() if spec.get("required")}

    assert (done.returncode, done.stdout.strip()) == (0, "ok -- validation done"), done.stdout
    assert set(gate["with"]) <= set(action["inputs"])
    assert required <= set(gate["with"])
    assert read == {"report", "check-report"} <= set(action["outputs"])


def test_the_docs_snippets_name_the_actions_inputs_and_the_hooks() -> None:
    """docs/ci.md: the workflow steps give the action only inputs it declares and read only
    outputs it declares; the .pre-commit-config.yaml names hooks that exist."""
    workflow, config = (
        yaml.safe_load(block)
        for block in re.findall(r"```yaml\n(.*?)```", (ROOT / "docs" / "ci.md").read_text(), re.S)
    )
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    (gate,) = [s for s in workflow["steps"] if s.get("id") == "runway"]
    read = set(re.findall(r"steps\.runway\.outputs\.([\w-]+)", yaml.safe_dump(workflow)))
    hooks = {h["id"] for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}

    assert set(gate["with"]) <= set(action["inputs"])
    assert read == {"report", "check-report"} <= set(action["outputs"])
    assert [h["id"] for h in config["repos"][0]["hooks"]] == sorted(hooks, reverse=True)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A pull request's checkout: models/good/ (an example Runway admits), models/bad/ (one it
    denies), nested folders both."""
    (tmp_path / "work" / "models" / "good" / "cpu").mkdir(parents=True)
    (tmp_path / "work" / "models" / "bad").mkdir(parents=True)
    shutil.copy(
        EXAMPLES / "cpu-llamacpp.yaml", tmp_path / "work" / "models" / "good" / "cpu" / "llama.yaml"
    )
    (tmp_path / "work" / "models" / "bad" / "refused.yaml").write_text(REFUSED)
    return tmp_path / "work"


@pytest.fixture
def job_env(tmp_path: Path) -> dict[str, str]:
    """The job's environment: a `runway` on PATH that runs this checkout's code (`install:
    false`), and python3 and git."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    runway = bin_dir / "runway"
    runway.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m cli "$@"\n')
    runway.chmod(0o755)
    path = f"{bin_dir}:{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin"
    return {**git_env(), "PATH": path, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}


def act(workspace: Path, env: dict[str, str], **inputs: str) -> ActionRun:
    temp = workspace.parent / "runner-temp"
    temp.mkdir(exist_ok=True)
    return run_action(
        ROOT,
        {"install": "false", **inputs},
        workspace=workspace,
        temp=temp,
        env=env,
        skip={"actions/setup-python": SETUP_PYTHON},
    )


def sarif_findings(path: Path) -> list[tuple[str, str, int | None, str]]:
    """(rule, file, line, message) of each result of a SARIF log, after checking the log
    against the SARIF 2.1.0 schema."""
    text = path.read_text()
    assert sarif_errors(text) == []
    rows = []
    for result in json.loads(text)["runs"][0]["results"]:
        physical = result["locations"][0]["physicalLocation"]
        line = physical.get("region", {}).get("startLine")
        rows.append(
            (result["ruleId"], physical["artifactLocation"]["uri"], line, result["message"]["text"])
        )
    return rows


def ran(run: ActionRun) -> list[tuple[str, bool, int]]:
    return [(step.name, step.ran, step.code) for step in run.steps]


def test_the_action_passes_good_objects_with_a_sarif_report(
    workspace: Path, job_env: dict[str, str]
) -> None:
    run = act(workspace, job_env, paths="models/good")

    report = Path(run.outputs["report"])
    assert (run.code, run.outputs["exit-code"], run.outputs["check-report"]) == (0, "0", "")
    assert report.parent.parent == workspace.parent / "runner-temp"
    assert report.name == "validate.sarif"
    assert sarif_findings(report) == []
    assert ran(run) == [
        ("Set up Python 3.12", False, 0),
        ("Install Runway from the action's checkout", False, 0),
        ("runway validate", True, 0),
        ("Fail when Runway did not pass", False, 0),
    ]
    assert run.skipped == []
    assert run.summary == f"**runway validate**: exit 0, sarif report `{report}`\n"


def test_the_action_fails_on_a_denied_object_and_its_sarif_report_names_it(
    workspace: Path, job_env: dict[str, str]
) -> None:
    run = act(workspace, job_env, paths="models")

    report = Path(run.outputs["report"])
    assert (run.code, run.outputs["exit-code"]) == (1, "1")
    assert sarif_findings(report) == [
        ("denied", "models/bad/refused.yaml", 1, f"ModelDeployment models/refused: {WHY}")
    ]
    assert ran(run)[2:] == [
        ("runway validate", True, 0),
        ("Fail when Runway did not pass", True, 1),
    ]
    assert run.steps[3].log == (
        "::error title=runway::Runway found problems (exit 1): see the report above\n"
    )
    assert run.steps[2].log.splitlines()[-1] == "runway validate: exit 1"


def test_recursive_false_reads_only_the_folders_own_files(
    workspace: Path, job_env: dict[str, str]
) -> None:
    """With a Runway that has -R, `recursive: false` leaves models/good/cpu/ out (no objects:
    unusable input, exit 2); with one without -R, folders are always read recursively, and the
    action says so."""
    run = act(workspace, job_env, paths="models/good", recursive="false", format="text")

    report = Path(run.outputs["report"]).read_text()
    help_text = subprocess.run(
        [sys.executable, "-m", "cli", "validate", "--help"],
        env=job_env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    if "--recursive" in help_text:
        assert (run.code, run.outputs["exit-code"], report) == (2, "2", "")
    else:
        assert (run.code, run.outputs["exit-code"]) == (0, "0")
        assert run.steps[2].log.splitlines()[0] == (
            "::warning title=runway::recursive: false needs a Runway with -R; this one reads "
            "folders recursively"
        )


def test_the_action_checks_the_rendered_tree_with_junit_reports(
    workspace: Path, job_env: dict[str, str]
) -> None:
    """check-rendered runs `render --check` too: a GitOps repository never rendered is out of
    date (exit 1), each report valid against the JUnit XSD."""
    subprocess.run(["git", "init", "-q", str(workspace / "gitops")], check=True, timeout=60)

    run = act(
        workspace,
        job_env,
        paths="models/good\n",
        format="junit",
        **{"check-rendered": "gitops"},
    )

    validate = Path(run.outputs["report"])
    check = Path(run.outputs["check-report"])
    assert (run.code, run.outputs["exit-code"], run.outputs["check-exit-code"]) == (1, "0", "1")
    assert (validate.name, check.name) == ("validate.xml", "render-check.xml")
    assert junit_errors(validate.read_text()) == []
    assert junit_errors(check.read_text()) == []
    assert 'tests="1" failures="0"' in validate.read_text()
    assert re.search(r'failures="[1-9]', check.read_text())
    assert run.summary == (
        f"**runway validate**: exit 0, junit report `{validate}`\n"
        f"**runway render --check**: exit 1, junit report `{check}`\n"
    )


def test_the_text_report_goes_to_the_step_summary(workspace: Path, job_env: dict[str, str]) -> None:
    run = act(workspace, job_env, paths="models/good", format="text")

    report = Path(run.outputs["report"])
    lines = [
        "models/llama-cpu: allowed: engine llamacpp (auto), provider kaito (auto)",
        "  warning: spec.model.servedName is ignored when spec.model.source is custom",
        "1 allowed, 0 denied",
    ]
    assert (run.code, report.name, report.read_text().splitlines()) == (0, "validate.txt", lines)
    assert run.summary.splitlines() == ["**runway validate**: exit 0", "", "```", *lines, "```"]


@pytest.mark.parametrize(
    ("inputs", "error"),
    [
        ({"format": "xml"}, "format: 'xml' is not one of sarif, junit, text"),
        ({"recursive": "yes"}, "recursive: 'yes' is not true or false"),
        ({"paths": " \n"}, "paths: name at least one file or folder"),
    ],
)
def test_bad_inputs_are_named(
    workspace: Path, job_env: dict[str, str], inputs: dict[str, str], error: str
) -> None:
    run = act(workspace, job_env, **{"paths": "models", **inputs})

    assert (run.code, run.steps[2].log, run.outputs["exit-code"]) == (
        2,
        f"::error title=runway::{error}\n",
        "",
    )


@pytest.mark.parametrize(
    ("change", "install", "refusal"),
    [
        (
            ("${{ inputs.paths }}", "${{ env.PATHS }}"),
            "false",
            "env.PATHS: a context the stand-in does not model",
        ),
        (
            ("if: steps.runway.outputs.verdict != '0'", "if: failure()"),
            "false",
            "failure(): a function the stand-in does not model",
        ),
        (
            ("uses: actions/setup-python@v5", "uses: actions/cache@v4"),
            "true",
            "step 'Set up Python 3.12': uses actions/cache@v4, which cannot run here",
        ),
        (("shell: bash", "shell: pwsh"), "true", "shell 'pwsh' (only bash is modelled)"),
    ],
)
def test_the_stand_in_refuses_what_it_does_not_model(
    workspace: Path, job_env: dict[str, str], change: tuple[str, str], install: str, refusal: str
) -> None:
    """Each refused before any step that would install anything runs."""
    action = workspace.parent / "action"
    action.mkdir()
    (action / "action.yml").write_text((ROOT / "action.yml").read_text().replace(*change, 1))

    with pytest.raises(Unknown) as refused:
        run_action(
            action,
            {"paths": "models", "install": install},
            workspace=workspace,
            temp=workspace.parent,
            env=job_env,
            skip={"actions/setup-python": SETUP_PYTHON},
        )

    assert refusal in str(refused.value)


# The hooks, with pre-commit itself.


def test_the_hooks_manifest_is_valid_for_pre_commit(tmp_path: Path) -> None:
    manifest = ROOT / ".pre-commit-hooks.yaml"
    broken = tmp_path / ".pre-commit-hooks.yaml"
    broken.write_text(manifest.read_text().replace("  language: python", "  language: pythn", 1))

    valid = pre_commit(tmp_path, tmp_path, "validate-manifest", str(manifest))
    refused = pre_commit(tmp_path, tmp_path, "validate-manifest", str(broken))

    assert (valid.returncode, valid.stdout, valid.stderr) == (0, "", "")
    assert refused.returncode == 1
    assert "but got: 'pythn'" in refused.stdout


@pytest.fixture(scope="module")
def hooks() -> Iterator[HookRepository]:
    """This checkout as a hook repository, its environment installed (once per snapshot)."""
    repository = hook_repository()
    project = repository.home.parent / "install-project"
    shutil.rmtree(project, ignore_errors=True)
    project.mkdir(parents=True)
    git("init", "--quiet", str(project))
    write_config(project, repository, "runway-validate", "runway-render-check")
    git("-C", str(project), "add", ".pre-commit-config.yaml")
    started = time.monotonic()
    try:
        done = pre_commit(project, repository.home, "install-hooks")
    finally:
        shutil.rmtree(project)
    assert done.returncode == 0, done.stdout + done.stderr
    print(f"pre-commit install-hooks: {time.monotonic() - started:.1f} s")
    yield repository


def write_config(project: Path, hooks: HookRepository, *ids: str, args: str = "") -> None:
    lines = ["repos:", f"  - repo: {hooks.url}", f"    rev: {hooks.rev}", "    hooks:"]
    lines += [f"      - id: {hook}" + (f"\n        args: {args}" if args else "") for hook in ids]
    (project / ".pre-commit-config.yaml").write_text("\n".join(lines) + "\n")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A repository with Runway's objects beside YAML files of other tools, all added."""
    root = tmp_path / "project"
    (root / "models").mkdir(parents=True)
    (root / ".github" / "workflows").mkdir(parents=True)
    (root / "chart" / "templates").mkdir(parents=True)
    shutil.copy(EXAMPLES / "cpu-llamacpp.yaml", root / "models" / "llama.yaml")
    (root / "models" / "settings.yaml").write_text(CONFIG_MAP)
    (root / ".github" / "workflows" / "ci.yml").write_text(WORKFLOW)
    (root / "chart" / "templates" / "service.yaml").write_text(TEMPLATE)
    git("init", "--quiet", str(root))
    return root


def hook_output(done: subprocess.CompletedProcess[str]) -> list[str]:
    """pre-commit's lines, the hook's duration left out."""
    return [
        line for line in done.stdout.splitlines() if not re.fullmatch(r"- duration: [0-9.]+s", line)
    ]


def title(name: str, verdict: str) -> str:
    """pre-commit's line for a hook: its name, dots to column 79, the verdict."""
    return name + "." * (79 - len(name) - len(verdict)) + verdict


def test_the_validate_hook_passes_a_whole_repository_and_leaves_out_other_yaml(
    hooks: HookRepository, project: Path
) -> None:
    write_config(project, hooks, "runway-validate")
    git("-C", str(project), "add", ".")

    done = pre_commit(project, hooks.home, "run", "runway-validate", "--all-files", "--verbose")

    assert (done.returncode, hook_output(done), done.stderr) == (
        0,
        [
            title("runway validate", "Passed"),
            "- hook id: runway-validate",
            "",
            "runway-validate: left out 4 YAML file(s) with no object of the Runway API groups",
            "models/llama-cpu: allowed: engine llamacpp (auto), provider kaito (auto)",
            "  warning: spec.model.servedName is ignored when spec.model.source is custom",
            "1 allowed, 0 denied",
            "",
        ],
        "",
    )


def test_the_validate_hook_fails_on_a_denied_object(hooks: HookRepository, project: Path) -> None:
    (project / "models" / "refused.yaml").write_text(REFUSED)
    write_config(project, hooks, "runway-validate")
    git("-C", str(project), "add", ".")

    done = pre_commit(project, hooks.home, "run", "runway-validate", "--all-files")

    assert (done.returncode, hook_output(done), done.stderr) == (
        1,
        [
            title("runway validate", "Failed"),
            "- hook id: runway-validate",
            "- exit code: 1",
            "",
            "runway-validate: left out 4 YAML file(s) with no object of the Runway API groups",
            "models/llama-cpu: allowed: engine llamacpp (auto), provider kaito (auto)",
            "  warning: spec.model.servedName is ignored when spec.model.source is custom",
            "models/refused: denied",
            f"  {WHY}",
            "1 allowed, 1 denied",
            "",
        ],
        "",
    )


def test_the_render_check_hook_fails_on_an_out_of_date_tree(
    hooks: HookRepository, project: Path
) -> None:
    git("init", "--quiet", str(project / "gitops"))
    write_config(project, hooks, "runway-render-check", args="[models/, --repo, gitops, -q]")
    git("-C", str(project), "add", ".pre-commit-config.yaml", "models")

    done = pre_commit(project, hooks.home, "run", "runway-render-check", "--all-files")

    assert (done.returncode, hook_output(done), done.stderr) == (
        1,
        [
            title("runway render --check", "Failed"),
            "- hook id: runway-render-check",
            "- exit code: 1",
            "",
            "1 rendered (0 unchanged since the last render), 0 failed; files: 6 added, 0 changed, "
            "0 removed",
            "",
        ],
        "",
    )
