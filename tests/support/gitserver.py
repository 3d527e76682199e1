"""A real Git server on loopback: `git http-backend` (smart HTTP) behind a small threaded server.

GitRepository objects take http(s) or ssh URLs only, so the Flux tier pushes to and fetches from
this server. Repositories live under one root; each is created bare and accepts pushes
(`http.receivepack`). No authentication: it binds 127.0.0.1 only and lives for one test session.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

CGI_TIMEOUT = 60


def _read_body(handler: BaseHTTPRequestHandler) -> bytes:
    """The request body: Content-Length or chunked (git sends large pushes chunked)."""
    if handler.headers.get("Transfer-Encoding", "").lower() == "chunked":
        parts = []
        while True:
            size = int(handler.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                handler.rfile.readline()  # the blank line after the last chunk
                break
            parts.append(handler.rfile.read(size))
            handler.rfile.readline()
        return b"".join(parts)
    length = int(handler.headers.get("Content-Length") or 0)
    return handler.rfile.read(length) if length else b""


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        self._backend()

    def do_POST(self) -> None:
        self._backend()

    def log_message(self, format: str, *args: object) -> None:
        with self.server.log_lock, self.server.log_path.open("a") as log:
            log.write(f"{self.address_string()} {format % args}\n")

    def _backend(self) -> None:
        url = urlsplit(self.path)
        body = _read_body(self)
        if self.headers.get("Content-Encoding", "").lower() == "gzip":
            body = gzip.decompress(body)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_PROJECT_ROOT": str(self.server.root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "REQUEST_METHOD": self.command,
            "PATH_INFO": url.path,
            "QUERY_STRING": url.query,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "REMOTE_ADDR": self.client_address[0],
            "SERVER_PROTOCOL": "HTTP/1.1",
            "GIT_CONFIG_NOSYSTEM": "1",
        }
        if "Git-Protocol" in self.headers:
            env["GIT_PROTOCOL"] = self.headers["Git-Protocol"]
        done = subprocess.run(
            ["git", "http-backend"],
            input=body,
            env=env,
            capture_output=True,
            timeout=CGI_TIMEOUT,
            check=False,
        )
        head, _, payload = done.stdout.partition(b"\r\n\r\n")
        if not _:
            head, _, payload = done.stdout.partition(b"\n\n")
        status, headers = 200, []
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.strip().split()[0])
            elif name:
                headers.append((name, value.strip()))
        if done.returncode != 0 and not head:
            status, payload = 500, done.stderr
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, root: Path, log_path: Path) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.root = root
        self.log_path = log_path
        self.log_lock = threading.Lock()


@dataclass
class GitServer:
    root: Path
    server: _Server
    thread: threading.Thread

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def create(self, name: str, branch: str = "main") -> str:
        """A new empty bare repository that accepts pushes; its URL."""
        path = self.root / f"{name}.git"
        subprocess.run(
            ["git", "init", "-q", "--bare", f"--initial-branch={branch}", str(path)],
            check=True,
            timeout=CGI_TIMEOUT,
        )
        subprocess.run(
            ["git", "-C", str(path), "config", "http.receivepack", "true"],
            check=True,
            timeout=CGI_TIMEOUT,
        )
        return f"{self.base_url}/{name}.git"

    def head(self, name: str, branch: str = "main") -> str:
        done = subprocess.run(
            ["git", "-C", str(self.root / f"{name}.git"), "rev-parse", f"refs/heads/{branch}"],
            capture_output=True,
            text=True,
            check=True,
            timeout=CGI_TIMEOUT,
        )
        return done.stdout.strip()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


def start_git_server(root: Path) -> GitServer:
    root.mkdir(parents=True, exist_ok=True)
    server = _Server(root, root / "access.log")
    thread = threading.Thread(target=server.serve_forever, name="git-http", daemon=True)
    thread.start()
    return GitServer(root, server, thread)
