"""Issue #45 item 17: a folder named to a command that reads sources is read as `kubectl apply
-f DIR` reads it: its own .yaml and .yml files, and every folder under it only with
-R/--recursive. A folder that yields no file of its own but holds YAML files in its subfolders
is unusable input (exit 2) saying so, so that a CI gate given the wrong folder never passes
having read nothing (an input without any object is unusable input already)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli.exits import Exit
from cli.main import main
from kubeio.yamlio import dump
from tests.support.builders import model_deployment

MISSING_R = "no YAML files; 2 in subfolders: pass -R (--recursive) to read them"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def tree(root: Path) -> Path:
    """models/top.yaml, and models/prod/deep.yml with models/prod/more/deeper.yaml under it."""
    models = root / "models"
    (models / "prod" / "more").mkdir(parents=True)
    write(models / "top.yaml", "top")
    write(models / "prod" / "deep.yml", "deep")
    write(models / "prod" / "more" / "deeper.yaml", "deeper")
    return models


def write(path: Path, name: str) -> None:
    path.write_text(dump(model_deployment(name, "team", model_id=f"org/{name}", gpu=1)))


ALLOWED = "{}: allowed: engine vllm (auto), provider dynamo (auto)\n"


def test_validate_reads_a_folders_own_files_without_r(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    models = tree(tmp_path)

    assert run(capsys, "validate", str(models)) == (
        Exit.OK,
        ALLOWED.format("team/top") + "1 allowed, 0 denied\n",
        "",
    )


@pytest.mark.parametrize("flag", ["-R", "--recursive"])
def test_validate_reads_every_folder_under_it_with_r(
    flag: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    models = tree(tmp_path)

    assert run(capsys, "validate", flag, "-f", str(models)) == (
        Exit.OK,
        "".join(ALLOWED.format(f"team/{n}") for n in ("deep", "deeper", "top"))
        + "3 allowed, 0 denied\n",
        "",
    )


def test_the_examples_folder_without_r_leaves_the_rejected_ones_out(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`validate examples/` read examples/rejected/ too, and so denied five objects."""
    flat = run(capsys, "validate", "examples/", "-o", "json")
    deep = run(capsys, "validate", "-R", "examples/", "-o", "json")

    assert (flat[0], deep[0]) == (Exit.OK, Exit.PARTIAL)
    assert sum(1 for r in json.loads(flat[1]) if not r["allowed"]) == 0
    assert sum(1 for r in json.loads(deep[1]) if not r["allowed"]) == 5


@pytest.mark.parametrize(
    "command",
    [
        ("validate",),
        ("explain",),
        ("gateway-plan",),
        ("render", "--repo", "repo"),
        ("render", "--check", "--repo", "repo"),
    ],
    ids=" ".join,
)
def test_a_folder_with_files_only_in_subfolders_is_unusable_input_without_r(
    command: tuple[str, ...],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`fleet/` named where the files are in fleet/prod/ and fleet/dev/."""
    monkeypatch.chdir(tmp_path)
    for where in ("prod", "dev"):
        (tmp_path / "fleet" / where).mkdir(parents=True)
        write(tmp_path / "fleet" / where / "m.yaml", where)
    (tmp_path / "repo" / ".git").mkdir(parents=True)  # --check reads an existing repository only

    answer = run(capsys, command[0], "fleet/", *command[1:])

    assert answer == (Exit.USAGE, "", f"runway: fleet/: {MISSING_R}\n")


def test_the_subfolder_hint_counts_the_yaml_files_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A folder without any YAML file, at any depth, is as before: nothing found."""
    (tmp_path / "docs" / "more").mkdir(parents=True)
    (tmp_path / "docs" / "more" / "README.md").write_text("not yaml")

    assert run(capsys, "validate", str(tmp_path / "docs")) == (
        Exit.USAGE,
        "",
        f"runway: {tmp_path / 'docs'}: no objects found\n",
    )


def test_gateway_plan_and_explain_read_subfolders_with_r_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    models = tree(tmp_path)

    plans = [run(capsys, "gateway-plan", *r, str(models), "-o", "json") for r in ([], ["-R"])]
    explained = [run(capsys, "explain", *r, str(models), "-o", "json") for r in ([], ["-R"])]

    assert [(c, [m["owner"]["name"] for m in json.loads(o)["models"]]) for c, o, _ in plans] == [
        (Exit.OK, ["top"]),
        (Exit.OK, ["deep", "deeper", "top"]),
    ]
    assert [(c, [e["name"] for e in json.loads(o)]) for c, o, _ in explained] == [
        (Exit.OK, ["top"]),
        (Exit.OK, ["deep", "deeper", "top"]),
    ]


def test_render_without_r_leaves_the_outputs_of_subfolders_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The folders rendered from a subfolder's files are outside what a render without -R is
    given: kept, never removed (renderer.output.ownership)."""
    monkeypatch.chdir(tmp_path)
    tree(tmp_path)
    first = run(capsys, "render", "-R", "models", "--repo", "repo", "-q")

    again = run(capsys, "render", "models", "--repo", "repo", "-o", "json")

    assert first[0] == Exit.OK
    report = json.loads(again[1])
    assert (again[0], [r["name"] for r in report["results"]]) == (Exit.OK, ["top"])
    assert report["removals"] == {"removed": [], "withheld": [], "reason": None, "outside": 2}


def test_gateway_sync_from_a_folder_follows_r_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`gateway-sync --from fleet/` with the files in fleet/prod/ and fleet/dev/: unusable
    input without -R; with it, the objects are read and the sync goes on to LiteLLM (here
    nothing listens: exit 4)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LITELLM_MASTER_KEY", "key")
    for where in ("prod", "dev"):
        (tmp_path / "fleet" / where).mkdir(parents=True)
        write(tmp_path / "fleet" / where / "m.yaml", where)
    sync = ("gateway-sync", "--once", "--litellm-url", "http://127.0.0.1:9", "--from", "fleet/")

    flat = run(capsys, *sync)
    deep = run(capsys, *sync, "-R")

    assert flat == (Exit.USAGE, "", f"runway: fleet/: {MISSING_R}\n")
    assert (deep[0], deep[2].splitlines()[-1]) == (
        Exit.UNAVAILABLE,
        "runway: http://127.0.0.1:9/model/info: [Errno 111] Connection refused",
    )
