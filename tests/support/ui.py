"""Start the real web UI (`runway ui`: gunicorn on a free loopback port) and talk to it.

`UiServer.start` runs `runway ui --offline -f DIR --host 127.0.0.1 --port P` (or, with
`offline=False`, the live mode with whatever connection arguments `args` carries) in the
repository's folder, so `-f examples` shows as such on the pages and their screenshots. It waits
until `GET /healthz` answers `ok`; `stop` sends SIGTERM. The server's output goes to a log file,
put in the error when it does not start; tests/ui/conftest.py adds it to a failed test's report."""

from __future__ import annotations

import http.client
import io
import re
import subprocess
import sys
from collections.abc import Sequence
from contextlib import redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Self

import yaml
from flask import Flask
from flask.testing import FlaskClient

from cli.main import main
from tests.support.cluster import Cluster, free_port, terminate
from tests.support.paths import EXAMPLES, ROOT
from tests.support.users import User
from tests.support.wait import wait_until
from ui.app import create_app
from ui.security import COOKIE, CSRF_HEADER, csrf_token
from ui.settings import Mode, UiSettings

KEY = b"k" * 32  # the session key of the portals the tests make

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


def live_app(kube: Cluster, **settings: Any) -> Flask:
    return create_app(
        UiSettings(mode=Mode.LIVE, kubeconfig=str(kube.kubeconfig), secret_key=KEY, **settings)
    )


def signed_in(app: Flask, user: User) -> FlaskClient:
    client = app.test_client()
    client.environ_base["HTTP_X_FORWARDED_ACCESS_TOKEN"] = user.token
    return client


def flat(html: str) -> str:
    """The markup with its layout whitespace folded (what the assertions compare)."""
    return re.sub(r">\s+<", "><", re.sub(r"\s+", " ", html)).strip()


def model(ns: str, name: str = "phi-direct") -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((EXAMPLES / "vllm-direct-explicit.yaml").read_text())
    doc["metadata"] = {"name": name, "namespace": ns}
    return doc


WRITES = ("modeldeployments.airunway.ai", "deployments.apps", "services")


def posted(client: FlaskClient, path: str, form: dict[str, str]) -> str:
    """POST `form` as the page's htmx would (session cookie, CSRF header, same origin)."""
    done = client.post(path, data=form, headers=post_headers(client, KEY))
    assert done.status_code == 200
    return flat(done.get_data(as_text=True))


class Portal:
    """A test client with a session: its POSTs carry the token and say they are same-origin."""

    def __init__(self, app: Flask) -> None:
        self.client: FlaskClient = app.test_client()
        self.headers = post_headers(self.client, KEY)

    def get(self, path: str) -> str:
        answer = self.client.get(path)
        assert answer.status_code == 200
        return answer.get_data(as_text=True)

    def post(self, path: str, form: dict[str, str]) -> Any:
        return self.client.post(path, data=form, headers=self.headers)


def element(html: str, tag: str, ident: str) -> str:
    """The whole element `<tag id="ident" ...>...</tag>` (not nested in one of its own tag)."""
    found = re.search(rf'<{tag}\b[^>]*\bid="{ident}"[^>]*>.*?</{tag}>', html, re.S)
    assert found is not None, f"no <{tag} id={ident}> in the answer"
    return found.group(0)


def unescaped(text: str) -> str:
    """Text as Jinja escaped it, as it was."""
    return (
        text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&#34;", '"')
        .replace("&#39;", "'")
        .replace("&amp;", "&")
    )


def cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out):
        status = main(list(argv))
    return status, out.getvalue()
