"""cli/main.py is the CLI's one error boundary over the core's error tree only: it imports no
edge (its imports, read with ast), and each core error, and each edge error through the core
error it derives from, maps to its exit status."""

from __future__ import annotations

import ast

import pytest
from kubernetes.client import ApiException

from cli.exits import Exit
from cli.main import exit_for
from core.fields.errors import (
    IncompatibleUpstream,
    RunwayError,
    SourceError,
    Unavailable,
    UsageError,
)
from gateway.litellm import LiteLLMUnavailable
from kubeio.client import unavailable
from tests.support.paths import ROOT
from webhook.settings import SettingsError

EDGES = ("webhook", "renderer", "gateway", "certs", "controller", "providers", "ui", "kubeio")


def test_main_imports_no_edge_and_sniffs_no_modules() -> None:
    source = (ROOT / "cli" / "main.py").read_text()
    imported = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)

    assert sorted(m for m in imported if m.split(".")[0] in EDGES) == []
    assert "sys.modules" not in source


@pytest.mark.parametrize(
    ("err", "code"),
    [
        (SourceError("f.yaml", "not YAML"), Exit.USAGE),
        (UsageError("--port", "is not a port"), Exit.USAGE),
        (Unavailable("git push failed"), Exit.UNAVAILABLE),
        (FileNotFoundError(2, "No such file or directory", "f.yaml"), Exit.UNAVAILABLE),
        (RunwayError("something was refused"), Exit.PARTIAL),
        (IncompatibleUpstream("spec.x", "not declared"), Exit.PARTIAL),
        (SettingsError("RUNWAY_PORT", "must be a whole number"), Exit.USAGE),
        (LiteLLMUnavailable("http://litellm/model/info: timed out"), Exit.UNAVAILABLE),
        (unavailable(ApiException(status=503, reason="Service Unavailable")), Exit.UNAVAILABLE),
        (ValueError("a bug"), None),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, Exception) else str(value),
)
def test_each_error_maps_to_its_exit_status(err: Exception, code: Exit | None) -> None:
    assert exit_for(err) == code
