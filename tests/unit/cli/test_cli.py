"""`runway explain` and `runway validate`: the documented shapes, exit codes and error lines."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonpatch
import pytest
import yaml

from cli.exits import Exit
from cli.inspect import guarded
from cli.main import main
from core.admission.verdict import Verdict
from core.selection.configs import ProviderRegistry
from tests.support.builders import model_deployment, provider_config, shipped_registry
from tests.support.paths import EXAMPLES, REJECTED_EXAMPLES, ROOT, example_files

EXPECTED_SELECTION = {
    "llama-cpu": ("llamacpp", False, "kaito", False),
    "qwen-gguf": ("llamacpp", True, "kaito", False),
    "qwen-7b": ("vllm", False, "dynamo", False),
    "llama-70b": ("vllm", True, "kuberay", False),
    "llama-405b": ("vllm", True, "kuberay", True),
    "llama-8b-pd": ("vllm", False, "dynamo", False),
    "deepseek-sglang": ("sglang", True, "dynamo", False),
    "llama-8b-trt": ("trtllm", True, "dynamo", False),
    "mistral-llmd": ("vllm", True, "llmd", True),
    "phi-direct": ("vllm", True, "vllm", True),
    "llama-70b-multinode": ("vllm", True, "vllm", True),
    "qwen-32b-multinode": ("vllm", True, "llmd", True),
    "qwen-32b-kv": ("vllm", True, "dynamo", True),
    "llama-70b-2node": ("vllm", True, "dynamo", True),
    "phi-kaito": ("vllm", True, "kaito", True),
    "qwen-mocker": ("vllm", False, "dynamo", True),
    "rejected-epp-typo": ("vllm", False, "dynamo", True),
    "rejected-kaito-count": ("vllm", True, "kaito", True),
    "rejected-privileged": ("vllm", True, "llmd", True),
    "rejected-pd": ("vllm", False, "dynamo", False),
    "rejected-vllm-cpu": ("vllm", True, None, None),
}
EXPECTED_DENIALS = {
    "rejected-epp-typo": [
        (
            "spec.provider.overrides.epp.imag",
            'Unknown field: not declared in the schema (did you mean "image"?)',
        )
    ],
    "rejected-kaito-count": [
        (
            "spec.provider.overrides.resource.count",
            "Forbidden: the Workspace replica count comes from spec.scaling.replicas; set spec.scaling.replicas instead",
        )
    ],
    "rejected-privileged": [
        (
            "spec.provider.overrides.spec.template.spec.containers[0].securityContext",
            'Forbidden: "securityContext" may not be set through overrides: it is security-sensitive',
        ),
        (
            "spec.provider.overrides.spec.template.spec.volumes[0].hostPath",
            'Forbidden: "hostPath" may not be set through overrides: it is security-sensitive',
        ),
        (
            "spec.provider.overrides.spec.template.spec",
            "Forbidden: the pod spec of a Deployment Runway renders is Runway's (overrides would "
            "replace the serving container: its image, args, probes and GPU request); set "
            "spec.engine.image, spec.engine.args, spec.env, spec.resources, spec.nodeSelector, "
            "spec.tolerations or spec.podTemplate.metadata instead",
        ),
    ],
    "rejected-pd": [
        (
            "spec.resources.gpu",
            "Forbidden: cannot be set in disaggregated mode; set spec.scaling.prefill.gpu and spec.scaling.decode.gpu",
        ),
        ("spec.scaling.decode", "Required value: required in disaggregated mode"),
    ],
    "rejected-vllm-cpu": [
        (
            "spec.provider.name",
            "Required value: no provider can be selected automatically (dynamo: does not run engine vllm "
            "without a GPU; kaito: does not run engine vllm without a GPU; kuberay: does not run engine "
            "vllm without a GPU; llmd: does not run engine vllm without a GPU; vllm: does not run engine "
            "vllm without a GPU); set spec.provider.name",
        )
    ],
}


def examples() -> list[str]:
    return [str(p) for p in example_files()]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def write(path: Path, *objects: dict[str, Any]) -> str:
    path.write_text(yaml.safe_dump_all(objects))
    return str(path)


def test_validate_examples_json_has_the_documented_shape(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(capsys, "validate", *examples(), "-o", "json")

    results = json.loads(out)
    assert (code, err) == (Exit.PARTIAL, "")
    assert len(results) == len(EXPECTED_SELECTION)
    for result in results:
        assert set(result) == {
            "apiVersion",
            "kind",
            "name",
            "namespace",
            "source",
            "operation",
            "allowed",
            "skipped",
            "errors",
            "warnings",
            "patch",
            "object",
        }
        assert (result["apiVersion"], result["kind"]) == ("airunway.ai/v1alpha1", "ModelDeployment")
        assert result["source"].endswith(".yaml (document 1)")
        assert result["skipped"] is None
        assert result["namespace"] == "models"
        assert result["operation"] == "CREATE"
    denied = {
        r["name"]: [(e["field"], e["message"]) for e in r["errors"]]
        for r in results
        if not r["allowed"]
    }
    assert denied == EXPECTED_DENIALS
    for result in results:
        if result["allowed"]:
            assert result["errors"] == []
            assert (
                result["object"]["spec"]["provider"]["name"]
                == EXPECTED_SELECTION[result["name"]][2]
            )
            touched = {"/".join(op["path"].split("/")[:3]) for op in result["patch"]}
            assert touched >= {"/metadata/annotations"}  # the selection is stamped


def test_validate_patch_turns_the_input_into_the_object(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "validate", str(EXAMPLES / "vllm-1gpu.yaml"), "-o", "json")

    (result,) = json.loads(out)
    source = yaml.safe_load((EXAMPLES / "vllm-1gpu.yaml").read_text())
    assert code == Exit.OK
    assert jsonpatch.apply_patch(source, result["patch"]) == result["object"]
    assert result["object"]["spec"]["engine"]["type"] == "vllm"
    assert result["object"]["spec"]["provider"]["name"] == "dynamo"


def test_explain_examples_json_has_the_documented_shape(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "explain", *examples(), "-o", "json")

    results = json.loads(out)
    assert (code, err) == (Exit.OK, "")
    selection = {
        r["name"]: (
            r["engine"]["type"],
            r["engine"]["explicit"],
            r["provider"]["name"],
            r["provider"]["explicit"],
        )
        for r in results
    }
    assert selection == EXPECTED_SELECTION
    for result in results:
        assert set(result) == {
            "name",
            "namespace",
            "engine",
            "provider",
            "candidates",
            "error",
            "warnings",
        }
        assert set(result["engine"]) == {"type", "reason", "explicit"}
        assert set(result["provider"]) == {"name", "reason", "explicit"}
        for candidate in result["candidates"]:
            assert set(candidate) == {"name", "priority", "excluded", "chosen", "note", "rules"}
            assert candidate["chosen"] == (candidate["name"] == result["provider"]["name"])
            for rule in candidate["rules"]:
                assert set(rule) == {"condition", "priority", "result", "error"}
                assert rule["result"] in (True, False, "error")
    by_name = {r["name"]: r for r in results}
    assert by_name["rejected-vllm-cpu"]["error"] == (
        "spec.provider.name: " + EXPECTED_DENIALS["rejected-vllm-cpu"][0][1]
    )
    assert by_name["qwen-7b"]["error"] is None
    assert [
        (c["name"], c["priority"], c["excluded"]) for c in by_name["llama-70b"]["candidates"]
    ] == [
        ("dynamo", 50, None),
        ("kaito", None, "explicit-only here: no selection rule matched"),
        ("kuberay", 80, None),
        ("llmd", None, "explicit-only: no selection rules"),
        ("vllm", None, "explicit-only: no selection rules"),
    ]


def test_explain_text_names_the_choices_and_the_rules(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "explain", str(EXAMPLES / "vllm-multi-gpu.yaml"))

    assert code == Exit.OK
    lines = out.splitlines()
    assert lines[0] == "models/llama-70b"
    assert lines[1] == "  engine:    vllm (explicit) set in spec.engine.type"
    assert lines[2].startswith("  provider:  kuberay (auto) auto-selected: rule ")
    assert "    kuberay    priority 80" in lines
    assert "    llmd       excluded: explicit-only: no selection rules" in lines


def test_validate_text_reports_and_counts(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "validate",
        str(EXAMPLES / "cpu-llamacpp.yaml"),
        str(REJECTED_EXAMPLES / "kaito-count.yaml"),
    )

    assert code == Exit.PARTIAL
    assert out.splitlines() == [
        "models/llama-cpu: allowed: engine llamacpp (auto), provider kaito (auto)",
        "  warning: spec.model.servedName is ignored when spec.model.source is custom",
        "models/rejected-kaito-count: denied",
        "  spec.provider.overrides.resource.count: Forbidden: the Workspace replica count comes from "
        "spec.scaling.replicas; set spec.scaling.replicas instead",
        "1 allowed, 1 denied",
    ]


def test_validate_exits_zero_when_everything_is_allowed(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "validate", *sorted(map(str, EXAMPLES.glob("*.yaml"))))

    assert code == Exit.OK
    assert out.splitlines()[-1] == "16 allowed, 0 denied"


def test_output_is_deterministic(capsys: pytest.CaptureFixture[str]) -> None:
    first = run(capsys, "validate", *examples(), "-o", "json")
    second = run(capsys, "validate", *examples(), "-o", "json")

    assert first == second


def test_old_versions_exercise_update_rules(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = write(tmp_path / "old.yaml", model_deployment("llama", gpu=1))
    new = write(
        tmp_path / "new.yaml",
        model_deployment("llama", gpu=1, provider="kuberay"),
        model_deployment("other", gpu=1),
    )

    code, out, _ = run(capsys, "validate", new, "--old", old, "-o", "json")

    results = json.loads(out)
    assert code == Exit.PARTIAL
    assert [(r["name"], r["operation"], r["allowed"]) for r in results] == [
        ("llama", "UPDATE", False),
        ("other", "CREATE", True),
    ]
    assert results[0]["errors"] == [
        {
            "field": "spec.provider.name",
            "message": 'Immutable: is immutable (was "dynamo", now "kuberay"); changing it requires deleting and recreating the ModelDeployment',
        }
    ]


def test_registry_of_only_explicit_providers_selects_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    configs = tmp_path / "configs"
    configs.mkdir()
    write(configs / "llmd.yaml", provider_config("llmd", rules=[]))
    write(configs / "vllm.yml", provider_config("vllm"))
    source = write(tmp_path / "md.yaml", model_deployment(gpu=1))

    code, out, _ = run(capsys, "explain", source, "--providers", str(configs), "-o", "json")

    (result,) = json.loads(out)
    assert code == Exit.OK
    assert result["provider"] == {"name": None, "reason": None, "explicit": None}
    assert result["error"] == (
        "spec.provider.name: Required value: no provider can be selected automatically "
        "(llmd: explicit-only: no selection rules; vllm: explicit-only: no selection rules); set spec.provider.name"
    )


def test_broken_provider_config_is_a_warning_not_a_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    configs = tmp_path / "configs"
    configs.mkdir()
    write(
        configs / "a.yaml",
        provider_config("kuberay", rules=[("spec.engine.type ==", 9), ("true", 1)]),
    )
    source = write(tmp_path / "md.yaml", model_deployment(gpu=1))

    code, out, err = run(capsys, "validate", source, "--providers", str(configs))

    assert code == Exit.OK
    assert (
        err == "runway: warning: InferenceProviderConfig kuberay rule 0: line 1, column 20: "
        "Syntax error: mismatched input '<EOF>'\n"
    )
    assert out.splitlines()[0] == "ns/m: allowed: engine vllm (auto), provider kuberay (auto)"


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (
            "spec: [unclosed\n",
            "document 1: not valid YAML at line 2, column 1: did not find expected ',' or ']'",
        ),
        ("- a\n- b\n", "document 1 is a list, not a Kubernetes object"),
        ("", "no objects found"),
        (b"\xff\xfe\x00bad".decode("latin-1"), "cannot read:"),
        ("kind: List\nitems: {a: 1}\n", "(document 1): List: items must be a list of objects"),
        ("kind: List\nitems: [1]\n", "(document 1, items[0]): is a int, not a Kubernetes object"),
    ],
    ids=[
        "bad-yaml",
        "not-an-object",
        "empty",
        "not-utf8",
        "list-items-not-a-list",
        "list-item-not-an-object",
    ],
)
@pytest.mark.parametrize("command", ["validate", "explain"])
def test_unusable_input_exits_2_with_one_line_naming_file_and_problem(
    content: str, problem: str, command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "input.yaml"
    path.write_bytes(content.encode("latin-1"))

    code, out, err = run(capsys, command, str(path))

    assert (code, out) == (Exit.USAGE, "")
    assert err.count("\n") == 1
    assert err.startswith(f"runway: {path}")
    assert problem in err
    assert "Traceback" not in err


def test_missing_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "validate", str(tmp_path / "nope.yaml"))

    assert (code, out, err) == (
        Exit.USAGE,
        "",
        f"runway: {tmp_path / 'nope.yaml'}: no such file or directory\n",
    )


def test_providers_directory_with_another_kind_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    configs = tmp_path / "configs"
    configs.mkdir()
    write(configs / "x.yaml", model_deployment())

    code, _, err = run(
        capsys, "explain", str(EXAMPLES / "vllm-1gpu.yaml"), "--providers", str(configs)
    )

    assert code == Exit.USAGE
    assert err == (
        f"runway: {configs / 'x.yaml'} (document 1): expected an InferenceProviderConfig, "
        "got airunway.ai/v1alpha1 ModelDeployment\n"
    )


def test_structurally_broken_model_deployment_is_denied_not_unusable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = model_deployment()
    broken["spec"] = ["not", "an", "object"]

    code, out, _ = run(capsys, "validate", write(tmp_path / "md.yaml", broken), "-o", "json")

    assert code == Exit.PARTIAL
    assert json.loads(out)[0]["errors"] == [
        {"field": "spec", "message": "Invalid value: must be object, not array"}
    ]


def test_directories_are_read_recursively_with_r(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "team" / "a").mkdir(parents=True)
    write(tmp_path / "team" / "a" / "one.yaml", model_deployment("one", gpu=1))
    write(tmp_path / "team" / "two.yml", model_deployment("two", model_id="org/m/m.gguf"))
    (tmp_path / "team" / "README.md").write_text("not yaml: [")

    code, out, _ = run(capsys, "validate", "-R", str(tmp_path), "-o", "json")

    assert code == Exit.OK
    assert [r["name"] for r in json.loads(out)] == ["one", "two"]


@pytest.mark.parametrize("argv", [["--help"], ["explain", "--help"], ["validate", "--help"]])
def test_help_is_useful_on_its_own(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)

    out = capsys.readouterr().out
    assert exit_info.value.code == 0
    assert out.startswith("usage: runway")
    assert ("explain" in out and "validate" in out) if argv == ["--help"] else "--providers" in out


def test_bad_flags_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["validate", "-o", "xml", "x.yaml"])

    assert exit_info.value.code == Exit.USAGE
    assert "invalid choice: 'xml'" in capsys.readouterr().err


def test_console_script_runs_the_same_program() -> None:
    runway = Path(sys.executable).parent / "runway"

    done = subprocess.run(
        [str(runway), "validate", str(EXAMPLES / "vllm-1gpu.yaml"), "-o", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=False,
    )

    assert (done.returncode, done.stderr) == (0, "")
    assert json.loads(done.stdout)[0]["allowed"] is True


def _raises(obj: Mapping[str, Any], *, registry: ProviderRegistry, **_: Any) -> Verdict:
    return Verdict.failed(obj, None, str(1 // len(obj["spec"]["model"]["id"][:0])))  # raises


def test_an_object_whose_check_raises_is_denied_alone() -> None:
    """#13.7: whatever one object raises in `validate` becomes that object's one error."""
    obj = model_deployment("broken", "models", gpu=1)

    result = guarded(
        _raises,
        obj,
        shipped_registry(),
        lambda detail: Verdict.failed(obj, None, detail),
    )

    assert result.as_json() == {
        "apiVersion": "airunway.ai/v1alpha1",
        "kind": "ModelDeployment",
        "name": "broken",
        "namespace": "models",
        "source": None,
        "operation": "CREATE",
        "allowed": False,
        "skipped": None,
        "errors": [
            {
                "field": "",
                "message": "could not be checked: ZeroDivisionError: integer division or modulo by zero (details: -vv)",
            }
        ],
        "warnings": [],
        "patch": [],
        "object": obj,
    }
