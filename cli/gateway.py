"""`runway gateway-plan` (offline preview of the desired LiteLLM model list and every ambiguous
servedName) and `runway gateway-sync` (register it in LiteLLM and write ExternalModelProvider
status): their arguments, settings, output and exit status. The flow is gateway/run.py. Neither
prints a key: plans hold Secret references only, and the sync's output names models, owners and
outcomes."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from cli.exits import Exit
from cli.formats import FORMATS, Case, Finding, located, write_report
from cli.options import (
    CONTEXT,
    REPORTS,
    add_context,
    add_inputs,
    add_output,
    add_recursive,
    destinations,
    inputs,
    write_structured,
)
from core.fields.errors import SourceError
from core.model.urls import url_problem
from gateway.merge import Owner, Plan, plan_lines
from gateway.run import (
    FailedPass,
    PlanSettings,
    SyncReport,
    SyncSettings,
    plan_sources,
    sync_loop,
    sync_once,
)
from gateway.status import ModelResult
from kubeio.client import cluster_calls
from kubeio.shipped import runway_version
from kubeio.sources import STDIN, STDIN_ORIGIN, read_documents

log = logging.getLogger(__name__)

MASTER_KEY_ENV = "LITELLM_MASTER_KEY"


def add_commands(commands: Any) -> None:
    plan_cmd = commands.add_parser(
        "gateway-plan",
        help="preview the LiteLLM model list and every ambiguous servedName (offline)",
        description="Read ModelDeployments and ExternalModelProviders from files and print the "
        "models the gateway sync would register and every servedName claimed more than once. "
        "No cluster, no LiteLLM. Exit status: 0 no conflict; 1 a servedName is ambiguous or an "
        "object is invalid; 2 unusable input.",
    )
    add_inputs(plan_cmd, "ModelDeployments, ExternalModelProviders and Secrets")
    _common(plan_cmd)
    add_output(plan_cmd, REPORTS)
    plan_cmd.set_defaults(run=run_plan)

    sync = commands.add_parser(
        "gateway-sync",
        help="register ModelDeployments and ExternalModelProviders in LiteLLM (no restart)",
        description="Reconcile the desired model list into LiteLLM through its management API "
        "and write ExternalModelProvider status (Ready only once confirmed in /model/info). "
        f"The master key comes from ${MASTER_KEY_ENV} or --master-key-file. Objects come from the "
        "cluster (--kubeconfig, or in-cluster), or from files (--from) with Secrets from "
        "--secrets-dir. Exit status: 0 every model Ready; 1 a conflict, an invalid object or a "
        "model not Ready; 2 unusable input; 4 LiteLLM or the API server unreachable.",
    )
    sync.add_argument("--litellm-url", required=True, metavar="URL", help="LiteLLM proxy root")
    sync.add_argument("--kubeconfig", metavar="FILE", help="default: in-cluster, else ~/.kube")
    add_context(sync)
    add_sync_arguments(sync)
    sync.add_argument(
        "-f",
        "--from",
        dest="sources",
        action="append",
        metavar="SOURCE",
        help="files or directories instead of a cluster (repeatable)",
    )
    add_recursive(sync)
    sync.add_argument("--secrets-dir", metavar="DIR", help="Secret manifests, with --from")
    sync.add_argument("--once", action="store_true", help="one pass, then exit (CI, cron)")
    sync.add_argument(
        "--interval", type=float, default=30.0, metavar="SECONDS", help="between passes (30)"
    )
    add_output(sync)
    sync.set_defaults(run=run_sync)


def add_sync_arguments(parser: argparse.ArgumentParser) -> None:
    """What a gateway sync needs besides the LiteLLM URL, the kubeconfig and the interval; also
    used by `runway status-controller --litellm-url`."""
    parser.add_argument("--master-key-file", metavar="FILE", help=f"instead of ${MASTER_KEY_ENV}")
    parser.add_argument(
        "--confirm-timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="how long to wait for written models to appear in /model/info (10)",
    )
    _common(parser)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--providers", action="append", metavar="DIR", help="InferenceProviderConfigs"
    )
    parser.add_argument(
        "--gateway-url",
        metavar="URL",
        help="API root of the Gateway, for ModelDeployments with spec.gateway.enabled",
    )
    parser.add_argument(
        "--allow-destination",
        action="append",
        default=[],
        metavar="HOST|CIDR",
        help="an internal host or network ExternalModelProvider base URLs may name anyway "
        "(repeatable; by default only public names and global addresses are registered)",
    )


def _gateway_url(value: str | None) -> str | None:
    problem = url_problem(value) if value is not None else None
    if problem is not None:
        raise SourceError("--gateway-url", f"{value!r} {problem[0]}")
    return value


def _planning(args: argparse.Namespace) -> PlanSettings:
    return PlanSettings(
        providers=tuple(args.providers or ()),
        gateway_url=_gateway_url(args.gateway_url),
        destinations=destinations(args.allow_destination),
    )


def _owner(owner: Owner) -> dict[str, str]:
    return {"kind": owner.kind, "namespace": owner.namespace, "name": owner.name}


def plan_json(result: Plan) -> dict[str, Any]:
    models = []
    for m in result.models:
        model: dict[str, Any] = {
            "servedName": m.served_name,
            "owner": _owner(m.owner),
            "target": m.api_base,
            "upstreamModel": m.upstream_model,
            "id": m.id,
        }
        if m.secret is not None:
            model["credentials"] = {"secret": m.secret.name, "key": m.secret.key}
        if m.requested_by is not None:
            model["requestedBy"] = m.requested_by
        models.append(model)
    return {
        "models": models,
        "conflicts": [
            {"servedName": c.served_name, "claimants": [_owner(o) for o in c.claimants]}
            for c in result.conflicts
        ],
        "skipped": [
            {"owner": _owner(s.owner), "reason": s.reason}
            | ({"servedName": s.served_name} if s.served_name else {})
            for s in result.skipped
        ],
    }


def _print_plan(result: Plan) -> None:
    for line in plan_lines(result):
        print(line)


def _plan_exit(result: Plan) -> Exit:
    return Exit.OK if result.is_clean else Exit.PARTIAL


def run_plan(args: argparse.Namespace) -> Exit:
    result, notes = plan_sources(
        inputs(args), _planning(args), stdin=sys.stdin, recursive=args.recursive
    )
    for note in notes:
        print(f"runway: {note}", file=sys.stderr)
    for c in result.conflicts:  # the report says so; the log line is for -v
        log.info(
            "gateway-plan conflict served=%s claimants=%s",
            c.served_name,
            ",".join(str(o) for o in c.claimants),
        )
    if args.output in FORMATS:
        cases = _plan_cases(result, inputs(args), args.recursive)
        write_report(args.output, "gateway-plan", cases, runway_version(), sys.stdout)
    elif args.output != "text":
        write_structured(plan_json(result), args.output, sys.stdout)
    else:
        _print_plan(result)
    return _plan_exit(result)


def _plan_cases(result: Plan, sources: Sequence[str], recursive: bool) -> list[Case]:
    """The plan as cases: each model planned (passing) and each ambiguous servedName (a
    finding), named by its servedName, at its (first) claimant's document; each object refused
    as invalid at its document. Standard input is read once, by the plan: its objects are at
    "<stdin>", without a line."""
    where = located(read_documents([s for s in sources if s != STDIN], recursive=recursive))

    def case(name: str, owner: Owner, findings: tuple[Finding, ...] = ()) -> Case:
        file, line = where.get((owner.kind, owner.namespace, owner.name), (STDIN_ORIGIN, None))
        return Case(name, file, line, findings)

    cases = [case(f"{m.served_name} ({m.owner})", m.owner) for m in result.models]
    for c in result.conflicts:
        claimants = ", ".join(str(o) for o in c.claimants)
        why = f"servedName {c.served_name!r} is claimed more than once: {claimants}"
        first = min(c.claimants, key=str)
        cases.append(case(c.served_name, first, (Finding("ambiguous-served-name", why),)))
    for s in result.skipped:
        if s.served_name is None:  # a name that only cannot be routed here is no failure
            cases.append(case(str(s.owner), s.owner, (Finding("invalid-object", s.reason),)))
    return cases


def _master_key(args: argparse.Namespace, env: Mapping[str, str]) -> str:
    if args.master_key_file:
        key = Path(args.master_key_file).read_text().strip()
    else:
        key = env.get(MASTER_KEY_ENV, "").strip()
    if not key:
        raise SourceError("--master-key-file", f"no LiteLLM master key (set ${MASTER_KEY_ENV})")
    return key


def _results_json(results: Sequence[ModelResult], result: Plan) -> dict[str, Any]:
    return {
        "models": [
            {
                "servedName": r.served_name,
                "owner": _owner(r.owner),
                "id": r.id,
                "outcome": str(r.outcome),
                "message": r.message,
            }
            | ({"requestedBy": r.requested_by} if r.requested_by else {})
            | ({"claimants": [_owner(o) for o in r.claimants]} if r.claimants else {})
            for r in results
        ],
        "skipped": plan_json(result)["skipped"],
    }


def _print_results(results: Sequence[ModelResult], result: Plan) -> None:
    for r in results:
        who = f"  requested-by={r.requested_by}" if r.requested_by else ""
        print(f"{r.outcome:<18} {r.served_name}  {r.owner}{who}  {r.message}")
    for s in result.skipped:
        name = f"{s.served_name}  " if s.served_name else ""
        print(f"{'Skipped':<18} {name}{s.owner}: {s.reason}")


def _litellm_url(value: str) -> str:
    problem = url_problem(value)
    if problem is not None:
        detail, credential = problem
        if credential:
            detail = f"must not carry credentials; the master key comes from ${MASTER_KEY_ENV} or --master-key-file"
        raise SourceError("--litellm-url", f"{value!r} {detail}")
    return value


def _print_report(report: SyncReport, output: str) -> None:
    if output != "text":
        write_structured(_results_json(report.results, report.plan), output, sys.stdout)
    else:
        _print_results(report.results, report.plan)
    sys.stdout.flush()


def _sync_exit(report: SyncReport | FailedPass | None) -> Exit:
    if report is None:  # stopped before the loop's first pass
        return Exit.OK
    if isinstance(report, FailedPass):  # LiteLLM or the API server unreachable
        return Exit.UNAVAILABLE
    return Exit.OK if report.is_ready else Exit.PARTIAL


def sync_settings(
    args: argparse.Namespace, env: Mapping[str, str], *, interval: float
) -> SyncSettings:
    """The sync's settings from the arguments add_sync_arguments adds (and --litellm-url,
    --kubeconfig, and --from/--secrets-dir where the command has them)."""
    return SyncSettings(
        litellm_url=_litellm_url(args.litellm_url),
        master_key=_master_key(args, env),
        planning=_planning(args),
        sources=tuple(getattr(args, "sources", None) or ()),
        recursive=getattr(args, "recursive", False),
        secrets_dir=getattr(args, "secrets_dir", None),
        kubeconfig=args.kubeconfig,
        context=getattr(args, CONTEXT, None),
        confirm_timeout=args.confirm_timeout,
        interval=interval,
    )


def print_report(report: SyncReport) -> None:
    """A pass's report as text (gateway-sync's default output)."""
    _print_report(report, "text")


def run_sync(args: argparse.Namespace, env: Mapping[str, str] | None = None) -> Exit:
    settings = sync_settings(args, os.environ if env is None else env, interval=args.interval)
    if args.once:
        with cluster_calls():
            report = sync_once(settings)
        _print_report(report, args.output)
        return _sync_exit(report)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with cluster_calls():  # the loop outlives the cluster's failures, but not a bad kubeconfig
        last = sync_loop(settings, stop=stop, report=lambda r: _print_report(r, args.output))
    return _sync_exit(last)
