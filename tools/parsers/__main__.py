"""`make parsers`: `python -m tools.parsers [--set NAME ...] [--json PATH]` (see __init__.py)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kubeio.shipped import bundled_versions
from tests.support.builders import shipped_registry
from tools.flags import pins as read_pins
from tools.parsers.cases import jobs as collect_jobs
from tools.parsers.venvs import EngineSet, engine_sets, ensure

ROOT = Path(__file__).resolve().parent.parent.parent
CHECK = Path(__file__).resolve().parent / "check.py"
GIB = 1024**3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.parsers", description=__doc__)
    parser.add_argument("--set", action="append", help="only these engine sets (repeatable)")
    parser.add_argument("--json", help="also write every verdict and measurement here")
    parser.add_argument("--wheels", default=str(ROOT / ".cache" / "parsers" / "wheels"))
    parser.add_argument(
        "--keep-wheels", action="store_true", help="keep each set's downloaded wheels"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="print every verdict")
    options = parser.parse_args(argv)
    started = time.monotonic()
    wheels = Path(options.wheels)
    sets = [s for s in engine_sets(read_pins(), wheels) if not options.set or s.name in options.set]
    jobs, empty = collect_jobs(shipped_registry(), bundled_versions(), ROOT / "examples")
    rendered = time.monotonic()
    refused = {case: why for case, why in empty.items() if why.startswith("not admitted")}
    report: dict[str, Any] = {"sets": {}, "refused": refused, "verdicts": []}
    for engine in sets:
        mine = [j for j in jobs if j["entry"] in engine.entries]
        built = ensure(engine, ROOT, wheels, keep_wheels=options.keep_wheels)
        began = time.monotonic()
        result = run(engine, mine)
        report["sets"][engine.name] = {
            **built,
            "versions": result["versions"],
            "jobs": len(mine),
            "check_seconds": round(time.monotonic() - began, 1),
        }
        expected = {j["id"]: j.get("expect", "parsed") for j in mine}
        report["verdicts"] += [
            {**v, "set": engine.name, "expect": expected[v["id"]]} for v in result["verdicts"]
        ]
    unparsed = {j["entry"] for j in jobs} - {e for s in sets for e in s.entries}
    report["render_seconds"] = round(rendered - started, 1)
    report["total_seconds"] = round(time.monotonic() - started, 1)
    print_report(
        report, jobs, verbose=options.verbose, unparsed=unparsed if not options.set else set()
    )
    if options.json:
        Path(options.json).write_text(json.dumps(report, indent=1) + "\n")
    failed = [v for v in report["verdicts"] if not passed(v)]
    return 1 if failed or refused or (unparsed and not options.set) else 0


def passed(verdict: Mapping[str, Any]) -> bool:
    """A launch passes when it parses; a control launch when the parser refuses it."""
    return bool(verdict["ok"]) != (str(verdict["expect"]) == "refused")


def run(engine: EngineSet, jobs: list[dict[str, Any]]) -> dict[str, Any]:
    """The set's verdicts: check.py under the set's Python, in an empty working directory (the
    model `org/model` is not a local path there, and nothing is written beside the project)."""
    with tempfile.TemporaryDirectory(prefix=f"parsers-{engine.name}-") as work:
        given, taken = Path(work) / "jobs.json", Path(work) / "verdicts.json"
        given.write_text(json.dumps(jobs))
        done = subprocess.run(
            [str(engine.python(ROOT)), str(CHECK), str(given), str(taken)],
            cwd=work,
            capture_output=True,
            text=True,
            timeout=3600,
            check=False,
        )
        if done.returncode != 0 or not taken.exists():
            tail = "\n".join(done.stderr.splitlines()[-20:])
            raise SystemExit(f"parsers: {engine.name}: check.py exited {done.returncode}\n{tail}")
        result: dict[str, Any] = json.loads(taken.read_text())
    return result


def print_report(
    report: Mapping[str, Any], jobs: list[dict[str, Any]], *, verbose: bool, unparsed: set[str]
) -> None:
    cases = {j["id"]: j["case"] for j in jobs}
    for name, built in report["sets"].items():
        versions = ", ".join(f"{k} {v}" for k, v in sorted(built["versions"].items()))
        print(
            f"{name}: {built['jobs']} launches parsed in {built['check_seconds']} s ({versions}); "
            f"venv {built['venv_bytes'] / GIB:.1f} GiB, downloaded "
            f"{built['download_bytes'] / GIB:.1f} GiB in {built['download_seconds']} s, "
            f"installed in {built['install_seconds']} s"
        )
    for verdict in report["verdicts"]:
        if verbose or not passed(verdict):
            mark = "ok  " if passed(verdict) else "FAIL"
            detail = f": {verdict['detail']}" if verdict["detail"] else ""
            print(f"  {mark} [{verdict['set']}] {verdict['id']}{detail}")
    notes = sorted({n for v in report["verdicts"] if v["expect"] != "refused" for n in v["notes"]})
    for note in notes:
        users = [v for v in report["verdicts"] if note in v["notes"] and v["expect"] != "refused"]
        print(f"  note ({len(users)} launches, e.g. {users[0]['id']}): {note}")
    for case, why in sorted(report["refused"].items()):
        print(f"  FAIL {case}: {why}")
    for entry in sorted(unparsed):
        print(f"  FAIL no engine set parses {entry}")
    controls = [v for v in report["verdicts"] if v["expect"] == "refused"]
    failed = sum(not passed(v) for v in report["verdicts"])
    print(
        f"parsers: {len(report['verdicts']) - len(controls)} launches of "
        f"{len(set(cases.values()) - {'control'})} cases and {len(controls)} controls "
        f"(a flag no engine has), {failed} failed; rendered in {report['render_seconds']} s, "
        f"{report['total_seconds']} s in all"
    )


if __name__ == "__main__":
    sys.exit(main())
