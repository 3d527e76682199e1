"""`runway ui` in the foreground: gunicorn (gthread workers), its own process, never the
webhook's; every worker builds the app from the same settings (the CSRF key among them)."""

from __future__ import annotations

import logging
from typing import Any

from flask import Flask
from gunicorn.app.base import BaseApplication

from kubeio.serverlogs import gunicorn_logconfig
from ui.app import create_app
from ui.settings import UiSettings


def announce(server: Any) -> None:
    """Say where the portal listens once it does (the port the kernel chose for --port 0)."""
    for listener in server.LISTENERS:
        logging.getLogger("runway.ui").info("runway ui: serving on %s", listener)


def options(settings: UiSettings) -> dict[str, Any]:
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    return {
        "bind": [f"{host}:{settings.port}"],
        "worker_class": "gthread",
        "workers": settings.workers,
        "threads": settings.threads,
        "keepalive": 5,
        "timeout": 60,
        "graceful_timeout": 10,
        "limit_request_line": 8190,
        "limit_request_fields": 100,
        "limit_request_field_size": 20_000,  # a forwarded bearer token fits (ui/cluster.py)
        "control_socket_disable": True,
        "accesslog": None,
        "errorlog": "-",
        "loglevel": "info",
        "proc_name": "runway-ui",
        "when_ready": announce,
        "logconfig_dict": gunicorn_logconfig(),
    }


class UiServer(BaseApplication):  # type: ignore[misc]  # gunicorn ships no type hints
    def __init__(self, settings: UiSettings) -> None:
        self.settings = settings
        super().__init__()

    def load_config(self) -> None:
        for key, value in options(self.settings).items():
            self.cfg.set(key, value)

    def load(self) -> Flask:
        return create_app(self.settings)


def serve(settings: UiSettings) -> None:
    """Run until SIGTERM/SIGINT."""
    UiServer(settings).run()
