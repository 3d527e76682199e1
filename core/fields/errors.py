"""Field errors (what is wrong with an input) and the small exception tree of Runway."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Reason(StrEnum):
    """The Kubernetes field.ErrorType spellings, so messages read like the API server's."""

    REQUIRED = "Required value"
    INVALID = "Invalid value"
    UNSUPPORTED = "Unsupported value"
    FORBIDDEN = "Forbidden"
    DUPLICATE = "Duplicate value"
    TOO_LONG = "Too long"
    TOO_MANY = "Too many"
    NOT_FOUND = "Not found"
    UNKNOWN_FIELD = "Unknown field"
    IMMUTABLE = "Immutable"


@dataclass(frozen=True, slots=True)
class FieldError:
    """What is wrong with one field: where (a Kubernetes-style field path), the kind of
    problem, and the detail a user reads."""

    path: str
    reason: Reason
    detail: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}: {self.detail}"


class RunwayError(Exception):
    """Root of the errors the edges catch by type; bad input is FieldErrors, not exceptions."""


class SourceError(RunwayError):
    """An input file or object could not be used at all (unreadable, not YAML, wrong shape)."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        self.message = message
        # A name with a newline or a control character in it is quoted, so the error stays one
        # line and says exactly which name it means.
        super().__init__(f"{path if path.isprintable() else repr(path)}: {message}")


class Unavailable(RunwayError):
    """Something outside Runway that a command needs did not answer as it must: Git, a cluster,
    LiteLLM, a repository another render holds. The input may be fine; trying again may work."""


class UsageError(RunwayError):
    """A setting (a flag, an environment variable, a settings file) that cannot be used; the
    command stops before doing anything and names it."""

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        self.reason = reason
        super().__init__(f"{name}: {reason}")


class IncompatibleUpstream(RunwayError):
    """A rendered object uses a field the pinned upstream schema does not declare."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(f"IncompatibleUpstream: {field}: {message}")


def shown(text: str, limit: int = 64) -> str:
    """A user's value as an error message shows it: whole up to `limit` characters, else its
    first `limit` and "...", so a huge value is never echoed back whole."""
    return text if len(text) <= limit else f"{text[:limit]}..."


def describe_exception(err: BaseException) -> str:
    """`ExceptionType: first line of the message`, without the noise some types carry."""
    name = type(err).__qualname__
    module = type(err).__module__
    if module not in ("builtins", "__main__"):
        name = f"{module}.{name}"
    text = str(err).strip().splitlines()[0] if str(err).strip() else ""
    if not text or text.startswith("[<class"):  # decimal's signals print as a list of classes
        return name
    return f"{name}: {text[:200]}"
