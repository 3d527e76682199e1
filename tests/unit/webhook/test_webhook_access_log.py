"""gunicorn's access line is never written by the webhook (gunicorn.access is at WARNING), so its
fields are never built: webhook.gunicorn_options.AccessOffLogger. Each case runs gunicorn's own
logger setup (which applies the logging configuration to the whole process) in a process of its
own; the access atoms are replaced by a function that records being called."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

CASE = """
import json, logging, sys
from gunicorn.config import Config
from webhook.gunicorn_options import gunicorn_options
from webhook.settings import Settings

verbose, access_level = sys.argv[1] == "verbose", sys.argv[2]
cfg = Config()
options = gunicorn_options(Settings(cert="tls.crt", key="tls.key", verbose=verbose))
options["logconfig_dict"]["loggers"]["gunicorn.access"]["level"] = access_level
for key, value in options.items():
    cfg.set(key, value)
log = cfg.logger_class(cfg)
built, lines = [], []
log.atoms = lambda *args: built.append(1) or {"r": "POST /mutate"}
log.cfg.set("access_log_format", "%(r)s")
handler = logging.Handler()
handler.emit = lambda record: lines.append(record.getMessage())
logging.getLogger("gunicorn.access").addHandler(handler)
log.access(None, None, {}, None)
print(json.dumps({"class": type(log).__name__, "enabled": log.access_log_enabled,
                  "built": len(built), "lines": lines}))
"""


def run_case(verbose: bool, access_level: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", CASE, "verbose" if verbose else "quiet", access_level],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    result: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return result


@pytest.mark.parametrize("verbose", [False, True], ids=["quiet", "verbose"])
def test_the_webhook_builds_no_access_line(verbose: bool) -> None:
    assert run_case(verbose, "WARNING") == {
        "class": "AccessOffLogger",
        "enabled": False,
        "built": 0,
        "lines": [],
    }


def test_an_access_logger_at_info_still_gets_its_line() -> None:
    """The logger follows the configured level: it turns off only what would be dropped."""
    assert run_case(False, "INFO") == {
        "class": "AccessOffLogger",
        "enabled": True,
        "built": 1,
        "lines": ["POST /mutate"],
    }
