"""`runway completion`: scripts generated from the parser. The bash script is run by bash itself
(as bash runs a completion function: COMP_WORDS and COMP_CWORD set, COMPREPLY read back); the
zsh script shares its tables, and the fish script names every command and option."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cli.completion import commands_of, completion_script
from cli.completions import STORED
from cli.main import build_parser, main
from tests.support.paths import ROOT

PARSER = build_parser()


@pytest.fixture(scope="module")
def bash_script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("completion") / "runway.bash"
    path.write_text(completion_script("bash", PARSER))
    return path


def complete(script: Path, line: str, cwd: Path) -> list[str]:
    """What bash offers for the last word of `line` (an empty last word after a space)."""
    probe = (
        'source "$1"; read -ra COMP_WORDS <<< "$2"; [[ "$2" == *" " ]] && COMP_WORDS+=("");'
        ' COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _runway; printf "%s\\n" "${COMPREPLY[@]}"'
    )
    done = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", probe, "bash", str(script), line],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
        cwd=cwd,
    )
    return [w for w in done.stdout.splitlines() if w]


@pytest.mark.parametrize(
    ("line", "offered"),
    [
        ("runway val", ["validate"]),
        ("runway ver", ["version"]),
        ("runway gateway-", ["gateway-plan", "gateway-sync"]),
        ("runway validate --o", ["--output", "--old"]),
        ("runway validate -o ", ["text", "json", "yaml", "junit", "sarif"]),
        ("runway validate -v -o y", ["yaml"]),
        ("runway -v val", ["validate"]),
        ("runway --context kind-a val", ["validate"]),
        ("runway -n models exp", ["explain"]),
        ("runway certs i", ["issue", "inject"]),
        ("runway certs issue --ca", ["--ca-days"]),
        ("runway crds --part ", ["all", "runtime", "gateway"]),
        ("runway completion ", ["bash", "zsh", "fish"]),
        ("runway validate models/o", ["models/one.yaml"]),
        ("runway validate -f models/t", ["models/two.yaml"]),
        ("runway render --repo gi", ["gitops"]),
        ("runway render --max-removals ", []),
    ],
    ids=[
        "command",
        "version-command",
        "two-commands",
        "flags",
        "flag-choices",
        "choices-after-local-v",
        "after-global-v",
        "after-global-context-value",
        "after-global-namespace-value",
        "nested-command",
        "nested-command-flag",
        "crds-part",
        "completion-shells",
        "positional-files",
        "filename-flag-files",
        "directory-flag",
        "value-without-suggestions",
    ],
)
def test_bash_completes_commands_flags_and_values(
    line: str, offered: list[str], bash_script: Path, tmp_path: Path
) -> None:
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "one.yaml").write_text("")
    (tmp_path / "models" / "two.yaml").write_text("")
    (tmp_path / "gitops").mkdir()

    assert complete(bash_script, line, tmp_path) == offered


def test_every_command_and_flag_of_the_parser_is_in_the_tables() -> None:
    commands = {c.path: c for c in commands_of(PARSER)}

    assert commands[""].commands == (
        *("explain", "validate", "crds", "provider-configs", "serve", "certs", "render"),
        *(
            "apply",
            "gateway-plan",
            "gateway-sync",
            "status-controller",
            "version",
            "completion",
            "ui",
        ),
    )
    assert commands["certs"].commands == ("issue", "rotate", "inject")
    assert commands["validate"].options == (
        *("-h", "--help", "-f", "--filename", "-R", "--recursive", "--providers", "-o"),
        "--output",
        *("-n", "--namespace", "--old", "--allow-destination", "--gateway", "-v", "--verbose"),
    )
    assert dict(commands["validate"].values) == {
        ("-f", "--filename"): ("@files",),
        ("--providers",): ("@files",),
        ("-o", "--output"): ("text", "json", "yaml", "junit", "sarif"),
        ("-n", "--namespace"): None,
        ("--old",): ("@files",),
        ("--allow-destination",): None,
        ("--gateway",): None,
    }
    assert commands["validate"].arguments == ("@files",)


def test_zsh_uses_the_tables_bash_uses() -> None:
    bash, zsh = (completion_script(shell, PARSER) for shell in ("bash", "zsh"))

    def tables(script: str) -> str:
        return script[script.index("_runway_commands() {") : script.index("\n_runway() {")]

    assert zsh.splitlines()[0] == "#compdef runway"
    assert tables(zsh) == tables(bash)


def test_fish_names_every_command_and_option() -> None:
    script = completion_script("fish", PARSER)
    lines = script.splitlines()

    for command in commands_of(PARSER):
        at = f"complete -c runway -n \"__runway_at '{command.path}'\""
        named = [line for line in lines if line.startswith(at + " ")]
        subcommands = [re.search(r" -a (\S+) -d ", n) for n in named]
        assert [m.group(1) for m in subcommands if m] == list(command.commands)
        flags = {
            ("--" if part[1] == "l" else "-") + part[3:]
            for line in named
            for part in re.findall(r"-[sl] [\w-]+", line.removeprefix(at))
        }
        assert flags == set(command.options), command.path


def test_completion_prints_the_script(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["completion", "bash"])

    assert (code, capsys.readouterr().out) == (0, completion_script("bash", build_parser()))


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_the_stored_script_is_what_the_parser_generates(shell: str) -> None:
    """cli/completions.py is regenerated whenever a command or flag changes (the message says
    how); `runway completion` prints it."""
    assert STORED[shell] == completion_script(shell, PARSER), (
        "cli/completions.py is stale: python -m cli.completion > cli/completions.py && "
        "ruff format cli/completions.py"
    )


def test_completion_prints_the_stored_script_and_imports_no_command(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue #45 item 12: `source <(runway completion bash)` runs in every shell's start-up;
    it took 1.44 s and 80 MiB building the parser of every command (measured here with
    /usr/bin/time -v: 2.28 s and 84 MiB before, 0.18 s and 17 MiB after)."""
    probe = (
        "import contextlib, io, json, sys\n"
        "from cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        "    code = main(['completion', 'bash'])\n"
        "print(json.dumps([code, out.getvalue(), sorted(m for m in sys.modules if m.startswith("
        "('cli.', 'core.', 'kubeio.', 'renderer', 'kubernetes', 'yaml')))]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    code, printed, imported = json.loads(done.stdout)

    assert (code, printed == STORED["bash"]) == (0, True)
    assert [m for m in imported if m.startswith("cli.")] == [
        "cli.completion",
        "cli.completions",
        "cli.exits",
        "cli.main",
        "cli.options",
    ]
    assert not any(m.startswith(("renderer", "kubernetes", "core.admission")) for m in imported)
