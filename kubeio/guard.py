"""The one per-object catch-all: whatever one object's work raises becomes that object's one-line
error (the traceback goes to the debug log, `-vv`), so one object never takes down the others."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from core.fields.errors import describe_exception

T = TypeVar("T")


def per_object(
    key: str, what: str, call: Callable[[], T], failed: Callable[[str], T], log: logging.Logger
) -> T:
    """`call()` for the object `key` (namespace/name), or `failed("could not be <what>: <the
    exception in one line> (details: -vv)")` when it raises anything at all; `what` reads
    "rendered", "checked"..."""
    try:
        return call()
    except Exception as err:  # the point: whatever one object raises stays with it
        log.debug("%s: %s raised", key, what, exc_info=True)
        return failed(f"could not be {what}: {describe_exception(err)} (details: -vv)")
