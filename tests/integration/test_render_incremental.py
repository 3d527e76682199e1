"""Incremental rendering equals full rendering: after any series of edits (ModelDeployments
added, changed and removed, provider configs and gateway settings changed, rendered files edited
by hand), the incremental render gives byte-identical files and the same report as rendering
everything, and a render right after renders nothing."""

from __future__ import annotations

import copy
import json
import os
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli.main import main
from core.model.kinds import EXTERNAL_MODEL_PROVIDER, MODEL_DEPLOYMENT
from core.rendering.inferencegateway import GatewayTarget
from kubeio.registry import build_registry
from kubeio.shipped import bundled_config_objects, bundled_versions
from kubeio.sources import parse_documents
from kubeio.yamlio import dump_all
from renderer.output.folders import HYDRATED_FILE, Result, folder_of
from renderer.output.render import POOL_MINIMUM, RenderContext, render_external_guarded, render_many
from renderer.output.schemapack import load_pack
from renderer.output.strict import Schemas
from renderer.output.tree import namespace_files, tree_folders
from renderer.reuse.digests import inputs_digest
from renderer.reuse.incremental import Begun, Rendered, begin, finish
from renderer.reuse.rendercache import Entry, RenderCache
from tests.support.builders import model_deployment

NAMES = ("a", "b", "c", "d", "e")
NAMESPACES = ("team1", "team2")
SHIPPED = bundled_config_objects()


def _configs(variant: int) -> list[dict[str, Any]]:
    """0: the shipped configs; 1: llm-d wins every new selection; 2: without Direct vLLM."""
    configs = copy.deepcopy(SHIPPED)
    if variant == 1:
        llmd = next(c for c in configs if c["metadata"]["name"] == "llmd")
        llmd["spec"].setdefault("selectionRules", []).append(
            {"condition": "true", "priority": 1000}
        )
    if variant == 2:
        configs = [c for c in configs if c["metadata"]["name"] != "vllm"]
    return configs


@pytest.fixture(scope="module")
def schemas() -> Schemas:
    """Runway's schema pack, as `runway render` uses it by default."""
    return Schemas.from_pack(load_pack())


def _deployment(name: str, namespace: str, shape: tuple[Any, ...]) -> dict[str, Any]:
    provider, gpu, seqs, gateway, invalid, leaked = shape
    extra = [f"--max-num-seqs={seqs}"]
    if leaked:
        extra.append("--api-key=sk-proj-" + "Ab1x" * 8)  # a credential shape: never rendered
    spec: dict[str, Any] = {}
    if gateway:
        spec["gateway"] = {"enabled": True}
    return model_deployment(
        name,
        namespace,
        model_id=None if invalid else "org/model",
        gpu=gpu,
        provider=provider,
        engine={"type": "vllm", "extraArgs": extra},
        **spec,
    )


SHAPES = st.tuples(
    st.sampled_from(["vllm", "llmd", None]),
    st.sampled_from([1, 2]),
    st.integers(1, 3),
    st.booleans(),
    st.sampled_from([False] * 5 + [True]),
    st.sampled_from([False] * 5 + [True]),
)
EDITS = st.one_of(
    st.tuples(st.just("put"), st.sampled_from(NAMES), st.sampled_from(NAMESPACES), SHAPES),
    st.tuples(st.just("remove"), st.sampled_from(NAMES), st.sampled_from(NAMESPACES)),
    st.tuples(st.just("configs"), st.integers(0, 2)),
    st.tuples(st.just("gateway"), st.booleans()),
    st.tuples(st.just("tamper"), st.integers(0, 10_000)),
    st.tuples(st.just("nothing")),
)


def _report(results: list[Result]) -> list[tuple[Any, ...]]:
    return [(r.key, dict(r.files), r.error, r.warnings, r.engine, r.provider) for r in results]


def _full(
    objects: list[dict[str, Any]], current: dict[str, str], context: RenderContext
) -> tuple[list[Result], dict[str, str]]:
    """What `render` did before incremental rendering: every object, previous from the tree."""
    folders: dict[str, dict[str, str]] = {}
    hydrated: dict[str, dict[str, Any]] = {}
    for path, text in current.items():
        parts = path.split("/")
        if len(parts) == 3:
            folders.setdefault("/".join(parts[:2]), {})[parts[2]] = text
            if parts[2] == HYDRATED_FILE:
                for doc in parse_documents(text, path):
                    hydrated["/".join(parts[:2])] = doc.obj
    deployments = sorted((o for o in objects if o.get("kind") == MODEL_DEPLOYMENT), key=folder_of)
    externals = [
        render_external_guarded(o) for o in objects if o.get("kind") == EXTERNAL_MODEL_PROVIDER
    ]
    rendered = render_many(deployments, previous=hydrated, context=context)
    results = sorted(rendered + externals, key=lambda r: r.key)
    kept = tree_folders(results, folders)
    files = {f"{key}/{name}": text for key, held in kept.items() for name, text in held.items()}
    files.update(namespace_files(kept))
    return results, dict(sorted(files.items()))


def _given(context: RenderContext) -> RenderContext:
    return context


def _finished(begun: Begun) -> Rendered:
    """The render begun, with every stale ModelDeployment rendered."""
    return finish(begun, begun.gathered())


def _unused() -> RenderContext:
    """The context of a render that must render nothing."""
    raise AssertionError("nothing should have been rendered")


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(edits=st.lists(EDITS, min_size=1, max_size=7))
def test_incremental_render_equals_full_render_after_any_edits(
    schemas: Schemas, edits: list[tuple[Any, ...]]
) -> None:
    sources: dict[str, dict[str, Any]] = {}
    configs, gateway = 0, True
    current: dict[str, str] = {}
    cache = RenderCache()
    for edit in edits:
        if edit[0] == "put":
            sources[f"{edit[2]}/{edit[1]}"] = _deployment(edit[1], edit[2], edit[3])
        elif edit[0] == "remove":
            sources.pop(f"{edit[2]}/{edit[1]}", None)
        elif edit[0] == "configs":
            configs = edit[1]
        elif edit[0] == "gateway":
            gateway = edit[1]
        elif edit[0] == "tamper" and current:
            path = sorted(current)[edit[1] % len(current)]
            current = {**current, path: current[path] + "# edited by hand\n"}
        objects = list(sources.values())
        config_objects = _configs(configs)
        context = RenderContext(
            build_registry(config_objects, flags={}),
            schemas,
            bundled_versions(),
            GatewayTarget("inference", "gateways", False) if gateway else None,
        )
        shared = inputs_digest({"configs": repr(config_objects), "gateway": repr(gateway)})

        incremental = _finished(
            begin(
                objects,
                current=current,
                cache=cache,
                shared=shared,
                context=partial(_given, context),
            )
        )
        full_results, full_files = _full(objects, current, context)

        assert dict(incremental.files) == full_files
        assert _report(incremental.results) == _report(full_results)
        again: Rendered = _finished(
            begin(
                objects, current=full_files, cache=incremental.cache, shared=shared, context=_unused
            )
        )
        assert (again.rendered, dict(again.files)) == (0, full_files)
        assert _report(again.results) == _report(full_results)
        current, cache = full_files, incremental.cache


def test_an_unchanged_tree_renders_nothing_and_one_change_renders_one(schemas: Schemas) -> None:
    objects = [_deployment(n, "team1", ("vllm", 1, 1, False, False, False)) for n in NAMES]
    context = RenderContext(build_registry(SHIPPED, flags={}), schemas, bundled_versions())
    first = _finished(
        begin(objects, current={}, cache=RenderCache(), shared="s", context=lambda: context)
    )
    objects[2] = _deployment("c", "team1", ("vllm", 1, 3, False, False, False))

    unchanged = _finished(
        begin(
            objects[:2] + objects[3:],
            current=first.files,
            cache=first.cache,
            shared="s",
            context=lambda: context,
        )
    )
    changed = _finished(
        begin(objects, current=first.files, cache=first.cache, shared="s", context=lambda: context)
    )
    new_inputs = _finished(
        begin(objects, current=first.files, cache=first.cache, shared="t", context=lambda: context)
    )

    assert (first.rendered, unchanged.rendered, changed.rendered) == (5, 0, 1)
    assert sorted(p for p in changed.files if changed.files[p] != first.files.get(p)) == [
        "team1/c/deployment-c.yaml",
        "team1/c/modeldeployment.yaml",
    ]
    assert new_inputs.rendered == 5  # any shared input changed: everything renders


def test_the_cache_survives_a_round_trip_and_garbage_means_no_cache(tmp_path: Path) -> None:
    path = tmp_path / "cache.json"
    cache = RenderCache(
        {
            "ns/a": Entry("k1", "f1", None, ("a warning",), "vllm", "llmd"),
            "ns/b": Entry("k2", None, "spec.model.id: Required value", (), None, None),
        }
    )
    cache.save(path)

    assert RenderCache.load(path).entries == cache.entries
    path.write_text("{not json")
    assert RenderCache.load(path).entries == {}
    path.write_text('{"format": 1, "entries": {"ns/a": 3}}')
    assert RenderCache.load(path).entries == {}
    path.write_text('{"format": 0, "entries": {}}')
    assert RenderCache.load(path).entries == {}


def test_a_pool_of_processes_renders_exactly_what_one_process_renders(schemas: Schemas) -> None:
    shapes: list[tuple[Any, ...]] = [("vllm", 1, 1, False, False, False)]
    shapes += [("llmd", 2, 2, True, False, False)]
    shapes += [(None, 2, 3, False, False, False), ("vllm", 1, 1, False, True, False)]
    objects = [
        _deployment(f"m{i:03}", NAMESPACES[i % 2], shapes[i % len(shapes)])
        for i in range(POOL_MINIMUM + 7)
    ]
    context = RenderContext(
        build_registry(SHIPPED, flags={}),
        schemas,
        bundled_versions(),
        GatewayTarget("inference", "gateways", False),
    )

    pooled = render_many(objects, previous={}, context=context, workers=2)
    serial = render_many(objects, previous={}, context=context, workers=1)

    assert pooled == serial
    assert [r.key for r in pooled] == [f"{NAMESPACES[i % 2]}/m{i:03}" for i in range(len(objects))]
    # the invalid shape, and the shape without a provider: selection picks KubeRay for two
    # GPUs, which refuses spec.engine.extraArgs (Ray Serve LLM has no command line)
    failing = sum(1 for i in range(len(objects)) if i % len(shapes) in (2, 3))
    assert sum(r.error is not None for r in pooled) == failing


def test_the_command_reuses_unchanged_output_and_full_renders_everything(
    schemas: Schemas, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src, repo = tmp_path / "src", tmp_path / "gitops"
    src.mkdir()
    (src / "mds.yaml").write_text(
        dump_all([_deployment(n, "team1", ("vllm", 1, 1, False, False, False)) for n in NAMES])
    )
    argv = ["render", str(src), "--repo", str(repo), "--commit", "-o", "json"]

    reports = []
    for extra in ([], [], ["--full"]):
        assert main([*argv, *extra]) == 0
        reports.append(json.loads(capsys.readouterr().out))
    stamps = {p: p.stat().st_mtime_ns for p in (repo / "rendered").rglob("*") if p.is_file()}
    assert main([*argv, "--full"]) == 0

    assert [r["reused"] for r in reports] == [0, 5, 0]
    assert len(list((repo / ".git/runway-sources").iterdir())) == 1  # the one source file
    assert [r["results"] for r in reports[1:]] == [reports[0]["results"]] * 2
    assert [r["changes"] for r in reports[1:]] == [{"added": [], "changed": [], "removed": []}] * 2
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps  # nothing rewritten


def test_hand_edits_are_found_by_their_stats_even_with_the_mtime_put_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An unchanged folder is not read, only stat'ed: an edit of the same size with the old
    mtime restored still changes the ctime, so the folder is read, found edited and rendered
    again; a removed file likewise."""
    src, repo = tmp_path / "src", tmp_path / "gitops"
    src.mkdir()
    (src / "mds.yaml").write_text(
        dump_all([_deployment(n, "team1", ("vllm", 1, 1, False, False, False)) for n in NAMES])
    )
    argv = ["render", str(src), "--repo", str(repo), "--commit", "-o", "json"]
    assert main(argv) == 0
    capsys.readouterr()
    edited = repo / "rendered/team1/b/deployment-b.yaml"
    removed = repo / "rendered/team1/d/service-d.yaml"
    original = edited.read_text()
    before = edited.stat()
    edited.write_text(original.replace("replicas: 1", "replicas: 7"))
    os.utime(edited, ns=(before.st_atime_ns, before.st_mtime_ns))
    removed.unlink()

    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)

    assert edited.stat().st_size == before.st_size  # the edit kept the size
    assert (report["reused"], edited.read_text(), removed.is_file()) == (3, original, True)
    assert report["changes"] == {
        "added": ["rendered/team1/d/service-d.yaml"],
        "changed": ["rendered/team1/b/deployment-b.yaml"],
        "removed": [],
    }
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["reused"] == 5


def test_folders_written_while_the_pool_renders_are_reported_against_the_tree_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Rendered folders are written as the pool's chunks arrive (renderer.stages): each file
    replaced is read first, so the report still compares with the tree as it was, and the tree
    is the one a --full render of the same sources into a new repository writes."""
    count = POOL_MINIMUM + 6
    shapes = {f"m{i:03}": ("vllm", 1, 128, False, False, False) for i in range(count)}
    shapes["m002"] = ("vllm", 1, 128, True, False, False)  # with its gateway objects
    src, repo, fresh = tmp_path / "src", tmp_path / "gitops", tmp_path / "fresh"
    src.mkdir()

    def render_into(target: Path, *extra: str) -> dict[str, Any]:
        (src / "mds.yaml").write_text(
            dump_all([_deployment(n, "team1", s) for n, s in shapes.items()])
        )
        argv = ["render", str(src), "--repo", str(target), "--commit", "-o", "json", *extra]
        argv += ["--gateway", "gateways/inference"]
        assert main(argv) == 0
        report: dict[str, Any] = json.loads(capsys.readouterr().out)
        return report

    render_into(repo)
    shapes = {name: ("vllm", 1, 64, False, False, False) for name in shapes}  # all render again
    del shapes["m003"]
    shapes["m999"] = ("vllm", 1, 64, False, False, False)
    report = render_into(repo)  # not --full: unchanged folders are not read before rendering

    gateway = [
        *("clusterrole-team1.m002-epp", "clusterrolebinding-team1.m002-epp"),
        *("configmap-m002-epp", "deployment-m002-epp", "httproute-m002", "inferencepool-m002"),
        *("role-m002-epp", "rolebinding-m002-epp", "service-m002-epp", "serviceaccount-m002-epp"),
    ]
    assert report["changes"] == {
        "added": sorted(
            [f"rendered/team1/m999/{n}.yaml" for n in FOLDER] + [f"rendered/team1/m999/{METADATA}"]
        ),
        "changed": sorted(
            f"rendered/{path}"
            for path in [
                "runway-sources.json",
                "team1/kustomization.yaml",
                "team1/m002/kustomization.yaml",
            ]
            + [f"team1/{n}/deployment-{n}.yaml" for n in shapes if n != "m999"]
            + [f"team1/{n}/modeldeployment.yaml" for n in shapes if n != "m999"]
        ),
        "removed": [f"rendered/team1/m002/{n}.yaml" for n in gateway]
        + sorted(
            [f"rendered/team1/m003/{n.replace('m999', 'm003')}.yaml" for n in FOLDER]
            + [f"rendered/team1/m003/{METADATA}"]
        ),
    }
    render_into(fresh, "--full")
    # runway.metadata records each render's own command (--full here), so it is left out
    assert _files(repo / "rendered", METADATA) == _files(fresh / "rendered", METADATA)


FOLDER = ("deployment-m999", "kustomization", "modeldeployment", "service-m999")
METADATA = "runway.metadata"  # where the folder came from (renderer/git/provenance.py)


def _files(root: Path, leave_out: str = "") -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != leave_out
    }
