"""The options several commands share, spelled once: manifests in (`FILE...`, `-f`, `-`, `-R`),
results out (`-o text|json|yaml`), `-v` after the command too, and the cluster options
(`--context`, `-n/--namespace`) where a command uses them."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Sequence
from typing import Any, TextIO

from core.fields.errors import SourceError
from core.model.destinations import Destinations
from kubeio.sources import STDIN, Document, in_namespace, read_documents
from kubeio.yamlio import dump

OUTPUTS = ("text", "json", "yaml")
# with the formats CI reads (cli/formats.py), for the commands that check: validate, render,
# gateway-plan
REPORTS = (*OUTPUTS, "junit", "sarif")
# The attribute of the parsed arguments naming the options of CLUSTER_OPTIONS a command uses;
# `main` refuses the others when they are given before the command.
USES = "uses"
CONTEXT = "context"
NAMESPACE = "default_namespace"  # not `namespace`: `certs issue --namespace` has its own
CLUSTER_OPTIONS = {CONTEXT: "--context", NAMESPACE: "-n/--namespace"}
VALUE_FLAGS = frozenset({"--context", "-n", "--namespace"})  # the global options taking a value
VERSION = "--version"  # `runway --version` is `runway version` (see cli.main.asks_version)


def add_globals(parser: argparse.ArgumentParser) -> None:
    """The options of `runway` itself, before any command."""
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="more log output on stderr"
    )
    parser.add_argument(
        "--context", dest=CONTEXT, metavar="NAME", help="the kubeconfig context (cluster commands)"
    )
    parser.add_argument(
        "-n",
        "--namespace",
        dest=NAMESPACE,
        metavar="NAMESPACE",
        help="the namespace of objects without one, or the namespace watched (commands that "
        "read manifests or watch a cluster)",
    )
    parser.add_argument(
        VERSION,
        action="store_true",
        help="print what `runway version` prints and exit 0; the other arguments are ignored",
    )


def add_local_verbose(parser: argparse.ArgumentParser) -> None:
    """`-v` after the command as well: `runway validate -v x` is `runway -v validate x`."""
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        dest="local_verbose",
        default=argparse.SUPPRESS,
        help="more log output on stderr (-vv: debug)",
    )


def add_context(parser: argparse.ArgumentParser) -> None:
    """`--context NAME`: the kubeconfig context the command's client uses."""
    parser.add_argument(
        "--context",
        dest=CONTEXT,
        metavar="NAME",
        default=argparse.SUPPRESS,
        help="the kubeconfig context to use (default: the kubeconfig's current context)",
    )
    _uses(parser, CONTEXT)


def add_namespace(parser: argparse.ArgumentParser, help: str) -> None:  # argparse's word
    parser.add_argument(
        "-n",
        "--namespace",
        dest=NAMESPACE,
        metavar="NAMESPACE",
        default=argparse.SUPPRESS,
        help=help,
    )
    _uses(parser, NAMESPACE)


def _uses(parser: argparse.ArgumentParser, option: str) -> None:
    used = set(parser.get_default(USES) or ())
    parser.set_defaults(**{USES: frozenset(used | {option})})


def add_inputs(parser: argparse.ArgumentParser, what: str, *, stdin: bool = True) -> None:
    """Manifests as positional paths and as `-f/--filename` (repeatable), as kubectl spells it;
    `-` is standard input where the command can read it."""
    dash = ", or - for standard input" if stdin else ""
    parser.add_argument(
        "files", nargs="*", metavar="FILE", help=f"YAML files or directories of {what}{dash}"
    )
    parser.add_argument(
        "-f",
        "--filename",
        dest="filenames",
        action="append",
        default=[],
        metavar="FILE",
        help=f"a file or directory of {what}{dash} (repeatable; as FILE)",
    )
    add_recursive(parser)


def add_recursive(parser: argparse.ArgumentParser) -> None:
    """`-R/--recursive`: a folder named is read with every folder under it, as `kubectl apply -f
    DIR -R`; without it, only the folder's own YAML files (kubeio.sources.yaml_files)."""
    parser.add_argument(
        "-R",
        "--recursive",
        action="store_true",
        help="read the folders named and every folder under them (default: a folder's own "
        ".yaml and .yml files only)",
    )


def inputs(args: argparse.Namespace) -> list[str]:
    """The manifests named, positional first, then each -f in order."""
    return [*args.files, *args.filenames]


def read_inputs(
    args: argparse.Namespace, namespaced: Iterable[tuple[str, str]], *, stdin: TextIO | None
) -> list[Document]:
    """The documents of the manifests named (Lists expanded, `-` read from `stdin`), with -n
    given to the objects of the `namespaced` kinds (group, kind) that have no namespace."""
    docs = read_documents(inputs(args), stdin=stdin, recursive=args.recursive)
    return in_namespace(docs, getattr(args, NAMESPACE, None), namespaced)


def destinations(values: Sequence[str]) -> Destinations:
    """--allow-destination, parsed; a bad item is a usage error naming it."""
    try:
        return Destinations.parse(values)
    except ValueError as err:
        raise SourceError("--allow-destination", str(err)) from None


def no_stdin(paths: Sequence[str], why: str) -> None:
    """Refuse `-` for a command that cannot read standard input, saying why."""
    if STDIN in paths:
        raise SourceError(STDIN, why)


def add_output(parser: argparse.ArgumentParser, choices: Sequence[str] = OUTPUTS) -> None:
    parser.add_argument(
        "-o",
        "--output",
        choices=choices,
        default="text",
        help="text for people; json or yaml for programs (the same documented structure)"
        + ("; junit or sarif for CI (a finding per problem)" if "sarif" in choices else ""),
    )


def add_quiet(parser: argparse.ArgumentParser, what: str) -> None:
    """`-q/--quiet`: only the summary line of the text report."""
    parser.add_argument("-q", "--quiet", action="store_true", help=f"print only {what}")


def write_structured(value: Any, output: str, out: TextIO) -> None:
    """`value` as `-o json` (indented, keys sorted) or `-o yaml` (the one dumper: keys sorted,
    no anchors), ending with a newline."""
    if output == "yaml":
        out.write(dump(value))
        return
    json.dump(value, out, indent=2, sort_keys=True)
    out.write("\n")


def walk_parsers(parser: argparse.ArgumentParser) -> Iterable[argparse.ArgumentParser]:
    """`parser` and every command parser under it, depth first in the order they were added."""
    yield parser
    for action in parser._actions:  # argparse keeps its subcommands only here
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                yield from walk_parsers(sub)
