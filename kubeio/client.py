"""The one Kubernetes client factory (in a pod, the pod's service account; else a kubeconfig),
and what is said of a failed call to the cluster, in one place: the core's Unavailable a command
exits with (the kubernetes client's configuration and API errors and the connection errors of
the urllib3 under it become one line naming what could not be reached, never a traceback), the
line a page or a review shows a user (api_failure), the line a log keeps (failure), and the API
server's own message of a refusal (error_message)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Any

import kubernetes
import urllib3
import yaml

from core.fields.errors import Unavailable

# What one API call may fail with: a refusal, or no answer (a long-running loop or a page
# catches these and goes on).
CALL_FAILURES = (kubernetes.client.ApiException, urllib3.exceptions.HTTPError, OSError)
# What a command's call to the cluster may fail with when the cluster, not the caller, is at
# fault.
CLUSTER_FAILURES = (
    kubernetes.config.ConfigException,
    kubernetes.client.ApiException,
    urllib3.exceptions.HTTPError,
)


class Client(kubernetes.client.ApiClient):
    """An ApiClient whose `with` block turns the cluster's failures into Unavailable (see
    cluster_calls), as it closes the client."""

    def __exit__(
        self,
        kind: type[BaseException] | None,
        err: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
        if isinstance(err, CLUSTER_FAILURES) and not isinstance(err, Unavailable):
            raise unavailable(err) from err


def api_client(
    kubeconfig: str | None = None, *, in_cluster: bool = False, context: str | None = None
) -> Client:
    """A client for the API server. `in_cluster`, or no kubeconfig and no context given inside
    a pod (KUBERNETES_SERVICE_HOST set), uses the service account; otherwise `kubeconfig` (None:
    the default ~/.kube/config or $KUBECONFIG) at `context` (None: its current context). Its
    configuration that cannot be used is ConfigException; a kubeconfig's names the file and the
    context (see kubeconfig_problem)."""
    if in_cluster or (
        kubeconfig is None and context is None and "KUBERNETES_SERVICE_HOST" in os.environ
    ):
        configuration = kubernetes.client.Configuration()
        try:
            kubernetes.config.load_incluster_config(client_configuration=configuration)
        except kubernetes.config.ConfigException as err:
            raise ConfigException(str(unavailable(err))) from err
        return Client(configuration)
    # As kubernetes.config.new_client_from_config: a fresh Configuration, not a copy of the
    # process-wide default one.
    configuration = type.__call__(kubernetes.client.Configuration)
    try:
        kubernetes.config.load_kube_config(
            config_file=kubeconfig, context=context, client_configuration=configuration
        )
    except KUBECONFIG_FAILURES as err:
        raise ConfigException(kubeconfig_problem(kubeconfig, context, err)) from err
    return Client(configuration)


# What reading a kubeconfig may fail with: the client's own complaint, the YAML parser's, the
# file's, and (TypeError, AttributeError) the client indexing a YAML document that is not a
# mapping as if it were one.
KUBECONFIG_FAILURES = (
    kubernetes.config.ConfigException,
    yaml.YAMLError,
    OSError,
    TypeError,
    AttributeError,
)
MISSING_NAME = re.compile(r"Expected object with name (.*) in .*/(clusters|contexts|users) list$")


def kubeconfig_problem(path: str | None, context: str | None, err: BaseException) -> str:
    """`kubeconfig FILE, context NAME: WHAT`, one line: the file as the client reads it (None:
    $KUBECONFIG, else ~/.kube/config), the context asked for (else the file's current one), and
    what is wrong in words a kubectl user knows."""
    where = os.path.expanduser(path or kubernetes.config.kube_config.KUBE_CONFIG_DEFAULT_LOCATION)
    what = f"kubeconfig {where or '$KUBECONFIG (empty)'}, " + (
        f"context {context}" if context else "its current context"
    )
    return f"{what}: {_kubeconfig_reason(err)}"


def _kubeconfig_reason(err: BaseException) -> str:
    if isinstance(err, yaml.YAMLError):
        mark = getattr(err, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        return f"not valid YAML{at}"
    if isinstance(err, OSError):
        return (err.strerror or type(err).__name__).lower()
    if isinstance(err, TypeError | AttributeError):
        return "not a kubeconfig (a YAML mapping of clusters, contexts and users)"
    text = (str(err).splitlines() or [""])[0]
    text = text.removeprefix("Invalid kube-config file. ").removeprefix("Invalid kube-config. ")
    missing = MISSING_NAME.search(text)
    if missing:
        return f"it has no {missing[2][:-1]} named {missing[1]}"
    if text == "No configuration found.":  # the client passes over paths that do not exist
        return "no such file"
    if text.startswith("Expected key current-context"):
        return "it names no current-context; pass --context NAME"
    if text.endswith("file is empty"):
        return "the file is empty"
    return text or type(err).__name__


class ConfigException(Unavailable, kubernetes.config.ConfigException):
    """A kubeconfig (or a pod's service account) the client cannot use, in one line: the core's
    Unavailable for a command, and still the client's ConfigException for a watch that retries
    on it. Its name is the client's, so a message naming the type reads as before."""


@contextmanager
def cluster_calls() -> Iterator[None]:
    """Within: a failure of the cluster (CLUSTER_FAILURES), building the client included,
    is raised again as Unavailable with one line (see unavailable); anything else passes."""
    try:
        yield
    except Unavailable:
        raise
    except CLUSTER_FAILURES as err:
        raise unavailable(err) from err


@contextmanager
def connected(
    kubeconfig: str | None = None, *, in_cluster: bool = False, context: str | None = None
) -> Iterator[Client]:
    """api_client's client, closed at the end, inside cluster_calls."""
    with cluster_calls(), api_client(kubeconfig, in_cluster=in_cluster, context=context) as client:
        yield client


def unavailable(err: BaseException) -> Unavailable:
    """The one line a command exits with when the cluster failed it: `API server answered
    STATUS REASON` (never the body: it may hold secrets), `the API server at URL could not be
    reached: WHY`, or the first line of a configuration error."""
    if isinstance(err, kubernetes.client.ApiException):
        return Unavailable(f"API server answered {err.status} {err.reason}")
    if isinstance(err, urllib3.exceptions.HTTPError):
        return Unavailable(_unreachable(err))
    return Unavailable(str(err).splitlines()[0] if str(err) else type(err).__name__)


def _unreachable(err: urllib3.exceptions.HTTPError) -> str:
    """`the API server at URL could not be reached: WHY` from urllib3's retry and connection
    errors (their own text repeats the pool and the request path over several lines)."""
    pool = getattr(err, "pool", None)
    where = f"{pool.scheme}://{pool.host}:{pool.port}" if pool is not None else "the API server"
    reason: Any = getattr(err, "reason", None) or err
    if isinstance(reason, urllib3.exceptions.NewConnectionError | ConnectionError):
        cause = reason.__cause__ or reason.__context__
        why = _errno_text(cause) if isinstance(cause, OSError) else "connection failed"
    elif isinstance(reason, urllib3.exceptions.SSLError):
        why = "TLS handshake failed"
    elif isinstance(reason, urllib3.exceptions.TimeoutError | TimeoutError):
        why = "timed out"
    else:
        why = type(reason).__name__
    return f"the API server at {where} could not be reached: {why}"


def _errno_text(err: OSError) -> str:
    return (err.strerror or type(err).__name__).lower()


def api_failure(err: BaseException) -> str | None:
    """What to tell a user about a failed API call (the portal's pages, the webhook's review of
    the requesting user), or None when `err` is not one: the status and reason, never the body."""
    if isinstance(err, kubernetes.client.ApiException):
        return f"the API server answered {err.status} {err.reason}"
    if isinstance(err, (urllib3.exceptions.HTTPError, OSError)):
        return unreached(err)
    return None


def unreached(err: BaseException) -> str:
    return f"the API server could not be reached ({type(err).__name__})"


def failure(err: BaseException) -> str:
    """One short line for a failed request in a log: an API error's status and reason with the
    start of its body (a 422 names the field), anything else its type and text."""
    if isinstance(err, kubernetes.client.ApiException):
        body = str(err.body or "")[:300]
        return f"({err.status}) {err.reason}: {body}".rstrip(": ")
    return f"{type(err).__name__}: {str(err)[:300]}"


def error_message(err: Any) -> str:
    """The API server's own message in a refused request's Status body (the kubernetes
    client's ApiException or the dynamic client's DynamicApiError), else the error's summary."""
    try:
        return str(json.loads(getattr(err, "body", None) or "{}")["message"])
    except (ValueError, KeyError, TypeError):
        return str(err.summary() if hasattr(err, "summary") else err)
