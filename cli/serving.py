"""`runway serve` and `runway certs issue|rotate|inject`."""

from __future__ import annotations

import argparse
import datetime as dt
from pathlib import Path
from typing import Any

from certs.bundle import Identity, issue_bundle, rotate_bundle
from certs.contents import FILES
from certs.inject import check_targets, inject_ca_bundle, read_ca_bundle
from certs.lifetimes import MAX_DAYS, check_lifetimes, renew_window
from cli.exits import Exit
from kubeio.client import api_client
from webhook.server import serve
from webhook.settings import Settings


def add_commands(commands: Any) -> None:
    server = commands.add_parser(
        "serve",
        help="run the admission webhook (gunicorn over TLS) in the foreground",
        description="Endpoints: POST /mutate, /validate (ModelDeployment), "
        "/validate-inferenceproviderconfig, /validate-externalmodelprovider; GET /healthz, /readyz, /metrics. "
        "Stops cleanly on SIGTERM.",
    )
    server.add_argument("--cert", required=True, metavar="FILE", help="serving certificate (PEM)")
    server.add_argument("--key", required=True, metavar="FILE", help="its private key (PEM)")
    server.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    server.add_argument("--port", type=int, default=8443, help="port (default 8443)")
    source = server.add_mutually_exclusive_group()
    source.add_argument(
        "--providers",
        action="append",
        metavar="DIR",
        help="InferenceProviderConfig YAML (default: the shipped five)",
    )
    source.add_argument(
        "--in-cluster",
        action="store_true",
        help="watch InferenceProviderConfigs with the pod's service account",
    )
    source.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="watch InferenceProviderConfigs through this kubeconfig",
    )
    server.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    server.add_argument(
        "--threads",
        type=int,
        default=64,
        help="threads per worker: requests read or answered at once; idle connections wait without one (default 64)",
    )
    server.add_argument(
        "--stale-seconds",
        type=int,
        default=60,
        metavar="SECONDS",
        help="with --in-cluster or --kubeconfig: not ready once the provider configs have not "
        "been known current for this long, e.g. while the watch keeps failing (default 60)",
    )
    server.add_argument(
        "--allow-destination",
        action="append",
        default=[],
        metavar="HOST|CIDR",
        help="an internal host or network an ExternalModelProvider base URL may name (repeatable)",
    )
    server.set_defaults(run=run_serve)

    certs = commands.add_parser("certs", help="webhook TLS: issue, rotate, inject the CA bundle")
    actions = certs.add_subparsers(dest="action", metavar="ACTION", required=True)
    issue = actions.add_parser(
        "issue", help="create a CA and a serving certificate for the webhook Service"
    )
    issue.add_argument(
        "--out",
        required=True,
        metavar="DIR",
        help=f"the directory to write {_files()} into (created if missing; one that "
        "already holds any of them is refused, see --replace-ca)",
    )
    issue.add_argument(
        "--service",
        default="runway-webhook",
        metavar="NAME",
        help="the webhook's Service: the certificate is for NAME.NAMESPACE.svc, its other "
        "in-cluster names, localhost and 127.0.0.1 (default runway-webhook)",
    )
    issue.add_argument(
        "--namespace",
        default="runway-system",
        metavar="NAMESPACE",
        help="the Service's namespace (default runway-system)",
    )
    _lifetimes(issue)
    issue.add_argument(
        "--replace-ca",
        action="store_true",
        help="issue over an existing bundle: a new CA, so the caBundle must be injected again",
    )
    issue.set_defaults(run=run_issue)
    rotate = actions.add_parser(
        "rotate", help="renew what expires soon; the old CA stays in ca.crt during the overlap"
    )
    rotate.add_argument(
        "--out",
        required=True,
        metavar="DIR",
        help="the directory `certs issue --out` wrote the bundle into",
    )
    rotate.add_argument(
        "--renew-within-days",
        type=float,
        default=30,
        help="renew when this close to expiry (default 30)",
    )
    _lifetimes(rotate)
    rotate.set_defaults(run=run_rotate)
    inject = actions.add_parser(
        "inject", help="server-side apply the CA bundle into the webhook configurations"
    )
    inject.add_argument(
        "--ca", required=True, metavar="FILE", help="CA bundle (PEM), e.g. DIR/ca.crt"
    )
    inject.add_argument(
        "--mutating",
        action="append",
        default=[],
        metavar="NAME",
        help="a MutatingWebhookConfiguration (repeatable; this or --validating is needed)",
    )
    inject.add_argument(
        "--validating",
        action="append",
        default=[],
        metavar="NAME",
        help="a ValidatingWebhookConfiguration (repeatable)",
    )
    where = inject.add_mutually_exclusive_group()
    where.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="the kubeconfig to use, at its current context (default: $KUBECONFIG, else "
        "~/.kube/config; in a pod, its service account)",
    )
    where.add_argument("--in-cluster", action="store_true", help="use the pod's service account")
    inject.set_defaults(run=run_inject)


def _lifetimes(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--days",
        type=int,
        default=365,
        help=f"serving certificate lifetime, 1 to {MAX_DAYS} and at most --ca-days (default 365)",
    )
    parser.add_argument(
        "--ca-days", type=int, default=3650, help=f"CA lifetime, 1 to {MAX_DAYS} (default 3650)"
    )


def run_serve(args: argparse.Namespace) -> int:
    settings = Settings(
        host=args.host,
        port=args.port,
        cert=args.cert,
        key=args.key,
        providers=tuple(args.providers or ()),
        in_cluster=args.in_cluster,
        kubeconfig=args.kubeconfig or "",
        workers=args.workers,
        threads=args.threads,
        allow_destinations=tuple(args.allow_destination),
        stale_seconds=args.stale_seconds,
        verbose=min(2, args.verbose + getattr(args, "local_verbose", 0)),
    ).checked()
    serve(settings)
    return Exit.OK


def _files(directory: Path | None = None) -> str:
    """The files of a bundle, in the order written, each in `directory` when given."""
    names = [str(directory / n) if directory else n for n in FILES]
    return ", ".join(names[:-1]) + " and " + names[-1]


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def run_issue(args: argparse.Namespace) -> int:
    identity = Identity.for_service(args.service, args.namespace)
    issue_bundle(
        Path(args.out),
        identity,
        days=args.days,
        ca_days=args.ca_days,
        now=_now(),
        replace_ca=args.replace_ca,
    )
    names = ", ".join(identity.dns_names + identity.ip_addresses)
    print(f"issued {_files(Path(args.out))} for {names}")
    return Exit.OK


def run_rotate(args: argparse.Namespace) -> int:
    check_lifetimes(days=args.days, ca_days=args.ca_days)
    within = renew_window(args.renew_within_days, ca_days=args.ca_days)
    renewed = rotate_bundle(
        Path(args.out), renew_within=within, days=args.days, ca_days=args.ca_days, now=_now()
    )
    print(f"renewed: {', '.join(renewed)}" if renewed else "nothing to renew")
    return Exit.OK


def run_inject(args: argparse.Namespace) -> int:
    check_targets(mutating=args.mutating, validating=args.validating)
    bundle = read_ca_bundle(args.ca)
    with api_client(args.kubeconfig, in_cluster=args.in_cluster) as client:
        done = inject_ca_bundle(client, bundle, mutating=args.mutating, validating=args.validating)
    for name in done:
        print(f"caBundle set on {name}")
    return Exit.OK
