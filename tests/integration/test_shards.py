"""`runway render --shard K/N`: the partition by namespace is fixed and total, the N shards
together write exactly the tree one full render writes (in any order, again after the sources
change), and N shard processes pushing at once to one branch of a loopback Git server converge
on that tree, byte for byte, without one shard's commit losing another's."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.fields.errors import SourceError
from kubeio.yamlio import dump_all
from renderer.flow import render as run_render
from renderer.output.shard import Shard
from renderer.settings import RenderSettings
from tests.support.builders import model_deployment
from tests.support.gitserver import GitServer, start_git_server
from tests.support.shards import start_shards

NAMESPACES = [f"team-{i}" for i in range(12)]


def files_of(repo: Path, subdir: str = "rendered") -> dict[str, bytes]:
    root = repo / subdir
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def objects(names: list[tuple[str, str]]) -> list[dict[str, Any]]:
    return [
        model_deployment(name, namespace, gpu=1, engine="vllm", provider="vllm")
        for namespace, name in names
    ]


def render(sources: Path, repo: Path, shard: Shard | None = None, **more: Any) -> None:
    run_render(
        RenderSettings(sources=(str(sources),), repo=str(repo), commit=True, shard=shard, **more)
    )


@pytest.mark.parametrize("count", [1, 2, 3, 5, 16])
def test_every_namespace_is_in_exactly_one_shard(count: int) -> None:
    names = [f"ns-{i}" for i in range(500)] + ["", "a" * 63, "kube-system"]
    owners = {ns: [k for k in range(1, count + 1) if Shard(k, count).owns(ns)] for ns in names}

    assert all(len(found) == 1 for found in owners.values())
    # fixed: the same answer from a new object, and spread over every shard
    assert all(Shard(found[0], count).owns(ns) for ns, found in owners.items())
    assert {found[0] for found in owners.values()} == set(range(1, count + 1))


@pytest.mark.parametrize("value", ["0/2", "3/2", "2", "a/b", "1/0", "-1/2", "1/2/3", ""])
def test_a_shard_that_is_not_k_of_n_is_refused(value: str) -> None:
    with pytest.raises(Exception, match="--shard: expected K/N"):
        Shard.parse(value)


@settings(max_examples=500)
@given(
    value=st.text(max_size=12)
    | st.builds("{}/{}".format, st.text(max_size=4), st.text(max_size=4))
    | st.sampled_from(["\u00b2/3", "1/\u00b3", "\u0663/\u0664", "1/2\n", " 1/2", "\uff11/2"])
)
def test_a_shard_is_ascii_k_of_n_and_anything_else_is_refused_naming_the_flag(value: str) -> None:
    left, slash, right = value.partition("/")
    ascii_digits = all(part and set(part) <= set("0123456789") for part in (left, right))
    if slash and ascii_digits and 1 <= int(left) <= int(right):
        assert Shard.parse(value) == Shard(int(left), int(right))
    else:
        with pytest.raises(SourceError, match="--shard: expected K/N"):
            Shard.parse(value)


names_st = st.lists(
    st.tuples(st.sampled_from(NAMESPACES), st.sampled_from(["a", "b", "c", "d"])),
    min_size=1,
    max_size=14,
    unique=True,
)


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    first=names_st,
    second=names_st,
    count=st.integers(1, 4),
    order=st.permutations([1, 2, 3, 4]),
)
def test_the_shards_together_write_what_one_full_render_writes(
    tmp_path_factory: pytest.TempPathFactory,
    first: list[tuple[str, str]],
    second: list[tuple[str, str]],
    count: int,
    order: list[int],
) -> None:
    work = tmp_path_factory.mktemp("shards")
    sources = work / "models.yaml"
    full, sharded = work / "full", work / "sharded"
    for names in (first, second):  # then the sources change: added, changed, removed
        sources.write_text(dump_all(objects(names)))
        render(sources, full, max_removals=100)
        for index in [k for k in order if k <= count]:
            render(sources, sharded, Shard(index, count), max_removals=100)

        assert files_of(sharded) == files_of(full)


def test_a_shard_never_touches_another_shards_folders(tmp_path: Path) -> None:
    sources = tmp_path / "models.yaml"
    repo = tmp_path / "gitops"
    names = [(ns, "m") for ns in NAMESPACES]
    sources.write_text(dump_all(objects(names)))
    render(sources, repo)
    mine = [ns for ns in NAMESPACES if Shard(1, 3).owns(ns)]
    theirs = [ns for ns in NAMESPACES if not Shard(1, 3).owns(ns)]
    before = files_of(repo)

    sources.write_text(dump_all(objects([(ns, "m") for ns in mine])))  # the others' are gone
    render(sources, repo, Shard(1, 3))

    assert files_of(repo) == before  # nothing of theirs removed; nothing of mine changed
    sources.write_text(dump_all(objects([(ns, "m") for ns in theirs])))  # mine are gone now
    render(sources, repo, Shard(1, 3))
    after = files_of(repo)
    assert {p.split("/")[0] for p in after if "/" in p} == set(theirs)
    assert {p: t for p, t in after.items() if p.split("/")[0] in theirs} == {
        p: t for p, t in before.items() if p.split("/")[0] in theirs
    }


@pytest.fixture
def git_server(tmp_path: Path) -> Iterator[GitServer]:
    server = start_git_server(tmp_path / "server")
    try:
        yield server
    finally:
        server.stop()


def git(*args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=True
    )
    return done.stdout


@pytest.mark.parametrize("count", [2, 4])
def test_shards_pushing_at_once_converge_on_one_full_render(
    tmp_path: Path, git_server: GitServer, count: int
) -> None:
    sources = tmp_path / "models.yaml"
    names = [(ns, n) for ns in NAMESPACES for n in ("a", "b")]
    sources.write_text(dump_all(objects(names)))
    url = git_server.create("gitops")
    seed = tmp_path / "seed"
    git("init", "-q", "--initial-branch=main", str(seed))
    (seed / "README.md").write_text("the GitOps repository\n")
    git("-C", str(seed), "add", "README.md")
    git("-C", str(seed), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "seed")
    git("-C", str(seed), "push", "-q", url, "HEAD:refs/heads/main")
    clones = []
    for k in range(1, count + 1):
        clone = tmp_path / f"shard-{k}"
        git("clone", "-q", url, str(clone))
        clones.append(clone)

    running = start_shards(sources, clones)
    outcomes = []
    for process in running:  # read while waiting: a full pipe would block the shard
        _, stderr = process.communicate(timeout=300)
        outcomes.append((process.returncode, stderr))
    final = tmp_path / "final"
    git("clone", "-q", url, str(final))
    full = tmp_path / "full"
    render(sources, full)
    log = git("-C", str(final), "log", "--format=%s").splitlines()

    assert outcomes == [(0, "")] * count
    # the same tree, but for where each folder came from: the shard's command, or the full one's
    rendered = {p: t for p, t in files_of(final).items() if not p.endswith("/runway.metadata")}
    assert rendered == {
        p: t for p, t in files_of(full).items() if not p.endswith("/runway.metadata")
    }
    assert len(files_of(final)) == len(files_of(full))
    assert (final / "README.md").read_text() == "the GitOps repository\n"
    # one commit per shard on top of the seed: none was lost, none was forced over
    assert len(log) == count + 1 and log[-1] == "seed"
