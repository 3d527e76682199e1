"""`runway completion bash|zsh|fish`: a completion script generated from the argparse parser
itself, so it completes every command, nested command (`certs issue`), flag and flag value
(choices; file names for FILE/DIR arguments) the installed Runway has.

The script holds the parser as data (four lookup functions: commands, options, an option's
values, whether a command takes file names) and a small driver per shell that finds the command
being completed by walking the words before the cursor, skipping the values of options.

The scripts are generated ahead of time into cli/completions.py (`python -m cli.completion >
cli/completions.py && ruff format cli/completions.py`), and `runway completion` prints them:
building the whole parser imports every command's module (1.4 s and 80 MiB, in every shell's
start-up), printing the stored script imports none. A unit test regenerates them from the
parser and fails when the stored ones differ."""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from cli.completions import STORED
from cli.exits import Exit
from cli.main import build_parser
from cli.options import walk_parsers

SHELLS = ("bash", "zsh", "fish")
FILES = "@files"  # an option or positional whose value is a file or directory name
_FILE_METAVARS = frozenset({"FILE", "DIR", "PATH", "SOURCE"})
_WORD = re.compile(r"^[A-Za-z0-9_.:/@+=,-]+$")  # what the scripts quote without escaping


def add_commands(commands: Any) -> None:
    completion = commands.add_parser(
        "completion",
        help="print a shell completion script (bash, zsh or fish)",
        description="Print a completion script for SHELL, generated from runway's own parser. "
        "bash: `source <(runway completion bash)` (or save it in "
        "/etc/bash_completion.d/runway); zsh: `source <(runway completion zsh)` after compinit "
        "(or save it as _runway in a folder of $fpath); fish: `runway completion fish > "
        "~/.config/fish/completions/runway.fish`. Exit status: 0.",
    )
    completion.add_argument("shell", choices=SHELLS, metavar="SHELL", help="bash, zsh or fish")
    completion.set_defaults(run=run_completion)


@dataclass(frozen=True, slots=True)
class Command:
    """One command as completion sees it; `path` is its words after `runway` ("certs issue")."""

    path: str
    help: str
    commands: tuple[str, ...]
    options: tuple[str, ...]
    values: tuple[tuple[tuple[str, ...], tuple[str, ...] | None], ...]  # option strings -> values
    arguments: tuple[str, ...] | None  # what its positional arguments take (FILES: file names)


def commands_of(parser: argparse.ArgumentParser) -> list[Command]:
    """Every command of `parser` (the top level first, as path ""), in the order added."""
    out = []
    paths = {id(parser): ""}
    helps = {id(parser): parser.description or ""}
    for each in walk_parsers(parser):
        path = paths[id(each)]
        subcommands: list[str] = []
        for action in each._actions:
            if isinstance(action, argparse._SubParsersAction):
                described = {a.dest: a.help or "" for a in action._choices_actions}
                for name, sub in action.choices.items():
                    subcommands.append(name)
                    paths[id(sub)] = f"{path} {name}".strip()
                    helps[id(sub)] = described.get(name, "")
        options = [o for a in each._actions for o in a.option_strings]
        values = tuple(
            (tuple(a.option_strings), _values(a))
            for a in each._actions
            if a.option_strings and a.nargs != 0
        )
        positional = [
            _values(a)
            for a in each._actions
            if not a.option_strings and not isinstance(a, argparse._SubParsersAction)
        ]
        arguments = next((v for v in positional if v is not None), None)
        words = [
            *subcommands,
            *options,
            *(v for _, vs in values for v in vs or ()),
            *(arguments or ()),
        ]
        unsafe = [w for w in words if not _WORD.match(w)]
        if unsafe:
            raise ValueError(f"cannot complete {unsafe[0]!r}: not a plain word")
        out.append(
            Command(path, helps[id(each)], tuple(subcommands), tuple(options), values, arguments)
        )
    return out


def _values(action: argparse.Action) -> tuple[str, ...] | None:
    """The values an option or positional takes: its choices, file names, or None (anything)."""
    if action.choices is not None and not isinstance(action, argparse._SubParsersAction):
        return tuple(str(c) for c in action.choices)
    metavar = action.metavar if isinstance(action.metavar, str) else ""
    if metavar.split("|")[0] in _FILE_METAVARS or action.dest in ("kubeconfig", "cert", "key"):
        return (FILES,)
    return None


def _q(word: str) -> str:
    return f"'{word}'"


def _tables(commands: Sequence[Command]) -> list[str]:
    """The parser as four sh functions, valid in bash and zsh alike."""
    lines = ["_runway_commands() {", '    case "$1" in']
    lines += [
        f"        {_q(c.path)}) echo {_q(' '.join(c.commands))} ;;" for c in commands if c.commands
    ]
    lines += ["    esac", "}", "_runway_options() {", '    case "$1" in']
    lines += [f"        {_q(c.path)}) echo {_q(' '.join(c.options))} ;;" for c in commands]
    lines += [
        "    esac",
        "}",
        "# the values an option takes (@files: file names); fails for a flag",
        "_runway_values() {",
        '    case "$1|$2" in',
    ]
    for c in commands:
        for options, values in c.values:
            pattern = "|".join(_q(f"{c.path}|{o}") for o in options)
            lines.append(f"        {pattern}) echo {_q(' '.join(values or ()))} ;;")
    lines += ["        *) return 1 ;;", "    esac", "}"]
    lines += [
        "# what a command's positional arguments take; fails for none",
        "_runway_arguments() {",
    ]
    lines += ['    case "$1" in']
    lines += [
        f"        {_q(c.path)}) echo {_q(' '.join(c.arguments))} ;;"
        for c in commands
        if c.arguments
    ]
    lines += ["        *) return 1 ;;", "    esac", "}"]
    lines += [
        "# the command being completed, from the words before the cursor (runway first)",
        "_runway_where() {",
        "    local where='' skip=0 word",
        "    shift",
        '    for word in "$@"; do',
        '        if [ "$skip" = 1 ]; then skip=0; continue; fi',
        '        case "$word" in',
        "            -*=*) ;;",
        '            -*) _runway_values "$where" "$word" >/dev/null && skip=1 ;;',
        '            *) case " $(_runway_commands "$where") " in',
        '                   *" $word "*) where="${where:+$where }$word" ;;',
        "               esac ;;",
        "        esac",
        "    done",
        "    printf '%s' \"$where\"",
        "}",
    ]
    return lines


# bash: offer the words of $values, or file names for @files (an option's values, arguments).
BASH_REPLY = (
    '        if [ "$values" = @files ]; then',
    '            mapfile -t COMPREPLY < <(compgen -f -- "$cur")',
    "        else",
    '            mapfile -t COMPREPLY < <(compgen -W "$values" -- "$cur")',
    "        fi",
)


# zsh: the same, with its own completers.
ZSH_REPLY = '        if [[ "$values" == @files ]]; then _files; else compadd -- ${=values}; fi'


def bash_script(commands: Sequence[Command]) -> str:
    driver = [
        "_runway() {",
        '    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}" where values',
        '    where="$(_runway_where "${COMP_WORDS[@]:0:COMP_CWORD}")"',
        '    if values="$(_runway_values "$where" "$prev")"; then',
        *BASH_REPLY,
        "        return 0",
        "    fi",
        '    local commands; commands="$(_runway_commands "$where")"',
        '    if [[ "$cur" == -* ]]; then',
        '        mapfile -t COMPREPLY < <(compgen -W "$(_runway_options "$where")" -- "$cur")',
        '    elif [ -n "$commands" ]; then',
        '        mapfile -t COMPREPLY < <(compgen -W "$commands" -- "$cur")',
        '    elif values="$(_runway_arguments "$where")"; then',
        *BASH_REPLY,
        "    fi",
        "}",
        "complete -o filenames -F _runway runway",
    ]
    return _join(
        ["# bash completion for runway (generated by `runway completion bash`)"],
        _tables(commands),
        driver,
    )


def zsh_script(commands: Sequence[Command]) -> str:
    driver = [
        "_runway() {",
        '    local cur="${words[CURRENT]}" prev="${words[CURRENT-1]}" where values commands',
        '    where="$(_runway_where "${(@)words[1,CURRENT-1]}")"',
        '    if values="$(_runway_values "$where" "$prev")"; then',
        ZSH_REPLY,
        "        return",
        "    fi",
        '    commands="$(_runway_commands "$where")"',
        '    if [[ "$cur" == -* ]]; then',
        '        compadd -- ${=$(_runway_options "$where")}',
        '    elif [[ -n "$commands" ]]; then',
        "        compadd -- ${=commands}",
        '    elif values="$(_runway_arguments "$where")"; then',
        ZSH_REPLY,
        "    fi",
        "}",
        'if [ "$funcstack[1]" = "_runway" ]; then _runway "$@"; else compdef _runway runway; fi',
    ]
    head = ["#compdef runway", "# zsh completion for runway (generated by `runway completion zsh`)"]
    return _join(head, _tables(commands), driver)


def fish_script(commands: Sequence[Command]) -> str:
    lines = [
        "# fish completion for runway (generated by `runway completion fish`)",
        "function __runway_where",
        "    set -l where ''",
        "    set -l skip 0",
        "    for word in (commandline -opc)[2..-1]",
        "        if test $skip = 1",
        "            set skip 0",
        "            continue",
        "        end",
        "        switch $word",
        "            case '-*=*'",
        "            case '-*'",
        "                contains -- $word (__runway_valued $where); and set skip 1",
        "            case '*'",
        '                contains -- $word (__runway_commands $where); and set where (string trim -- "$where $word")',
        "        end",
        "    end",
        "    echo $where",
        "end",
        "function __runway_at",
        '    test (__runway_where) = "$argv[1]"',
        "end",
        "function __runway_commands",
        "    switch $argv[1]",
    ]
    lines += [
        f"        case {_q(c.path)}\n            printf '%s\\n' {' '.join(c.commands)}"
        for c in commands
        if c.commands
    ]
    lines += ["    end", "end", "function __runway_valued", "    switch $argv[1]"]
    lines += [
        f"        case {_q(c.path)}\n            printf '%s\\n' {' '.join(o for os, _ in c.values for o in os)}"
        for c in commands
        if c.values
    ]
    lines += ["    end", "end", "complete -c runway -f"]
    for c in commands:
        at = f"-n \"__runway_at '{c.path}'\""
        helps = {
            sub.path.rpartition(" ")[2]: sub.help for sub in commands if _parent(sub) == c.path
        }
        for name in c.commands:
            lines.append(f"complete -c runway {at} -a {name} -d {_fish_text(helps.get(name, ''))}")
        for options, values in c.values:
            lines.append(f"complete -c runway {at} {_fish_flags(options)} {_fish_value(values)}")
        valued = {o for os, _ in c.values for o in os}
        flags = [o for o in c.options if o not in valued]
        for flag in flags:
            lines.append(f"complete -c runway {at} {_fish_flags([flag])}")
        if c.arguments == (FILES,):
            lines.append(f"complete -c runway {at} -F")
        elif c.arguments:
            lines.append(f"complete -c runway {at} -a {_q(' '.join(c.arguments))}")
    return "\n".join(lines) + "\n"


def _parent(command: Command) -> str | None:
    return None if not command.path else command.path.rpartition(" ")[0]


def _fish_text(text: str) -> str:
    """`text` as one single-quoted fish word (fish escapes only \\ and ' inside)."""
    return "'" + " ".join(text.split()).replace("\\", "\\\\").replace("'", "\\'") + "'"


def _fish_flags(options: Iterable[str]) -> str:
    out = []
    for option in options:
        if option.startswith("--"):
            out.append(f"-l {option[2:]}")
        else:
            out.append(f"-s {option[1:]}")
    return " ".join(out)


def _fish_value(values: tuple[str, ...] | None) -> str:
    if values == (FILES,):
        return "-r -F"
    if values:
        return f"-x -a {_q(' '.join(values))}"
    return "-x"


def _join(*parts: list[str]) -> str:
    return "\n".join(line for part in parts for line in part) + "\n"


SCRIPTS = {"bash": bash_script, "zsh": zsh_script, "fish": fish_script}


def completion_script(shell: str, parser: argparse.ArgumentParser) -> str:
    return SCRIPTS[shell](commands_of(parser))


def run_completion(args: argparse.Namespace) -> int:
    sys.stdout.write(STORED[args.shell])
    return Exit.OK


def completions_module(parser: argparse.ArgumentParser) -> str:
    """The text of cli/completions.py: every shell's script for `parser`, one line a string."""
    out = [
        '"""The scripts `runway completion` prints, generated from runway\'s parser by',
        "cli.completion (`python -m cli.completion > cli/completions.py && ruff format",
        "cli/completions.py`); tests/unit/cli/test_completion.py fails when they differ from",
        'what the parser generates. Do not edit: regenerate."""',
        "",
        "from __future__ import annotations",
        "",
        "STORED = {",
    ]
    for shell in SHELLS:
        out.append(f'    {json.dumps(shell)}: "".join(')
        out.append("        (")
        lines = completion_script(shell, parser).splitlines(keepends=True)
        out += [f"            {json.dumps(line, ensure_ascii=False)}," for line in lines]
        out += ["        )", "    ),"]
    return "\n".join([*out, "}", ""])


if __name__ == "__main__":
    sys.stdout.write(completions_module(build_parser()))
