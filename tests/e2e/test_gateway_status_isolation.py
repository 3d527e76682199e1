"""The issue's status case against the real API server (issue #40, item 8): two tenants'
ExternalModelProviders in one namespace each offer the same served names of 250 characters, as
many as the CRD allows (core.schema.crds.MODELS: 1,000). Their status writes stay small enough
for the API server (before: a status of about 1.8 MB, which
the API server refuses, and the pass ended there with an ApiException, exit 4), and a third
provider's status follows its generation in the same pass.

LiteLLM is tests/support/answers.py on loopback (an empty proxy that accepts every write): what
is tested here is the API server's side."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import kubernetes
import pytest

from core.model.kinds import EMP_GROUP, EXTERNAL_MODEL_PROVIDER_PLURAL, VERSION
from core.schema.crds import MODELS
from gateway.run import PlanSettings, SyncSettings, connect, sync_once
from gateway.status import MAX_MODELS
from tests.support.answers import Answer, AnswerServer
from tests.support.builders import external_model_provider
from tests.support.cluster import Cluster

EMPTY = json.dumps({"data": []}).encode()


@pytest.fixture
def litellm() -> Iterator[AnswerServer]:
    started = AnswerServer(
        answers={
            "/model/info": Answer(200, EMPTY),
            "/v1/models": Answer(200, EMPTY),
            "/model/new": Answer(200),
        }
    ).start()
    yield started
    started.stop()


def _status(api: kubernetes.client.ApiClient, namespace: str, name: str) -> dict[str, Any]:
    obj: Any = kubernetes.client.CustomObjectsApi(api).get_namespaced_custom_object(
        EMP_GROUP, VERSION, namespace, EXTERNAL_MODEL_PROVIDER_PLURAL, name
    )
    return dict(obj.get("status") or {})


def test_many_long_contested_names_delay_no_other_providers_status(
    cluster: Cluster, api: kubernetes.client.ApiClient, namespace: str, litellm: AnswerServer
) -> None:
    try:
        _contend(cluster, api, namespace, litellm)
    finally:
        # Namespaces stay Terminating here (no namespace controller): leave no 2,000 contested
        # names behind for the next test's cluster-wide gateway passes.
        cluster.kubectl(
            "delete",
            "externalmodelproviders",
            "--all",
            "-n",
            namespace,
            "--wait=false",
            check=False,
        )


def _contend(
    cluster: Cluster, api: kubernetes.client.ApiClient, namespace: str, litellm: AnswerServer
) -> None:
    names = [{"servedName": f"m-{i:04d}-".ljust(250, "x")} for i in range(MODELS)]
    for tenant in ("t1", "t2"):
        emp = external_model_provider(tenant, namespace, credentialsSecretRef=None, models=names)
        done = cluster.strict_apply(emp)
        assert done.returncode == 0, done.stderr
    other = external_model_provider(
        "other", namespace, credentialsSecretRef=None, models=[{"servedName": f"o-{namespace}"}]
    )
    assert cluster.strict_apply(other).returncode == 0
    settings = SyncSettings(
        litellm.url,
        "sk-master",
        planning=PlanSettings(),
        kubeconfig=str(cluster.kubeconfig),
        confirm_timeout=0,
    )

    sync_once(settings, connect(settings))

    statuses = {n: _status(api, namespace, n) for n in ("t1", "t2", "other")}
    assert {n: (s["phase"], s.get("observedGeneration")) for n, s in statuses.items()} == {
        "t1": ("Conflict", 1),
        "t2": ("Conflict", 1),
        "other": ("Pending", 1),
    }
    for tenant in ("t1", "t2"):
        assert len(statuses[tenant]["models"]) == MAX_MODELS
        assert len(json.dumps(statuses[tenant])) < 256 * 2**10
