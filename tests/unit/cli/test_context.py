"""`--context` picks the kubeconfig context a cluster command talks to (issue #23 item 5), after
the command or before it. Each context points at its own closed loopback port, so the one line
the command exits with names the context's server."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from cli.exits import Exit
from cli.main import main
from tests.support.cluster import free_port
from tests.support.paths import EXAMPLES


def kubeconfig(tmp_path: Path, ports: dict[str, int]) -> str:
    path = tmp_path / "kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {"name": name, "cluster": {"server": f"http://127.0.0.1:{port}"}}
                    for name, port in ports.items()
                ],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [
                    {"name": name, "context": {"cluster": name, "user": "u"}} for name in ports
                ],
                "current-context": "first",
            }
        )
    )
    return str(path)


@pytest.mark.parametrize(
    ("where", "context"),
    [("none", "first"), ("after", "second"), ("before", "second")],
    ids=["current-context", "after-the-command", "before-the-command"],
)
@pytest.mark.parametrize("command", ["apply", "render --crds-from-cluster"])
def test_context_selects_the_server(
    command: str, where: str, context: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ports = {"first": free_port(), "second": free_port()}
    config = kubeconfig(tmp_path, ports)
    tree = tmp_path / "tree"
    (tree / "a").mkdir(parents=True)
    argv = (
        ["apply", str(tree), "--kubeconfig", config]
        if command == "apply"
        else [
            "render",
            str(EXAMPLES / "vllm-1gpu.yaml"),
            "--repo",
            str(tmp_path / "repo"),
            "--check",
            "--crds-from-cluster",
            "--kubeconfig",
            config,
        ]
    )
    if where == "after":
        argv += ["--context", context]
    elif where == "before":
        argv = ["--context", context, *argv]

    code = main(argv)

    out, err = capsys.readouterr()
    assert (code, out, err) == (
        Exit.UNAVAILABLE,
        "",
        f"runway: the API server at http://127.0.0.1:{ports[context]} could not be reached: "
        "connection refused\n",
    )
