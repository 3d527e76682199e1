"""Adversarial CEL rules, regular expressions included, and the spec that makes them cost most.

Shared by the property test (tests/unit/providers/test_cel_regex.py), the `make fuzz` area
(tests/fuzzing/cel.py) and `make bench` (bench/cel.py). A generated rule is either refused at
InferenceProviderConfig admission or, when it is accepted, its slowest evaluation over
`worst_spec()` must stay under RULE_BOUND_MS: the per-rule bound docs/security.md
documents (RULE_COST_LIMIT units of about 0.1 µs).
"""

from __future__ import annotations

import random
import time
from typing import Any

from hypothesis import strategies as st

from core.cel.cost import INPUT_STRING_LIMIT
from core.cel.rules import RULE_COST_LIMIT, Bound, Environment, Rule, activation, evaluate
from core.schema.bounds import MAX_VALUES

L17 = "[" + ", ".join(str(i) for i in range(17)) + "]"

RULE_BOUND_MS = RULE_COST_LIMIT * 1e-4  # units of 0.1 µs, in ms
# The most args an admissible ModelDeployment holds beside its other values (bench/cel.py).
LIMIT_ARGS = MAX_VALUES - 100
# Texts at the input limit that keep RE2's automata busiest: two letters in no order (every
# DFA state is new, so its cache thrashes and it falls back to the NFA), one letter repeated
# (every counted repetition keeps matching), and a mix of word, punctuation and non-ASCII.
_RANDOM = random.Random(18)
TEXTS = {
    "ab": "".join(_RANDOM.choice("ab") for _ in range(INPUT_STRING_LIMIT)),
    "a": "a" * INPUT_STRING_LIMIT,
    "mix": ("ab-_é9 Z\n" * (INPUT_STRING_LIMIT // 9 + 1))[:INPUT_STRING_LIMIT],
}


def worst_spec() -> dict[str, Any]:
    """A spec at the limits CEL is given: strings of 65,536 characters and 9,900 args."""
    return {
        "engine": {"type": "vllm"},
        "model": {"id": TEXTS["ab"]},
        "texts": dict(TEXTS),
        "args": ["--" + "ab" * 49] * LIMIT_ARGS,
    }


# Pieces of regular expressions: each alone is cheap, nested and counted they are not.
_ATOMS = st.sampled_from(
    [
        "a", "b", "é", ".", "[ab]", "[^a]", "[a-z0-9]", "[é-ü]", "\\w", "\\W", "\\d", "\\s",
        "\\b", "^", "$", "\\pL", "\\pN", "[\\pL\\pN]", "\\p{Greek}", "[[:alpha:]]", "(?i)[a-z]",
        "(?s).", "\\x41", "\\C", "\\Q*\\E",
    ]
)  # fmt: skip
_COUNTS = st.sampled_from(["*", "+", "?", "*?", "{2}", "{5}", "{10}", "{30}", "{100}", "{0,30}"])
_BIG_COUNTS = st.sampled_from(["{300}", "{1000}", "{1,1000}", "{200,}", "{1001}"])


def _grow(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.tuples(inner, inner).map("".join),
        st.tuples(inner, inner).map("|".join),
        inner.map(lambda x: f"({x})"),
        inner.map(lambda x: f"(?:{x})"),
        st.tuples(inner, _COUNTS).map(lambda t: f"(?:{t[0]}){t[1]}"),
        st.tuples(inner, _BIG_COUNTS).map(lambda t: f"(?:{t[0]}){t[1]}"),
    )


_NESTED = st.recursive(_ATOMS, _grow, max_leaves=8)
# Where RE2's DFA thrashes: a loop, then a letter, then a counted run of what the loop takes
# (every position may start a match, so the DFA's states never repeat and it falls back to
# its NFA, which steps through every instruction for every character).
_THRASH = st.tuples(_NESTED, st.sampled_from(["a", "b", "[ab]"]), st.integers(1, 40)).map(
    lambda t: f"(?:{t[0]}|a|b)*{t[1]}(?:{t[0]}|[ab]){{{t[2]}}}c"
)
PATTERNS = st.one_of(_NESTED, _THRASH)
# For the program-size bound: the accepted syntax where RE2 adds instructions the text does not
# show (case folding, UTF-8 ranges, empty-width repetitions, captures).
_SIZED_ATOMS = st.sampled_from(
    [
        "a", "k", "é", "K", ".", "[^a]", "[a-z]", "[ks]", "[é-ü]", "\\W", "\\w", "\\s", "\\b",
        "$", "(?i)a", "(?i)k", "(?i)[a-z]", "(?i)\\w", "(?i)[^s]", "(?s).", "[^\\n]",
        "[\\x00-\\x7f]", "[ -\U0010ffff]", "(?i)é", "(?i)K", "(?m)^",
    ]
)  # fmt: skip
SIZED_PATTERNS = st.recursive(
    _SIZED_ATOMS,
    lambda inner: st.one_of(
        _grow(inner),
        st.tuples(inner, st.sampled_from(["*?", "+", "{3}", "{2,7}", "{10,}", "{50}"])).map(
            lambda t: f"(?:{t[0]}){t[1]}"
        ),
    ),
    max_leaves=10,
)
# What `matches` runs on: a literal, the long texts of the spec, an element of a loop.
_TEXTS = st.sampled_from(
    ["'a'", "'abababababab'", "spec.model.id", "spec.texts.ab", "spec.texts.a", "spec.texts.mix"]
)
_LOOP10 = "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]"
_LOOPS = st.sampled_from(["[0, 1]", _LOOP10, "[0, 1, 2, 3]"])


def _literal(pattern: str) -> str:
    return "'" + pattern.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n") + "'"


def _condition(parts: tuple[str, str, list[str], bool]) -> str:
    text, pattern, loops, sized = parts
    body = f"{text}.matches({_literal(pattern)})"
    if sized:
        body = f"size({text}) > 3 && {body}"
    for var, loop in zip("abc", loops, strict=False):
        body = f"{loop}.all({var}, !{body})" if var == "a" else f"{loop}.exists({var}, {body})"
    return body


# One atom, counted: the shape (`'a'.matches('\\pL{1000}')`), in a loop or not.
_COUNTED = st.tuples(_ATOMS, st.one_of(_COUNTS, _BIG_COUNTS)).map(lambda t: f"(?:{t[0]}){t[1]}")
RULES = st.one_of(
    st.tuples(st.sampled_from(["'a'", "spec.texts.a"]), _COUNTED, st.lists(_LOOPS, max_size=2))
    .map(lambda t: (t[0], t[1], t[2], False))
    .map(_condition),
    st.tuples(_TEXTS, PATTERNS, st.lists(_LOOPS, max_size=3), st.booleans()).map(_condition),
    st.tuples(_TEXTS, PATTERNS, PATTERNS).map(
        lambda t: f"{t[0]}.matches({_literal(t[1])}) || {t[0]}.matches({_literal(t[2])})"
    ),
    PATTERNS.map(lambda p: f"spec.args.exists(x, x.matches({_literal(p)}))"),
    PATTERNS.map(lambda p: f"'a'.matches(spec.texts.a + {_literal(p)})"),
    _TEXTS.map(lambda t: f"{_LOOP10}.all(i, size({t}) > i)"),
)


def cost_ms(rule: Rule, bound: Bound, rounds: int = 2) -> float:
    """The fastest of `rounds` evaluations in thread CPU ms: the rule's own cost, less noise
    from other processes on a shared machine (which only ever adds)."""
    best = float("inf")
    for _ in range(rounds):
        start = time.thread_time()
        evaluate(rule, bound)
        best = min(best, (time.thread_time() - start) * 1e3)
    return best


def worst_bound(env: Environment) -> Bound:
    """The CEL input of worst_spec(), built once: binding 9,900 args costs a few ms."""
    return activation(env, worst_spec())


# The rule: 16 CPU-s per evaluation before; now refused for its pattern.
BOMB = f"{L17}.all(a, {L17}.all(b, !'a'.matches('\\\\pL{{1000}}')))"


REFUSAL = (
    "line 1, column 146: regular expression '\\pL{1000}', at character 1: Unicode classes "
    "(\\p, \\P) are not supported: each compiles to hundreds of RE2 instructions; list the "
    "characters or ranges"
)
