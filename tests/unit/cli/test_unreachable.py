"""Every cluster-facing command, pointed at a closed loopback port, exits 4 with one line naming
what could not be reached: never a traceback (issue #18, class 8). The port is really closed (a
socket bound to 127.0.0.1:0 and closed again), so the kubernetes client's and urllib's own
connection errors are what reach the CLI's error boundary."""

from __future__ import annotations

import datetime as dt
import subprocess
from pathlib import Path

import pytest
import yaml

from certs.authority import new_authority
from cli.exits import Exit
from cli.main import main
from tests.support.cluster import free_port
from tests.support.litellm import RUNWAY
from tests.support.paths import EXAMPLES


def kubeconfig(tmp_path: Path, port: int) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return path


def commands(tmp_path: Path, port: int) -> dict[str, list[str]]:
    config = str(kubeconfig(tmp_path, port))
    tree = tmp_path / "tree"
    (tree / "a").mkdir(parents=True)
    (tree / "a" / "cm.yaml").write_text(
        yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}})
    )
    ca = tmp_path / "ca.crt"  # a real certificate: `certs inject` refuses a file without one
    ca.write_bytes(new_authority("unreachable-ca", days=1, now=dt.datetime.now(dt.UTC)).cert_pem)
    key = tmp_path / "master.key"
    key.write_text("sk-master-unreachable\n")
    return {
        "apply": ["apply", str(tree), "--kubeconfig", config],
        "render --crds-from-cluster": [
            "render",
            str(EXAMPLES),
            "--repo",
            str(tmp_path / "repo"),
            "--check",
            "--crds-from-cluster",
            "--kubeconfig",
            config,
        ],
        "certs inject": [
            "certs",
            "inject",
            "--ca",
            str(ca),
            "--mutating",
            "m",
            "--kubeconfig",
            config,
        ],
        "gateway-sync (API server)": [
            "gateway-sync",
            "--once",
            "--litellm-url",
            "http://127.0.0.1:1",
            "--master-key-file",
            str(key),
            "--kubeconfig",
            config,
        ],
        "gateway-sync (LiteLLM)": [
            "gateway-sync",
            "--once",
            "--litellm-url",
            f"http://127.0.0.1:{port}",
            "--master-key-file",
            str(key),
            "--from",
            str(tree),
        ],
    }


EXPECTED = {
    "apply": "runway: the API server at http://127.0.0.1:{port} could not be reached: connection refused",
    "render --crds-from-cluster": "runway: the API server at http://127.0.0.1:{port} could not be reached: connection refused",
    "certs inject": "runway: the API server at http://127.0.0.1:{port} could not be reached: connection refused",
    "gateway-sync (API server)": "runway: the API server at http://127.0.0.1:{port} could not be reached: connection refused",
    "gateway-sync (LiteLLM)": "runway: http://127.0.0.1:{port}/model/info: [Errno 111] Connection refused",
}


@pytest.mark.parametrize("command", sorted(EXPECTED), ids=sorted(EXPECTED))
def test_cluster_command_against_a_closed_port_exits_4_with_one_line(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    port = free_port()
    argv = commands(tmp_path, port)[command]
    if command == "gateway-sync (LiteLLM)":
        argv[argv.index("--from") + 1] = str(write_empty(tmp_path))

    code = main(argv)

    out, err = capsys.readouterr()
    assert (code, out, err.splitlines()) == (
        Exit.UNAVAILABLE,
        "",
        [EXPECTED[command].format(port=port)],
    )


def write_empty(tmp_path: Path) -> Path:
    folder = tmp_path / "objects"
    folder.mkdir()
    (folder / "emp.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "gateway.tokenfactory.mirantis.com/v1alpha1",
                "kind": "ExternalModelProvider",
                "metadata": {"name": "p", "namespace": "gw"},
                "spec": {"baseURL": "https://api.example.com/v1", "models": [{"servedName": "m"}]},
            }
        )
    )
    return folder


def test_console_script_prints_only_the_one_line(tmp_path: Path) -> None:
    """The installed `runway` (its own logging setup, not pytest's) adds no retry warnings."""
    port = free_port()
    done = subprocess.run(
        [str(RUNWAY), *commands(tmp_path, port)["apply"]],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert (done.returncode, done.stdout, done.stderr.splitlines()) == (
        Exit.UNAVAILABLE,
        "",
        [EXPECTED["apply"].format(port=port)],
    )
