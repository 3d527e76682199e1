"""Real Argo CD in the loop: the application-controller and repo-server (built by `make cluster`
at ARGOCD_VERSION, with a master gitops-engine: the release's own is not served by the Go module
proxy) sync what `runway render --push` commits to a Git server on loopback, with server-side
apply, through the registered webhooks of the test API server.

The shipped entry point kustomize/argocd is applied through a test overlay that only points the
`runway-models` Application at the loopback server and leaves out what this tier does not run
(the `runway` Application, which deploys the webhook itself, and the ApplicationSet, which needs
the applicationset-controller). No argocd-server runs, so Git webhooks are not delivered: a test
asks for a refresh with the `argocd.argoproj.io/refresh` annotation, which is what the webhook
handler does. The checks are the Flux tier's (tests/e2e/test_flux.py).
"""

from __future__ import annotations

import copy
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from cli.main import main
from kubeio.yamlio import dump
from renderer.output.schemapack import load_pack
from tests.support.argocd import ArgoCD, missing_binaries, start_argocd
from tests.support.cluster import Cluster
from tests.support.drift import missing_from
from tests.support.gitops_tier import (
    READY_CONDITION,
    RUNNING_RAY_STATUS,
    SOURCES,
    Tier,
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
from tests.support.serving import (
    Recorder,
    accept_routes,
    delete_pods,
    gpus_held_back,
    model_phases,
    phases_in_order,
    provide_claim,
)
from tests.support.status import controller
from tests.support.wait import wait_until
from tests.support.webhook import Webhook

NAMESPACE = "argocd-models"
APP = ("application.argoproj.io/runway-models", "-n", "argocd")
SYNC_TIMEOUT = 120
REFRESH_EVERY = 20  # seconds between refresh requests while waiting for a sync
REFUSAL_TIMEOUT = 300
TRACKING = "argocd.argoproj.io/tracking-id"  # Argo CD 3's default: annotation tracking


def until(predicate: Callable[[], dict[str, Any] | None], what: str) -> dict[str, Any]:
    found = wait_until(predicate, timeout=SYNC_TIMEOUT, interval=0.5, what=what)
    assert found is not None
    return found


def overlay(directory: Path, url: str) -> Path:
    """A kustomize overlay of the shipped kustomize/argocd that changes only what this tier needs."""
    directory.mkdir(parents=True)
    shipped = os.path.relpath(ROOT / "kustomize" / "argocd", directory)
    delete = [
        ("argoproj.io/v1alpha1", "Application", "runway"),
        ("argoproj.io/v1alpha1", "ApplicationSet", "runway-models-by-namespace"),
    ]
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [shipped],
        "patches": [
            {
                "target": {"kind": "Application", "name": "runway-models"},
                "patch": json.dumps(
                    [{"op": "replace", "path": "/spec/source/repoURL", "value": url}]
                ),
            },
            *(
                {
                    "patch": yaml.safe_dump(
                        {
                            "apiVersion": api,
                            "kind": kind,
                            "metadata": {"name": name, "namespace": "argocd"},
                            "$patch": "delete",
                        }
                    )
                }
                for api, kind, name in delete
            ),
        ],
    }
    (directory / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    return directory


@dataclass
class GitOps(Tier):
    argo: ArgoCD

    def push(self, sources: Path) -> str:
        """`runway render --push`; the revision Argo CD will report for the pushed head."""
        return self.render_and_push(sources)

    def app(self) -> dict[str, Any]:
        return self.get(*APP)

    def refreshed(self, kind: str = "normal") -> dict[str, Any]:
        """Ask for a refresh as Argo CD's Git webhook handler does; the Application after the
        controller has taken it (it removes the annotation once the refresh is done)."""
        self.cluster.kubectl("annotate", *APP, f"argocd.argoproj.io/refresh={kind}", "--overwrite")

        def taken() -> dict[str, Any] | None:
            self.argo.alive()
            app = self.app()
            annotations = app["metadata"].get("annotations", {})
            return app if "argocd.argoproj.io/refresh" not in annotations else None

        return until(taken, f"a {kind} refresh")

    def synced(self, revision: str) -> dict[str, Any]:
        """The push has landed: a sync of the revision succeeded and the controller compared the
        cluster with it afterwards, or the revision changed no object Argo CD applies (only the
        render's record of sources, which no kustomization lists), so the comparison found it
        Synced and automated sync rightly ran nothing. Whether a synced revision compares Synced
        is for the tests to assert (a defaulted field Git lacks leaves it OutOfSync)."""
        self.refreshed()
        asked = [time.monotonic()]

        def applied() -> dict[str, Any] | None:
            self.argo.alive()
            self.stand_in_for_kuberay()
            app = self.app()
            seen[0] = app
            status = app.get("status", {})
            operation = status.get("operationState", {})
            sync = status.get("sync", {})
            ran = (
                operation.get("phase") == "Succeeded"
                and operation.get("syncResult", {}).get("revision") == revision
                and status.get("reconciledAt", "") >= operation.get("finishedAt", "~")
            )
            # Compared Synced with no operation running: what Git holds is what runs, whether
            # a sync of this revision applied it, nothing needed applying, or `runway apply` did
            # after a refused sync (automated sync does not retry a failed revision).
            nothing_to_apply = (
                sync.get("status") == "Synced" and operation.get("phase") != "Running"
            )
            done = sync.get("revision") == revision and (ran or nothing_to_apply)
            if not done and time.monotonic() - asked[0] > REFRESH_EVERY:
                # What the controller's periodic reconciliation (3 min by default, longer than
                # this wait) would do: compare again. A comparison taken while the cluster cache
                # was still catching up with `runway apply` otherwise stands until then.
                self.cluster.kubectl(
                    "annotate", *APP, "argocd.argoproj.io/refresh=normal", "--overwrite"
                )
                asked[0] = time.monotonic()
            return app if done else None

        seen: list[dict[str, Any]] = [{}]
        try:
            return until(applied, f"{revision} synced")
        except TimeoutError as timeout:
            raise TimeoutError(
                f"{timeout}; the Application's last status: {summary(seen[0])}"
            ) from None


def summary(app: dict[str, Any]) -> str:
    """The parts of an Application's status a failed wait needs: sync, operation, comparison."""
    status = app.get("status", {})
    operation = status.get("operationState", {})
    return json.dumps(
        {
            "sync": status.get("sync", {}),
            "reconciledAt": status.get("reconciledAt"),
            "operation": {key: operation.get(key) for key in ("phase", "message", "finishedAt")},
            "operationRevision": operation.get("syncResult", {}).get("revision"),
            "outOfSync": out_of_sync(app) if status else {},
            "conditions": [
                f"{c.get('type')}: {c.get('message', '')[:300]}"
                for c in status.get("conditions", [])
            ],
        },
        sort_keys=True,
    )


def out_of_sync(app: dict[str, Any]) -> dict[str, str]:
    """The objects the last comparison found OutOfSync: {Kind/name: status}."""
    return {
        f"{r['kind']}/{r['name']}": r["status"]
        for r in app["status"].get("resources", [])
        if r.get("status") != "Synced"
    }


def compared(app: dict[str, Any]) -> dict[str, str]:
    """How the controller's last comparison found each object: {Kind/namespace/name: status}."""
    return {
        f"{r['kind']}/{r.get('namespace', '')}/{r['name']}".replace("//", "/"): r["status"]
        for r in app["status"].get("resources", [])
    }


def sync_result(app: dict[str, Any]) -> dict[str, str]:
    """What the last sync did to each object: {Kind/namespace/name: status}."""
    resources = app["status"]["operationState"]["syncResult"]["resources"]
    return {
        f"{r['kind']}/{r.get('namespace', '')}/{r['name']}".replace("//", "/"): r["status"]
        for r in resources
    }


SCHEMA_REFUSAL = ".spec.serveConfigV2: field not declared in schema"


def schema_reloaded(cluster: Cluster, *, serve_config: bool) -> None:
    """Make the controller diff against the RayService schema the API server now serves.

    Argo CD reloads the OpenAPI schema its diff uses (/openapi/v2) on every CRD event, but the
    API server publishes a changed CRD's schema there a moment after the change: a reload on the
    change's own events may read the previous schema and keep it until the next CRD event (the
    last stop's CI saw every comparison Unknown for two minutes after the restore). So: wait
    until /openapi/v2 shows the change, then touch the CRD, whose event makes the controller
    reload what is now published."""

    def published() -> bool:
        doc = json.loads(cluster.kubectl("get", "--raw", "/openapi/v2").stdout)
        spec = doc["definitions"]["io.ray.v1.RayService"]["properties"]["spec"]["properties"]
        return ("serveConfigV2" in spec) == serve_config

    wait_until(published, timeout=60, interval=0.5, what="the schema in /openapi/v2")
    cluster.kubectl(
        "annotate",
        "crd/rayservices.ray.io",
        f"runway-tests/serve-config-v2={'declared' if serve_config else 'removed'}",
        "--overwrite",
    )


def refusals(app: dict[str, Any]) -> list[str]:
    """Where Argo CD reports a refusal: a ComparisonError condition when its diff already fails
    against the served schema (auto-sync then waits), else the failed sync's message (automated
    sync retries it, so the phase may read Running between attempts)."""
    status = app.get("status", {})
    conditions = [
        c["message"]
        for c in status.get("conditions", [])
        if c["type"] in ("ComparisonError", "SyncError")
    ]
    return [*conditions, status.get("operationState", {}).get("message", "")]


def refused_field(app: dict[str, Any], revision: str) -> bool:
    status = app.get("status", {})
    target = status.get("operationState", {}).get("operation", {}).get("sync", {}).get("revision")
    current = revision in (status.get("sync", {}).get("revision"), target)
    return current and any(SCHEMA_REFUSAL in m for m in refusals(app))


@pytest.fixture(scope="module")
def gitops(
    live_cluster: Cluster, live_registered: Webhook, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[GitOps]:
    """On the live cluster: Argo CD prunes with foreground deletion, which only the
    controller-manager's garbage collector completes, and Deployments there become healthy."""
    cluster = live_cluster
    missing = missing_binaries()
    if missing:
        pytest.fail(f"Argo CD tier: {', '.join(missing)} not built; run `make cluster`")
    work = tmp_path_factory.mktemp("argocd")
    git = start_git_server(work / "git")
    argo = start_argocd(cluster, work)
    try:
        url = git.create("gitops")
        cluster.kubectl("create", "namespace", NAMESPACE, check=False)
        cluster.kubectl(
            "label", "namespace", NAMESPACE, "runway.test/webhook=enabled", "--overwrite"
        )
        env = GitOps(cluster, git, url, work, NAMESPACE, argo)
        env.push(write_sources(work / "sources", NAMESPACE))
        cluster.apply_manifests(
            cluster.kubectl("kustomize", str(overlay(work / "overlay", url))).stdout
        )
        yield env
        # The Application has no resources finalizer: its objects leave with their namespace,
        # so that later tests on the live cluster get every GPU back.
        cluster.kubectl("delete", *APP, "--wait=false", check=False)
        cluster.kubectl("delete", "namespace", NAMESPACE, "--wait=false", check=False)
    finally:
        argo.stop()
        git.stop()


@pytest.fixture
def baseline(gitops: GitOps) -> Iterator[dict[str, Any]]:
    """Every test starts from the same commit of the rendered examples, synced."""
    revision = gitops.push(write_sources(gitops.work / "sources", NAMESPACE))
    synced = gitops.synced(revision)
    persist_status_defaults(gitops)
    yield synced


def persist_status_defaults(gitops: GitOps) -> None:
    """The API server stores a CRD's defaults (the ModelDeployment's unreported status,
    observedGeneration 0) at an object's first write after its create, and an Argo CD sync
    applies every object, changed or not: that first no-op apply would move the
    resourceVersion once. In a cluster the status controller writes the status at once; here
    the test writes the default itself, so that the tests' fingerprints see only real
    changes."""
    listed = gitops.get("modeldeployments.airunway.ai", "-n", NAMESPACE)["items"]
    for md in listed:
        if md.get("status") == {"observedGeneration": 0}:
            set_status(
                gitops, f"modeldeployment.airunway.ai/{md['metadata']['name']}", md["status"]
            )


def test_push_syncs_every_rendered_object_through_the_webhook_with_zero_drift(
    gitops: GitOps, baseline: dict[str, Any]
) -> None:
    written = rendered_objects(gitops.rendered)
    stored = {ref(o): live(gitops, o) for o in written}

    assert len(written) == 20  # 3 ModelDeployments, 5 workload objects, 11 gateway objects, 1 EMP
    # Argo CD compares Git with the live objects itself (client-side diff): a field the API
    # server defaults and Git lacks makes the object OutOfSync, and self-heal re-applies it.
    assert out_of_sync(baseline) == {}
    assert baseline["status"]["sync"]["status"] == "Synced"
    # Every object compared Synced. The last operation may be a self-heal of a few objects that
    # the controller's cache saw late after the first sync (a busy machine), not all 20: what it
    # applied must have synced too.
    assert compared(baseline) == {ref(o): "Synced" for o in written}
    assert set(sync_result(baseline).values()) == {"Synced"}
    drift = {
        name: missing_from(o, stored[name], "") for name, o in zip(stored, written, strict=True)
    }
    assert drift == {name: [] for name in stored}
    for obj in written:
        got = stored[ref(obj)]
        assert got["metadata"].get("labels", {}) == obj["metadata"].get("labels", {}), ref(obj)
        annotations = dict(got["metadata"].get("annotations", {}))
        assert annotations.pop(TRACKING).startswith("runway-models:"), ref(obj)
        if obj["kind"] == "Deployment":  # the deployment controller's own bookkeeping
            assert annotations.pop("deployment.kubernetes.io/revision") == "1", ref(obj)
        assert annotations == obj["metadata"].get("annotations", {}), ref(obj)
        if obj["kind"] == "ModelDeployment":
            assert got["spec"] == obj["spec"], ref(obj)  # the webhook's stamp is what Git holds
        appliers = {
            m["manager"] for m in got["metadata"]["managedFields"] if m["operation"] == "Apply"
        }
        assert appliers == {"argocd-controller"}, ref(obj)


def test_forced_refreshes_without_a_git_change_are_no_ops(
    gitops: GitOps, baseline: dict[str, Any]
) -> None:
    written = rendered_objects(gitops.rendered)
    before = fingerprint(gitops, written)
    started = baseline["status"]["operationState"]["startedAt"]

    runs = [gitops.refreshed("hard") for _ in range(3)]

    assert [r["status"]["sync"]["status"] for r in runs] == ["Synced"] * 3
    # No new sync operation started: the refreshes only compared Git with the cluster.
    assert [r["status"]["operationState"]["startedAt"] for r in runs] == [started] * 3
    assert fingerprint(gitops, written) == before


def test_one_changed_model_deployment_is_applied_exactly(
    gitops: GitOps, baseline: dict[str, Any]
) -> None:
    written = rendered_objects(gitops.rendered)
    before = fingerprint(gitops, written)
    old = baseline["status"]["sync"]["revision"]
    # Changed in place, as a user edits a file: the same models defined in another folder
    # would claim outputs whose sources still exist, and be refused (renderer/output/ownership.py).
    sources = write_sources(gitops.work / "sources", NAMESPACE)
    doc = yaml.safe_load((sources / "vllm-direct-explicit.yaml").read_text())
    doc["spec"]["engine"]["args"]["max-num-seqs"] = "32"
    (sources / "vllm-direct-explicit.yaml").write_text(dump(doc))

    revision = gitops.push(sources)
    gitops.synced(revision)

    changed = changed_files(gitops.repo, old, revision)
    assert set(changed.values()) == {"M"}
    expected = {ref(o) for path in changed for o in objects_in(gitops.repo, revision, path)}
    assert "ModelDeployment/argocd-models/phi-direct" in expected
    now = rendered_objects(gitops.rendered)
    after = fingerprint(gitops, now)
    assert {k for k in before if before[k] != after[k]} == expected
    drift = {ref(o): missing_from(o, live(gitops, o), "") for o in now}
    assert drift == {name: [] for name in drift}


def test_a_removed_model_deployment_is_pruned_and_nothing_else(
    gitops: GitOps, baseline: dict[str, Any]
) -> None:
    written = rendered_objects(gitops.rendered)
    before = fingerprint(gitops, written)
    old = baseline["status"]["sync"]["revision"]
    kept = tuple(name for name in SOURCES if name != "llmd-explicit.yaml")

    # The same folder, without the file: a render removes only outputs of sources removed from
    # the folders it is given (renderer/output/ownership.py), so the sources must be those it rendered.
    revision = gitops.push(write_sources(gitops.work / "sources", NAMESPACE, kept))
    gitops.synced(revision)

    changed = changed_files(gitops.repo, old, revision)
    removed = {
        ref(o)
        for path, how in changed.items()
        if how == "D"
        for o in objects_in(gitops.repo, old, path)
    }
    assert "ModelDeployment/argocd-models/mistral-llmd" in removed
    # Argo CD prunes with foreground deletion: an object goes once the garbage collector has
    # removed its dependents (a Deployment's ReplicaSets and pods).
    wait_until(
        lambda: {ref(o) for o in written if not exists(gitops, o)} >= removed,
        timeout=SYNC_TIMEOUT,
        what="the pruned objects gone",
    )
    assert {ref(o) for o in written if not exists(gitops, o)} == removed
    survivors = [o for o in written if ref(o) not in removed]
    assert fingerprint(gitops, survivors) == {k: v for k, v in before.items() if k not in removed}


def health_of(app: dict[str, Any], kind: str, name: str) -> tuple[str, str]:
    (found,) = [r for r in app["status"]["resources"] if (r["kind"], r["name"]) == (kind, name)]
    return found["health"]["status"], found["health"].get("message", "")


def test_shipped_health_lua_is_evaluated_by_the_application_controller(
    gitops: GitOps, baseline: dict[str, Any]
) -> None:
    what = "rayservice.ray.io/llama-70b"
    set_status(gitops, what, {"conditions": [{**READY_CONDITION, "status": "False"}]})

    def health(status: str) -> Callable[[], dict[str, Any] | None]:
        def reported() -> dict[str, Any] | None:
            gitops.argo.alive()
            app = gitops.app()
            return app if health_of(app, "RayService", "llama-70b")[0] == status else None

        return reported

    gitops.refreshed()
    failing = until(health("Progressing"), "RayService Progressing")
    set_status(gitops, what, {"conditions": [READY_CONDITION]})
    gitops.refreshed()
    recovered = until(health("Healthy"), "RayService Healthy")

    assert health_of(failing, "RayService", "llama-70b") == (
        "Progressing",
        "waiting for the RayService",
    )
    assert health_of(recovered, "RayService", "llama-70b") == (
        "Healthy",
        "stands in for the KubeRay operator",
    )
    # No status controller has reported on the ModelDeployment yet: the shipped Lua says so.
    assert health_of(recovered, "ModelDeployment", "llama-70b") == (
        "Progressing",
        "waiting for the Runway status controller",
    )


def test_a_model_deployment_is_healthy_in_argocd_only_once_the_status_controller_says_running(
    gitops: GitOps, baseline: dict[str, Any]
) -> None:
    """With Runway's status controller (in this process, for the tier's namespace): the Direct
    vLLM Deployment cannot roll out (its model cache claim does not exist), and the RayService
    runs (the test stands in for the KubeRay operator); Argo CD reads each model's health from
    the status the controller writes."""
    stop = threading.Event()
    deploying = {"activeServiceStatus": {"applicationStatuses": {"llm": {"status": "DEPLOYING"}}}}
    set_status(gitops, "rayservice.ray.io/llama-70b", deploying)

    def model_health(name: str, status: str) -> Callable[[], dict[str, Any] | None]:
        def reported() -> dict[str, Any] | None:
            gitops.argo.alive()
            app = gitops.refreshed()
            return app if health_of(app, "ModelDeployment", name)[0] == status else None

        return reported

    api = gitops.cluster.api_client()
    controller(api, NAMESPACE, "argocd", stop)
    try:
        deploying_app = until(model_health("llama-70b", "Progressing"), "llama-70b Progressing")
        set_status(gitops, "rayservice.ray.io/llama-70b", RUNNING_RAY_STATUS)
        healthy = until(model_health("llama-70b", "Healthy"), "llama-70b Healthy")

        def direct_reported() -> dict[str, Any] | None:
            app = gitops.refreshed()
            health = health_of(app, "ModelDeployment", "phi-direct")
            return app if health[1].startswith("Deployment/phi-direct: ") else None

        direct = until(direct_reported, "phi-direct reported")
        direct_md = gitops.get("modeldeployment.airunway.ai/phi-direct", "-n", NAMESPACE)
    finally:
        stop.set()
        api.close()

    assert health_of(deploying_app, "ModelDeployment", "llama-70b") in (
        ("Progressing", "waiting for the Runway status controller"),
        ("Progressing", "RayService/llama-70b: llm DEPLOYING"),
    )
    assert health_of(healthy, "ModelDeployment", "llama-70b") == (
        "Healthy",
        "RayService/llama-70b: every application runs",
    )
    # phi-direct mounts the claim shared-model-cache, which no one created here: its pod cannot
    # schedule, the rollout does not finish, and Argo CD does not call it Healthy.
    assert health_of(direct, "ModelDeployment", "phi-direct") == (
        "Progressing",
        direct_md["status"]["message"],
    )
    assert direct_md["status"]["phase"] == "Deploying"
    assert direct_md["status"]["replicas"]["available"] == 0


def test_a_commit_the_installed_crd_refuses_fails_in_argocd_and_in_runway_apply(
    gitops: GitOps, baseline: dict[str, Any], tmp_path: Path
) -> None:
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
    # Changed in place, as a user edits a file: the same models defined in another folder
    # would claim outputs whose sources still exist, and be refused (renderer/output/ownership.py).
    sources = write_sources(gitops.work / "sources", NAMESPACE)
    doc = yaml.safe_load((sources / "vllm-multi-gpu.yaml").read_text())
    doc["spec"]["engine"]["args"]["gpu-memory-utilization"] = "0.90"
    (sources / "vllm-multi-gpu.yaml").write_text(dump(doc))
    md = "modeldeployment.airunway.ai/llama-70b"
    service = next(gitops.rendered.rglob("rayservice-*.yaml"))
    apply_crd = (
        "apply",
        "--server-side",
        "--force-conflicts",
        "--field-manager=runway-tests",
        "-f",
    )
    gitops.cluster.kubectl(*apply_crd, str(older))
    wait_until(
        lambda: refuses_field(gitops.cluster, service, "spec.serveConfigV2"),
        timeout=30,
        what="the older schema",
    )
    schema_reloaded(gitops.cluster, serve_config=False)
    try:
        revision = gitops.push(sources)
        gitops.refreshed()

        def failed() -> dict[str, Any] | None:
            gitops.argo.alive()
            app = gitops.app()
            return app if refused_field(app, revision) else None

        # After a CRD changes, the controller rebuilds its cluster cache first (slow on a busy
        # machine), hence the longer bound.
        refused = wait_until(failed, timeout=REFUSAL_TIMEOUT, interval=1, what="the refusal")
        assert refused is not None
        code = main(["apply", str(gitops.rendered), "--kubeconfig", str(gitops.cluster.kubeconfig)])
        after_apply = gitops.get(md, "-n", NAMESPACE)
    finally:
        gitops.cluster.kubectl(*apply_crd, str(current))
        gitops.cluster.wait_established(["rayservices.ray.io"])
        wait_until(
            lambda: not refuses_field(gitops.cluster, service, "spec.serveConfigV2"),
            timeout=30,
            what="the current schema",
        )
        schema_reloaded(gitops.cluster, serve_config=True)
    code_after = main(
        ["apply", str(gitops.rendered), "--kubeconfig", str(gitops.cluster.kubeconfig)]
    )
    recovered = gitops.synced(revision)

    assert refused["status"]["sync"]["status"] in ("OutOfSync", "Unknown")
    # The field IncompatibleUpstream names, in the Application's status.
    assert [m for m in refusals(refused) if SCHEMA_REFUSAL in m] != []
    assert code == 1
    assert after_apply["status"]["phase"] == "Failed"
    assert "spec.serveConfigV2" in after_apply["status"]["message"]
    assert code_after == 0
    assert recovered["status"]["sync"]["revision"] == revision


def live_copy(example: str, name: str, sources: Path) -> None:
    """A copy of an example under a new name (and routing name) in the tier's namespace."""
    doc = yaml.safe_load((EXAMPLES / example).read_text())
    doc["metadata"] = {"name": name, "namespace": NAMESPACE}
    if (doc["spec"].get("gateway") or {}).get("enabled"):
        doc["spec"]["gateway"]["modelName"] = name
    (sources / f"{name}.yaml").write_text(dump(doc))


LIVE_MODELS = ("mistral-live", "phi-live")
SERVING = {name: "Running" for name in LIVE_MODELS}
Snapshot = tuple[tuple[str, str, str | None], ...]


def serving_snapshot(gitops: GitOps) -> Snapshot:
    """Each live model's (name, Argo CD health, phase): the Application read first, so that a
    Healthy read while a model read after it is not Running would be a health called early."""
    resources = gitops.app().get("status", {}).get("resources", [])
    health = {
        r["name"]: (r.get("health") or {}).get("status", "")
        for r in resources
        if r["kind"] == "ModelDeployment"
    }
    phases = model_phases(gitops.cluster, NAMESPACE)
    return tuple((n, health.get(n, ""), phases.get(n)) for n in LIVE_MODELS)


def healthy_early(seen: list[Snapshot]) -> list[tuple[str, int]]:
    """Where Argo CD called a model Healthy it had no Running status for: (model, index).

    The Application's health is what the controller computed at its last look, a moment after
    the status changed, so a loss shows there a little later than on the model (Healthy read
    beside Deploying, once). What must never happen: Healthy before the model was ever Running,
    or Healthy again after Argo CD has seen the loss, before the model is Running again."""
    early = []
    for name in LIVE_MODELS:
        backed = False  # a Running status Argo CD may still be showing
        for index, snapshot in enumerate(seen):
            ((_, health, phase),) = [s for s in snapshot if s[0] == name]
            if phase == "Running":
                backed = True
            elif health != "Healthy":
                backed = False  # Argo CD has caught up with a model that does not run
            if health == "Healthy" and not backed:
                early.append((name, index))
    return early


def test_llmd_and_direct_vllm_roll_out_and_are_healthy_in_argocd_only_while_they_run(
    gitops: GitOps, baseline: dict[str, Any]
) -> None:
    """The live plane end to end: a commit adds an llm-d model behind the gateway and a Direct
    vLLM model (its cache claim made first, as a user would). While the GPU nodes are cordoned
    their pods cannot schedule: Deploying, Progressing. Uncordoned, they roll out, the status
    controller reports Running with replicas and endpoint, and Argo CD's health (the shipped
    Lua) turns Healthy. Pods lost turn them back to Deploying and Progressing. A Gateway API
    implementation is stood in for (tests/support/serving.py)."""
    cluster = gitops.cluster
    volume = provide_claim(cluster, NAMESPACE, "shared-model-cache")
    sources = write_sources(gitops.work / "sources", NAMESPACE)
    live_copy("llmd-explicit.yaml", "mistral-live", sources)
    live_copy("vllm-direct-explicit.yaml", "phi-live", sources)
    stop = threading.Event()
    api = cluster.api_client()
    controller(api, NAMESPACE, "argocd-live", stop)

    def all_health(status: str) -> Callable[[], dict[str, Any] | None]:
        def reported() -> dict[str, Any] | None:
            gitops.argo.alive()
            accept_routes(cluster, NAMESPACE, "mistral-live")
            app = gitops.refreshed()
            found = {n: health_of(app, "ModelDeployment", n)[0] for n in LIVE_MODELS}
            return app if set(found.values()) == {status} else None

        return reported

    try:
        with Recorder(lambda: serving_snapshot(gitops)) as recorder:
            with gpus_held_back(cluster):
                revision = gitops.push(sources)
                gitops.synced(revision)
                held = until(all_health("Progressing"), "both models Progressing")
                held_phases = model_phases(cluster, NAMESPACE)
                # The recorder samples: hold the nodes until it has seen the models Deploying.
                wait_until(
                    lambda: any(
                        {p for _, _, p in snapshot} == {"Deploying"} for snapshot in recorder.seen
                    ),
                    timeout=SYNC_TIMEOUT,
                    interval=0.2,
                    what="the recorder saw both models Deploying",
                )
            healthy = until(all_health("Healthy"), "both models Healthy")
            models = {
                n: gitops.get(f"modeldeployment.airunway.ai/{n}", "-n", NAMESPACE)
                for n in LIVE_MODELS
            }
            rolled_out = len(recorder.seen)
            with gpus_held_back(cluster):
                delete_pods(cluster, NAMESPACE, LIVE_MODELS)
                lost = until(all_health("Progressing"), "both models Progressing again")
                lost_phases = model_phases(cluster, NAMESPACE)
            until(all_health("Healthy"), "both models Healthy again")
    finally:
        stop.set()
        api.close()
        cluster.kubectl("delete", "persistentvolume", volume, "--wait=false", check=False)

    assert healthy_early(recorder.seen) == [], recorder.seen
    assert {n: held_phases[n] for n in LIVE_MODELS} == {n: "Deploying" for n in LIVE_MODELS}
    assert {n: lost_phases[n] for n in LIVE_MODELS} == {n: "Deploying" for n in LIVE_MODELS}
    for name in LIVE_MODELS:
        phases = [p for s in recorder.seen[:rolled_out] for n, _, p in s if n == name]
        assert phases_in_order(phases)[-2:] == ["Deploying", "Running"], (name, phases)
        message = models[name]["status"]["message"]
        assert health_of(healthy, "ModelDeployment", name) == ("Healthy", message)
        assert health_of(held, "ModelDeployment", name)[0] == "Progressing"
        assert health_of(lost, "ModelDeployment", name)[0] == "Progressing"
    assert {n: md["status"]["replicas"] for n, md in models.items()} == {
        n: {"desired": 1, "ready": 1, "available": 1} for n in LIVE_MODELS
    }
    assert {n: md["status"]["endpoint"] for n, md in models.items()} == {
        n: {"service": n, "port": 8000} for n in LIVE_MODELS
    }
    assert models["mistral-live"]["status"]["gateway"] == {
        "endpoint": "",
        "modelName": "mistral-live",
    }
