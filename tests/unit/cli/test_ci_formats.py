"""`-o junit` and `-o sarif` (issue #45, CI formats) for `validate` and `gateway-plan`: a finding
per refused field or ambiguous servedName, at its file and the line its document starts on (a
field path also as SARIF's logicalLocation), the exit codes of the text output, the same bytes
every time, and each document valid against its schema (tests/support/ciformats.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cli.exits import Exit
from cli.main import main
from kubeio.shipped import runway_version
from tests.support.ciformats import junit_errors, sarif_errors
from tests.support.paths import EXAMPLES

MANIFESTS = """\
apiVersion: airunway.ai/v1alpha1
kind: ModelDeployment
metadata:
  name: ok
  namespace: models
spec:
  model:
    id: Qwen/Qwen2.5-0.5B-Instruct
  engine:
    type: vllm
  provider:
    name: kaito
---
# the second document: its object starts on line 15
apiVersion: airunway.ai/v1alpha1
kind: ModelDeployment
metadata:
  name: Bad_Name
spec:
  model:
    id: ""
"""
ID_MESSAGE = "Required value: required when spec.model.source is huggingface"
NAME_MESSAGE = (
    "Invalid value: must be a DNS-1035 label: lower-case letters, digits and '-', starting "
    "with a letter and ending with a letter or digit"
)


def head(command: str, tests: int, failures: int) -> str:
    """The JUnit document's lines before its testcases."""
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        "<testsuites>\n"
        f'  <testsuite name="runway {command}" package="runway" id="0" '
        'timestamp="1970-01-01T00:00:00" hostname="localhost" '
        f'tests="{tests}" failures="{failures}" errors="0" time="0">\n'
        "    <properties />\n"
    )


TAIL = "    <system-out />\n    <system-err />\n  </testsuite>\n</testsuites>\n"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv), env={})
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def manifests(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "models.yaml").write_text(MANIFESTS)
    return "models.yaml"


def test_validate_junit_has_a_failing_testcase_per_refused_field(
    manifests: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "validate", manifests, "-o", "junit")

    assert (code, err) == (Exit.PARTIAL, "")
    assert out == (
        head("validate", 3, 2)
        + '    <testcase name="ModelDeployment models/ok" classname="models.yaml" time="0" />\n'
        '    <testcase name="ModelDeployment default/Bad_Name spec.model.id" '
        'classname="models.yaml" time="0">\n'
        f'      <failure message="spec.model.id: {ID_MESSAGE}" type="denied">models.yaml:15: '
        f"ModelDeployment default/Bad_Name: spec.model.id: {ID_MESSAGE}</failure>\n"
        "    </testcase>\n"
        '    <testcase name="ModelDeployment default/Bad_Name metadata.name" '
        'classname="models.yaml" time="0">\n'
        f'      <failure message="metadata.name: {NAME_MESSAGE}" type="denied">models.yaml:15: '
        f"ModelDeployment default/Bad_Name: metadata.name: {NAME_MESSAGE}</failure>\n"
        "    </testcase>\n" + TAIL
    )
    assert junit_errors(out) == []


def test_validate_sarif_has_a_result_per_refused_field_at_its_line(
    manifests: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "validate", manifests, "-o", "sarif")

    assert (code, err) == (Exit.PARTIAL, "")
    assert sarif_errors(out) == []
    log = json.loads(out)
    assert log["version"] == "2.1.0"
    (only_run,) = log["runs"]
    assert only_run["tool"]["driver"] == {
        "name": "runway",
        "version": runway_version(),
        "rules": [
            {
                "id": "denied",
                "shortDescription": {
                    "text": "admission denies the object: a field breaks a rule (as the webhook "
                    "would)"
                },
                "defaultConfiguration": {"level": "error"},
            }
        ],
    }

    def result(field: str, message: str) -> dict[str, object]:
        return {
            "ruleId": "denied",
            "ruleIndex": 0,
            "level": "error",
            "message": {"text": f"ModelDeployment default/Bad_Name: {field}: {message}"},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": "models.yaml"},
                        "region": {"startLine": 15},
                    },
                    "logicalLocations": [{"fullyQualifiedName": field, "kind": "member"}],
                }
            ],
        }

    assert only_run["results"] == [
        result("spec.model.id", ID_MESSAGE),
        result("metadata.name", NAME_MESSAGE),
    ]


def test_clean_input_gives_valid_documents_without_findings_and_exit_0(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    shutil.copy(EXAMPLES / "cpu-llamacpp.yaml", "cpu.yaml")

    junit = run(capsys, "validate", "cpu.yaml", "-o", "junit")
    sarif = run(capsys, "validate", "cpu.yaml", "-o", "sarif")

    assert junit == (
        Exit.OK,
        head("validate", 1, 0)
        + '    <testcase name="ModelDeployment models/llama-cpu" classname="cpu.yaml" time="0" />\n'
        + TAIL,
        "",
    )
    assert junit_errors(junit[1]) == []
    assert sarif[0] == Exit.OK
    assert sarif_errors(sarif[1]) == []
    assert json.loads(sarif[1])["runs"][0]["results"] == []
    assert json.loads(sarif[1])["runs"][0]["tool"]["driver"]["rules"] == []


def test_the_same_input_gives_the_same_bytes_in_any_order(
    manifests: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = MANIFESTS.split("---\n")
    (tmp_path / "a.yaml").write_text(second)
    (tmp_path / "b.yaml").write_text(first)

    for output in ("junit", "sarif"):
        forward = run(capsys, "validate", "a.yaml", "b.yaml", "-o", output)
        backward = run(capsys, "validate", "b.yaml", "a.yaml", "-o", output)
        assert forward == backward
        assert forward[0] == Exit.PARTIAL


def test_gateway_plan_reports_each_ambiguous_served_name_at_a_claimant(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    shutil.copytree(EXAMPLES / "gateway", "gateway")
    why = (
        "servedName 'llama-3.1-8b' is claimed more than once: "
        "ExternalModelProvider/gateway/openai, ModelDeployment/models/llama-8b"
    )

    junit = run(capsys, "gateway-plan", "gateway", "-o", "junit")
    sarif = run(capsys, "gateway-plan", "gateway", "-o", "sarif")

    assert junit == (
        Exit.PARTIAL,
        head("gateway-plan", 3, 1)
        + '    <testcase name="gpt-4o (ExternalModelProvider/gateway/openai)" '
        'classname="gateway/openai.yaml" time="0" />\n'
        '    <testcase name="gpt-4o-mini (ExternalModelProvider/gateway/openai)" '
        'classname="gateway/openai.yaml" time="0" />\n'
        '    <testcase name="llama-3.1-8b" classname="gateway/openai.yaml" time="0">\n'
        f'      <failure message="{why}" type="ambiguous-served-name">gateway/openai.yaml:5: '
        f"llama-3.1-8b: {why}</failure>\n"
        "    </testcase>\n" + TAIL,
        "",
    )
    assert junit_errors(junit[1]) == []
    assert sarif[0] == Exit.PARTIAL
    assert sarif_errors(sarif[1]) == []
    assert json.loads(sarif[1])["runs"][0]["results"] == [
        {
            "ruleId": "ambiguous-served-name",
            "ruleIndex": 0,
            "level": "error",
            "message": {"text": f"llama-3.1-8b: {why}"},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": "gateway/openai.yaml"},
                        "region": {"startLine": 5},
                    }
                }
            ],
        }
    ]


def test_a_file_outside_the_working_directory_is_a_file_uri(
    manifests: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")

    code, out, _ = run(capsys, "validate", str(tmp_path / manifests), "-o", "sarif")

    assert code == Exit.PARTIAL
    assert sarif_errors(out) == []
    uris = {
        loc["physicalLocation"]["artifactLocation"]["uri"]
        for result in json.loads(out)["runs"][0]["results"]
        for loc in result["locations"]
    }
    assert uris == {(tmp_path / manifests).as_uri()}


def test_the_junit_schema_check_catches_a_broken_document() -> None:
    broken = (
        '<testsuites><testsuite name="s" tests="2" failures="0" errors="0" time="0">'
        '<testcase name="a" classname="c" time="0" file="f"/></testsuite></testsuites>'
    )

    assert junit_errors(broken) == [
        "line 1: Element 'testsuite': The attribute 'package' is required but missing.",
        "line 1: Element 'testsuite': The attribute 'id' is required but missing.",
        "line 1: Element 'testsuite': The attribute 'timestamp' is required but missing.",
        "line 1: Element 'testsuite': The attribute 'hostname' is required but missing.",
        "line 1: Element 'testcase': This element is not expected. Expected is ( properties ).",
        "testsuite s: counts differ from its testcases",
    ]


def test_the_sarif_schema_check_catches_a_broken_log() -> None:
    broken = {"version": "2.1.0", "runs": [{"tool": {"driver": {}}, "results": [{}]}]}

    assert sarif_errors(json.dumps(broken)) == [
        "runs/0/results/0: 'message' is a required property",
        "runs/0/tool/driver: 'name' is a required property",
    ]


def test_a_path_is_percent_encoded_in_the_uri(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a dir").mkdir()
    (tmp_path / "a dir" / "models 100%.yaml").write_text(MANIFESTS)

    code, out, _ = run(capsys, "validate", "a dir", "-o", "sarif")

    assert code == Exit.PARTIAL
    assert sarif_errors(out) == []
    assert {
        loc["physicalLocation"]["artifactLocation"]["uri"]
        for result in json.loads(out)["runs"][0]["results"]
        for loc in result["locations"]
    } == {"a%20dir/models%20100%25.yaml"}
