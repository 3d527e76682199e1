"""CEL selection rules: compiled once per registry, evaluated against one variable, `spec`.

The evaluation environment is AI Runway's: exactly one variable `spec` (the defaulted spec with
the resolved engine filled in), no Kubernetes libraries. cel-python's `has()` answers false when
a parent is missing, where cel-go raises; the shipped rules guard every level, so they mean the
same under both.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import celpy
from celpy import celtypes
from celpy.adapter import json_to_cel
from celpy.celparser import CELParseError
from celpy.evaluation import CELEvalError

MAX_RULE_LENGTH = 1024


@dataclass(frozen=True, slots=True)
class Rule:
    """One selection rule; `program` is None when the condition did not compile."""

    condition: str
    priority: int
    program: Any
    compile_error: str | None


@dataclass(frozen=True, slots=True)
class Outcome:
    """A rule's result for one object: True, False, or an error (which is a non-match)."""

    matched: bool
    error: str | None = None


def compile_rule(env: celpy.Environment, condition: str, priority: int) -> Rule:
    """Compile a condition; a bad one becomes a Rule carrying its error, never an exception."""
    problem = rule_problem(env, condition)
    if problem is not None:
        return Rule(condition, priority, None, problem)
    return Rule(condition, priority, env.program(env.compile(condition)), None)


def rule_problem(env: celpy.Environment, condition: str) -> str | None:
    """Why a condition cannot be used as a rule, or None when it compiles."""
    if not condition.strip():
        return "condition is empty"
    if len(condition) > MAX_RULE_LENGTH:
        return f"condition is {len(condition)} characters long; the limit is {MAX_RULE_LENGTH}"
    try:
        env.compile(condition)
    except CELParseError as err:
        return f"syntax error at line {err.line}, column {err.column}"
    except RecursionError:
        return "condition is nested too deeply to compile"
    return None


def activation(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The CEL activation for one spec; built once per selection and shared by every rule."""
    return {"spec": json_to_cel(dict(spec))}


def evaluate(rule: Rule, bound: Mapping[str, Any]) -> Outcome:
    """Run one rule. Errors and non-bool results are non-matches that say why."""
    if rule.program is None:
        return Outcome(False, f"does not compile: {rule.compile_error}")
    try:
        value = rule.program.evaluate(dict(bound))
    # The rule is user-supplied code run by a third-party interpreter: whatever it raises, the
    # rule is a non-match with the reason recorded, and the other rules and providers go on.
    except Exception as err:
        return Outcome(False, _describe(err))
    if isinstance(value, CELEvalError):
        return Outcome(False, _describe(value))
    if not isinstance(value, celtypes.BoolType):
        return Outcome(False, f"evaluated to {type(value).__name__}, not a bool")
    return Outcome(bool(value))


def _describe(err: BaseException) -> str:
    if isinstance(err, CELEvalError) and err.args:
        return str(err.args[0])
    if isinstance(err, RecursionError):
        return "evaluation nested too deeply"
    return f"{type(err).__name__}: {err}"
