"""`runway apply`: server-side apply of a rendered tree (the only render-side command that needs
the kubernetes client, so `runway render` never imports it)."""

from __future__ import annotations

import argparse
import datetime as dt
from pathlib import Path
from typing import Any

from cli.exits import Exit
from cli.options import CONTEXT, add_context, no_stdin
from core.fields.errors import SourceError
from kubeio.client import connected
from renderer.apply import apply_tree, summary


def add_commands(commands: Any) -> None:
    apply = commands.add_parser(
        "apply",
        help="server-side apply a rendered tree with strict field validation",
        description="Exit status: 0 everything applied; 1 something was refused (IncompatibleUpstream is recorded "
        "in the ModelDeployment's status); 4 the API server could not be reached.",
    )
    tree = apply.add_mutually_exclusive_group(required=True)
    tree.add_argument(
        "path", nargs="?", metavar="PATH", help="the rendered tree (e.g. REPO/rendered)"
    )
    tree.add_argument(
        "-f", "--filename", dest="tree", metavar="DIR", help="the rendered tree, as PATH"
    )
    apply.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="the kubeconfig to use (default: $KUBECONFIG, else ~/.kube/config)",
    )
    add_context(apply)
    apply.add_argument(
        "--field-manager",
        default="runway",
        metavar="NAME",
        help="the server-side apply field manager (default runway)",
    )
    apply.set_defaults(run=run_apply)


def run_apply(args: argparse.Namespace) -> int:
    given = args.path or args.tree
    no_stdin(
        [given],
        "apply reads a rendered tree (a directory that `runway render` wrote), not a stream",
    )
    root = Path(given)
    if not root.is_dir():
        raise SourceError(given, "not a rendered tree (no such directory)")
    with connected(args.kubeconfig, context=getattr(args, CONTEXT, None)) as client:
        results = apply_tree(
            client, root, field_manager=args.field_manager, now=dt.datetime.now(dt.UTC)
        )
    for result in results:
        state = "applied" if result.ok else f"refused: {result.message}"
        print(f"{result.folder}: {result.obj}: {state}")
    print(summary(results))
    return Exit.OK if all(r.ok for r in results) else Exit.PARTIAL
