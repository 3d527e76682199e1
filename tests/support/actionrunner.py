"""A stand-in for GitHub's runner, for a composite action (action.yml): there is no runner here.

It runs the action's steps in order as the runner does for a composite action, and refuses what
it does not model rather than guess:
- inputs: each declared input is the value given or its default ('' when it has none); a
  required input not given, or an input given that the action does not declare, is an error;
- expressions `${{ ... }}` in a step's `name`, `if`, `env`, `with` and `run`, and in the outputs'
  `value`: literals ('string', true, false, numbers), the contexts `inputs.NAME`,
  `github.action_path` and `steps.ID.outputs.NAME`, and the operators `==`, `!=` (strings
  compared case-insensitively, as GitHub does), `&&`, `||`, `!` and parentheses. Any other
  context, function (always(), format(), ...) or syntax raises Unknown;
- `if:` (with or without `${{ }}`): the step runs when it is truthy; the stand-in stops at the
  first failing step, so the implicit success() always holds;
- `run:` steps with `shell: bash`, run as the runner runs them (`bash --noprofile --norc -eo
  pipefail FILE`), with the step's `env` over the job's, in the workspace (or its
  `working-directory`), with GITHUB_OUTPUT, GITHUB_STEP_SUMMARY and GITHUB_PATH files of their
  own (outputs read back, in both the `name=value` and the `name<<DELIMITER` forms; the lines of
  GITHUB_PATH go before PATH for the steps after), GITHUB_ACTION_PATH, GITHUB_WORKSPACE and
  RUNNER_TEMP. Another shell, or a key of a step it does not know, raises Unknown;
- `uses:` steps whose `if` holds: skipped only when the caller names the action with the reason
  (ActionRun.skipped says so); any other raises Unknown.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

EXPRESSION = re.compile(r"\$\{\{(.*?)\}\}", re.DOTALL)
TOKEN = re.compile(
    r"\s*(?:(?P<string>'(?:[^']|'')*')|(?P<number>-?\d+(?:\.\d+)?)|(?P<op>==|!=|&&|\|\||!|\(|\))"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_-]*(?:\.[A-Za-z_][A-Za-z0-9_-]*)*))"
)
STEP_KEYS = {"name", "id", "if", "run", "shell", "env", "working-directory", "uses", "with"}


class Unknown(Exception):
    """The action uses something the stand-in does not model."""


@dataclass(frozen=True)
class StepRun:
    """One step: its name, whether it ran, and what it printed (stdout and stderr, in order)."""

    name: str
    ran: bool
    code: int
    log: str


@dataclass(frozen=True)
class ActionRun:
    """The action's exit code (the first failing step's, else 0), its outputs, the step summary
    written, each step, and the `uses:` steps skipped with the reason the caller gave."""

    code: int
    outputs: dict[str, str]
    summary: str
    steps: list[StepRun]
    skipped: list[tuple[str, str]]

    @property
    def log(self) -> str:
        return "".join(step.log for step in self.steps)


@dataclass(frozen=True)
class Context:
    """What the expressions may read: the inputs, the action's path, and the outputs of the
    steps that ran (`ids`: every step id the action declares; one that has not run reads '')."""

    inputs: Mapping[str, str]
    action_path: str
    outputs: Mapping[str, Mapping[str, str]]
    ids: frozenset[str]

    def lookup(self, name: str) -> str:
        parts = name.split(".")
        if len(parts) == 2 and parts[0] == "inputs":
            if parts[1] not in self.inputs:
                raise Unknown(f"inputs.{parts[1]}: the action declares no such input")
            return self.inputs[parts[1]]
        if parts == ["github", "action_path"]:
            return self.action_path
        if len(parts) == 4 and parts[0] == "steps" and parts[2] == "outputs":
            if parts[1] not in self.ids:
                raise Unknown(f"{name}: the action has no step {parts[1]!r}")
            return self.outputs.get(parts[1], {}).get(parts[3], "")
        raise Unknown(f"{name}: a context the stand-in does not model")


def tokens(text: str) -> list[tuple[str, str]]:
    found = []
    position = 0
    while position < len(text.rstrip()):
        match = TOKEN.match(text, position)
        if not match or match.end() == position:
            raise Unknown(f"expression {text.strip()!r}: cannot read {text[position:].strip()!r}")
        kind = match.lastgroup or ""
        found.append((kind, match.group(kind)))
        position = match.end()
    return found


def truthy(value: Any) -> bool:
    return value not in (False, None, "", 0)


def evaluate(text: str, context: Context) -> Any:
    """The value of one expression (the text between `${{` and `}}`)."""
    stream = tokens(text)
    position = 0

    def peek() -> tuple[str, str] | None:
        return stream[position] if position < len(stream) else None

    def take() -> tuple[str, str]:
        nonlocal position
        if position >= len(stream):
            raise Unknown(f"expression {text.strip()!r}: ends too early")
        position += 1
        return stream[position - 1]

    def primary() -> Any:
        kind, value = take()
        if kind == "op" and value == "!":
            return not truthy(primary())
        if kind == "op" and value == "(":
            inner = disjunction()
            if take() != ("op", ")"):
                raise Unknown(f"expression {text.strip()!r}: ( without )")
            return inner
        if kind == "string":
            return value[1:-1].replace("''", "'")
        if kind == "number":
            return float(value)
        if kind == "name":
            if peek() == ("op", "("):
                raise Unknown(f"{value}(): a function the stand-in does not model")
            literals = {"true": True, "false": False, "null": None}
            return literals[value] if value in literals else context.lookup(value)
        raise Unknown(f"expression {text.strip()!r}: unexpected {value!r}")

    def comparison() -> Any:
        left = primary()
        while peek() in (("op", "=="), ("op", "!=")):
            _, operator = take()
            right = primary()
            if type(left) is not type(right):  # GitHub converts: not modelled
                raise Unknown(f"expression {text.strip()!r}: compares {left!r} to {right!r}")
            same = left.casefold() == right.casefold() if isinstance(left, str) else left == right
            left = same if operator == "==" else not same
        return left

    def conjunction() -> Any:
        left = comparison()
        while peek() == ("op", "&&"):
            take()
            right = comparison()
            left = right if truthy(left) else left
        return left

    def disjunction() -> Any:
        left = conjunction()
        while peek() == ("op", "||"):
            take()
            right = conjunction()
            left = left if truthy(left) else right
        return left

    value = disjunction()
    if position != len(stream):
        raise Unknown(f"expression {text.strip()!r}: unexpected {stream[position][1]!r}")
    return value


def as_text(value: Any) -> str:
    if value is True or value is False:
        return str(value).lower()
    if value is None:
        return ""
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else str(value)
    return str(value)


def substitute(text: str, context: Context) -> str:
    """`text` with each `${{ expression }}` replaced by its value."""
    return EXPRESSION.sub(lambda m: as_text(evaluate(m.group(1), context)), text)


def condition(text: Any, context: Context) -> bool:
    text = str(text).strip()
    whole = EXPRESSION.fullmatch(text)
    return truthy(evaluate(whole.group(1) if whole else text, context))


def read_outputs(path: Path) -> dict[str, str]:
    """GITHUB_OUTPUT's `name=value` lines and `name<<DELIMITER` blocks."""
    outputs: dict[str, str] = {}
    lines = iter(path.read_text().splitlines())
    for line in lines:
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            block = []
            for inner in lines:
                if inner == delimiter:
                    break
                block.append(inner)
            else:
                raise Unknown(f"GITHUB_OUTPUT: {name} has no closing {delimiter}")
            outputs[name] = "\n".join(block)
        elif "=" in line:
            name, value = line.split("=", 1)
            outputs[name] = value
        elif line:
            raise Unknown(f"GITHUB_OUTPUT: cannot read {line!r}")
    return outputs


def run_action(
    action_dir: Path,
    inputs: Mapping[str, str],
    *,
    workspace: Path,
    temp: Path,
    env: Mapping[str, str],
    skip: Mapping[str, str] | None = None,
    timeout: float = 300,
) -> ActionRun:
    """Run the composite action in `action_dir` with `inputs` in `workspace`; `env` is the job's
    environment; `skip` names `uses:` actions the stand-in may skip, with why."""
    action = yaml.safe_load((action_dir / "action.yml").read_text())
    if action["runs"].get("using") != "composite":
        raise Unknown(f"runs.using: {action['runs'].get('using')!r}: only composite is modelled")
    declared = action.get("inputs") or {}
    undeclared = sorted(set(inputs) - set(declared))
    if undeclared:
        raise Unknown(f"inputs {undeclared}: the action declares no such input")
    values = {}
    for name, spec in declared.items():
        if name in inputs:
            values[name] = inputs[name]
        elif spec.get("required") and "default" not in spec:
            raise Unknown(f"input {name} is required")
        else:
            values[name] = as_text(spec.get("default", ""))
    outputs: dict[str, dict[str, str]] = {}
    path_entries: list[str] = []
    steps: list[StepRun] = []
    skipped: list[tuple[str, str]] = []
    summary = ""
    code = 0
    ids = frozenset(step["id"] for step in action["runs"]["steps"] if "id" in step)
    for number, step in enumerate(action["runs"]["steps"]):
        context = Context(values, str(action_dir), outputs, ids)
        unknown = sorted(set(step) - STEP_KEYS)
        if unknown:
            raise Unknown(f"step {number}: keys {unknown} are not modelled")
        name = substitute(str(step.get("name", step.get("run", step.get("uses", "")))), context)
        if "if" in step and not condition(step["if"], context):
            steps.append(StepRun(name, False, 0, ""))
            continue
        if "uses" in step:
            for value in (step.get("with") or {}).values():
                substitute(str(value), context)
            action_name = step["uses"].split("@", 1)[0]
            if action_name not in (skip or {}):
                raise Unknown(f"step {name!r}: uses {step['uses']}, which cannot run here")
            skipped.append((step["uses"], (skip or {})[action_name]))
            steps.append(StepRun(name, False, 0, ""))
            continue
        if step.get("shell") != "bash":
            raise Unknown(f"step {name!r}: shell {step.get('shell')!r} (only bash is modelled)")
        files = temp / "_runner" / f"step-{number}"
        files.mkdir(parents=True)
        script = files / "script.sh"
        script.write_text(substitute(step["run"], context))
        for kind in ("output", "summary", "path"):
            (files / kind).touch()
        step_env = {
            **env,
            **{k: substitute(str(v), context) for k, v in (step.get("env") or {}).items()},
            "GITHUB_OUTPUT": str(files / "output"),
            "GITHUB_STEP_SUMMARY": str(files / "summary"),
            "GITHUB_PATH": str(files / "path"),
            "GITHUB_ACTION_PATH": str(action_dir),
            "GITHUB_WORKSPACE": str(workspace),
            "RUNNER_TEMP": str(temp),
        }
        step_env["PATH"] = os.pathsep.join([*path_entries, env["PATH"]])
        directory = workspace / substitute(step.get("working-directory", "."), context)
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            cwd=directory,
            env=step_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=timeout,
            check=False,
        )
        if "id" in step:
            outputs[step["id"]] = read_outputs(files / "output")
        summary += (files / "summary").read_text()
        path_entries = [
            *reversed((files / "path").read_text().splitlines()),
            *path_entries,
        ]
        steps.append(StepRun(name, True, done.returncode, done.stdout))
        if done.returncode != 0:
            code = done.returncode
            break
    final = Context(values, str(action_dir), outputs, ids)
    results = {
        name: substitute(str(spec["value"]), final)
        for name, spec in (action.get("outputs") or {}).items()
    }
    return ActionRun(code, results, summary, steps, skipped)
