"""`runway ui`: the portal (docs/ui.md)."""

from __future__ import annotations

import argparse
import secrets
from pathlib import Path
from typing import Any

from cli.exits import Exit
from ui.outputs import OutputError, checked_path
from ui.server import serve
from ui.settings import DEFAULT_HOST, DEFAULT_INSTALL_PATH, DEFAULT_PORT, Mode, UiSettings
from webhook.settings import SettingsError

MIN_KEY = 32  # bytes of a --secret-key-file


def add_commands(commands: Any) -> None:
    ui = commands.add_parser(
        "ui",
        help="run the portal: compose, preview, deliver and watch models and providers",
        description="Flask with server-rendered pages and htmx, over the same functions "
        "validate, explain, render and gateway-plan call. Binds 127.0.0.1 by default; put a "
        "sign-in proxy (oauth2-proxy) in front in live mode. Stops cleanly on SIGTERM. "
        "docs/ui.md describes every page, mode and setting.",
    )
    ui.add_argument(
        "--host", default=DEFAULT_HOST, help=f"address to bind (default {DEFAULT_HOST})"
    )
    ui.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help=f"port (default {DEFAULT_PORT}; 0: any free port)",
    )
    ui.add_argument(
        "--offline",
        action="store_true",
        help="no cluster: compose, preview and deliver against the source folders of -f",
    )
    ui.add_argument(
        "-f",
        "--filename",
        action="append",
        default=[],
        metavar="DIR",
        dest="sources",
        help="a source folder (repeatable): what --offline reads, and what patches are made against",
    )
    where = ui.add_mutually_exclusive_group()
    where.add_argument("--in-cluster", action="store_true", help="the pod's service account")
    where.add_argument("--kubeconfig", metavar="FILE", help="the portal's own kubeconfig")
    ui.add_argument("--context", metavar="NAME", help="a context of the kubeconfig")
    ui.add_argument(
        "--actions",
        action="store_true",
        help="enable actions (commit to a branch, apply); without it the portal only shows and downloads",
    )
    ui.add_argument(
        "--apply-as-user",
        action="store_true",
        help="with --actions: offer applying to the cluster as the signed-in user (off by default)",
    )
    ui.add_argument(
        "--repo",
        metavar="DIR",
        default="",
        help="the GitOps source repository a branch is committed in and pushed from",
    )
    ui.add_argument(
        "--remote", default="origin", help="the remote branches are pushed to (default origin)"
    )
    ui.add_argument(
        "--secret-key-file",
        metavar="FILE",
        help=f"the key that signs CSRF tokens (at least {MIN_KEY} bytes); default: a new one per start",
    )
    ui.add_argument(
        "--install-path",
        default=DEFAULT_INSTALL_PATH,
        metavar="PATH",
        help="where a provider's install objects go in the repository, as "
        f"PATH/<provider>.yaml (default {DEFAULT_INSTALL_PATH})",
    )
    ui.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    ui.add_argument("--threads", type=int, default=8, help="threads per worker (default 8)")
    ui.set_defaults(run=run_ui)


def settings_of(args: argparse.Namespace) -> UiSettings:
    live = not args.offline
    if args.offline and (args.in_cluster or args.kubeconfig or args.context):
        raise SettingsError(
            "--offline", "names no cluster: drop --in-cluster, --kubeconfig and --context"
        )
    if args.offline and not args.sources:
        raise SettingsError("-f", "--offline needs a source folder to read")
    for source in args.sources:
        if not Path(source).is_dir():
            raise SettingsError("-f", f"{source} is not a folder")
    if args.apply_as_user and not args.actions:
        raise SettingsError("--apply-as-user", "needs --actions (the site enables actions)")
    if args.repo and not (Path(args.repo) / ".git").exists():
        raise SettingsError("--repo", f"{args.repo} is not a Git working tree")
    if not 0 <= args.port <= 65535:
        raise SettingsError("--port", f"{args.port} is not a port")
    if args.workers < 1 or args.threads < 1:
        raise SettingsError("--workers", "workers and threads are at least 1")
    install_path = args.install_path
    try:
        checked_path(install_path)
    except OutputError as err:
        raise SettingsError("--install-path", str(err)) from None
    return UiSettings(
        mode=Mode.LIVE if live else Mode.OFFLINE,
        sources=tuple(args.sources),
        host=args.host,
        port=args.port,
        workers=args.workers,
        threads=args.threads,
        actions=args.actions,
        apply_as_user=args.apply_as_user,
        repo=args.repo,
        remote=args.remote,
        secret_key=_key(args.secret_key_file),
        kubeconfig=args.kubeconfig,
        context=args.context,
        in_cluster=args.in_cluster,
        install_path=install_path,
    )


def _key(path: str | None) -> bytes:
    if path is None:
        return secrets.token_bytes(32)  # made before gunicorn forks: every worker shares it
    try:
        key = Path(path).read_bytes()[: 64 * 1024].strip()
    except OSError as err:
        raise SettingsError("--secret-key-file", f"cannot read {path}: {err.strerror}") from None
    if len(key) < MIN_KEY:
        raise SettingsError(
            "--secret-key-file", f"holds {len(key)} bytes; at least {MIN_KEY} are needed"
        )
    return key


def run_ui(args: argparse.Namespace) -> int:
    serve(settings_of(args))
    return Exit.OK
