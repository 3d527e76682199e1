"""Validation as the tests of the core call it: the errors of one ModelDeployment, and a checked render."""

from __future__ import annotations

from typing import Any

from core.admission.hydrate import hydrate
from core.admission.validation import Verdict, check_spec
from core.fields.errors import Reason
from core.selection.configs import ProviderRegistry


def check(obj: dict[str, Any], registry: ProviderRegistry, **kw: Any) -> Verdict:
    """Validate what the mutating webhook would have stored, as the API server does."""
    hydrated = hydrate(obj, registry=registry)
    assert hydrated.errors == ()
    return check_spec(hydrated.obj, registry=registry, **kw)


def errors(
    obj: dict[str, Any], registry: ProviderRegistry, **kw: Any
) -> list[tuple[str, Reason, str]]:
    return [(e.path, e.reason, e.detail) for e in check(obj, registry, **kw).errors]
