"""`runway`: parser, logging, and the one place errors become exit codes."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from enum import IntEnum

import kubernetes

from cli import gateway, inspect, manifests, render, serving
from gateway.litellm import LiteLLMUnavailable
from providers.errors import RunwayError, SourceError
from webhook.settings import SettingsError


class Exit(IntEnum):
    OK = 0
    REJECTED = 1  # some objects failed validation; the rest were handled
    USAGE = 2  # bad flags (argparse's own code) or unusable input
    DRIFT = 3  # --check found the GitOps tree out of date
    UNAVAILABLE = 4  # Git or the API server could not be reached
    INTERRUPTED = 130


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="runway",
        description=(
            "Admission webhook and GitOps renderer for ModelDeployment (airunway.ai/v1alpha1): "
            "defaults, engine and provider selection, validation, rendering."
        ),
    )
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="more log output on stderr"
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    inspect.add_commands(commands)
    manifests.add_commands(commands)
    serving.add_commands(commands)
    render.add_commands(commands)
    render.add_apply_command(commands)
    gateway.add_commands(commands)
    return parser


def configure_logging(verbosity: int) -> None:
    level = logging.WARNING if verbosity == 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    logging.basicConfig(level=level, stream=sys.stderr, format="%(levelname)s %(name)s %(message)s")


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns its exit status (see Exit)."""
    args = build_parser().parse_args(argv)
    configure_logging(args.verbose)
    try:
        return int(args.run(args))
    except SourceError as err:
        print(f"runway: {err}", file=sys.stderr)
        return Exit.USAGE
    except SettingsError as err:
        print(f"runway: {err}", file=sys.stderr)
        return Exit.USAGE
    except (OSError, kubernetes.config.ConfigException, kubernetes.client.ApiException) as err:
        print(f"runway: {describe(err)}", file=sys.stderr)
        return Exit.UNAVAILABLE
    except LiteLLMUnavailable as err:
        print(f"runway: {err}", file=sys.stderr)
        return Exit.UNAVAILABLE
    except RunwayError as err:
        print(f"runway: {err}", file=sys.stderr)
        return Exit.REJECTED
    except KeyboardInterrupt:
        return Exit.INTERRUPTED


def describe(err: BaseException) -> str:
    """One line for an infrastructure failure: no traceback, no response bodies (may hold secrets)."""
    if isinstance(err, kubernetes.client.ApiException):
        return f"API server answered {err.status} {err.reason}"
    if isinstance(err, OSError) and err.filename:
        return f"{err.filename}: {err.strerror}"
    return str(err).splitlines()[0] if str(err) else type(err).__name__


def run() -> None:
    """The console-script entry point."""
    sys.exit(main())
