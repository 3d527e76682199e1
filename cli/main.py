"""`runway`: parser, logging, and the one place errors become exit codes."""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Mapping, Sequence

from cli.exits import Exit
from cli.options import (
    CLUSTER_OPTIONS,
    USES,
    VALUE_FLAGS,
    VERSION,
    add_globals,
    add_local_verbose,
    walk_parsers,
)
from core.fields.errors import RunwayError, SourceError, Unavailable, UsageError

# The module that defines each command. Only the module of the command being run is imported,
# so `runway validate` and `explain` never import the kubernetes client (0.3 s), gunicorn or Git;
# an unknown command or `--help` imports them all to list every command.
COMMANDS: Mapping[str, str] = {
    "explain": "cli.explain",
    "validate": "cli.inspect",
    "crds": "cli.manifests",
    "provider-configs": "cli.manifests",
    "serve": "cli.serving",
    "certs": "cli.serving",
    "render": "cli.render",
    "apply": "cli.apply",
    "gateway-plan": "cli.gateway",
    "gateway-sync": "cli.gateway",
    "status-controller": "cli.controller",
    "version": "cli.about",
    "completion": "cli.completion",
    "ui": "cli.ui",
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser for every command, or only for `command`'s module when it is a known one.
    Every command parser also takes `-v`, and is the one whose usage an unknown flag prints."""
    parser = argparse.ArgumentParser(
        prog="runway",
        description=(
            "Admission webhook and GitOps renderer for ModelDeployment (airunway.ai/v1alpha1): "
            "defaults, engine and provider selection, validation, rendering."
        ),
    )
    add_globals(parser)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    wanted = COMMANDS.get(command or "")
    for name in dict.fromkeys(COMMANDS.values()):  # in the order --help lists them
        if wanted in (None, name):
            module = importlib.import_module(name)
            module.add_commands(commands)
    for each in walk_parsers(parser):
        each.set_defaults(usage=each)  # the innermost command's parser is the one left set
        if each is not parser:
            add_local_verbose(each)
    return parser


def command_of(argv: Sequence[str]) -> str | None:
    """The command named in `argv`: its first word that is neither an option nor the value of
    one of runway's own options (`runway --context kind validate ...`)."""
    words = iter(argv)
    for word in words:
        if word in VALUE_FLAGS:
            next(words, None)
        elif not word.startswith("-"):
            return word
    return None


def asks_version(argv: Sequence[str]) -> bool:
    """Whether `--version` comes before the command: `runway --version` is `runway version`
    and, as with argparse's own version action (`pip --version`), the other arguments are
    ignored."""
    words = iter(argv)
    for word in words:
        if word in VALUE_FLAGS:
            next(words, None)
        elif word == VERSION:
            return True
        elif not word.startswith("-"):
            return False
    return False


def configure_logging(verbosity: int) -> None:
    level = logging.WARNING if verbosity == 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    logging.basicConfig(level=level, stream=sys.stderr, format="%(levelname)s %(name)s %(message)s")
    # urllib3 (under the kubernetes client) warns once per retry of a refused connection; the
    # failure itself is the one line main prints. -v shows the retries.
    logging.getLogger("urllib3").setLevel(level if verbosity else logging.ERROR)


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    """Run one command; returns its exit status (see Exit). `env` is the environment (default
    os.environ): NO_COLOR, LITELLM_MASTER_KEY."""
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse(argv)
    args.argv = argv  # the command as given (runway render records it: renderer.git.provenance)
    args.env = os.environ if env is None else env
    configure_logging(args.verbose + getattr(args, "local_verbose", 0))
    try:
        _refuse_unused(args)
        return int(args.run(args))
    except KeyboardInterrupt:
        return Exit.INTERRUPTED
    except BrokenPipeError:
        return _pipe_closed()
    except Exception as err:  # the CLI's one error boundary: only the errors of ERRORS map
        code = exit_for(err)
        if code is None:
            raise
        print(f"runway: {err if isinstance(err, RunwayError) else describe(err)}", file=sys.stderr)
        return code


def parse(argv: Sequence[str]) -> argparse.Namespace:
    """The arguments; bad ones exit 2 with the usage of the command they were given to."""
    argv = ["version"] if asks_version(argv) else argv
    args, unknown = build_parser(command_of(argv)).parse_known_args(argv)
    if unknown:
        args.usage.error(f"unrecognized arguments: {' '.join(unknown)}")
    if hasattr(args, "filenames") and not (args.files or args.filenames):
        args.usage.error("the following arguments are required: FILE (or -f FILE)")
    return args


def _refuse_unused(args: argparse.Namespace) -> None:
    """--context or -n given before a command that has no use for them is a usage error, not
    silently ignored."""
    used: frozenset[str] = getattr(args, USES, frozenset())
    for dest, flag in CLUSTER_OPTIONS.items():
        if getattr(args, dest, None) is not None and dest not in used:
            raise SourceError(flag, f"`{args.usage.prog}` has no use for it")


# What each error a command lets through means, first match wins (docs/cli.md "Exit status").
# Only the core's errors: every edge raises its failures as these (Git, the cluster and LiteLLM
# as Unavailable, a setting as UsageError), so main imports no edge.
ERRORS: tuple[tuple[tuple[type[Exception], ...], Exit], ...] = (
    ((SourceError, UsageError), Exit.USAGE),
    ((OSError, Unavailable), Exit.UNAVAILABLE),
    ((RunwayError,), Exit.PARTIAL),
)


def exit_for(err: Exception) -> Exit | None:
    """The exit status of an error a command raised; None for a bug (it propagates)."""
    for types, code in ERRORS:
        if isinstance(err, types):
            return code
    return None


def describe(err: BaseException) -> str:
    """One line for an OS error: the file and why, no traceback."""
    if isinstance(err, OSError) and err.filename:
        return f"{err.filename}: {err.strerror}"
    return str(err).splitlines()[0] if str(err) else type(err).__name__


def _pipe_closed() -> Exit:
    """Standard output's reader is gone: point the descriptor at /dev/null, so that the flush
    at exit finds nowhere to fail either."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return Exit.PIPE_CLOSED


def run() -> None:
    """The console-script entry point."""
    code = main()
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        code = _pipe_closed()
    sys.exit(code)
