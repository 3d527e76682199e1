"""Mistaken and hostile paths given to the readers (`FILE`, `-f FILE`): empty, `..` climbing out,
names too long for the file system, special files, links, names with shell or control
characters. One property test: whatever the path, `validate`, `explain` and `gateway-plan`
answer 0, 1 or 2, a usage error is one line naming the path, there is never a traceback or a
"could not be reached" (4), and nothing in the working tree changes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli.exits import Exit
from cli.main import main
from kubeio.yamlio import dump
from tests.support.builders import model_deployment

COMMANDS = ("validate", "explain", "gateway-plan")
SEGMENTS = st.sampled_from(
    [
        "",
        ".",
        "..",
        "models",
        "models/a.yaml",
        "link",
        "outside",
        "fifo.yaml",
        "x" * 255,
        "x" * 300,
        "a b",
        "a;rm -rf b",
        "$(touch pwned)",
        "\n",
        "é",
        "*.yaml",
        "-",
        "--",
        "~",
    ]
)
ABSOLUTE = st.sampled_from(["/dev/null", "/proc/self/status", "/nonexistent", "/dev/zero/x"])
# At most two `..`: from tmp/a/b they reach tmp and no further (a walk of / would be the
# user's own request, and slow, not hostile).
PATHS = st.one_of(
    st.lists(SEGMENTS, max_size=4).filter(lambda parts: parts.count("..") <= 2).map("/".join),
    ABSOLUTE,
)


def tree(root: Path) -> dict[str, bytes | str]:
    found: dict[str, bytes | str] = {}
    for folder, dirs, files in os.walk(root, followlinks=False):
        for name in files + dirs:
            path = Path(folder) / name
            rel = str(path.relative_to(root))
            if path.is_symlink():
                found[rel] = f"-> {os.readlink(path)}"
            elif path.is_file() and not path.name.startswith("fifo"):
                found[rel] = path.read_bytes()
    return found


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    work = tmp_path / "a" / "b"
    (work / "models").mkdir(parents=True)
    (work / "models" / "a.yaml").write_text(dump(model_deployment("phi", "models", gpu=1)))
    (tmp_path / "secret.yaml").write_text("not: yours\n")
    (work / "link").symlink_to(tmp_path)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "x.yaml").symlink_to(tmp_path / "secret.yaml")
    (work / "outside").symlink_to(tmp_path / "elsewhere")
    os.mkfifo(work / "models" / "fifo.yaml")  # never opened: a walk reads regular files only
    monkeypatch.chdir(work)
    return tmp_path


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(command=st.sampled_from(COMMANDS), path=PATHS, how=st.sampled_from(["-f", "positional"]))
def test_any_path_gets_an_answer_of_its_own_and_changes_nothing(
    workdir: Path, capsys: pytest.CaptureFixture[str], command: str, path: str, how: str
) -> None:
    if (
        (path.startswith("-") and how == "positional")
        or path in ("-", "fifo.yaml")
        or path.endswith("fifo.yaml")
    ):
        return  # a flag, standard input, or a FIFO named by the user: read as asked (it blocks)
    before = tree(workdir)
    argv = [command, "-f", path] if how == "-f" else [command, path]

    try:
        code = main(argv, env={})
    except SystemExit as exit_:  # argparse's own usage errors
        code = int(exit_.code or 0)
    out, err = capsys.readouterr()

    assert code in (Exit.OK, Exit.PARTIAL, Exit.USAGE), (argv, err)
    assert "Traceback" not in out + err
    if code == Exit.USAGE:
        last = err.strip().splitlines()[-1]
        assert last.startswith(("runway: ", f"runway {command}: error:")), err
    assert tree(workdir) == before
    assert not (workdir / "a" / "b" / "pwned").exists()


@pytest.mark.parametrize(
    ("path", "message"),
    [
        (
            "",
            "runway: '': an empty path names nothing; name a file or a directory (. for this one)",
        ),
        ("x" * 300, f"runway: {'x' * 300}: cannot read: File name too long"),
        (
            "outside",
            "runway: outside/x.yaml: is a symbolic link to {tmp}/secret.yaml, outside the source "
            "directories given; Runway does not follow it (name the target itself)",
        ),
        ("a\nb", "runway: 'a\\nb': no such file or directory"),
        ("link/../../nope", "runway: link/../../nope: no such file or directory"),
    ],
)
def test_the_message_names_the_path_and_the_reason(
    workdir: Path, capsys: pytest.CaptureFixture[str], path: str, message: str
) -> None:
    code = main(["validate", "-f", path], env={})

    assert (code, capsys.readouterr().err.strip()) == (Exit.USAGE, message.format(tmp=workdir))
