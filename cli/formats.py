"""`-o junit` and `-o sarif`: the findings of `validate`, `render --check` and `gateway-plan` in
the formats CI systems read (GitLab's and Jenkins' JUnit test reports, GitHub's code scanning).

A command turns what it checked into Cases: one per object (or file) checked, each located at
its file and, where known, at the line its YAML document starts on, with one Finding per
problem (a refused field, an object not rendered, a held-back removal, an out-of-date file, an
ambiguous servedName). The two writers are pure functions of those Cases and Runway's version:
sorted, no timestamps, so the same input gives the same bytes.

JUnit: valid against the Apache Ant JUnit XSD (Windy Road's, the strictest of the common
dialects) and so read by GitLab and Jenkins: one testsuite named for the command; a passing
testcase per clean object and one failing testcase per finding (its `<failure>` type is the
rule id, its message the field and the reason). Every text is written as it is, but each
character XML 1.0 cannot hold (the C0 controls but tab, newline and carriage return; U+FFFE,
U+FFFF; a lone surrogate) is written as its Python escape (`\x01`, `\ufffe`, `\udcff`), and
a carriage return as `&#13;`, which a parser reads back as one (raw, it reads a newline).
SARIF 2.1.0: one run, tool.driver `runway` at its version, one rule per finding kind, one result
per finding at its file (`physicalLocation`, with `region.startLine` where the line is known)
and, for a field, the field path as a `logicalLocation`.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO
from xml.etree import ElementTree

import yaml

from core.model.kinds import DEFAULT_NAMESPACE, ModelDeployment
from kubeio.sources import STDIN_ORIGIN, Document

FORMATS = ("junit", "sarif")
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
# The schema requires a testsuite's timestamp and host; they are fixed, so that the same input
# gives the same bytes (the host: "localhost", as the schema says for an unknown one).
TIMESTAMP = "1970-01-01T00:00:00"
# Every kind of finding, by rule id: SARIF's rules, JUnit's failure types.
RULES: Mapping[str, str] = {
    "denied": "admission denies the object: a field breaks a rule (as the webhook would)",
    "not-rendered": "render refuses the object: its previous output is kept",
    "removal-held-back": "an output folder whose source is gone was not removed (--max-removals)",
    "out-of-date": "a file of the rendered tree differs from what the sources render",
    "ambiguous-served-name": "a servedName is claimed more than once",
    "invalid-object": "the gateway plan leaves an invalid object out",
}


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem: its rule id (a key of RULES), what is wrong, and the field it is at (a
    field path in the object's document, or empty)."""

    rule: str
    message: str
    field: str = ""

    @property
    def text(self) -> str:
        return f"{self.field}: {self.message}" if self.field else self.message


@dataclass(frozen=True, slots=True)
class Case:
    """One thing checked (an object, a file): its name, its file and line (None: not known),
    and its findings (none: it passed)."""

    name: str
    file: str
    line: int | None = None
    findings: tuple[Finding, ...] = ()

    @property
    def where(self) -> str:
        return self.file if self.line is None else f"{self.file}:{self.line}"


def write_report(
    output: str, command: str, cases: Iterable[Case], version: str, out: TextIO
) -> None:
    """`cases` as `-o junit` or `-o sarif` (`output`) of `runway COMMAND`."""
    ordered = sorted(cases, key=_order)
    out.write(junit(command, ordered) if output == "junit" else sarif(ordered, version))


def _order(case: Case) -> tuple[Any, ...]:
    findings = [(f.rule, f.field, f.message) for f in case.findings]
    return (case.file, case.line or 0, case.name, findings)


def junit(command: str, cases: Sequence[Case]) -> str:
    """The JUnit XML document: a testcase per clean case and per finding."""
    tests = [(case, finding) for case in cases for finding in case.findings or (None,)]
    failures = sum(1 for _, finding in tests if finding is not None)
    root = ElementTree.Element("testsuites")
    suite = ElementTree.SubElement(
        root,
        "testsuite",
        {
            "name": f"runway {command}",
            "package": "runway",
            "id": "0",
            "timestamp": TIMESTAMP,
            "hostname": "localhost",
            "tests": str(len(tests)),
            "failures": str(failures),
            "errors": "0",
            "time": "0",
        },
    )
    ElementTree.SubElement(suite, "properties")
    for case, finding in tests:
        title = (
            case.name if finding is None or not finding.field else f"{case.name} {finding.field}"
        )
        test = ElementTree.SubElement(
            suite,
            "testcase",
            {"name": xml_text(title), "classname": xml_text(case.file), "time": "0"},
        )
        if finding is not None:
            failure = ElementTree.SubElement(
                test, "failure", {"message": xml_text(finding.text), "type": finding.rule}
            )
            failure.text = xml_text(f"{case.where}: {case.name}: {finding.text}")
    ElementTree.SubElement(suite, "system-out")
    ElementTree.SubElement(suite, "system-err")
    ElementTree.indent(root)
    # ElementTree escapes a carriage return in attributes only; in text, raw, a parser would
    # read it as a newline (XML's end-of-line handling). No other raw one is in the body.
    body = ElementTree.tostring(root, encoding="unicode").replace("\r", "&#13;")
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{body}\n'


# The characters XML 1.0 cannot hold (its Char production allows tab, newline, carriage
# return, U+0020-U+D7FF, U+E000-U+FFFD and U+10000 up).
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(text: str) -> str:
    """`text` with each character XML 1.0 cannot hold as its Python escape (`\\x01`)."""
    return _NOT_XML.sub(lambda m: m.group().encode("unicode_escape").decode(), text)


def sarif(cases: Sequence[Case], version: str) -> str:
    """The SARIF 2.1.0 log: one run, a result per finding."""
    ids = sorted({finding.rule for case in cases for finding in case.findings})
    rules = [
        {
            "id": rule,
            "shortDescription": {"text": RULES[rule]},
            "defaultConfiguration": {"level": "error"},
        }
        for rule in ids
    ]
    results = [
        _result(case, finding, ids.index(finding.rule))
        for case in cases
        for finding in case.findings
    ]
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "runway",
                        "version": version,
                        "rules": rules,
                    }
                },
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }
    return json.dumps(log, indent=2, sort_keys=True) + "\n"


def _result(case: Case, finding: Finding, index: int) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": {"uri": _uri(case.file)}}
    if case.line is not None:
        physical["region"] = {"startLine": case.line}
    location: dict[str, Any] = {"physicalLocation": physical}
    if finding.field:
        location["logicalLocations"] = [{"fullyQualifiedName": finding.field, "kind": "member"}]
    return {
        "ruleId": finding.rule,
        "ruleIndex": index,
        "level": "error",
        "message": {"text": f"{case.name}: {finding.text}"},
        "locations": [location],
    }


def _uri(path: str) -> str:
    """A file as a URI reference: relative (with /) where it is under the working directory, as
    code scanning resolves it against the checkout; else a file: URI."""
    if path == STDIN_ORIGIN:
        return "stdin"
    absolute = Path(path).absolute()
    relative = os.path.relpath(absolute)
    if relative.startswith(os.pardir):
        return absolute.as_uri()
    return urllib.parse.quote(Path(relative).as_posix())


class Lines:
    """The line each YAML document of a file starts on (1-based), read when first asked; None
    for standard input and for a file that can no longer be read."""

    def __init__(self) -> None:
        self._starts: dict[str, list[int] | None] = {}

    def of(self, doc: Document) -> int | None:
        if doc.origin not in self._starts:
            self._starts[doc.origin] = _document_starts(doc.origin)
        starts = self._starts[doc.origin]
        return starts[doc.index] if starts is not None and doc.index < len(starts) else None


def _document_starts(origin: str) -> list[int] | None:
    if origin == STDIN_ORIGIN:
        return None
    try:
        with open(origin, encoding="utf-8") as stream:
            events = list(yaml.parse(stream, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    # the line of each document's first node (after its `---`, if any)
    return [
        after.start_mark.line + 1 if after.start_mark is not None else 1
        for event, after in itertools.pairwise(events)
        if isinstance(event, yaml.DocumentStartEvent)
    ]


def object_name(obj: Mapping[str, Any]) -> str:
    """`Kind namespace/name` of an object, as the cases name it."""
    return f"{obj.get('kind')} {owner_key(obj)[1]}/{owner_key(obj)[2]}"


def owner_key(obj: Mapping[str, Any]) -> tuple[str, str, str]:
    """(kind, namespace, name) of an object (a namespaced one without a namespace: default)."""
    metadata = obj.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    namespace = ModelDeployment(obj).namespace or DEFAULT_NAMESPACE
    return (str(obj.get("kind")), str(namespace), str(name))


def located(docs: Iterable[Document]) -> dict[tuple[str, str, str], tuple[str, int | None]]:
    """(kind, namespace, name) -> (file, line) of each object's document (the first one)."""
    lines = Lines()
    where: dict[tuple[str, str, str], tuple[str, int | None]] = {}
    for doc in docs:
        where.setdefault(owner_key(doc.obj), (doc.origin, lines.of(doc)))
    return where
