"""Real GitOps in the loop: Flux source-controller and kustomize-controller (built from their Go
modules by `make cluster`) sync what `runway render --push` commits to a Git server on loopback,
through the registered webhooks of the test API server.

The shipped entry point kustomize/flux is applied unchanged through a test overlay that only
points the GitRepository at the loopback server and replaces `wait: true` with health checks of
the kinds whose status the test sets (no kube-controller-manager runs here, so a Deployment never
becomes Available and `wait: true` could never pass). The ModelDeployments live in their own
namespace so that Flux's inventory never meets another test's objects.

Runway's status controller runs in the test process for that namespace (tests/support/status.py),
as kustomize/status runs it in a cluster: the health check of ModelDeployment llama-70b is
kstatus with no expression, which calls it Current only once the controller reports it Running.
The test stands in for the KubeRay operator (no RayService controller runs on this cluster).
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest
import yaml

from cli.main import main
from kubeio.yamlio import dump
from renderer.output.schemapack import load_pack
from tests.support.cluster import Cluster
from tests.support.drift import missing_from
from tests.support.flux import (
    GITREPO,
    KS,
    SYNC_TIMEOUT,
    GitOps,
    missing_controllers,
    start_flux,
    until,
)
from tests.support.gitops_tier import (
    RAY_SERVICE,
    READY_CONDITION,
    RUNNING_RAY_STATUS,
    SOURCES,
    changed_files,
    exists,
    fingerprint,
    live,
    objects_in,
    ref,
    refuses_field,
    rendered_objects,
    set_status,
    write_sources,
)
from tests.support.gitserver import start_git_server
from tests.support.paths import EXAMPLES, ROOT
from tests.support.status import InProcess
from tests.support.wait import wait_until
from tests.support.webhook import Webhook

NAMESPACE = "flux-models"
# Labels kustomize-controller adds to every object it applies (its inventory).
FLUX_LABELS = {
    "kustomize.toolkit.fluxcd.io/name": "runway-models",
    "kustomize.toolkit.fluxcd.io/namespace": "flux-system",
}


def _unavailable(message: str) -> None:
    """Without Go the tier cannot be built: skipped by hand, a failure in CI. With Go it must
    have been built (`make test` runs `make cluster` first): a failure."""
    if shutil.which("go") is None and os.environ.get("CI", "").lower() != "true":
        pytest.skip(message)
    pytest.fail(message, pytrace=False)


def overlay(directory: Path, url: str) -> Path:
    """A kustomize overlay of the shipped kustomize/flux that changes only what this test needs."""
    directory.mkdir(parents=True)
    shipped = os.path.relpath(ROOT / "kustomize" / "flux", directory)
    healthchecks = [
        {"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeployment", "name": "llama-70b"},
        {"apiVersion": "ray.io/v1", "kind": "RayService", "name": "llama-70b"},
    ]
    patch = [
        {"op": "replace", "path": "/spec/wait", "value": False},
        {"op": "replace", "path": "/spec/timeout", "value": "20s"},
        {
            "op": "add",
            "path": "/spec/healthChecks",
            "value": [{**h, "namespace": NAMESPACE} for h in healthchecks],
        },
    ]
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [shipped],
        "patches": [
            {
                "target": {"kind": "GitRepository", "name": "runway-gitops"},
                "patch": json.dumps([{"op": "replace", "path": "/spec/url", "value": url}]),
            },
            {
                "target": {"kind": "Kustomization", "name": "runway-models"},
                "patch": json.dumps(patch),
            },
        ],
    }
    (directory / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    return directory


def apply_outputs(lines: list[dict[str, Any]]) -> list[dict[str, str]]:
    return [line["output"] for line in lines if line.get("msg") == "server-side apply completed"]


@pytest.fixture(scope="module")
def gitops(
    cluster: Cluster,
    registered: Webhook,
    api: kubernetes.client.ApiClient,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[GitOps]:
    missing = missing_controllers()
    if missing:
        _unavailable(f"Flux tier: {', '.join(missing)} not built; run `make cluster` (needs Go)")
    work = tmp_path_factory.mktemp("flux")
    git = start_git_server(work / "git")
    flux = start_flux(cluster, work)
    try:
        url = git.create("gitops")
        cluster.kubectl("create", "namespace", NAMESPACE, check=False)
        cluster.kubectl(
            "label", "namespace", NAMESPACE, "runway.test/webhook=enabled", "--overwrite"
        )
        status = InProcess(api, NAMESPACE)
        env = GitOps(cluster, git, url, work, NAMESPACE, flux, status)
        env.push(write_sources(work / "sources", NAMESPACE))
        status.start()
        cluster.apply_manifests(
            cluster.kubectl("kustomize", str(overlay(work / "overlay", url))).stdout
        )
        yield env
        status.stop()
        # Deleting the Kustomization makes kustomize-controller prune everything it applied.
        cluster.kubectl("delete", *KS, "--timeout=60s", check=False)
        # The entry point's objects leave with the tier: later tests apply kustomize/flux again
        # (a dry run under another field manager would conflict with this overlay's URL).
        cluster.kubectl("delete", *GITREPO, "--timeout=60s", check=False)
    finally:
        flux.stop()
        git.stop()


@pytest.fixture
def baseline(gitops: GitOps) -> Iterator[dict[str, Any]]:
    """Every test starts from the same commit of the rendered examples, synced and healthy,
    and the status controller has reported on every ModelDeployment."""
    revision = gitops.push(write_sources(gitops.work / "sources", NAMESPACE))
    synced = gitops.synced(revision)
    wait_until(gitops.reported, timeout=SYNC_TIMEOUT, interval=0.5, what="every status reported")
    yield synced


def test_push_syncs_every_rendered_object_through_the_webhook_with_zero_drift(
    gitops: GitOps, baseline: dict[str, Any]
) -> None:
    written = rendered_objects(gitops.rendered)
    inventory = sorted(e["id"] for e in baseline["status"]["inventory"]["entries"])
    stored = {ref(o): live(gitops, o) for o in written}

    assert len(written) == 20  # 3 ModelDeployments, 5 workload objects, 11 gateway objects, 1 EMP
    assert len(inventory) == len(written)
    drift = {
        name: missing_from(o, stored[ref(o)], "") for name, o in zip(stored, written, strict=True)
    }
    assert drift == {name: [] for name in stored}
    for obj in written:
        got = stored[ref(obj)]
        assert got["metadata"].get("labels", {}) == {
            **obj["metadata"].get("labels", {}),
            **FLUX_LABELS,
        }, ref(obj)
        assert got["metadata"].get("annotations", {}) == obj["metadata"].get("annotations", {})
        if obj["kind"] == "ModelDeployment":
            # What the webhook stamped at Flux's apply is exactly what Git holds.
            assert got["spec"] == obj["spec"], ref(obj)
        managers = {m["manager"] for m in got["metadata"]["managedFields"]}
        assert "kustomize-controller" in managers, ref(obj)


def test_forced_reconciles_without_a_git_change_are_no_ops(
    gitops: GitOps, baseline: dict[str, Any]
) -> None:
    written = rendered_objects(gitops.rendered)
    before, events_before = fingerprint(gitops, written), gitops.events()
    runs = [gitops.reconciled() for _ in range(3)]

    assert [gitops.ready(ks)["status"] for ks, _ in runs] == ["True"] * 3  # type: ignore[index]
    # kustomize-controller's own account of each run: every object dry-run and left unchanged.
    outputs = [apply_outputs(lines) for _, lines in runs]
    assert outputs == [[{ref(o): "unchanged" for o in written}]] * 3
    assert fingerprint(gitops, written) == before
    new_events = [e for e in gitops.events() if e not in events_before]
    # The only events are "Reconciliation finished" notices (they carry a duration): no change set.
    assert [m for _, m, _ in new_events if not m.startswith("Reconciliation finished in ")] == []


def sha(revision: str) -> str:
    return revision.rpartition(":")[2]


def test_one_changed_model_deployment_is_applied_exactly(
    gitops: GitOps, baseline: dict[str, Any]
) -> None:
    written = rendered_objects(gitops.rendered)
    before = fingerprint(gitops, written)
    # Changed in place, as a user edits a file: the same models defined in another folder
    # would claim outputs whose sources still exist, and be refused (renderer/output/ownership.py).
    sources = write_sources(gitops.work / "sources", NAMESPACE)
    doc = yaml.safe_load((sources / "vllm-direct-explicit.yaml").read_text())
    doc["spec"]["engine"]["args"]["max-num-seqs"] = "32"
    (sources / "vllm-direct-explicit.yaml").write_text(dump(doc))
    start = len(gitops.flux.log_lines("kustomize-controller"))

    revision = gitops.push(sources)
    gitops.synced(revision)

    changed = changed_files(
        gitops.repo, sha(baseline["status"]["lastAppliedRevision"]), sha(revision)
    )
    assert set(changed.values()) == {"M"}
    expected = {ref(o) for path in changed for o in objects_in(gitops.repo, sha(revision), path)}
    assert "ModelDeployment/flux-models/phi-direct" in expected
    lines = gitops.flux.log_lines("kustomize-controller")[start:]
    (output,) = apply_outputs(lines)
    assert {k for k, v in output.items() if v != "unchanged"} == expected
    assert set(output.values()) == {"unchanged", "configured"}
    now = rendered_objects(gitops.rendered)
    after = fingerprint(gitops, now)
    assert {k for k in before if before[k] != after[k]} == expected
    drift = {ref(o): missing_from(o, live(gitops, o), "") for o in now}
    assert drift == {name: [] for name in drift}
    stored = live(
        gitops, next(o for o in now if ref(o) == "ModelDeployment/flux-models/phi-direct")
    )
    assert stored["spec"]["engine"]["args"]["max-num-seqs"] == "32"


def test_a_removed_model_deployment_is_pruned_and_nothing_else(
    gitops: GitOps, baseline: dict[str, Any]
) -> None:
    written = rendered_objects(gitops.rendered)
    before = fingerprint(gitops, written)
    kept = tuple(name for name in SOURCES if name != "llmd-explicit.yaml")

    # The same folder, without the file: a render removes only outputs of sources removed from
    # the folders it is given (renderer/output/ownership.py), so the sources must be those it rendered.
    revision = gitops.push(write_sources(gitops.work / "sources", NAMESPACE, kept))
    gitops.synced(revision)

    changed = changed_files(
        gitops.repo, sha(baseline["status"]["lastAppliedRevision"]), sha(revision)
    )
    old = sha(baseline["status"]["lastAppliedRevision"])
    removed = {
        ref(o)
        for path, how in changed.items()
        if how == "D"
        for o in objects_in(gitops.repo, old, path)
    }
    # Besides the deleted files only the namespace folder's kustomization.yaml (its list) and
    # the record of sources changed.
    assert {p for p, how in changed.items() if how != "D"} == {
        f"rendered/{NAMESPACE}/kustomization.yaml",
        "rendered/runway-sources.json",
    }
    assert "ModelDeployment/flux-models/mistral-llmd" in removed
    assert {ref(o) for o in written if not exists(gitops, o)} == removed
    survivors = [o for o in written if ref(o) not in removed]
    assert fingerprint(gitops, survivors) == {k: v for k, v in before.items() if k not in removed}


def test_shipped_health_check_exprs_are_evaluated_by_kustomize_controller(
    gitops: GitOps, baseline: dict[str, Any]
) -> None:
    what = "rayservice.ray.io/llama-70b"
    not_ready = {**READY_CONDITION, "status": "False"}
    set_status(gitops, what, {"conditions": [not_ready]})
    failed, _ = gitops.reconciled()
    set_status(gitops, what, {"conditions": [READY_CONDITION]})
    recovered, _ = gitops.reconciled()

    condition = gitops.ready(failed)
    assert condition is not None
    assert (condition["status"], condition["reason"]) == ("False", "HealthCheckFailed")
    # The shipped `current` expression of RayService did not hold for the status the test set.
    assert f"RayService/{NAMESPACE}/llama-70b status: 'InProgress'" in condition["message"]
    condition = gitops.ready(recovered)
    assert condition is not None
    assert (condition["status"], condition["reason"]) == ("True", "ReconciliationSucceeded")


APPLY_CRD = ("apply", "--server-side", "--force-conflicts", "--field-manager=runway-tests", "-f")


def crd_files(tmp_path: Path) -> tuple[Path, Path]:
    """The RayService CRD the cluster serves (the pack's), and an older one without
    spec.serveConfigV2."""
    (entry,) = [e for e in load_pack() if e.file == "rayservices.ray.io.json"]
    current = tmp_path / "current-rayservice.yaml"
    current.write_text(yaml.safe_dump(dict(entry.crd)))
    crd = copy.deepcopy(dict(entry.crd))
    for version in crd["spec"]["versions"]:
        version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"].pop(
            "serveConfigV2"
        )
    older = tmp_path / "older-rayservice.yaml"
    older.write_text(yaml.safe_dump(crd))
    return current, older


def test_a_commit_the_installed_crd_refuses_fails_in_flux_and_in_runway_apply(
    gitops: GitOps, baseline: dict[str, Any], tmp_path: Path
) -> None:
    current, older = crd_files(tmp_path)
    # Changed in place, as a user edits a file: the same models defined in another folder
    # would claim outputs whose sources still exist, and be refused (renderer/output/ownership.py).
    sources = write_sources(gitops.work / "sources", NAMESPACE)
    doc = yaml.safe_load((sources / "vllm-multi-gpu.yaml").read_text())
    doc["spec"]["engine"]["args"]["gpu-memory-utilization"] = "0.90"
    (sources / "vllm-multi-gpu.yaml").write_text(dump(doc))
    md = "modeldeployment.airunway.ai/llama-70b"
    service = next(gitops.rendered.rglob("rayservice-*.yaml"))
    gitops.cluster.kubectl(
        "apply",
        "--server-side",
        "--force-conflicts",
        "--field-manager=runway-tests",
        "-f",
        str(older),
    )
    wait_until(
        lambda: refuses_field(gitops.cluster, service, "spec.serveConfigV2"),
        timeout=30,
        what="the older schema",
    )
    # What runway apply writes is read without the status controller correcting it (the old
    # RayService still exists and runs, which is what the controller reports).
    gitops.status.stop()
    try:
        revision = gitops.push(sources)
        gitops.request_reconcile(*GITREPO)

        def failed() -> dict[str, Any] | None:
            gitops.flux.alive()
            ks = gitops.kustomization()
            condition = gitops.ready(ks)
            attempted = ks.get("status", {}).get("lastAttemptedRevision") == revision
            return ks if attempted and condition and condition["status"] == "False" else None

        refused = until(failed, "the refusal in Flux")
        code = main(["apply", str(gitops.rendered), "--kubeconfig", str(gitops.cluster.kubeconfig)])
        after_apply = gitops.get(md, "-n", NAMESPACE)
    finally:
        gitops.cluster.kubectl(
            "apply",
            "--server-side",
            "--force-conflicts",
            "--field-manager=runway-tests",
            "-f",
            str(current),
        )
        gitops.cluster.wait_established(["rayservices.ray.io"])
        wait_until(
            lambda: not refuses_field(gitops.cluster, service, "spec.serveConfigV2"),
            timeout=30,
            what="the current schema",
        )
    try:
        code_after = main(
            ["apply", str(gitops.rendered), "--kubeconfig", str(gitops.cluster.kubeconfig)]
        )
        recovered_md = gitops.get(md, "-n", NAMESPACE)
    finally:
        gitops.status.start()
    gitops.request_reconcile(*KS)
    recovered = gitops.synced(revision)  # the ModelDeployment's health check included
    running = gitops.get(md, "-n", NAMESPACE)

    condition = gitops.ready(refused)
    assert condition is not None
    assert refused["status"]["lastAppliedRevision"] == baseline["status"]["lastAppliedRevision"]
    assert condition["reason"] == "ReconciliationFailed"
    # The field IncompatibleUpstream names is in Flux's condition message.
    assert ".spec.serveConfigV2: field not declared in schema" in condition["message"]
    assert f"RayService/{NAMESPACE}/llama-70b" in condition["message"]
    assert code == 1
    assert after_apply["status"]["phase"] == "Failed"
    assert [(c["type"], c["status"], c["reason"]) for c in after_apply["status"]["conditions"]] == [
        ("ResourceCreated", "False", "IncompatibleUpstream"),
        ("Ready", "False", "IncompatibleUpstream"),
        ("Stalled", "True", "IncompatibleUpstream"),  # kstatus: Failed
    ]
    assert "spec.serveConfigV2" in after_apply["status"]["message"]
    assert code_after == 0
    assert recovered_md["status"]["phase"] == "Deploying"
    assert recovered["status"]["lastAppliedRevision"] == revision
    assert running["status"]["phase"] == "Running"
    assert running["status"]["observedGeneration"] == running["metadata"]["generation"]


def model_status(gitops: GitOps, name: str = "llama-70b") -> dict[str, Any]:
    return gitops.get(f"modeldeployment.airunway.ai/{name}", "-n", NAMESPACE)


def phase_is(gitops: GitOps, phase: str) -> Callable[[], dict[str, Any] | None]:
    def check() -> dict[str, Any] | None:
        md = model_status(gitops)
        return md if (md.get("status") or {}).get("phase") == phase else None

    return check


def test_the_model_deployment_health_check_is_green_only_while_the_controller_says_running(
    gitops: GitOps, baseline: dict[str, Any]
) -> None:
    deploying = {"activeServiceStatus": {"applicationStatuses": {"llm": {"status": "DEPLOYING"}}}}
    set_status(gitops, RAY_SERVICE, deploying)  # a merge: the Ready condition stays
    until(phase_is(gitops, "Deploying"), "the ModelDeployment Deploying")
    held, _ = gitops.reconciled()
    set_status(gitops, RAY_SERVICE, RUNNING_RAY_STATUS)
    running = until(phase_is(gitops, "Running"), "the ModelDeployment Running")
    green, _ = gitops.reconciled()

    condition = gitops.ready(held)
    assert condition is not None
    assert (condition["status"], condition["reason"]) == ("False", "HealthCheckFailed")
    # kstatus, with no expression: the RayService's own check passes, the model's does not.
    assert f"ModelDeployment/{NAMESPACE}/llama-70b status: 'InProgress'" in condition["message"]
    assert "RayService" not in condition["message"]
    condition = gitops.ready(green)
    assert condition is not None
    assert (condition["status"], condition["reason"]) == ("True", "ReconciliationSucceeded")
    assert running["status"]["message"] == "RayService/llama-70b: every application runs"


def test_a_model_deployment_no_controller_reports_on_reads_in_progress(gitops: GitOps) -> None:
    """The CRD defaults an unreported status to observedGeneration 0 (kstatus: InProgress)."""
    namespace = f"unreported-{uuid.uuid4().hex[:8]}"  # no controller watches it, no webhook
    gitops.cluster.kubectl("create", "namespace", namespace)
    md = yaml.safe_load((EXAMPLES / "vllm-direct-explicit.yaml").read_text())
    md["metadata"]["namespace"] = namespace
    gitops.cluster.apply_manifests(dump(md))

    stored = gitops.get("modeldeployment.airunway.ai/" + md["metadata"]["name"], "-n", namespace)

    assert stored["metadata"]["generation"] == 1
    assert stored["status"] == {"observedGeneration": 0}


def test_an_older_crd_under_a_flux_sync_fails_the_model_naming_the_field_and_an_upgrade_recovers_it(
    gitops: GitOps, baseline: dict[str, Any], tmp_path: Path
) -> None:
    """The seed's rejection path on the GitOps path: Flux cannot recreate the RayService (the
    installed CRD is older than the pin and lacks spec.serveConfigV2); the status controller's
    dry run names the field; upgrading the CRD recovers the model with no change to it. The
    reconcile requests stand in for Flux's own interval."""
    current, older = crd_files(tmp_path)
    service = next(gitops.rendered.rglob("rayservice-*.yaml"))
    before = model_status(gitops)
    revision = baseline["status"]["lastAppliedRevision"]
    gitops.cluster.kubectl(*APPLY_CRD, str(older))
    wait_until(
        lambda: refuses_field(gitops.cluster, service, "spec.serveConfigV2"),
        timeout=30,
        what="the older schema",
    )
    try:
        # What reinstalling a CRD at an older version does to its objects.
        gitops.cluster.kubectl("delete", RAY_SERVICE, "-n", NAMESPACE, "--wait=true")
        gitops.request_reconcile(*KS)

        def refused() -> dict[str, Any] | None:
            gitops.flux.alive()
            ks = gitops.kustomization()
            condition = gitops.ready(ks) or {}
            message = str(condition.get("message", ""))
            return ks if condition.get("status") == "False" and "serveConfigV2" in message else None

        until(refused, "the refusal in Flux")
        failed = until(phase_is(gitops, "Failed"), "the ModelDeployment Failed")
    finally:
        gitops.cluster.kubectl(*APPLY_CRD, str(current))
        gitops.cluster.wait_established(["rayservices.ray.io"])
        wait_until(
            lambda: not refuses_field(gitops.cluster, service, "spec.serveConfigV2"),
            timeout=30,
            what="the current schema",
        )
    gitops.request_reconcile(*KS)
    recovered = gitops.synced(revision)
    running = until(phase_is(gitops, "Running"), "the ModelDeployment Running again")

    message = (
        "RayService/llama-70b: the installed upstream does not declare field "
        "spec.serveConfigV2; upgrade the upstream or Runway's pin"
    )
    assert failed["status"]["message"] == message
    conditions = {c["type"]: (c["status"], c["reason"]) for c in failed["status"]["conditions"]}
    assert {k: conditions[k] for k in ("ResourceCreated", "Ready", "Stalled")} == {
        "ResourceCreated": ("False", "IncompatibleUpstream"),
        "Ready": ("False", "IncompatibleUpstream"),
        "Stalled": ("True", "IncompatibleUpstream"),
    }
    assert "Reconciling" not in conditions
    # No change to the ModelDeployment: the same generation, reported on, throughout.
    generations = [md["metadata"]["generation"] for md in (before, failed, running)]
    assert generations == [before["metadata"]["generation"]] * 3
    assert running["status"]["observedGeneration"] == before["metadata"]["generation"]
    assert recovered["status"]["lastAppliedRevision"] == revision
    assert exists(
        gitops, {"apiVersion": "ray.io/v1", "kind": "RayService", "metadata": {"name": "llama-70b"}}
    )
