"""Start the real web UI (`runway ui`: gunicorn on a free loopback port) and talk to it.

`UiServer.start` runs `runway ui --offline -f DIR --host 127.0.0.1 --port P` (or, with
`offline=False`, the live mode with whatever connection arguments `args` carries) in the
repository's folder, so `-f examples` shows as such on the pages and their screenshots. It waits
until `GET /healthz` answers `ok`; `stop` sends SIGTERM. The server's output goes to a log file,
put in the error when it does not start; tests/ui/conftest.py adds it to a failed test's report."""

from __future__ import annotations

import http.client
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Self

from flask.testing import FlaskClient

from tests.conftest import ROOT
from tests.support.cluster import free_port, terminate
from tests.support.wait import wait_until
from ui.security import COOKIE, CSRF_HEADER, csrf_token

HOST = "127.0.0.1"
TIMEOUT = 10
START_TIMEOUT = 30


def runway_program() -> Path:
    """The `runway` console script of the running virtualenv (the working tree's code)."""
    return Path(sys.executable).parent / "runway"


@dataclass
class UiServer:
    port: int
    proc: subprocess.Popen[bytes]
    log: Path
    handle: IO[bytes]

    @classmethod
    def start(
        cls,
        workdir: Path,
        *,
        sources: Sequence[Path] = (),
        offline: bool = True,
        args: Sequence[str] = (),
    ) -> Self:
        """`runway ui` on a free loopback port, once `/healthz` answers `ok`; a RuntimeError
        with the server's log when it exits or does not answer in time. `sources` relative to
        the repository's folder stay relative."""
        port = free_port()
        workdir.mkdir(parents=True, exist_ok=True)
        log = workdir / f"ui-{port}.log"
        argv = [str(runway_program()), "ui"]
        if offline:
            argv.append("--offline")
        for source in sources:
            argv += ["-f", str(source)]
        argv += ["--host", HOST, "--port", str(port), *args]
        handle = log.open("wb")
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=handle,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            start_new_session=True,
        )
        server = cls(port, proc, log, handle)
        try:
            wait_until(server.healthy, timeout=START_TIMEOUT, what=f"{' '.join(argv)}: /healthz")
        except (TimeoutError, RuntimeError) as error:
            server.stop()
            raise RuntimeError(f"{error}\n--- its output ---\n{server.log_text()}") from None
        return server

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def healthy(self) -> bool:
        """Whether `/healthz` answers 200 `ok`; a RuntimeError once the process has exited."""
        if self.proc.poll() is not None:
            raise RuntimeError(f"runway ui exited with {self.proc.returncode}")
        try:
            status, _, body = self.get("/healthz")
        except (OSError, http.client.HTTPException):
            return False
        return (status, body) == (200, b"ok")

    def get(
        self, path: str, headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str], bytes]:
        """The status, headers (lower-case names) and body of `GET path`."""
        conn = http.client.HTTPConnection(HOST, self.port, timeout=TIMEOUT)
        try:
            conn.request("GET", path, headers=headers or {})
            response = conn.getresponse()
            body = response.read()
            return response.status, {k.lower(): v for k, v in response.getheaders()}, body
        finally:
            conn.close()

    def stop(self) -> int:
        """SIGTERM (as Kubernetes stops a pod), then the exit status."""
        try:
            return terminate(self.proc)
        finally:
            self.handle.close()

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()


def post_headers(client: FlaskClient, key: bytes) -> dict[str, str]:
    """The headers of a same-origin POST as the portal's pages send it: the CSRF token of the
    client's session (a GET of /about first sets the session cookie when it has none)."""
    if client.get_cookie(COOKIE) is None:
        client.get("/about")
    found = client.get_cookie(COOKIE)
    assert found is not None
    return {"Sec-Fetch-Site": "same-origin", CSRF_HEADER: csrf_token(key, found.value)}
