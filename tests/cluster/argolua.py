"""Argo CD's own Lua health test, run over Runway's health checks (tests/e2e/test_argocd_lua.py).

Argo CD keeps its built-in checks as resource_customizations/<group>/<Kind>/{health.lua,
health_test.yaml,testdata/} and tests them with TestLuaHealthScript (util/lua/health_test.go:36 at
ARGOCD_VERSION v3.5.7). That test walks ../../resource_customizations for every health.lua, reads
the health_test.yaml beside it and, for each test, loads the inputPath object (getObj,
health_test.go:25), finds the script with VM.GetHealthScript (util/lua/lua.go:169), which reads
the built-in scripts from the resource_customizations package's embed.FS, runs it with
VM.ExecuteHealthLua (lua.go:132) and compares the answer with healthStatus.

So the test runs unchanged over a build tree: a copy of the Argo CD module at the pin (the one
tests/cluster/argocd/go.mod requires, checked against its go.sum when downloaded) whose
resource_customizations holds only its embed.go and Runway's checks
(kustomize/argocd/resource_customizations), and a harness module with tests/cluster/argocd's
go.mod and go.sum plus one replace line pointing Argo CD at the copy. `make cluster` builds the
test once (build), so the Go build cache holds every package; the tier then only compiles the
changed embed and links, offline (GOPROXY=off).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from core.model.versions import Versions
from tests.cluster.build import HERE, ROOT, check_pin, go_env, module_dir, say

MODULE = "github.com/argoproj/argo-cd/v3"
PACKAGE = f"{MODULE}/util/lua"
TEST = "TestLuaHealthScript"
CUSTOMIZATIONS = ROOT / "kustomize" / "argocd" / "resource_customizations"
GO_MODULE = HERE / "argocd"  # its go.mod and go.sum pin the Argo CD module and its graph
# Folders of the module no package of util/lua's test needs (documentation, the web UI, install
# manifests, e2e fixtures, scripts) and Argo CD's own checks, which the copy replaces.
NOT_COPIED = frozenset(
    {"docs", "ui", "manifests", "examples", "test", "hack", "resource_customizations"}
)
EMBED = "resource_customizations/embed.go"
TIMEOUT_SECONDS = 3600


@dataclass(frozen=True)
class Outcome:
    """One run of the harness: go test's exit code, the result of each subtest of TEST by name
    (`<group>/<Kind>/<inputPath>`: pass or fail) and the whole output (for failures)."""

    code: int
    results: dict[str, str]
    output: str


def module_version() -> str:
    for line in (GO_MODULE / "go.mod").read_text().splitlines():
        parts = line.split()
        if parts[:1] == [MODULE] and len(parts) >= 2:
            return parts[1]
    raise SystemExit(f"[cluster] {GO_MODULE}/go.mod does not require {MODULE}")


def _copy_tree(source: Path, dest: Path) -> None:
    """`source` into `dest`, writable (the module cache is read-only), without NOT_COPIED."""
    for folder, dirs, files in os.walk(source):
        relative = Path(folder).relative_to(source)
        if relative == Path("."):
            dirs[:] = [d for d in dirs if d not in NOT_COPIED]
        (dest / relative).mkdir(parents=True, exist_ok=True)
        for name in files:
            shutil.copyfile(Path(folder) / name, dest / relative / name)


def assemble(workdir: Path, customizations: Path = CUSTOMIZATIONS) -> Path:
    """The build tree in `workdir` with `customizations` as the module's only checks; the
    harness module's folder. Reuses a module copy already there."""
    tree = workdir / "argo-cd"
    if not (tree / "go.mod").exists():
        source = module_dir(MODULE, module_version())
        partial = workdir / "argo-cd.partial"
        if partial.exists():
            shutil.rmtree(partial)
        _copy_tree(source, partial)
        (partial / EMBED).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / EMBED, partial / EMBED)
        partial.rename(tree)
    checks = tree / "resource_customizations"
    for entry in checks.iterdir():
        if entry.is_dir():
            shutil.rmtree(entry)
    for group in sorted(p for p in customizations.iterdir() if p.is_dir()):
        shutil.copytree(group, checks / group.name, copy_function=shutil.copyfile)
    harness = workdir / "harness"
    harness.mkdir(exist_ok=True)
    gomod = (GO_MODULE / "go.mod").read_text()
    (harness / "go.mod").write_text(f"{gomod}\nreplace {MODULE} => ../argo-cd\n")
    shutil.copyfile(GO_MODULE / "go.sum", harness / "go.sum")
    return harness


def run(harness: Path, *, offline: bool = True, compile_only: bool = False) -> Outcome:
    """`go test` of Argo CD's TEST in the build tree (only compiled and linked: compile_only)."""
    env = go_env() | {"GOWORK": "off", "GOFLAGS": "-mod=readonly"}
    if offline:
        env["GOPROXY"] = "off"
    pattern = "^$" if compile_only else f"^{TEST}$"
    argv = ["go", "test", "-trimpath", "-vet=off", "-count=1", "-json", "-run", pattern, PACKAGE]
    done = subprocess.run(
        argv,
        cwd=harness,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_SECONDS,
        check=False,
    )
    results: dict[str, str] = {}
    output = []
    for line in done.stdout.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            output.append(line)
            continue
        output.append(event.get("Output") or "")
        name = event.get("Test") or ""
        if name.startswith(f"{TEST}/") and event.get("Action") in ("pass", "fail"):
            results[name.removeprefix(f"{TEST}/")] = event["Action"]
    return Outcome(done.returncode, results, "".join(output) + done.stderr)


def build(cache: Path, versions: Versions, go: str) -> None:
    """Compile Argo CD's health test once with Runway's checks, filling the Go module and build
    caches (the tier then runs offline); a marker says for which go.mod, go.sum and Go."""
    check_pin(GO_MODULE, MODULE, "ARGOCD_VERSION", versions.as_env()["ARGOCD_VERSION"])
    marker = cache / "argolua.compiled"
    wanted = go + "\n" + (GO_MODULE / "go.mod").read_text() + (GO_MODULE / "go.sum").read_text()
    if marker.exists() and marker.read_text() == wanted:
        say("argolua (Argo CD's Lua health test): up to date")
        return
    say("argolua: compiling Argo CD's Lua health test (the first build takes minutes)")
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="runway-argolua-") as workdir:
        outcome = run(assemble(Path(workdir)), offline=False, compile_only=True)
    if outcome.code != 0:
        raise SystemExit(f"[cluster] argolua: go test failed:\n{outcome.output[-4000:]}")
    marker.write_text(wanted)
    say(f"argolua: compiled in {time.monotonic() - start:.0f}s")
