"""`runway status-controller`: parse, start the controller (controller/run.py) and, with
--litellm-url, the gateway sync (gateway/run.py sync_loop) woken by the controller's watches and
run only while this replica holds the Lease; stop on SIGTERM or SIGINT."""

from __future__ import annotations

import argparse
import os
import signal
import socket
import threading
from typing import Any

from cli.exits import Exit
from cli.gateway import add_sync_arguments, print_report, sync_settings
from cli.options import CONTEXT, NAMESPACE, add_context, add_namespace
from controller.classify import ProbeSettings
from controller.lease import LeaseSettings
from controller.observe import ObserveSettings
from controller.run import ControllerSettings, run, wait
from gateway.run import sync_loop
from kubeio.client import connected
from kubeio.shipped import runway_version


def add_commands(commands: Any) -> None:
    sub = commands.add_parser(
        "status-controller",
        help="report what runs onto each ModelDeployment's status (status only; one leader)",
        description=(
            "Watch ModelDeployments and the upstream objects Runway renders, and write each "
            "ModelDeployment's status (phase, replicas, endpoint, conditions) through the status "
            "subresource. Never writes spec, adds no finalizers or owner references. Replicas "
            "elect one writer with a coordination.k8s.io Lease."
        ),
    )
    sub.add_argument("--kubeconfig", help="a kubeconfig (default: in a pod its service account)")
    add_context(sub)
    add_namespace(sub, "watch one namespace (default: every namespace)")
    sub.add_argument(
        "--lease-namespace",
        default=os.environ.get("POD_NAMESPACE", "runway-system"),
        help="the namespace of the Lease (default: $POD_NAMESPACE, else runway-system)",
    )
    sub.add_argument(
        "--lease-name",
        default="runway-status-controller",
        metavar="NAME",
        help="the Lease the replicas elect a leader with (default runway-status-controller)",
    )
    sub.add_argument(
        "--identity",
        default=os.environ.get("POD_NAME") or socket.gethostname(),
        help="this replica's name in the Lease (default: $POD_NAME, else the host name)",
    )
    sub.add_argument("--lease-seconds", type=float, default=15.0, help="the Lease's duration")
    sub.add_argument("--renew-seconds", type=float, default=5.0, help="how often to renew")
    sub.add_argument(
        "--resync-seconds",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="while leading, reconcile every ModelDeployment again this often (default 300)",
    )
    sub.add_argument(
        "--health-seconds",
        type=float,
        default=30.0,
        help="how often provider health is checked (30; 0: never, status.ready is left alone)",
    )
    sub.add_argument(
        "--dry-run-grace",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="how long a model's upstream object is missing before a strict server-side dry run "
        "classifies why (IncompatibleUpstream; 10)",
    )
    sub.add_argument(
        "--dry-run-every",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="how often one model is dry-run again while its object stays missing (60)",
    )
    sub.add_argument(
        "--dry-runs-per-minute",
        type=int,
        default=30,
        metavar="N",
        help="dry runs a minute across every model (30; 0: never classify)",
    )
    sub.add_argument(
        "--litellm-url",
        metavar="URL",
        help="also run gateway-sync in this process, woken by the watches (LiteLLM proxy root)",
    )
    sub.add_argument(
        "--gateway-interval",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="with --litellm-url: a full gateway pass at least this often (300)",
    )
    add_sync_arguments(sub)  # --gateway-url (also status.gateway.endpoint), --master-key-file, ...
    sub.add_argument(
        "--probe-address", default="127.0.0.1", help="where /healthz, /readyz, /metrics listen"
    )
    sub.add_argument(
        "--probe-port",
        type=int,
        default=8081,
        metavar="PORT",
        help="the port of /healthz, /readyz and /metrics (default 8081)",
    )
    sub.set_defaults(run=run_controller)


def run_controller(args: argparse.Namespace) -> Exit:
    if not 0 < args.renew_seconds < args.lease_seconds:
        print("runway: --renew-seconds must be positive and less than --lease-seconds")
        return Exit.USAGE
    if args.dry_runs_per_minute < 0 or args.dry_run_grace < 0 or args.dry_run_every <= 0:
        print(
            "runway: --dry-runs-per-minute and --dry-run-grace must not be negative, "
            "--dry-run-every must be positive"
        )
        return Exit.USAGE
    settings = ControllerSettings(
        lease=LeaseSettings(
            args.lease_namespace,
            args.lease_name,
            args.identity,
            args.lease_seconds,
            args.renew_seconds,
        ),
        observe=ObserveSettings(getattr(args, NAMESPACE, None), args.gateway_url or ""),
        probe_host=args.probe_address,
        probe_port=args.probe_port,
        resync_seconds=args.resync_seconds,
        health_seconds=args.health_seconds,
        dry_runs=ProbeSettings(
            grace=args.dry_run_grace, every=args.dry_run_every, per_minute=args.dry_runs_per_minute
        ),
        version=f"runway {runway_version()}",
    )
    sync = (
        sync_settings(args, os.environ, interval=args.gateway_interval)
        if args.litellm_url
        else None
    )
    stop, wake = threading.Event(), threading.Event()

    def stopping(*_: object) -> None:
        stop.set()
        wake.set()  # the gateway loop waits on it

    signal.signal(signal.SIGTERM, stopping)
    signal.signal(signal.SIGINT, stopping)
    with connected(args.kubeconfig, context=getattr(args, CONTEXT, None)) as api:
        running = run(api, settings, stop, on_gateway_change=wake.set if sync else None)
        if sync is not None:  # the Lease covers both: only the leader registers in LiteLLM
            thread = threading.Thread(
                target=sync_loop,
                args=(sync,),
                kwargs={
                    "stop": stop,
                    "report": print_report,
                    "wake": wake,
                    "leading": lambda: running.elector.leading,
                },
                name="gateway-sync",
                daemon=True,
            )
            thread.start()
        wait(running, settings, stop)
    return Exit.OK
