"""`runway gateway-plan` (offline preview of the desired LiteLLM model list and every ambiguous
servedName) and `runway gateway-sync` (register it in LiteLLM and write ExternalModelProvider
status). Neither prints a key: plans hold Secret references only, and the sync's output names
models, owners and outcomes."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import kubernetes
import urllib3

from core.fields.errors import SourceError
from core.model.destinations import Destinations
from core.model.kinds import INFERENCE_PROVIDER_CONFIG
from core.model.urls import url_problem
from core.selection.configs import ProviderRegistry
from gateway.cluster import list_objects, statuses, write_statuses
from gateway.litellm import LiteLLM, LiteLLMUnavailable
from gateway.merge import Owner, Plan, plan, split
from gateway.secrets import ClusterSecrets, FileSecrets, SecretSource
from gateway.status import ModelResult, Outcome
from gateway.sync import Syncer
from kubeio.registry import build_registry
from kubeio.shipped import bundled_config_objects, bundled_versions
from kubeio.sources import read_documents

log = logging.getLogger(__name__)

KINDS = ("ModelDeployment", "ExternalModelProvider", INFERENCE_PROVIDER_CONFIG, "Secret")
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
    plan_cmd.add_argument("sources", nargs="+", metavar="SOURCE", help="files or directories")
    _common(plan_cmd)
    plan_cmd.add_argument("-o", "--output", choices=("text", "json"), default="text")
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
    sync.add_argument("--master-key-file", metavar="FILE", help=f"instead of ${MASTER_KEY_ENV}")
    sync.add_argument("--kubeconfig", metavar="FILE", help="default: in-cluster, else ~/.kube")
    sync.add_argument(
        "--from",
        dest="sources",
        action="append",
        metavar="SOURCE",
        help="files instead of a cluster",
    )
    sync.add_argument("--secrets-dir", metavar="DIR", help="Secret manifests, with --from")
    sync.add_argument("--once", action="store_true", help="one pass, then exit (CI, cron)")
    sync.add_argument(
        "--interval", type=float, default=30.0, metavar="SECONDS", help="between passes (30)"
    )
    sync.add_argument(
        "--confirm-timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="how long to wait for written models to appear in /model/info (10)",
    )
    _common(sync)
    sync.add_argument("-o", "--output", choices=("text", "json"), default="text")
    sync.set_defaults(run=run_sync)


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


def _read(paths: Sequence[str]) -> list[dict[str, Any]]:
    objects = []
    for doc in read_documents(paths):
        if doc.obj.get("kind") not in KINDS:
            raise SourceError(doc.where, f"{doc.kind} is not one of {', '.join(KINDS)}")
        objects.append(doc.obj)
    return objects


def _registry(objects: Sequence[Mapping[str, Any]], dirs: Sequence[str] | None) -> ProviderRegistry:
    if dirs:
        objects = _read(dirs)
    configs = [o for o in objects if o.get("kind") == INFERENCE_PROVIDER_CONFIG]
    # The flag catalogs too: without them the merge admitted engine args that the webhook,
    # `validate` and `render` deny, and registered the model in LiteLLM.
    return build_registry(configs or bundled_config_objects())


def _gateway_url(value: str | None) -> str | None:
    problem = url_problem(value) if value is not None else None
    if problem is not None:
        raise SourceError("--gateway-url", f"{value!r} {problem[0]}")
    return value


def _destinations(values: Sequence[str]) -> Destinations:
    try:
        return Destinations.parse(values)
    except ValueError as err:
        raise SourceError("--allow-destination", str(err)) from None


def _plan(objects: Sequence[Mapping[str, Any]], args: argparse.Namespace) -> Plan:
    deployments, providers = split(objects)
    return plan(
        deployments,
        providers,
        registry=_registry(objects, args.providers),
        pins=bundled_versions(),
        gateway_url=_gateway_url(args.gateway_url),
        destinations=_destinations(args.allow_destination),
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
    for m in result.models:
        who = f"  requested-by={m.requested_by}" if m.requested_by else ""
        print(f"model     {m.served_name}  {m.owner}  -> {m.api_base}{who}")
    for c in result.conflicts:
        claimants = ", ".join(str(o) for o in c.claimants)
        print(f"CONFLICT  {c.served_name}  claimed by {claimants}; none is registered")
    for s in result.skipped:
        name = f"{s.served_name}  " if s.served_name else ""
        print(f"skipped   {name}{s.owner}: {s.reason}")


def _exit(result: Plan) -> int:
    invalid = [s for s in result.skipped if s.served_name is None]
    return 1 if result.conflicts or invalid else 0


def run_plan(args: argparse.Namespace) -> int:
    objects = _read(args.sources)
    result = _plan(objects, args)
    for c in result.conflicts:
        log.warning(
            "gateway-plan conflict served=%s claimants=%s",
            c.served_name,
            ",".join(str(o) for o in c.claimants),
        )
    if args.output == "json":
        print(json.dumps(plan_json(result), indent=2, sort_keys=True))
    else:
        _print_plan(result)
    return _exit(result)


def _master_key(args: argparse.Namespace, env: Mapping[str, str]) -> str:
    if args.master_key_file:
        key = Path(args.master_key_file).read_text().strip()
    else:
        key = env.get(MASTER_KEY_ENV, "").strip()
    if not key:
        raise SourceError("--master-key-file", f"no LiteLLM master key (set ${MASTER_KEY_ENV})")
    return key


def _api(args: argparse.Namespace) -> kubernetes.client.ApiClient:
    if args.kubeconfig is None and "KUBERNETES_SERVICE_HOST" in os.environ:
        configuration = kubernetes.client.Configuration()
        kubernetes.config.load_incluster_config(client_configuration=configuration)
        return kubernetes.client.ApiClient(configuration)
    client: kubernetes.client.ApiClient = kubernetes.config.new_client_from_config(
        config_file=args.kubeconfig
    )
    return client


def _now() -> str:
    return dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


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


def _pass(args: argparse.Namespace, syncer: Syncer, api: kubernetes.client.ApiClient | None) -> int:
    objects: list[Mapping[str, Any]] = list(
        _read(args.sources) if api is None else list_objects(api)
    )
    if api is None:  # files are read again every pass, Secrets included (rotation)
        syncer.secrets = _file_secrets(args.secrets_dir)
    providers = split(objects)[1]
    result = _plan(objects, args)
    results = syncer.reconcile(result)
    if api is not None:
        write_statuses(api, statuses(result, results, providers, now=_now()), providers)
    if args.output == "json":
        print(json.dumps(_results_json(results, result), indent=2, sort_keys=True))
    else:
        _print_results(results, result)
    sys.stdout.flush()
    ready = all(r.outcome == Outcome.REGISTERED for r in results)
    return 0 if ready and _exit(result) == 0 else 1


def _file_secrets(directory: str | None) -> FileSecrets:
    docs = read_documents([directory]) if directory else []
    return FileSecrets([d.obj for d in docs])


def _first_line(err: BaseException) -> str:
    if isinstance(err, kubernetes.client.ApiException):
        return f"API server answered {err.status} {err.reason}"
    return (str(err).splitlines() or [type(err).__name__])[0]


def _litellm_url(value: str) -> str:
    problem = url_problem(value)
    if problem is not None:
        detail, credential = problem
        if credential:
            detail = f"must not carry credentials; the master key comes from ${MASTER_KEY_ENV} or --master-key-file"
        raise SourceError("--litellm-url", f"{value!r} {detail}")
    return value


def run_sync(args: argparse.Namespace, env: Mapping[str, str] | None = None) -> int:
    url = _litellm_url(args.litellm_url)
    litellm = LiteLLM(url, _master_key(args, os.environ if env is None else env))
    if args.sources:
        secrets: SecretSource = _file_secrets(args.secrets_dir)
        api = None
    else:
        api = _api(args)
        secrets = ClusterSecrets(api)
    syncer = Syncer(litellm, secrets, confirm_timeout=args.confirm_timeout)
    if args.once:
        return _pass(args, syncer, api)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    code = 0
    while not stop.is_set():
        try:
            code = _pass(args, syncer, api)
        except (
            LiteLLMUnavailable,
            kubernetes.client.ApiException,
            urllib3.exceptions.HTTPError,
            OSError,
        ) as err:
            # The loop outlives an outage of LiteLLM or the API server; the next pass retries.
            log.warning("gateway-sync pass failed: %s", _first_line(err))
            code = 4
        stop.wait(args.interval)
    return code
