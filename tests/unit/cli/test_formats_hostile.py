"""Hostile text cannot break `-o junit` or `-o sarif` (cli/formats.py): findings whose messages,
field paths, file names and object names hold any Unicode (surrogates included), XML's special
characters, `]]>`, control characters, newlines and carriage returns, or run very long. The
output always parses, is valid against the schema the CI-format tests use
(tests/support/ciformats.py), and gives back each text: SARIF (JSON) exactly; JUnit (XML) with
each character XML 1.0 cannot hold written as its Python escape (`\\x01`, `\\ud800`, `\\ufffe`),
the documented replacement, and everything else exactly, `\\r` included."""

from __future__ import annotations

import importlib
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from cli.formats import RULES, Case, Finding, junit, sarif
from tests.support.ciformats import junit_errors, sarif_errors

# Text of every kind: any code point (surrogates and U+FFFE too), and the pieces that break
# naive writers, mixed in.
PIECES = st.sampled_from(
    ["]]>", "<![CDATA[", "&amp;", "<", ">", '"', "'", "\r\n", "\r", "\n", "\t", "\x00", "\x1b"]
)
TEXT = st.lists(
    st.one_of(st.text(st.characters(codec=None, categories=None), max_size=20), PIECES),
    max_size=8,
).map("".join)
LONG = st.builds(lambda s, n: s * n, st.text(min_size=1, max_size=4), st.integers(1000, 20_000))
HOSTILE = st.one_of(TEXT, LONG)
# A file name as commands give them: any text without surrogates (a source whose name is not
# UTF-8 is refused before any report: kubeio.sources.check_name), relative or absolute.
FILES = st.one_of(
    st.text(st.characters(codec="utf-8", exclude_characters="\0"), min_size=1, max_size=40),
    st.just("<stdin>"),
    st.builds(lambda s: "/abs/" + s, st.text(st.characters(codec="utf-8"), max_size=20)),
)
FINDINGS = st.builds(Finding, st.sampled_from(sorted(RULES)), HOSTILE, st.one_of(st.just(""), TEXT))
CASES = st.lists(
    st.builds(
        Case,
        HOSTILE,
        FILES,
        st.one_of(st.none(), st.integers(1, 10**6)),
        st.lists(FINDINGS, max_size=3).map(tuple),
    ),
    max_size=4,
)


def xml_allowed(c: str) -> bool:
    """XML 1.0's Char production."""
    n = ord(c)
    return (
        n in (0x9, 0xA, 0xD)
        or 0x20 <= n <= 0xD7FF
        or 0xE000 <= n <= 0xFFFD
        or 0x10000 <= n <= 0x10FFFF
    )


def in_xml(text: str) -> str:
    """`text` as the JUnit writer documents it: each character XML cannot hold as its Python
    escape."""
    return "".join(c if xml_allowed(c) else c.encode("unicode_escape").decode() for c in text)


def parsed_xml(text: str) -> Any:
    etree = importlib.import_module("lxml.etree")
    return etree.fromstring(text.encode("utf-8"))  # strict: raises on anything not XML


@settings(max_examples=150, deadline=None)
@given(cases=CASES, command=st.sampled_from(["validate", "render", "gateway-plan"]))
def test_junit_parses_validates_and_keeps_every_text(cases: list[Case], command: str) -> None:
    text = junit(command, cases)

    document = parsed_xml(text)
    assert junit_errors(text) == []
    failures = [(f.get("type"), f.get("message"), f.text) for f in document.iter("failure")]
    assert failures == [
        (
            finding.rule,
            in_xml(finding.text),
            in_xml(f"{case.where}: {case.name}: {finding.text}"),
        )
        for case in cases
        for finding in case.findings
    ]
    names = [(t.get("name"), t.get("classname")) for t in document.iter("testcase")]
    assert names == [
        (
            in_xml(case.name if f is None or not f.field else f"{case.name} {f.field}"),
            in_xml(case.file),
        )
        for case in cases
        for f in case.findings or (None,)
    ]


@settings(max_examples=150, deadline=None)
@given(cases=CASES)
def test_sarif_parses_validates_and_keeps_every_text(cases: list[Case]) -> None:
    text = sarif(cases, "0.1.0")

    log = json.loads(text)
    assert sarif_errors(text) == []
    results = log["runs"][0]["results"]
    assert [r["message"]["text"] for r in results] == [
        f"{case.name}: {finding.text}" for case in cases for finding in case.findings
    ]
    assert [
        [n["fullyQualifiedName"] for n in r["locations"][0].get("logicalLocations", [])]
        for r in results
    ] == [[f.field] if f.field else [] for case in cases for f in case.findings]
    text.encode("utf-8")  # writable as UTF-8 whatever it holds (a surrogate is escaped)


def test_a_control_character_and_a_carriage_return_in_junit() -> None:
    """The regression the properties found: ElementTree wrote U+0001 raw (no XML parser reads
    the report), and a carriage return raw, which every parser reads as a newline."""
    case = Case("Model\x01 a", "f.yaml", 3, (Finding("denied", "bad\r\nvalue ]]> \x1b", "spec"),))

    text = junit("validate", [case])

    failure = parsed_xml(text).find("testsuite/testcase/failure")
    assert junit_errors(text) == []
    assert (failure.get("message"), failure.text) == (
        "spec: bad\r\nvalue ]]> \\x1b",
        "f.yaml:3: Model\\x01 a: spec: bad\r\nvalue ]]> \\x1b",
    )
