"""The dependency rules of DESIGN.md, checked on the source: providers/ is a pure core."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import ROOT

OUR_PACKAGES = {"providers", "cli", "webhook", "renderer", "gateway", "certs"}
FORBIDDEN_IN_CORE = OUR_PACKAGES - {"providers"} | {
    "flask",
    "gunicorn",
    "werkzeug",
    "kubernetes",
    "dulwich",
    "git",
    "pygit2",
    "requests",
    "urllib3",
    "http",
    "socket",
    "subprocess",
    "os",
    "logging",
    "threading",
    "random",
    "time",
    "datetime",
}


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


CORE = sorted((ROOT / "providers").glob("*.py"))


@pytest.mark.parametrize("path", CORE, ids=lambda p: p.name)
def test_core_module_imports_no_edge_and_no_io(path: Path) -> None:
    assert imports_of(path) & FORBIDDEN_IN_CORE == set()


@pytest.mark.parametrize("path", CORE, ids=lambda p: p.name)
def test_core_module_imports_only_at_the_top(path: Path) -> None:
    tree = ast.parse(path.read_text())
    nested = [
        node.lineno
        for func in ast.walk(tree)
        if isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef)
        for node in ast.walk(func)
        if isinstance(node, ast.Import | ast.ImportFrom)
    ]
    assert nested == []


def test_the_core_is_really_checked() -> None:
    assert len(CORE) >= 15
