"""`make fuzz` area "gateway" (issue #18, classes 6 and 7): tenants cannot take each other's
names, hostile LiteLLM answers never escape as a traceback, and credentials never come back.

Per run, `examples` cases split over seven classes:
* litellm-answers: a Syncer pass against tests/support/answers.py on 127.0.0.1 answering
  generated shapes; anything but results or one LiteLLMUnavailable line is a failure;
* served-names: generated names with pattern characters are refused by both admissions, and a
  generated claims/registrations set never hands an established name to a newcomer;
* destinations: every resolver spelling of an internal IPv4 address is refused as a base URL;
* credentials: a credential in any string position or key is denied and absent from the denial;
* secret-consent (issue #40, item 2): generated Secrets (names, label values) behind a stand-in API
  server that filters as the real one does: the sync gets a value only for a Secret labelled
  litellm-credential=true, only ever lists with that label selector and the name's field
  selector (never a get), and no userInfo shape makes the access review raise;
* big-or-slow (items 9, 14): answers near the 4 MiB cap in every shape, and answers trickled from
  the status line, the headers or the body: each ends as entries or one LiteLLMUnavailable line,
  a trickle within the deadline (0.3 s here; reported: the slowest, max_trickle_s); at most
  BIG_OR_SLOW cases a run (each costs up to a second), the rest of its share goes to
  secret-consent; one fresh process measures the peak memory reading the worst shape at the
  cap (peak_mib);
* status-isolation (item 8): generated refusals (4xx/5xx) of status writes behind a stand-in API
  server, and generated contention (names, lengths, claimants): every other status is written,
  the refused one backed off alone, and each status stays under 256 KiB with messages cut.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import os
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any

import kubernetes
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from core.admission.configs import check_external_provider
from core.admission.pipeline import admit
from core.model.servednames import is_literal
from core.selection.configs import ProviderRegistry
from gateway.apikeys import CONSENT_LABEL, ClusterSecrets, FileSecrets, SecretUnavailable
from gateway.cluster import Writes, statuses, write_statuses
from gateway.litellm import MAX_ANSWER, LiteLLM, LiteLLMUnavailable
from gateway.logs import MAX_MESSAGE
from gateway.merge import Owner, Plan, Registration, SecretRef, owner_of, plan, settle
from gateway.run import PlanSettings, plan_objects
from gateway.sync import Syncer
from kubeio.backoff import Backoff
from kubeio.users import User
from tests.fuzzing import Report
from tests.support.answers import SHAPES, Answer, AnswerServer, Request, generated_info
from tests.support.builders import external_model_provider, model_deployment, shipped_registry
from tests.support.hostile_gateway import (
    CREDENTIALS,
    LITELLM_INFO,
    LITELLM_MODELS,
    MODEL,
    POSITIONS,
    plant,
    rich,
)

KEY = "sk-master-fuzz-0123456789"
BIG_OR_SLOW = 12  # cases a run at most (each costs up to a second)
TRICKLE_DEADLINE = 0.3  # seconds: the client's whole-exchange deadline for trickled answers
STATUS_BUDGET = 256 * 2**10
PATTERNS = st.text(alphabet="ab/*?[]{}^$|()+.\\ ", min_size=1, max_size=12)
INTERNAL = st.one_of(
    *(
        st.ip_addresses(v=4, network=n)
        for n in ("169.254.0.0/16", "127.0.0.0/8", "10.0.0.0/8", "192.168.0.0/16", "100.64.0.0/10")
    )
)
OWNERS = st.sampled_from([Owner("ExternalModelProvider", "gw", n) for n in "pqr"])


def _drive(strategy: st.SearchStrategy[Any], count: int, each: Callable[[Any], None]) -> None:
    if count <= 0:
        return
    settings(
        max_examples=count,
        phases=[Phase.generate],
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )(given(strategy)(each))()


def run(examples: int) -> Report:
    """The seven classes; the sync's own log lines (refusals, conflicts) are kept out of the
    fuzz output (the cases provoke them by the thousand)."""
    quiet = logging.getLogger("gateway")
    propagate, quiet.propagate = quiet.propagate, False
    quiet.addHandler(handler := logging.NullHandler())
    try:
        return _run(examples)
    finally:
        quiet.removeHandler(handler)
        quiet.propagate = propagate


def _run(examples: int) -> Report:
    report = Report("gateway")
    shares = [examples // 7 + (1 if i < examples % 7 else 0) for i in range(7)]
    registry = shipped_registry()
    server = AnswerServer().start()
    try:
        _answers(server, shares[0], report)
        big = min(shares[4], BIG_OR_SLOW)
        _big_or_slow(server, big, report)
        _consent(server, shares[5] + shares[4] - big, report)
        _isolation(server, shares[6], report)
    finally:
        server.stop()
    _names(registry, shares[1], report)
    _destinations(shares[2], report)
    _credentials(registry, shares[3], report)
    if shares[4]:
        report.numbers["peak_mib"] = _peak_at_cap()
    return report


def _answers(server: AnswerServer, count: int, report: Report) -> None:
    syncer = Syncer(LiteLLM(server.url, KEY), FileSecrets([]), confirm_timeout=0)

    def each(case: tuple[bytes, bytes, int]) -> None:
        info, models, status = case
        server.answers = {
            "/model/info": Answer(200, info),
            "/v1/models": Answer(200, models),
            **{r: Answer(status) for r in ("/model/new", "/model/update", "/model/delete")},
        }
        report.cases += 1
        try:
            syncer.reconcile(Plan(models=(MODEL,)))
        except LiteLLMUnavailable as err:
            if "\n" in str(err):
                report.failures.append(f"litellm-answers: a multi-line error ({len(info)} bytes)")
        except Exception as err:  # the failure being counted: any other exception escapes
            report.failures.append(f"litellm-answers: {type(err).__name__} escaped")

    _drive(st.tuples(LITELLM_INFO, LITELLM_MODELS, st.sampled_from([200, 500, 302])), count, each)


def _names(registry: ProviderRegistry, count: int, report: Report) -> None:
    def each(case: tuple[str, list[tuple[Owner, str]], list[tuple[Owner, str]]]) -> None:
        name, claims, registered = case
        report.cases += 1
        emp = external_model_provider(models=[{"servedName": name}])
        md = model_deployment(gpu=1, provider="vllm", model={"id": "org/m", "servedName": name})
        if not is_literal(name) and (
            not check_external_provider(emp) or admit(md, registry=registry).allowed
        ):
            report.failures.append(f"served-names: pattern {name!r} admitted")
        by_owner: dict[Owner, list[str]] = {}
        for owner, served in claims:
            by_owner.setdefault(owner, []).append(served)
        objects = [
            external_model_provider(o.name, "gw", models=[{"servedName": s} for s in names])
            for o, names in sorted(by_owner.items())
        ]
        result = plan([], objects, registry=registry, pins=None)  # type: ignore[arg-type]  # EMPs only: nothing is rendered
        settled = settle(
            result, [Registration(s, o, f"id-{i}") for i, (o, s) in enumerate(registered)]
        )
        desired = {(m.served_name, m.owner) for m in settled.models}
        for owner, served in set(registered):
            holders = {o for o, s in registered if s == served and o in by_owner}
            if (
                holders == {owner}
                and by_owner.get(owner, []).count(served) == 1
                and ((served, owner) not in desired)
            ):
                report.failures.append(f"served-names: established {owner} lost {served!r}")

    names = st.lists(st.tuples(OWNERS, st.sampled_from("abc")), max_size=8)
    _drive(
        st.tuples(PATTERNS, names, st.lists(st.tuples(OWNERS, st.sampled_from("abc")), max_size=4)),
        count,
        each,
    )


def _destinations(count: int, report: Report) -> None:
    def each(case: tuple[ipaddress.IPv4Address, int]) -> None:
        address, which = case
        value = int(address)
        octets = [int(o) for o in str(address).split(".")]
        spellings = [
            str(address),
            str(value),
            hex(value),
            ".".join(f"0{o:o}" for o in octets),
            ".".join(hex(o) for o in octets),
            f"{octets[0]}.{value & 0xFFFFFF}",
            f"[::ffff:{address}]",
            f"[64:ff9b::{address}]",
            f"[64:ff9b:1::{address}]",
            f"[::ffff:0:{address}]",
            f"{address}.",
        ]
        host = spellings[which % len(spellings)]
        report.cases += 1
        if not check_external_provider(external_model_provider(baseURL=f"http://{host}/v1")):
            report.failures.append(f"destinations: http://{host}/v1 admitted")

    _drive(st.tuples(INTERNAL, st.integers(0, 100)), count, each)


def _credentials(registry: ProviderRegistry, count: int, report: Report) -> None:
    def each(case: tuple[str, tuple[tuple[Any, ...], bool]]) -> None:
        token, where = case
        obj = rich()
        plant(obj, where, token)
        report.cases += 1
        admission = admit(obj, registry=registry)
        said = " ".join([*(str(e) for e in admission.errors), *admission.warnings])
        if admission.allowed or token in said:
            kind = "admitted" if admission.allowed else "repeated in the denial"
            report.failures.append(f"credentials: a credential at {where} {kind}")

    _drive(st.tuples(CREDENTIALS, st.sampled_from(POSITIONS)), count, each)


def _api(server: AnswerServer) -> kubernetes.client.ApiClient:
    configuration = kubernetes.client.Configuration()
    configuration.host = server.url
    return kubernetes.client.ApiClient(configuration)


def _secrets_api(secrets: Mapping[str, Mapping[str, str]], seen: list[str]) -> Any:
    """A stand-in API server's answer to Secret requests: a list filtered by the label and field
    selectors, as the real one filters (a get by name answers 403, as the shipped RBAC does)."""

    def respond(request: Request) -> Answer:
        seen.append(request.path)
        path, _, query = request.path.partition("?")
        if not path.endswith("/secrets"):
            return Answer(403, b'{"kind": "Status", "code": 403}')
        params = urllib.parse.parse_qs(query)
        labels = params.get("labelSelector", [""])[0].split(",")
        fields = params.get("fieldSelector", [""])[0].split(",")
        items = [
            {
                "metadata": {"name": name, "namespace": "gw", "labels": dict(labelled)},
                "data": {"key": "dmFsdWU="},  # "value"
            }
            for name, labelled in secrets.items()
            if f"metadata.name={name}" in fields
            and all(
                k in labelled and labelled[k] == v for k, v in (x.split("=", 1) for x in labels)
            )
        ]
        return Answer(200, json.dumps({"kind": "SecretList", "items": items}).encode())

    return respond


def _consent(server: AnswerServer, count: int, report: Report) -> None:
    api = _api(server)
    names = st.from_regex(r"[a-z][a-z0-9-]{0,10}[a-z0-9]", fullmatch=True)
    values = st.sampled_from(["true", "True", "false", "1", "yes", ""])
    secrets_of = st.dictionaries(
        names, st.one_of(st.just({}), st.builds(lambda v: {CONSENT_LABEL: v}, values)), max_size=4
    )
    user_info = st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=8),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
        max_leaves=10,
    )

    def each(case: tuple[dict[str, dict[str, str]], str, Any]) -> None:
        secrets, asked, info = case
        report.cases += 1
        seen: list[str] = []
        server.respond = _secrets_api(secrets, seen)
        try:
            value: str | None = ClusterSecrets(api).value(SecretRef("gw", asked, "key"))
        except SecretUnavailable:
            value = None
        finally:
            server.respond = None
        consented = secrets.get(asked, {}).get(CONSENT_LABEL) == "true"
        if (value == "value") != consented:
            report.failures.append(f"secret-consent: {asked!r} read={value is not None}")
        expected = {
            "labelSelector": [f"{CONSENT_LABEL}=true"],
            "fieldSelector": [f"metadata.name={asked}"],
        }
        for path in seen:
            where, _, query = path.partition("?")
            if not where.endswith("/secrets") or urllib.parse.parse_qs(query) != expected:
                report.failures.append(f"secret-consent: a Secret request {path!r}")
        try:
            User.of(info)
        except Exception as err:  # the failure being counted: any exception escapes
            report.failures.append(f"secret-consent: userInfo {type(err).__name__}")

    any_name = st.one_of(names, st.sampled_from(["a", "key-1"]))
    _drive(st.tuples(secrets_of, any_name, user_info), count, each)


def _big_or_slow(server: AnswerServer, count: int, report: Report) -> None:
    slowest = [0.0]

    def each(case: tuple[str, int, int]) -> None:
        shape, offset, trickle_at = case
        report.cases += 1
        if trickle_at >= 0:  # slow: trickled from the status line, the headers or the body
            body = generated_info(4096, shape)
            answer = Answer(200, body, trickle=0.02, trickle_after=trickle_at)
        else:  # big: around the cap
            body = generated_info(MAX_ANSWER + offset, shape)
            answer = Answer(200, body + b" " * max(0, MAX_ANSWER + offset - len(body)))
        server.answers = {"/model/info": answer}
        started = time.monotonic()
        try:
            LiteLLM(server.url, KEY, timeout=TRICKLE_DEADLINE).model_info()
            if trickle_at >= 0 or offset > 0:
                report.failures.append(f"big-or-slow: {shape} {offset} {trickle_at} was read")
        except LiteLLMUnavailable as err:
            if "\n" in str(err):
                report.failures.append("big-or-slow: a multi-line error")
        except Exception as err:  # the failure being counted: any other exception escapes
            report.failures.append(f"big-or-slow: {type(err).__name__} escaped")
        if trickle_at >= 0:
            slowest[0] = max(slowest[0], time.monotonic() - started)

    cases = st.tuples(
        st.sampled_from(SHAPES),
        st.sampled_from([-4096, 0, 1, 65536]),
        st.sampled_from([-1, -1, 0, 17, 60, 200]),
    )
    _drive(cases, count, each)
    if count:
        report.numbers["max_trickle_s"] = round(slowest[0], 3)


PEAK = """
import sys
import gateway.run
from gateway.litellm import LiteLLM
LiteLLM(sys.argv[1], "k").model_info()
print(int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0]) // 1024)
"""


def _peak_at_cap() -> float:
    """Peak resident MiB of a fresh process reading the worst shape at the cap."""
    server = AnswerServer(
        answers={"/model/info": Answer(200, generated_info(MAX_ANSWER, "empty-objects"))}
    ).start()
    try:
        done = subprocess.run(
            [sys.executable, "-c", PEAK, server.url],
            capture_output=True,
            text=True,
            env=os.environ,
            timeout=120,
            check=False,
        )
    finally:
        server.stop()
    return float(done.stdout.strip() or -1)


def _isolation(server: AnswerServer, count: int, report: Report) -> None:
    owners = [Owner("ExternalModelProvider", "gw", f"p{i}") for i in range(5)]
    refusals = st.dictionaries(
        st.sampled_from(owners), st.sampled_from([400, 403, 409, 413, 422, 500, 503])
    )
    contention = st.tuples(
        st.integers(1, 400), st.integers(12, 253), st.integers(2, 3), st.booleans()
    )

    def each(case: tuple[dict[Owner, int], tuple[int, int, int, bool]]) -> None:
        refused, (count_, length, tenants, big) = case
        report.cases += 1
        codes = {o.name: c for o, c in refused.items()}
        server.respond = lambda r: Answer(codes.get(r.path.split("/")[-2], 200), b"{}")
        try:
            backoff = Backoff(clock=lambda: 0.0)
            new = {o: {"phase": "Ready", "message": o.name} for o in owners}
            providers = [external_model_provider(o.name, o.namespace) for o in owners]
            writes = write_statuses(_api(server), new, providers, backoff)
            again = write_statuses(_api(server), new, providers, backoff)
        except Exception as err:  # the failure being counted: a refusal escaped the pass
            report.failures.append(f"status-isolation: {type(err).__name__} escaped")
            return
        finally:
            server.respond = None
        others = tuple(o for o in owners if o not in refused)
        failed = tuple(o for o in owners if o in refused)
        if (writes, again) != (Writes(others, failed), Writes(others, (), failed)):
            report.failures.append(f"status-isolation: {writes} then {again}")
        if big:
            _contention(server, count_, length, tenants, report)

    _drive(st.tuples(refusals, contention), count, each)


def _contention(
    server: AnswerServer, count: int, length: int, tenants: int, report: Report
) -> None:
    empty = Answer(200, json.dumps({"data": []}).encode())
    server.answers = {"/model/info": empty, "/v1/models": empty}
    models = [{"servedName": f"m-{i:05d}-".ljust(length, "x")} for i in range(count)]
    providers = [
        external_model_provider(f"t{i}", credentialsSecretRef=None, models=models)
        for i in range(tenants)
    ]
    result = plan_objects(providers, PlanSettings())
    syncer = Syncer(LiteLLM(server.url, KEY), FileSecrets([]), confirm_timeout=0)
    for owner, status in statuses(result, syncer.reconcile(result), providers, now="T").items():
        messages = [status["message"], *(c["message"] for c in status["conditions"])]
        if max(map(len, messages)) > MAX_MESSAGE or len(json.dumps(status)) > STATUS_BUDGET:
            report.failures.append(
                f"status-isolation: {owner} status of {len(json.dumps(status))} bytes"
            )
    if sorted(owner_of(p) for p in providers) != sorted(statuses(result, [], providers, now="T")):
        report.failures.append("status-isolation: a provider without a status")
