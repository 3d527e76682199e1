"""Direct vLLM: the admission rules of its own beyond layer 2 of the overrides: a replica across
nodes is a LeaderWorkerSet group (core/rendering/leaderworkerset.py multinode_checks)."""

from __future__ import annotations

from core.fields.errors import FieldError
from core.model.kinds import ModelDeployment
from core.model.plugin import ProviderContext, Rules
from core.rendering.leaderworkerset import multinode_checks


def admission_checks(
    md: ModelDeployment, context: ProviderContext, old: ModelDeployment | None
) -> tuple[list[FieldError], list[str]]:
    return multinode_checks(md), []


RULES = Rules(admission_checks)
