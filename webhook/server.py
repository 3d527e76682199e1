"""`runway serve`: gunicorn in the foreground, configured from one Settings value."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flask import Flask
from gunicorn.app.base import BaseApplication

from webhook.app import create_app
from webhook.gunicorn_options import gunicorn_options
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
        return create_app(self.settings)


def check_serving_files(settings: Settings) -> None:
    for flag, path in (("--cert", settings.cert), ("--key", settings.key)):
        if not path:
            raise SettingsError(flag, "required to serve over TLS (see `runway certs issue`)")
        if not Path(path).is_file():
            raise SettingsError(flag, f"{path} is not a readable file")


def serve(settings: Settings) -> Any:
    """Run until SIGTERM/SIGINT; gunicorn's master then stops the workers gracefully and exits."""
    check_serving_files(settings)
    WebhookServer(settings).run()
