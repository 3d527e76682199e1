"""`runway version`: Runway's version and the upstream versions it is pinned to, read from the
installed package (core/model/versions.env, the data every render uses)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from cli.exits import Exit
from cli.options import add_output, write_structured
from kubeio.shipped import bundled_versions, runway_version


def add_commands(commands: Any) -> None:
    version = commands.add_parser(
        "version",
        help="print Runway's version and the pinned upstream versions",
        description="Runway's version (the installed package's), then every upstream version "
        "pin it renders, installs and tests against (core/model/versions.env, as shipped). "
        "Exit status: 0.",
    )
    add_output(version)
    version.set_defaults(run=run_version)


def version_info() -> dict[str, Any]:
    """The documented `version -o json` structure."""
    return {
        "runway": runway_version(),
        "upstream": dict(sorted(bundled_versions().as_env().items())),
    }


def run_version(args: argparse.Namespace) -> int:
    info = version_info()
    if args.output != "text":
        write_structured(info, args.output, sys.stdout)
        return Exit.OK
    print(f"runway {info['runway']}")
    for key, value in info["upstream"].items():
        print(f"{key}={value}")
    return Exit.OK
