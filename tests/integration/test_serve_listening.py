"""`runway serve` says where it listens (issue #45 item 4). Each worker binds a SO_REUSEPORT
socket of its own, so gunicorn's master holds no listener and its start line named none:
`Listening at:  (PID)`. It names the address the workers bind."""

from __future__ import annotations

from pathlib import Path

from tests.support.webhook import start_webhook


def test_serve_logs_the_address_it_listens_at(tmp_path: Path) -> None:
    hook = start_webhook(tmp_path, workers=1)
    try:
        pid = hook.proc.pid
    finally:
        assert hook.stop() == 0
    said = [
        line.split(" ", 2)[2]  # after the date and the time
        for line in hook.log_text().splitlines()
        if "Listening at:" in line
    ]

    assert said == [f"INFO gunicorn.error Listening at: https://127.0.0.1:{hook.port} ({pid})"]
