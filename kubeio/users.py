"""Who asks: a Kubernetes user as the API server knows them (an AdmissionRequest's userInfo,
a TokenReview's answer), one type for the webhook's SubjectAccessReviews and the portal's
signed-in user."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class User:
    """A user: name, uid, groups and extra, and (the portal's signed-in user only) the bearer
    token that acts as them, never shown or logged."""

    username: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()
    token: str = field(default="", repr=False)

    @classmethod
    def of(cls, info: Any) -> User:
        """From an AdmissionRequest's request.userInfo (anything that is not its shape is left
        out)."""
        info = info if isinstance(info, Mapping) else {}
        groups = info.get("groups")
        extra = info.get("extra")
        return cls(
            username=_text(info.get("username")),
            uid=_text(info.get("uid")),
            groups=tuple(g for g in groups if isinstance(g, str))
            if isinstance(groups, list)
            else (),
            extra=tuple(
                (k, tuple(v for v in values if isinstance(v, str)))
                for k, values in sorted(extra.items())
                if isinstance(k, str) and isinstance(values, list)
            )
            if isinstance(extra, Mapping)
            else (),
        )


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""
