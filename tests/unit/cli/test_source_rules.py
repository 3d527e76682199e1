"""One rule for every command that reads sources (issue #40 items 12 and 17, class 7).

Item 12: a file or folder under the sources whose name is not UTF-8 crashed every render with a
UnicodeEncodeError traceback and exit 1 (which reads as "partial", or for --check as "out of
date"). Now every command that reads sources answers 2 with one line naming the path, its
bytes escaped.

Item 17: a ConfigMap anywhere in the sources stopped the whole render (exit 2) while `validate`
skipped it, and a misspelled kind of Runway's own group (`ModelDeploymnet`) passed `validate`
(exit 0) that `render` then refused. Now the kind of each document is sorted once
(kubeio.sources.is_runway_kind), the same for every command: another API group's kind is
skipped with a note; an unknown kind of Runway's groups is unusable input (2) with a suggestion.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli.exits import Exit
from cli.main import main
from core.model.kinds import EMP_GROUP, GROUP
from kubeio.yamlio import dump
from tests.support.builders import model_deployment

RENDERS = (("render",), ("render", "--check"), ("render", "--diff"))
READERS = (*RENDERS, ("validate",), ("explain",))
NOT_UTF8 = "the name is not UTF-8 text; Runway reads sources only under UTF-8 names (rename it)"
SKIPPED = "not a kind of Runway's API groups"
KNOWN = {
    GROUP: ("ModelDeployment", "InferenceProviderConfig"),
    EMP_GROUP: ("ExternalModelProvider",),
}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def argv(command: tuple[str, ...], source: str, repo: Path) -> list[str]:
    """The command reading `source` and every folder under it (-R)."""
    if command[0] == "render":
        return [command[0], "-R", source, "--repo", str(repo), *command[1:]]
    return [*command, "-R", source]


def sources(root: Path) -> Path:
    """A source folder with one ModelDeployment that renders and validates."""
    src = root / "src"
    src.mkdir(parents=True)
    (src / "model.yaml").write_text(dump(model_deployment("m", "team", gpu=1)))
    return src


# -- item 12: names that are not UTF-8 -----------------------------------------------------------

# A file name's bytes as the operating system holds them: anything but "/" and NUL, and not
# UTF-8 (the names Python can only carry as lone surrogates).
NAMES = (
    st.binary(min_size=1, max_size=12)
    .map(lambda b: b.replace(b"/", b"_").replace(b"\0", b"_"))
    .filter(lambda b: not _utf8(b))
)


def _utf8(name: bytes) -> bool:
    try:
        name.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def escaped(path: bytes) -> str:
    """How the message names the path (documented): each byte that is not UTF-8 as \\xNN, each
    character that is not printable as its Python escape."""
    text = path.decode("utf-8", "backslashreplace")
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


@pytest.mark.parametrize("command", READERS, ids=" ".join)
@pytest.mark.parametrize("shape", ["file", "folder", "nested", "named"])
def test_a_name_that_is_not_utf8_is_unusable_input_naming_the_path(
    command: tuple[str, ...],
    shape: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    src = sources(Path("."))
    text = (src / "model.yaml").read_bytes()
    bad = {
        "file": b"src/\xff.yaml",
        "folder": b"src/\xfe\xff",
        "nested": b"src/ok/caf\xe9/x.yaml",
        "named": b"src/\xff.yaml",
    }[shape]
    target = bad if shape != "folder" else bad + b"/x.yaml"
    os.makedirs(os.path.dirname(target), exist_ok=True)
    Path(os.fsdecode(target)).write_bytes(text)
    source = os.fsdecode(bad) if shape == "named" else "src"
    where = target

    code, out, err = run(capsys, *argv(command, source, Path("repo")))

    assert (code, out, err) == (Exit.USAGE, "", f"runway: {escaped(where)}: {NOT_UTF8}\n")


@pytest.mark.parametrize("command", RENDERS, ids=" ".join)
def test_an_output_path_that_is_not_utf8_is_unusable_input_naming_it(
    command: tuple[str, ...],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    sources(Path("."))
    bad = b"out\xff"

    code, out, err = run(capsys, *argv(command, "src", Path("repo")), "--path", os.fsdecode(bad))

    assert (code, out, err) == (Exit.USAGE, "", f"runway: {escaped(bad)}: {NOT_UTF8}\n")
    assert sorted(os.listdir(tmp_path)) == ["src"]


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(name=NAMES, folder=st.booleans(), suffix=st.sampled_from([b".yaml", b".yml", b".txt", b""]))
def test_every_source_whose_path_is_not_utf8_stops_every_reader_with_exit_2(
    name: bytes,
    folder: bool,
    suffix: bytes,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A YAML file under the sources, or one in a folder, whose path is not UTF-8: exit 2 naming
    it; a file no command reads (another suffix): every command answers as without it."""
    root = tmp_path / "case"
    shutil.rmtree(root, ignore_errors=True)
    src = sources(root)
    before = [run(capsys, *argv(command, str(src), root / "repo")) for command in READERS]
    shutil.rmtree(root / "repo", ignore_errors=True)
    entry = os.fsencode(src) + b"/" + name + suffix
    if folder:
        os.mkdir(entry)
        entry += b"/more.yaml"
        Path(os.fsdecode(entry)).write_bytes((src / "model.yaml").read_bytes())
    else:
        Path(os.fsdecode(entry)).write_bytes(b"not: read\n")
    read = folder or suffix in (b".yaml", b".yml")
    refused = (Exit.USAGE, "", f"runway: {escaped(entry)}: {NOT_UTF8}\n")

    after = [run(capsys, *argv(command, str(src), root / "repo")) for command in READERS]

    assert after == ([refused] * len(READERS) if read else before)


# -- item 17: the kinds of the sources ----------------------------------------------------------


def document(api_version: str, kind: str) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x", "namespace": "team"}}


def test_a_configmap_is_skipped_with_the_same_note_by_validate_and_render(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = sources(tmp_path)
    (src / "cm.yaml").write_text(dump(document("v1", "ConfigMap")))
    note = f"runway: skipped ConfigMap/x ({src / 'cm.yaml'} (document 1)): {SKIPPED}\n"
    repo = tmp_path / "repo"

    validated = run(capsys, "validate", str(src))
    explained = run(capsys, "explain", str(src))
    rendered = run(capsys, "render", str(src), "--repo", str(repo))
    checked = run(capsys, "render", str(src), "--repo", str(repo), "--check")

    assert validated == (
        Exit.OK,
        f"skipped ConfigMap/x ({src / 'cm.yaml'} (document 1)): {SKIPPED}\n"
        "team/m: allowed: engine vllm (auto), provider dynamo (auto)\n"
        "1 allowed, 0 denied, 1 skipped\n",
        "",
    )
    assert (explained[0], explained[2]) == (Exit.OK, note)
    assert (rendered[0], rendered[2]) == (Exit.OK, note)
    assert (checked[0], checked[2]) == (Exit.OK, note)


@pytest.mark.parametrize("command", READERS, ids=" ".join)
def test_a_misspelled_kind_of_runways_group_is_refused_with_a_suggestion_by_every_reader(
    command: tuple[str, ...], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = sources(tmp_path)
    (src / "typo.yaml").write_text(dump(document("airunway.ai/v1alpha1", "ModelDeploymnet")))

    code, out, err = run(capsys, *argv(command, str(src), tmp_path / "repo"))

    assert (code, out, err) == (
        Exit.USAGE,
        "",
        f"runway: {src / 'typo.yaml'} (document 1): ModelDeploymnet is not a kind of airunway.ai "
        "(it has ModelDeployment, InferenceProviderConfig); did you mean airunway.ai/v1alpha1 "
        "ModelDeployment?\n",
    )


GROUPS = st.sampled_from(
    [GROUP, EMP_GROUP, "", "apps", "example.com", "airunway.ai.example.com", "Airunway.ai"]
)
KINDS = st.one_of(
    st.sampled_from(
        [
            "ModelDeployment",
            "InferenceProviderConfig",
            "ExternalModelProvider",
            "ConfigMap",
            "ModelDeploymnet",
            "modeldeployment",
            "ExternalModelProviders",
            "X",
        ]
    ),
    st.text(st.characters(codec="ascii", categories=["L", "N"]), min_size=1, max_size=80),
)


def decision(group: str, kind: str) -> str:
    """The rule, written from docs/cli.md "Kinds": read, skipped or refused."""
    if group not in KNOWN:
        return "skipped"
    return "read" if kind in KNOWN[group] else "refused"


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(group=GROUPS, version=st.sampled_from(["v1", "v1alpha1", "v2beta3"]), kind=KINDS)
def test_validate_and_render_make_the_same_decision_for_every_kind(
    group: str, version: str, kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    verdict = decision(group, kind)
    if verdict == "read":
        return  # a kind Runway reads: what becomes of it is admission's and rendering's story
    root = tmp_path / "case"
    shutil.rmtree(root, ignore_errors=True)
    src = sources(root)
    api_version = f"{group}/{version}" if group else version
    (src / "a.yaml").write_text(dump(document(api_version, kind)))
    where = f"{src / 'a.yaml'} (document 1)"

    validated = run(capsys, "validate", str(src))
    rendered = run(capsys, "render", str(src), "--repo", str(root / "repo"))

    if verdict == "skipped":
        note = f"skipped {kind}/x ({where}): {SKIPPED}"
        assert (validated[0], validated[1].splitlines()[0]) == (Exit.OK, note)
        assert (rendered[0], rendered[2]) == (Exit.OK, f"runway: {note}\n")
        return
    refused = re.escape(
        f"runway: {where}: {kind if len(kind) <= 63 else kind[:63] + '...'} is not a kind of "
        f"{group} (it has {', '.join(KNOWN[group])})"
    )
    pattern = refused + r"(; did you mean [^?\n]+\?)?\n"
    for code, out, err in (validated, rendered):
        assert (code, out, bool(re.fullmatch(pattern, err))) == (Exit.USAGE, "", True), err
    assert validated == rendered
    if len(kind) > 63:
        assert err.endswith(")\n")  # no suggestion searched for: no kind is that long
