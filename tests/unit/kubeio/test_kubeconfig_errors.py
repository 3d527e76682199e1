"""A kubeconfig that cannot be used is one line naming the file and the context, and what is
wrong with it in kubectl's words (issue #45 item 16), never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.exits import Exit
from cli.main import main
from core.fields.errors import Unavailable
from kubeio.client import api_client
from kubeio.yamlio import dump
from tests.support.paths import EXAMPLES

CONFIG = {
    "apiVersion": "v1",
    "kind": "Config",
    "current-context": "a",
    "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
    "users": [{"name": "u", "user": {"token": "t"}}],
    "contexts": [
        {"name": "a", "context": {"cluster": "c", "user": "u"}},
        {"name": "lost", "context": {"cluster": "gone", "user": "u"}},
    ],
}
NO_CURRENT = {k: v for k, v in CONFIG.items() if k != "current-context"}


@pytest.mark.parametrize(
    ("text", "context", "problem"),
    [
        (None, None, "its current context: no such file"),
        (None, "a", "context a: no such file"),
        ("", None, "its current context: the file is empty"),
        ("clusters: [\n", None, "its current context: not valid YAML at line 2, column 1"),
        ("- a list\n", None, "its current context: not a kubeconfig (a YAML mapping of "
         "clusters, contexts and users)"),
        (dump(CONFIG), "typo", "context typo: it has no context named typo"),
        (dump(CONFIG), "lost", "context lost: it has no cluster named gone"),
        (dump(NO_CURRENT), None, "its current context: it names no current-context; pass "
         "--context NAME"),
    ],
    ids=["missing", "missing-with-context", "empty", "not-yaml", "not-a-mapping",
         "unknown-context", "unknown-cluster", "no-current-context"],
)  # fmt: skip
def test_a_kubeconfig_problem_names_the_file_and_the_context(
    text: str | None, context: str | None, problem: str, tmp_path: Path
) -> None:
    config = tmp_path / "kubeconfig"
    if text is not None:
        config.write_text(text)

    with pytest.raises(Unavailable) as raised:
        api_client(str(config), context=context)

    assert str(raised.value) == f"kubeconfig {config}, {problem}"


def test_a_folder_given_as_the_kubeconfig_is_named(tmp_path: Path) -> None:
    with pytest.raises(Unavailable) as raised:
        api_client(str(tmp_path))

    assert str(raised.value) == f"kubeconfig {tmp_path}, its current context: is a directory"


def test_a_command_says_it_in_one_line_and_exits_4(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "kubeconfig"
    config.write_text(dump(CONFIG))

    code = main(["apply", str(EXAMPLES), "--kubeconfig", str(config), "--context", "typo"])

    assert (code, *capsys.readouterr()) == (
        Exit.UNAVAILABLE,
        "",
        f"runway: kubeconfig {config}, context typo: it has no context named typo\n",
    )
