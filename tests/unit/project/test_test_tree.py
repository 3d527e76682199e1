"""The test tree says where a test goes: shared helpers live only in tests/support/ (no test
module imports another), and every wait is `wait_until` with a reason, never a sleep."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.paths import ROOT

TESTS = ROOT / "tests"
# What a test module may import of tests/: the helpers, the Go builds of the cluster tier and the
# fuzz harness (`make fuzz`'s areas, which the unit tier also tests); never another test module.
SHARED = ("tests.support", "tests.cluster", "tests.fuzzing")


def _python_files() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if "__pycache__" not in p.parts)


def _imported(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.append(node.module)
        elif isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
    return [name for name in found if name == "tests" or name.startswith("tests.")]


def test_no_test_module_imports_another() -> None:
    wrong = []
    for path in _python_files():
        for name in _imported(path):
            if not name.startswith(SHARED):
                wrong.append(f"{path.relative_to(ROOT)}: imports {name}")
    assert wrong == []


def test_no_test_sleeps_for_an_event() -> None:
    """A sleep outside tests/support/ must say on its line why it is not a wait (pacing a load,
    killing at an arbitrary moment, sampling a window); a wait is `wait_until(..., what=...)`."""
    bare = []
    for path in _python_files():
        if path.parent == TESTS / "support":
            continue
        text = path.read_text()
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text, str(path))):
            if isinstance(node, ast.Call) and _is_sleep(node):
                line = lines[(node.end_lineno or node.lineno) - 1]
                if "#" not in line:
                    bare.append(f"{path.relative_to(ROOT)}:{node.lineno}: {line.strip()}")
    assert bare == []


def _is_sleep(node: ast.Call) -> bool:
    """A call of time.sleep (as `time.sleep(...)`)."""
    return (
        isinstance(node.func, ast.Attribute)
        and node.func.attr == "sleep"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "time"
    )


# tests/unit/ folders that are not a package of the product: the shipped manifests and chart,
# the development tools, and the project's own rules (layering, packaging, pins, this file).
NOT_PACKAGES = {"deploy", "tools", "project"}


def test_the_unit_tier_mirrors_the_packages() -> None:
    """A unit test lives under tests/unit/<package>/<sub-package>/, as the code it tests: no
    test module at tests/unit's root, and each folder a package of the product (or one of
    NOT_PACKAGES)."""
    unit = TESTS / "unit"
    loose = sorted(p.name for p in unit.glob("test_*.py"))
    strays = []
    for folder in sorted(p for p in unit.rglob("*") if p.is_dir() and p.name != "__pycache__"):
        relative = folder.relative_to(unit)
        if relative.parts[0] in NOT_PACKAGES:
            continue
        if not (ROOT / relative / "__init__.py").is_file():
            strays.append(str(relative))
    assert (loose, strays) == ([], [])
