"""A regex-bomb InferenceProviderConfig (issue #18, item 8) against a real kube-apiserver: the
registered webhook refuses it at `kubectl apply`, and one that reached the cluster without our
admission (no label, so the webhook's objectSelector skips it) is refused by the webhook's
cluster watch when it loads it (the log names rule and pattern) and admissions go on. Its name
is none of the five providers', so no selection would evaluate it: the shipped configs stay as
the other e2e tests expect."""

from __future__ import annotations

from pathlib import Path

from kubeio.yamlio import dump_all
from tests.support.builders import model_deployment, provider_config
from tests.support.celbombs import BOMB, REFUSAL
from tests.support.cluster import Cluster
from tests.support.e2e import LABEL
from tests.support.paths import ROOT
from tests.support.wait import wait_until
from tests.support.webhook import Webhook, review, start_webhook


def test_kubectl_apply_of_a_regex_bomb_config_is_refused(
    cluster: Cluster, registered: Webhook
) -> None:
    config = provider_config("regex-bomb-admitted", rules=[(BOMB, 9)])
    config["metadata"]["labels"] = LABEL

    done = cluster.strict_apply(config)

    assert done.returncode != 0
    assert f"spec.selectionRules[0].condition: Invalid value: {REFUSAL}" in done.stderr


def test_a_regex_bomb_config_the_watch_finds_in_the_cluster_is_refused(
    cluster: Cluster, tmp_path: Path
) -> None:
    cluster.kubectl(
        "apply",
        "--server-side",
        "--field-manager=runway-tests",
        "-k",
        str(ROOT / "kustomize" / "providers"),
    )
    config = provider_config("regex-bomb-unadmitted", rules=[(BOMB, 9)])
    cluster.apply_manifests(dump_all([config]))
    problem = f"InferenceProviderConfig regex-bomb-unadmitted rule 0: {REFUSAL}"
    watcher = start_webhook(tmp_path, args=["--kubeconfig", str(cluster.kubeconfig)], workers=1)
    try:
        wait_until(lambda: problem in watcher.log_text(), timeout=30, what="the watch's refusal")
        response = watcher.admit("/mutate", review(model_deployment("cpu")))
    finally:
        cluster.kubectl("delete", "inferenceproviderconfig", "regex-bomb-unadmitted", check=False)
        assert watcher.stop() == 0

    # The shipped configs select kaito for a CPU-only model; the bomb's config never ran.
    assert (response["allowed"], response.get("warnings")) == (True, None)
    assert f"provider config problem: {problem}" in watcher.log_text()
