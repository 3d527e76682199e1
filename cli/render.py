"""`runway render`: ModelDeployments in, a committed GitOps tree out (renderer.flow)."""

from __future__ import annotations

import argparse
import functools
import gc
import importlib
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from cli.diffs import tree_diff, wants_colour, write_diff
from cli.exits import Exit
from cli.formats import FORMATS, Case, Finding, located, write_report
from cli.gatewayflag import add_gateway, gateway_target
from cli.options import (
    CONTEXT,
    REPORTS,
    add_context,
    add_inputs,
    add_output,
    add_quiet,
    inputs,
    no_stdin,
    write_structured,
)
from core.checks.credentials import redact
from core.fields.errors import SourceError
from core.model.kinds import MODEL_DEPLOYMENT
from kubeio.shipped import runway_version
from kubeio.sources import read_documents
from renderer import flow
from renderer.git.runner import Identity
from renderer.output.folders import report_line, report_row, reported_files
from renderer.output.ownership import DEFAULT_MAX_REMOVALS
from renderer.output.shard import Shard
from renderer.reuse.stamp import recorded_line
from renderer.settings import ClusterCrds, RenderReport, RenderSettings, checked_path

NAMED = 5  # the objects not rendered that the summary names
NO_STDIN = (
    "render records the path of every source (what a later render may remove); standard "
    "input has none: name files or directories"
)


def add_commands(commands: Any) -> None:
    render = commands.add_parser(
        "render",
        help="render ModelDeployments into a GitOps repository (upstream objects, strictly checked)",
        description="Exit status: 0 all rendered; 1 some ModelDeployment was not rendered (the rest "
        "were), or a file to be written looked like a credential; 2 unusable input; 4 Git failed or "
        "another render is running in the repository. With --check, as kubectl diff: 0 up to date; "
        "1 the tree is out of date; 3 some ModelDeployment was not rendered (out of date or not). "
        "Only ModelDeployments whose inputs changed are rendered again (--full renders all); only "
        "files whose bytes change are written. --diff answers as --check.",
    )
    add_inputs(
        render,
        "ModelDeployments (and InferenceProviderConfigs, ExternalModelProviders)",
        stdin=False,
    )
    render.add_argument(
        "--repo",
        required=True,
        metavar="PATH",
        help="Git work tree (created if missing; --check and --diff need an existing one)",
    )
    render.add_argument(
        "--path",
        default="rendered",
        metavar="SUBDIR",
        help="folder in the repository (default: rendered)",
    )
    render.add_argument(
        "--commit",
        action="store_true",
        help="commit the rendered tree (skipped when nothing changed)",
    )
    render.add_argument(
        "--push",
        metavar="REMOTE",
        help="push the commit (implies --commit); retries after rejection, never forces; the "
        "summary names the remote, the branch and the commit pushed",
    )
    render.add_argument(
        "--branch",
        default="main",
        help="the remote's branch to push to (default main, whatever the local branch is)",
    )
    render.add_argument(
        "--check",
        action="store_true",
        help="render in memory and list the files that would change; exit 1 if the repository "
        "is out of date, 3 if an object is rejected",
    )
    render.add_argument(
        "--diff",
        action="store_true",
        help="as --check, printing a unified diff of what would change on stdout (the report "
        "goes to stderr); coloured on a terminal unless NO_COLOR is set",
    )
    render.add_argument(
        "--author-name",
        metavar="NAME",
        help="the commits' author (default: the repository's git user.name, else runway)",
    )
    render.add_argument(
        "--author-email",
        metavar="EMAIL",
        help="the commits' author email (default: the repository's git user.email, else "
        "runway@localhost)",
    )
    render.add_argument(
        "--providers",
        action="append",
        metavar="DIR",
        help="InferenceProviderConfigs (default: from the sources, else the shipped five)",
    )
    crds = render.add_mutually_exclusive_group()
    crds.add_argument(
        "--crds",
        action="append",
        metavar="DIR",
        help="upstream CRDs that replace Runway's schema pack for their kinds, repeatable "
        "(default: the schema pack alone)",
    )
    crds.add_argument(
        "--crds-from-cluster",
        action="store_true",
        help="the CRDs a live cluster serves (--kubeconfig) replace the schema pack for their kinds",
    )
    render.add_argument("--kubeconfig", metavar="FILE", help="for --crds-from-cluster")
    add_context(render)
    add_gateway(render, "the Gateway HTTPRoutes attach to (needed by spec.gateway.enabled: true)")
    render.add_argument(
        "--istio",
        action="store_true",
        help="also render an Istio DestinationRule for each endpoint picker",
    )
    render.add_argument(
        "--full",
        action="store_true",
        help="render every ModelDeployment, ignoring what the last render recorded",
    )
    render.add_argument(
        "--shard",
        type=_shard,
        metavar="K/N",
        help="render only the namespaces of shard K of N (a fixed partition by namespace; N "
        "shards pushing to one branch converge on one full render)",
    )
    render.add_argument(
        "--max-removals",
        type=_count,
        default=DEFAULT_MAX_REMOVALS,
        metavar="N",
        help="remove at most N output folders (of ModelDeployments and ExternalModelProviders "
        "whose source was removed from the SOURCEs given) in one render; more are withheld and "
        f"the render exits 1 (default {DEFAULT_MAX_REMOVALS})",
    )
    add_output(render, REPORTS)
    add_quiet(
        render,
        "the summary line (with --diff, the diff and the summary); text only",
    )
    render.set_defaults(run=run_render)


def _shard(value: str) -> Shard:
    try:
        return Shard.parse(value)
    except SourceError as err:
        raise argparse.ArgumentTypeError(err.message) from None


def _count(value: str) -> int:
    if not (value.isascii() and value.isdigit()):  # isdigit() alone takes "²", int() not
        raise argparse.ArgumentTypeError(f"expected a count (0 or more), got {value!r}")
    return int(value)


def run_render(args: argparse.Namespace) -> int:
    """`render`: the settings from the flags, the render, the report, the exit status."""
    with collector_paused():
        return _run_render(args)


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused for a render. A render is a batch whose objects
    (sources, stamp rows, results, cache entries) live until it ends and hold no reference
    cycles, yet the collector walked them again every few hundred allocations: 22 of the 26 ms
    it took in a re-render of 10,000 with one changed (0.45 s), 0.24 s of a first render's
    parent, for 1,400-2,000 objects found in cycles (from imports, not rendering). Reference
    counting frees everything else at once, as before; the pool's workers, forked meanwhile,
    render the same way. Afterwards (a caller in process: the tests) what is alive is frozen
    first, so that the first collection does not walk the whole render's objects at once."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.freeze()
            gc.enable()


def _run_render(args: argparse.Namespace) -> int:
    sources = inputs(args)
    no_stdin(sources, NO_STDIN)
    if args.diff and args.output in ("json", "yaml"):
        raise SourceError("--diff", "prints a unified diff; -o json and -o yaml go with --check")
    if args.quiet and args.output != "text":
        raise SourceError(
            "-q/--quiet", "prints the text summary; -o json and -o yaml print the whole report"
        )
    check = args.check or args.diff
    settings = RenderSettings(
        sources=tuple(sources),
        repo=args.repo,
        path=args.path,
        commit=args.commit,
        push=args.push,
        branch=args.branch,
        check=check,
        providers=tuple(args.providers or ()),
        crds=tuple(args.crds or ()),
        crds_from_cluster=args.crds_from_cluster,
        kubeconfig=args.kubeconfig,
        gateway=gateway_target(args.gateway, istio=args.istio),
        full=args.full,
        max_removals=args.max_removals,
        author=_author(args.author_name, args.author_email),
        shard=args.shard,
        command=_argv(args),
        recursive=args.recursive,
    )
    reader: ClusterCrds | None = None
    if settings.crds_from_cluster:
        # renderer.apply imports the kubernetes client (0.8 s): only when the cluster is asked
        cluster_crds = importlib.import_module("renderer.apply").cluster_crds
        reader = functools.partial(cluster_crds, context=getattr(args, CONTEXT, None))
    progress = Progress(sys.stderr) if sys.stderr.isatty() and not args.quiet else None
    report = flow.render(settings, cluster_crds=reader, progress=progress)
    subdir = checked_path(settings.path)  # as the repository names it: "./x/" is "x"
    if args.diff and report.tree is not None:
        lines = tree_diff(report.changes, report.tree.current, report.tree, subdir)
        write_diff(lines, sys.stdout, colour=wants_colour(sys.stdout, args.env))
    out = sys.stderr if args.diff else sys.stdout
    if args.quiet:
        print(summary(report), file=out)
    elif args.output in FORMATS:
        for note in report.skipped:
            print(f"runway: {note}", file=sys.stderr)
        cases = _cases(report, settings, subdir)
        write_report(args.output, "render", cases, runway_version(), out)
    else:
        for note in report.skipped:
            print(f"runway: {note}", file=sys.stderr)
        _report(report, args.output, out, subdir, listed=check)
    if settings.check:  # as kubectl diff: 0 no differences, 1 differences, above 1 an error
        if report.failed:
            return Exit.CHECK_REJECTED
        return Exit.PARTIAL if report.out_of_date else Exit.OK
    return Exit.PARTIAL if report.failed else Exit.OK


def _argv(args: argparse.Namespace) -> tuple[str, ...]:
    """The command's arguments as given, for the render's provenance (cli.main's `argv` when it
    hands them on, else the process's)."""
    return tuple(args.argv)


def _cases(report: RenderReport, settings: RenderSettings, subdir: str) -> list[Case]:
    """The report as cases: each ModelDeployment at its source document (a finding if it was
    not rendered), each removal held back at its output folder, and with `check` each file
    that would change at its path (relative to the working directory)."""
    where = located(read_documents(settings.sources, recursive=settings.recursive))
    repo, check = settings.repo, settings.check
    cases = []
    for r in report.results:
        namespace, _, name = r.key.partition("/")
        file, line = where.get((MODEL_DEPLOYMENT, namespace, name), (r.key, None))
        findings = () if r.error is None else (Finding("not-rendered", r.error),)
        cases.append(Case(f"{MODEL_DEPLOYMENT} {r.key}", file, line, findings))
    removals = report.removals
    for key in removals.withheld:
        held = Finding("removal-held-back", f"not removed: {removals.reason}")
        cases.append(
            Case(f"folder {subdir}/{key}", _in_repo(repo, f"{subdir}/{key}"), None, (held,))
        )
    if check:
        for what, paths in _changes(report, subdir).items():
            for path in paths:
                verb = "remove" if what == "removed" else "write"
                stale = Finding("out-of-date", f"{what}: out of date (render would {verb} it)")
                cases.append(Case(path, _in_repo(repo, path), None, (stale,)))
    return cases


def _in_repo(repo: str, path: str) -> str:
    return os.path.normpath(os.path.join(repo, path))


def _author(name: str | None, email: str | None) -> Identity | None:
    """--author-name and --author-email, both or neither."""
    if name is None and email is None:
        return None
    if not name or not email or "<" in name + email or ">" in name + email:
        flag = "--author-email" if name else "--author-name"
        raise SourceError(
            flag, "give both --author-name and --author-email, neither holding < or >"
        )
    return Identity(name, email)


class Progress:
    """`rendering 120/10000 ModelDeployments` on a terminal, rewritten in place about every
    hundredth of the way, ending its line when the pass is done (a pass with nothing to render
    says nothing)."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.shown = 0

    def __call__(self, done: int, total: int) -> None:
        if done < total and done - self.shown < max(1, total // 100):
            return
        self.shown = 0 if done == total else done
        end = "\n" if done == total else ""
        self.out.write(f"\rrendering {done}/{total} ModelDeployments{end}")
        self.out.flush()


def _report(report: RenderReport, output: str, out: TextIO, subdir: str, *, listed: bool) -> None:
    """The report: as JSON or YAML, or as text (with `listed`, each file that changes). Files
    are named by their path in the repository (`subdir`, the output folder, first) in every
    form, as `--diff` and git name them."""
    if output != "text":
        if output == "json":
            out.write(_json_report(report, subdir))
        else:
            write_structured(_payload(report, subdir), output, out)
        return
    results = report.results
    for r in results:
        if r.error is None:
            count = len(reported_files(r))
            print(f"{r.key}: rendered: {r.engine} on {r.provider}, {count} files", file=out)
        else:
            print(f"{r.key}: not rendered (previous output kept): {r.error}", file=out)
        for warning in r.warnings:
            print(f"  warning: {warning}", file=out)
    _report_removals(report, out)
    for kind, origin in report.schema_sources.items():
        print(f"schema {kind}: {origin}", file=out)
    if listed:
        for what, paths in _changes(report, subdir).items():
            for path in paths:
                print(f"{what}: {path}", file=out)
    source = report.source
    if source is not None and source.differs:
        uncommitted = " (with uncommitted changes)" if source.dirty else ""
        print(
            f"sources: at commit {source.current}{uncommitted}; the tree was rendered from "
            f"{source.rendered}",
            file=out,
        )
    print(summary(report), file=out)


def summary(report: RenderReport) -> str:
    """The report's last line: the counts, the commit, then what went wrong: the objects not
    rendered (the first NAMED) and the removals held back, with why."""
    failed = [r.key for r in report.results if r.error is not None]
    files = ", ".join(f"{len(v)} {k}" for k, v in report.changes.items())
    rendered = len(report.results) - len(failed)
    parts = [
        f"{rendered} rendered ({report.unchanged} unchanged since the last render), "
        f"{len(failed)} failed",
        f"files: {files}",
    ]
    pushed = report.pushed
    if pushed is not None:
        local = (
            f"the local branch is {pushed.local}" if pushed.local else "the local HEAD is detached"
        )
        parts.append(
            f"commit {pushed.commit[:12]} pushed to {redact(pushed.remote)}, branch {pushed.branch}"
            + (f" ({local})" if pushed.local != pushed.branch else "")
        )
    elif report.committed:
        parts.append(f"commit {report.committed[:12]}")
    if failed:
        more = f" and {len(failed) - NAMED} more" if len(failed) > NAMED else ""
        parts.append("not rendered: " + ", ".join(failed[:NAMED]) + more)
    removals = report.removals
    if removals.withheld:
        parts.append(f"removals held back: {len(removals.withheld)} ({removals.reason})")
    return "; ".join(parts)


def _payload(report: RenderReport, subdir: str) -> dict[str, Any]:
    """The documented `render -o json` structure."""
    return {"results": [report_row(r) for r in report.results], **_rest(report, subdir)}


def _changes(report: RenderReport, subdir: str) -> dict[str, list[str]]:
    """The files added, changed and removed, by their paths in the repository."""
    return {what: [f"{subdir}/{path}" for path in paths] for what, paths in report.changes.items()}


def _rest(report: RenderReport, subdir: str) -> dict[str, Any]:
    """The report's structure but the results."""
    return {
        "changes": _changes(report, subdir),
        "commit": report.committed,
        "removals": {
            "removed": list(report.removals.removed),
            "withheld": list(report.removals.withheld),
            "reason": report.removals.reason,
            "outside": report.removals.outside,
        },
        "pushed": None
        if report.pushed is None
        else {
            "branch": report.pushed.branch,
            "commit": report.pushed.commit,
            "local": report.pushed.local,
            "remote": redact(report.pushed.remote),
        },
        "reused": report.reused,
        "source": None
        if report.source is None
        else {
            "commit": report.source.current,
            "dirty": report.source.dirty,
            "differs": report.source.differs,
            "rendered_from": report.source.rendered,
        },
        "unchanged": report.unchanged,
        "schemas": report.schema_sources,
    }


def _report_removals(report: RenderReport, out: TextIO) -> None:
    """Each folder removed, or each one withheld and why, and the count left alone."""
    removals = report.removals
    for key in removals.removed:
        print(f"{key}: removed (its source is no longer among the SOURCEs given)", file=out)
    if removals.withheld:
        print(f"not removed: {removals.reason}: " + ", ".join(removals.withheld), file=out)
    if removals.outside:
        print(
            f"{removals.outside} output folders kept: their sources are outside the SOURCEs "
            "given (or were never recorded); they are rendered only by a render given them",
            file=out,
        )


def _json_report(report: RenderReport, subdir: str) -> str:
    """The JSON report, keys sorted, one result per line (json's indenting encoder is pure
    Python: a third of a second for 10,000 results). A result taken from the stamp is written
    as the stamp recorded its line (renderer.reuse.stamp.recorded_line); any other one is encoded
    now (renderer.output.folders.report_line)."""
    payload = _rest(report, subdir)
    parts = []
    lines = [recorded_line(r) or report_line(r) for r in report.results]
    payload["results"] = lines
    for key in sorted(payload):
        if key == "results":
            rows = ",\n    ".join(lines)
            text = f"[\n    {rows}\n  ]" if lines else "[]"
        else:
            text = json.dumps(payload[key], sort_keys=True)
        parts.append(f"  {json.dumps(key)}: {text}")
    return "{\n" + ",\n".join(parts) + "\n}\n"
