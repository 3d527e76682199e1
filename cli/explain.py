"""`runway explain`: how the engine and provider of each ModelDeployment are selected, with every
candidate provider and every rule result (kubeio.explanation: the trace of one object and its
text, which the portal's Models page shows too)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from cli.exits import Exit
from cli.inspect import add_common, guarded, registry_of, sources
from cli.options import write_structured
from core.admission.verdict import MD, kind_of, name_of
from kubeio.explanation import explain_one, failed_explanation, print_explanation
from kubeio.sources import skip_note


def add_commands(commands: Any) -> None:
    explain = commands.add_parser(
        "explain",
        help="show how the engine and provider are selected for each ModelDeployment",
        description="For every ModelDeployment in FILEs, the engine and provider selection with "
        "every candidate provider and every rule result. Other kinds are skipped (a note on "
        "stderr); an unknown kind of Runway's API groups is unusable input. Exit status: 0 "
        "the trace was printed, 2 unusable input.",
    )
    add_common(explain, "ModelDeployments")
    explain.set_defaults(run=run_explain)


def run_explain(args: argparse.Namespace) -> int:
    kinds = sources(args, sys.stdin)
    deployments = [doc for doc in kinds.runway if kind_of(doc.obj) == MD]
    for doc, ours in zip(kinds.documents, kinds.ours, strict=True):
        if not ours:
            print(f"runway: {skip_note(doc)}", file=sys.stderr)
        elif kind_of(doc.obj) != MD:
            print(
                f"runway: skipped {doc.obj.get('kind')}/{name_of(doc.obj)} ({doc.where}): "
                "explain shows ModelDeployments only",
                file=sys.stderr,
            )
    if not deployments:
        return Exit.OK
    registry = registry_of(args)
    results = [
        guarded(explain_one, doc.obj, registry, failed_explanation(doc.obj)) for doc in deployments
    ]
    if args.output != "text":
        write_structured(results, args.output, sys.stdout)
    else:
        for result in results:
            print_explanation(result, sys.stdout)
    return Exit.OK
