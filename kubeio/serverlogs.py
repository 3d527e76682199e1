"""How Runway's two gunicorn servers (the webhook's `runway serve` and the portal's `runway ui`)
log: one plain line per record on standard error, gunicorn's own error log among them. Each
server adds the loggers of its own."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"


def gunicorn_logconfig(loggers: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """gunicorn's `logconfig_dict`: every record on stderr as LOG_FORMAT at INFO, and besides
    gunicorn.error the `loggers` given (name: their logging.config settings)."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"plain": {"format": LOG_FORMAT}},
        "handlers": {
            "stderr": {
                "class": "logging.StreamHandler",
                "formatter": "plain",
                "stream": "ext://sys.stderr",
            }
        },
        "root": {"level": "INFO", "handlers": ["stderr"]},
        "loggers": {
            "gunicorn.error": {"level": "INFO", "handlers": ["stderr"], "propagate": False},
            **{name: dict(settings) for name, settings in (loggers or {}).items()},
        },
    }
