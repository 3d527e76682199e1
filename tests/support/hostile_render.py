"""Hostile render inputs shared by the render safety tests and `make fuzz` (tests/fuzzing/render.py):
names that try to leave the tree, symbolic links planted in the GitOps repository or the
sources, and YAML whose aliases expand exponentially. Each case runs a real `runway render`
into a real Git repository inside a scratch folder, and the check is that nothing outside the
repository changed."""

from __future__ import annotations

import contextlib
import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from cli.main import main
from kubeio.yamlio import dump_all
from tests.support.builders import model_deployment

EMP_API = "gateway.tokenfactory.mirantis.com/v1alpha1"
# The repository sits DEPTH folders below the case folder, deeper than a namespace and a name
# can climb together (2 x (UP + 1) levels), so that even code that followed every traversal
# (the old renderer did) writes only inside the case folder, where the check looks.
UP = 4
DEPTH = 12

TRAVERSALS = st.builds(
    lambda up, leaf: "../" * up + leaf, st.integers(0, UP), st.sampled_from(["x", "outside", ".."])
)  # fmt: skip
NAMES = st.one_of(
    TRAVERSALS,
    st.sampled_from(["", ".", "..", "/abs", "a/b", "a\\b", "A", "a_b", "-a", "é", "a" * 300, "ok"]),
    st.text(alphabet="a./-_", max_size=12),
)
# (path in the repository's work tree of a link, what it points to: a folder or a file outside)
LINKS = st.sampled_from(
    [
        None,
        ("rendered", "dir"),
        ("rendered/models", "dir"),
        ("rendered/models/ok", "dir"),
        ("rendered/models/ok/modeldeployment.yaml", "file"),
        ("rendered/kustomization.yaml", "file"),
        ("rendered/runway-sources.json", "file"),
        ("rendered/models/kustomization.yaml", "file"),
    ]
)


@dataclass(frozen=True)
class Case:
    """One hostile render: a ModelDeployment's namespace and name, an ExternalModelProvider's
    name, a link planted in the repository (after a first render), and one in the sources."""

    namespace: str
    name: str
    emp: str
    link: tuple[str, str] | None
    source_link: bool


CASES = st.builds(Case, NAMES, NAMES, NAMES, LINKS, st.booleans())


def snapshot(root: Path, skip: Path) -> dict[str, Any]:
    """Every entry under `root` but `skip`: a file's bytes, a link's target, a folder."""
    found: dict[str, Any] = {}
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        dirs[:] = [d for d in dirs if here / d != skip]
        for name in sorted(dirs + files):
            path = here / name
            key = str(path.relative_to(root))
            if path.is_symlink():
                found[key] = ("link", os.readlink(path))
            elif path.is_file():
                found[key] = ("file", path.read_bytes())
            else:
                found[key] = ("dir",)
    return found


def render(*argv: str) -> int:
    """`runway render` in process, its output swallowed."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return main(["render", *argv])


def plant(case: Case, base: Path) -> tuple[Path, Path]:
    """The case's sources and repository under `base`, rendered once cleanly, then the link
    planted (as a push would bring it); returns (sources, repo)."""
    home = base.joinpath(*["d"] * DEPTH)  # links point to siblings of the repository here
    outside = home / "outside"
    (outside / "dir").mkdir(parents=True)
    (outside / "dir" / "precious.yaml").write_text("precious: true\n")
    (outside / "file.yaml").write_text("precious: true\n")
    repo = home / "repo"
    sources = home / "sources"
    sources.mkdir()
    (sources / "ok.yaml").write_text(
        dump_all([model_deployment("ok", "models", gpu=1, provider="vllm", engine="vllm")])
    )
    assert render(str(sources), "--repo", str(repo), "--commit") == 0
    (sources / "hostile.yaml").write_text(dump_all(hostile_objects(case)))
    if case.link is not None:
        at, kind = case.link
        target = repo / at
        if target.is_dir() and not target.is_symlink():
            for child in sorted(target.rglob("*"), reverse=True):
                child.rmdir() if child.is_dir() else child.unlink()
            target.rmdir()
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.unlink(missing_ok=True)
        target.symlink_to(outside / kind)
    if case.source_link:
        (sources / "linked.yaml").symlink_to(outside / "file.yaml")
    return sources, repo


def hostile_objects(case: Case) -> list[dict[str, Any]]:
    md = model_deployment(case.name, case.namespace, gpu=1, provider="vllm", engine="vllm")
    emp = {
        "apiVersion": EMP_API,
        "kind": "ExternalModelProvider",
        "metadata": {"name": case.emp, "namespace": "gw"},
        "spec": {
            "baseURL": "https://api.openai.com/v1",
            "credentialsSecretRef": {"name": "openai", "key": "key"},
            "models": [{"servedName": "gpt-4o"}],
        },
    }
    return [md, emp]


def outside_changes(case: Case, base: Path) -> list[str]:
    """Run the case; the entries outside the repository that it changed (none, by the rule)."""
    sources, repo = plant(case, base)
    before = snapshot(base, repo)
    render(str(sources), "--repo", str(repo), "--commit")
    render(str(sources), "--repo", str(repo), "--check")
    after = snapshot(base, repo)
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


def laughs(depth: int, width: int) -> str:
    """A ModelDeployment whose spec holds nested aliases: width**depth values when expanded."""
    lines = [
        "apiVersion: airunway.ai/v1alpha1",
        "kind: ModelDeployment",
        "metadata: {name: laughs, namespace: models}",
        "spec:",
        "  model: {id: org/model}",
        f"  l0: &l0 [{', '.join(['lol'] * width)}]",
    ]
    lines += [f"  l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]" for i in range(1, depth)]
    return "\n".join(lines) + "\n"


def laughs_nodes(depth: int, width: int) -> int:
    """The nodes of `laughs(depth, width)` with every alias written out: the fixed part (the
    root, apiVersion, kind, metadata and spec.model, keys and values) plus each list l_i, which
    holds `width` copies of l_(i-1) (l_0: `width` scalars)."""
    fixed = 1 + 2 + 2 + (2 + 4) + 2 + (2 + 2) + depth  # root; 2 pairs; metadata; spec; model; keys
    level, total = 1 + width, 0
    for _ in range(depth):
        total += level
        level = 1 + width * level
    return fixed + total
