"""KAITO: one kaito.sh Workspace per ModelDeployment.

PROVIDER is this package as the core sees it (core/model/plugin.py): what its files offer, under
the names the core calls. No flag catalog: presets take no flags from the spec, and the llama.cpp
template always runs the user's image (there is no default to catalogue).
"""

from dataclasses import replace

from core.model.plugin import Provider
from providers.kaito.overrides import NAME, OVERRIDES
from providers.kaito.pods import PODS
from providers.kaito.render import render
from providers.kaito.rules import RULES
from providers.kaito.status import WATCHED, operator_service

PROVIDER = Provider(
    NAME, OVERRIDES, render, replace(PODS, operator_service=operator_service), WATCHED, rules=RULES
)
