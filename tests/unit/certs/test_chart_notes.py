"""The commands the chart's NOTES.txt prints for `tls.mode=manual` run as printed: the bundle is
issued for the chart's Service in the release's namespace, the Secret is made of the files
written, and the caBundle goes to the chart's webhook configurations."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from cli.main import main, parse
from tests.support.paths import ROOT

CHART = ROOT / "charts" / "runway"
MANUAL = re.compile(r'\{\{- if eq \.Values\.tls\.mode "manual" \}\}\n(.*?)\{\{- end \}\}', re.S)
NAMED = re.compile(r"^kind: (\w+)\nmetadata:\n(?:  labels:\n(?:    .*\n)+)?  name: ([\w-]+)$", re.M)


def manual_tls_commands(namespace: str) -> list[str]:
    """The command lines of NOTES.txt's manual-TLS part, as Helm prints them for a release in
    `namespace` (the part uses nothing else of the release)."""
    (part,) = MANUAL.findall((CHART / "templates" / "NOTES.txt").read_text())
    printed = part.replace("{{ .Release.Namespace }}", namespace)
    assert "{{" not in printed, "the test renders only .Release.Namespace"
    return [line.strip() for line in printed.splitlines() if line.startswith("  ")]


def chart_names() -> dict[str, set[str]]:
    """The names the chart's templates give each kind."""
    names: dict[str, set[str]] = {}
    for template in sorted((CHART / "templates").glob("*.yaml")):
        for kind, name in NAMED.findall(template.read_text()):
            names.setdefault(kind, set()).add(name)
    return names


def test_the_manual_tls_notes_run_as_printed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    issue, secret, inject = manual_tls_commands("team-a")

    code = main(shlex.split(issue)[1:])

    assert (code, *capsys.readouterr()) == (
        0,
        "issued certs/ca.crt, certs/ca.key, certs/tls.crt and certs/tls.key for "
        "runway-webhook.team-a.svc, runway-webhook.team-a.svc.cluster.local, "
        "runway-webhook.team-a, runway-webhook, localhost, 127.0.0.1\n",
        "",
    )
    assert "runway-webhook" in chart_names()["Service"]
    kubectl = shlex.split(secret)
    assert kubectl[:7] == [
        "kubectl",
        "-n",
        "team-a",
        "create",
        "secret",
        "generic",
        "runway-webhook-tls",
    ]
    mounted = re.findall(
        r"secretName: ([\w-]+)", (CHART / "templates" / "deployment.yaml").read_text()
    )
    assert kubectl[6] in mounted
    # The Secret holds ca.crt too: the chart's `helm test` pod verifies the webhook with it.
    files = [flag.removeprefix("--from-file=").split("=", 1) for flag in kubectl[8:]]
    assert (kubectl[7], [(key, Path(file).is_file()) for key, file in files]) == (
        "--type=kubernetes.io/tls",
        [("tls.crt", True), ("tls.key", True), ("ca.crt", True)],
    )
    args = parse(shlex.split(inject)[1:])
    assert (args.action, Path(args.ca).is_file()) == ("inject", True)
    assert (set(args.mutating), set(args.validating)) == (
        chart_names()["MutatingWebhookConfiguration"],
        chart_names()["ValidatingWebhookConfiguration"],
    )
