"""The CLI conventions kubectl, kubeconform, kyverno and flux users bring (issue #23 item 5): each
test fails on the CLI before them."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli.exits import Exit
from cli.main import main, parse
from core.model.versions import Versions
from tests.support.builders import external_model_provider, model_deployment, provider_config
from tests.support.paths import EXAMPLES, ROOT


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def stdin(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(text))


def write(path: Path, *objects: dict[str, Any]) -> str:
    path.write_text(yaml.safe_dump_all(objects))
    return str(path)


def without_source(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k != "source"} for r in results]


# -- stdin and -f ----------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["validate", "explain"])
def test_dash_reads_standard_input(
    command: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    example = str(EXAMPLES / "vllm-1gpu.yaml")
    stdin(monkeypatch, Path(example).read_text())

    piped = run(capsys, command, "-", "-o", "json")
    named = run(capsys, command, example, "-o", "json")

    assert (piped[0], piped[2]) == (named[0], named[2]) == (Exit.OK, "")
    if command == "validate":
        assert json.loads(piped[1])[0]["source"] == "<stdin> (document 1)"
        assert without_source(json.loads(piped[1])) == without_source(json.loads(named[1]))
    else:
        assert piped[1] == named[1]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    objects=st.lists(
        st.builds(
            model_deployment,
            st.sampled_from(["a", "b", "c-1"]),
            st.sampled_from(["ns", "models"]),
            gpu=st.sampled_from([None, 0, 1, 2]),
            engine=st.sampled_from([None, "vllm", "sglang", "llamacpp"]),
            provider=st.sampled_from([None, "dynamo", "kaito", "nope"]),
        ),
        min_size=1,
        max_size=4,
    ),
    as_list=st.booleans(),
)
def test_validate_of_any_stream_on_stdin_is_validate_of_the_file(
    objects: list[dict[str, Any]],
    as_list: bool,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    docs: list[dict[str, Any]] = (
        [{"apiVersion": "v1", "kind": "List", "items": objects}] if as_list else objects
    )
    text = yaml.safe_dump_all(docs)
    (tmp_path / "in.yaml").write_text(text)
    stdin(monkeypatch, text)

    piped = run(capsys, "validate", "-f", "-", "-o", "json")
    named = run(capsys, "validate", str(tmp_path / "in.yaml"), "-o", "json")

    assert (piped[0], piped[2]) == (named[0], named[2])
    assert without_source(json.loads(piped[1])) == without_source(json.loads(named[1]))


def test_filename_flags_and_positional_paths_combine_in_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = write(tmp_path / "1.yaml", model_deployment("one", gpu=1))
    second = write(tmp_path / "2.yaml", model_deployment("two", gpu=1))
    third = write(tmp_path / "3.yaml", model_deployment("three", gpu=1))

    code, out, _ = run(capsys, "validate", "-f", second, first, "--filename", third, "-o", "json")

    assert code == Exit.OK
    assert [r["name"] for r in json.loads(out)] == ["one", "two", "three"]


def test_no_manifest_at_all_is_a_usage_error_of_the_command(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["validate", "-o", "json"])

    err = capsys.readouterr().err
    assert exit_info.value.code == Exit.USAGE
    assert err.startswith("usage: runway validate ")
    assert err.endswith(
        "runway validate: error: the following arguments are required: FILE (or -f FILE)\n"
    )


# -- kind: List ------------------------------------------------------------------------------


def test_a_kubectl_list_is_validated_item_by_item_with_indexed_paths(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = model_deployment("broken", gpu=1)
    broken["spec"]["model"]["id"] = 7
    listed = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [model_deployment("a", gpu=1), model_deployment("b", gpu=1), broken],
    }

    code, out, _ = run(capsys, "validate", write(tmp_path / "list.yaml", listed))

    assert code == Exit.PARTIAL
    assert out.splitlines() == [
        "ns/a: allowed: engine vllm (auto), provider dynamo (auto)",
        "ns/b: allowed: engine vllm (auto), provider dynamo (auto)",
        "ns/broken: denied",
        "  items[2].spec.model.id: Invalid value: must be string, not integer",
        "2 allowed, 1 denied",
    ]


# -- every kind the webhook admits; the rest skipped -----------------------------------------


def test_validate_of_the_examples_folder_checks_every_admitted_kind(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(capsys, "validate", str(EXAMPLES / "gateway"), "-o", "json")

    results = json.loads(out)
    assert (code, err) == (Exit.OK, "")
    assert [(r["kind"], r["namespace"], r["name"], r["allowed"]) for r in results] == [
        ("ModelDeployment", "models", "llama-8b", True),
        ("ExternalModelProvider", "gateway", "openai", True),
    ]


def test_shipped_provider_configs_validate(capsys: pytest.CaptureFixture[str]) -> None:
    configs = str(ROOT / "kustomize" / "providers" / "provider-configs.yaml")

    code, out, _ = run(capsys, "validate", configs)

    assert code == Exit.OK
    assert out.splitlines() == [
        *(
            f"InferenceProviderConfig {n}: allowed"
            for n in ("dynamo", "kaito", "kuberay", "llmd", "vllm")
        ),
        "5 allowed, 0 denied",
    ]


def test_bad_provider_config_and_external_provider_are_denied_with_paths(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = provider_config("kuberay", rules=[("spec.engine.type ==", 9)])
    inline = external_model_provider("leaky", apiKey="sk-live-0123456789abcdef0123")
    internal = external_model_provider("inside", baseURL="http://10.0.0.8/v1")
    path = write(tmp_path / "objects.yaml", config, inline, internal)

    code, out, _ = run(capsys, "validate", path, "-o", "json")
    allowed = run(capsys, "validate", path, "--allow-destination", "10.0.0.0/8", "-o", "json")

    assert code == Exit.PARTIAL
    assert [(r["name"], r["namespace"], r["errors"]) for r in json.loads(out)] == [
        (
            "kuberay",
            None,
            [
                {
                    "field": "spec.selectionRules[0].condition",
                    "message": "Invalid value: line 1, column 20: Syntax error: mismatched input '<EOF>'",
                }
            ],
        ),
        (
            "leaky",
            "gw",
            [
                {
                    "field": "spec.apiKey",
                    "message": "Forbidden: credentials are never inline; reference a Secret key in spec.credentialsSecretRef",
                }
            ],
        ),
        (
            "inside",
            "gw",
            [
                {
                    "field": "spec.baseURL",
                    "message": json.loads(out)[2]["errors"][0]["message"],
                }
            ],
        ),
    ]
    assert json.loads(out)[2]["errors"][0]["message"].startswith("Forbidden: ")
    assert [r["allowed"] for r in json.loads(allowed[1])] == [False, False, True]
    text = run(capsys, "validate", path)
    assert "sk-live-0123456789abcdef0123" not in text[1] + text[2]


def test_other_kinds_are_skipped_and_do_not_fail(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"}}
    path = write(tmp_path / "mixed.yaml", deployment, model_deployment("m", gpu=1))

    code, out, _ = run(capsys, "validate", path)
    json_code, json_out, _ = run(capsys, "validate", path, "-o", "json")

    assert (code, json_code) == (Exit.OK, Exit.OK)
    assert out.splitlines() == [
        f"skipped Deployment/x ({path} (document 1)): not a kind of Runway's API groups",
        "ns/m: allowed: engine vllm (auto), provider dynamo (auto)",
        "1 allowed, 0 denied, 1 skipped",
    ]
    assert json.loads(json_out)[0] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "x",
        "namespace": None,
        "source": f"{path} (document 1)",
        "operation": "CREATE",
        "allowed": True,
        "skipped": "not a kind of Runway's API groups",
        "errors": [],
        "warnings": [],
        "patch": [],
        "object": deployment,
    }


def test_explain_skips_other_kinds_with_a_note(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "explain", str(EXAMPLES / "gateway" / "openai.yaml"))

    assert (code, out) == (Exit.OK, "")
    assert err == (
        f"runway: skipped ExternalModelProvider/openai ({EXAMPLES / 'gateway' / 'openai.yaml'} "
        "(document 1)): explain shows ModelDeployments only\n"
    )


# -- explain tells one story ----------------------------------------------------------------


def test_explain_of_an_explicit_provider_that_selection_excludes_says_why_it_stands(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(capsys, "explain", str(EXAMPLES / "dynamo-mocker.yaml"))

    assert code == Exit.OK
    assert out.splitlines() == [
        "models/qwen-mocker",
        "  engine:    vllm (auto) auto-selected: the dynamo mocker test backend runs only vllm",
        "  provider:  dynamo (explicit) set in spec.provider.name",
        "  candidates (automatic selection, for comparison: the provider is set):",
        "    dynamo     chosen (explicit); automatic selection would exclude it (does not run "
        "engine vllm without a GPU), but this object runs the provider's test backend instead "
        "of an engine",
        "    kaito      excluded: does not run engine vllm without a GPU",
        "    kuberay    excluded: does not run engine vllm without a GPU",
        "    llmd       excluded: does not run engine vllm without a GPU",
        "    vllm       excluded: does not run engine vllm without a GPU",
    ]


EXCLUDED = "does not run engine vllm without a GPU"


@pytest.mark.parametrize(
    ("obj", "note", "verdict"),
    [
        (
            model_deployment(gpu=0, engine="vllm", provider="kaito"),
            f"automatic selection would exclude it ({EXCLUDED}), and admission denies this "
            "choice (runway validate says why)",
            Exit.PARTIAL,
        ),
        (
            model_deployment(gpu=2, engine="vllm", provider="kuberay"),
            "automatic selection: priority 80",
            Exit.OK,
        ),
        (
            model_deployment(gpu=1, engine="vllm", provider="vllm"),
            "automatic selection: explicit-only: no selection rules",
            Exit.OK,
        ),
        (
            model_deployment(
                gpu=0, provider="dynamo", annotations={"airunway.ai/dynamo-test-backend": "mocker"}
            ),
            f"automatic selection would exclude it ({EXCLUDED}), but this object runs the "
            "provider's test backend instead of an engine",
            Exit.OK,
        ),
    ],
    ids=["excluded-and-denied", "ranked", "explicit-only", "test-backend"],
)
def test_explain_of_an_explicit_provider_agrees_with_admission(
    obj: dict[str, Any],
    note: str,
    verdict: Exit,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = write(tmp_path / "md.yaml", obj)
    provider = obj["spec"]["provider"]["name"]

    code, out, _ = run(capsys, "explain", path)
    _, as_json, _ = run(capsys, "explain", path, "-o", "json")
    admitted, _, _ = run(capsys, "validate", path)

    line = next(x for x in out.splitlines() if x.startswith(f"    {provider} "))
    assert (code, line) == (Exit.OK, f"    {provider:<10} chosen (explicit); {note}")
    chosen = [(c["name"], c["note"]) for c in json.loads(as_json)[0]["candidates"] if c["chosen"]]
    assert chosen == [(provider, note)]
    assert admitted == verdict


# -- -o yaml ---------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["validate", "explain", "version"])
def test_yaml_output_is_the_json_structure(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    files = [] if command == "version" else [str(EXAMPLES / "vllm-multi-gpu.yaml")]

    as_json = run(capsys, command, *files, "-o", "json")
    as_yaml = run(capsys, command, *files, "-o", "yaml")

    assert as_yaml[0] == as_json[0] == Exit.OK
    assert yaml.safe_load(as_yaml[1]) == json.loads(as_json[1])
    assert ("&id" in as_yaml[1], "*id" in as_yaml[1]) == (False, False)


# -- version ---------------------------------------------------------------------------------


def test_version_prints_runway_and_the_shipped_pins(capsys: pytest.CaptureFixture[str]) -> None:
    pins = Versions.parse((ROOT / "core" / "model" / "versions.env").read_text()).as_env()

    code, out, _ = run(capsys, "version")
    _, as_json, _ = run(capsys, "version", "-o", "json")

    assert code == Exit.OK
    assert out.splitlines() == ["runway 0.1.0", *(f"{k}={v}" for k, v in sorted(pins.items()))]
    assert json.loads(as_json) == {"runway": "0.1.0", "upstream": pins}


# -- -v, unknown flags, --context and -n -----------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "verbosity"),
    [
        (["validate", "x.yaml"], 0),
        (["-v", "validate", "x.yaml"], 1),
        (["validate", "-v", "x.yaml"], 1),
        (["validate", "x.yaml", "-vv"], 2),
        (["-v", "validate", "-v", "x.yaml"], 2),
        (["certs", "issue", "--out", "d", "-v"], 1),
    ],
    ids=["none", "before", "after", "after-twice", "both", "nested-command"],
)
def test_verbose_counts_before_and_after_the_command(argv: list[str], verbosity: int) -> None:
    args = parse(argv)

    assert args.verbose + getattr(args, "local_verbose", 0) == verbosity


@pytest.mark.parametrize(
    ("argv", "prog"),
    [
        (["validate", "--bogus", "x.yaml"], "runway validate"),
        (["render", "x", "--repo", "r", "--bogus"], "runway render"),
        (["certs", "issue", "--out", "d", "--bogus"], "runway certs issue"),
        (["--bogus", "version"], "runway version"),
    ],
    ids=["validate", "render", "nested-command", "before-the-command"],
)
def test_an_unknown_flag_prints_the_usage_of_its_command(
    argv: list[str], prog: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)

    err = capsys.readouterr().err
    assert exit_info.value.code == Exit.USAGE
    assert err.startswith(f"usage: {prog} ")
    assert err.endswith(f"{prog}: error: unrecognized arguments: --bogus\n")


def test_namespace_flag_gives_objects_without_one_a_namespace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    md = model_deployment("m", gpu=1)
    del md["metadata"]["namespace"]
    path = write(tmp_path / "md.yaml", md)

    before = run(capsys, "-n", "team-a", "validate", path)
    after = run(capsys, "validate", path, "--namespace", "team-a")
    unset = run(capsys, "validate", path)

    assert before == after
    assert (
        before[1].splitlines()[0] == "team-a/m: allowed: engine vllm (auto), provider dynamo (auto)"
    )
    assert (
        unset[1].splitlines()[0] == "default/m: allowed: engine vllm (auto), provider dynamo (auto)"
    )


def test_namespace_flag_refuses_an_object_of_another_namespace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path / "md.yaml", model_deployment("m", "team-b", gpu=1))

    assert run(capsys, "validate", "-n", "team-a", path) == (
        Exit.USAGE,
        "",
        f"runway: {path} (document 1): the object's namespace 'team-b' does not match "
        "-n/--namespace 'team-a'; remove one of them\n",
    )


@pytest.mark.parametrize(
    ("argv", "flag", "prog"),
    [
        (["--context", "kind", "crds"], "--context", "runway crds"),
        (["-n", "x", "version"], "-n/--namespace", "runway version"),
        (["--context", "kind", "validate", "f.yaml"], "--context", "runway validate"),
    ],
    ids=["context-crds", "namespace-version", "context-validate"],
)
def test_cluster_flags_before_a_command_that_has_no_use_for_them_are_refused(
    argv: list[str], flag: str, prog: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, *argv) == (Exit.USAGE, "", f"runway: {flag}: `{prog}` has no use for it\n")


def test_gateway_plan_reads_standard_input(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    files = sorted((EXAMPLES / "gateway").glob("*.yaml"))
    stdin(monkeypatch, "---\n".join(path.read_text() for path in files))

    piped = run(capsys, "gateway-plan", "-", "-o", "json")
    named = run(capsys, "gateway-plan", *map(str, files), "-o", "json")

    assert piped == named
    assert piped[0] == Exit.PARTIAL  # the worked example's clash


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    value=st.text(max_size=8).filter(lambda v: not v.startswith("-"))
    | st.sampled_from(["\u00b2", "\u0663", "\uff11", "7", "0", "12\n"])
)
def test_a_count_is_ascii_digits_and_anything_else_is_a_usage_error_naming_it(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["render", "in.yaml", "--repo", "out", "--max-removals", value]
    if value and set(value) <= set("0123456789"):
        assert parse(argv).max_removals == int(value)
        return
    with pytest.raises(SystemExit) as exited:
        parse(argv)
    err = capsys.readouterr().err
    assert exited.value.code == 2
    assert f"argument --max-removals: expected a count (0 or more), got {value!r}" in err
