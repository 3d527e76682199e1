"""Running `runway certs` in process, as the certs tests do."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings

from cli.main import main

BOUNDED = settings(
    max_examples=40,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
ISSUED = (
    "issued {out}/ca.crt, {out}/ca.key, {out}/tls.crt and {out}/tls.key for "
    "runway-webhook.runway-system.svc, "
    "runway-webhook.runway-system.svc.cluster.local, runway-webhook.runway-system, "
    "runway-webhook, localhost, 127.0.0.1\n"
)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """`runway ARGV...`: the exit status, stdout and stderr."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err
