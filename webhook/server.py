"""`runway serve`: gunicorn in the foreground, configured from one Settings value."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from flask import Flask
from gunicorn.app.base import BaseApplication

from webhook.app import create_app
from webhook.gunicorn_options import gunicorn_options
from webhook.multiprocess import ENV
from webhook.ports import check_port_free
from webhook.settings import Settings, SettingsError


class WebhookServer(BaseApplication):  # type: ignore[misc]  # gunicorn ships no type hints, so its base is Any
    """Each worker builds its own app (and its own provider-config watch) after the fork."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        super().__init__()

    def load_config(self) -> None:
        for key, value in gunicorn_options(self.settings).items():
            self.cfg.set(key, value)

    def load(self) -> Flask:
        # The metrics directory the master created at start (webhook/multiprocess.py).
        return create_app(dataclasses.replace(self.settings, metrics_dir=os.environ.get(ENV, "")))


def check_serving_files(settings: Settings) -> None:
    for flag, path in (("--cert", settings.cert), ("--key", settings.key)):
        if not path:
            raise SettingsError(flag, "required to serve over TLS (see `runway certs issue`)")
        if not Path(path).is_file():
            raise SettingsError(flag, f"{path} is not a readable file")


def serve(settings: Settings) -> Any:
    """Run until SIGTERM/SIGINT; gunicorn's master then stops the workers gracefully and exits."""
    check_serving_files(settings)
    check_port_free(settings.host, settings.port)  # again in on_starting, for plain gunicorn
    WebhookServer(settings).run()
