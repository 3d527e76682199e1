"""`runway gateway-plan`: offline, exit 1 on an ambiguous name, never a key in its output."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from cli.main import main
from tests.support.paths import EXAMPLES

KEY = "sk-live-0123456789abcdef0123456789"


def test_plan_of_the_worked_example_reports_the_clash_and_no_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for example in (EXAMPLES / "gateway").glob("*.yaml"):
        shutil.copy(example, tmp_path / example.name)
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "openai-key", "namespace": "gateway"},
        "stringData": {"apiKey": KEY},
    }
    (tmp_path / "secret.yaml").write_text(yaml.safe_dump(secret))

    code = main(["-v", "gateway-plan", str(tmp_path), "-o", "json"])

    out, err = capsys.readouterr()
    assert code == 1
    assert KEY not in out + err
    owner = {"kind": "ExternalModelProvider", "namespace": "gateway", "name": "openai"}
    common = {
        "owner": owner,
        "target": "https://api.openai.com/v1",
        "credentials": {"secret": "openai-key", "key": "apiKey"},
        "requestedBy": "alice@example.com",
    }
    assert json.loads(out) == {
        "models": [
            {
                **common,
                "servedName": name,
                "upstreamModel": name,
                "id": f"runway:emp:gateway:openai:{name}",
            }
            for name in ("gpt-4o", "gpt-4o-mini")
        ],
        "conflicts": [
            {
                "servedName": "llama-3.1-8b",
                "claimants": [
                    owner,
                    {"kind": "ModelDeployment", "namespace": "models", "name": "llama-8b"},
                ],
            }
        ],
        "skipped": [],
    }


def test_plan_without_a_clash_exits_0_and_prints_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(EXAMPLES / "gateway" / "llama.yaml", tmp_path / "llama.yaml")

    assert main(["gateway-plan", str(tmp_path)]) == 0

    assert capsys.readouterr().out == (
        "model     llama-3.1-8b  ModelDeployment/models/llama-8b  "
        "-> http://llama-8b.models.svc.cluster.local:8000/v1\n"
    )


def test_plan_skips_another_groups_kind_with_the_note_every_command_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(EXAMPLES / "gateway" / "llama.yaml", tmp_path / "llama.yaml")
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
    (tmp_path / "cm.yaml").write_text(yaml.safe_dump(cm))

    assert main(["gateway-plan", str(tmp_path)]) == 0

    out, err = capsys.readouterr()
    assert out.startswith("model     llama-3.1-8b  ")
    assert err == (
        f"runway: skipped ConfigMap/x ({tmp_path}/cm.yaml (document 1)): not a kind "
        "of Runway's API groups\n"
    )


def test_plan_refuses_an_unknown_kind_of_runways_groups(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    typo = {"apiVersion": "airunway.ai/v1alpha1", "kind": "ModelDeploymnet"}
    (tmp_path / "md.yaml").write_text(yaml.safe_dump(typo))

    assert main(["gateway-plan", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        f"runway: {tmp_path}/md.yaml (document 1): ModelDeploymnet is not a kind of airunway.ai "
        "(it has ModelDeployment, InferenceProviderConfig); did you mean airunway.ai/v1alpha1 "
        "ModelDeployment?\n"
    )


def test_an_internal_base_url_is_registered_only_when_the_operator_allows_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    emp = {
        "apiVersion": "gateway.tokenfactory.mirantis.com/v1alpha1",
        "kind": "ExternalModelProvider",
        "metadata": {"name": "onprem", "namespace": "gw"},
        "spec": {"baseURL": "http://10.20.0.5:8000/v1", "models": [{"servedName": "local"}]},
    }
    (tmp_path / "emp.yaml").write_text(yaml.safe_dump(emp))

    refused = main(["gateway-plan", str(tmp_path)])
    refused_out = capsys.readouterr().out
    allowed = main(["gateway-plan", str(tmp_path), "--allow-destination", "10.20.0.0/16"])
    allowed_out = capsys.readouterr().out
    unusable = main(["gateway-plan", str(tmp_path), "--allow-destination", "not a host"])

    assert (refused, refused_out.splitlines()) == (
        1,
        [
            'skipped   ExternalModelProvider/gw/onprem: spec.baseURL: Forbidden: host "10.20.0.5" '
            "is a private or reserved address; an external provider is reached by a public DNS "
            "name or a global IP address"
        ],
    )
    assert (allowed, allowed_out.splitlines()) == (
        0,
        ["model     local  ExternalModelProvider/gw/onprem  -> http://10.20.0.5:8000/v1"],
    )
    assert (unusable, capsys.readouterr().err) == (
        2,
        "runway: --allow-destination: 'not a host' is neither a host name nor a CIDR\n",
    )


def test_the_plan_refuses_what_validate_refuses_including_engine_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # gateway-plan/gateway-sync built their provider registry without the flag catalogs, so a
    # Direct vLLM ModelDeployment the webhook and `runway validate` deny was planned and
    # registered in LiteLLM (issue #19).
    md = {
        "apiVersion": "airunway.ai/v1alpha1",
        "kind": "ModelDeployment",
        "metadata": {"name": "my-vllm", "namespace": "ml"},
        "spec": {
            "model": {"id": "meta-llama/Llama-3.1-8B-Instruct"},
            "engine": {"type": "vllm", "args": {"port": "9000", "no-such-flag": "1"}},
            "provider": {"name": "vllm"},
            "resources": {"gpu": {"count": 1}},
            "gateway": {"enabled": True},
        },
    }
    (tmp_path / "md.yaml").write_text(yaml.safe_dump(md))

    validated = main(["validate", str(tmp_path / "md.yaml")])
    denial = [line.strip() for line in capsys.readouterr().out.splitlines()[1:-1]]
    planned = main(
        ["gateway-plan", str(tmp_path), "--gateway-url", "http://gw.example.com", "-o", "json"]
    )
    plan = json.loads(capsys.readouterr().out)

    assert (validated, planned) == (1, 1)
    assert denial == [
        "spec.engine.args[no-such-flag]: Invalid value: --no-such-flag is not a flag of vllm 0.33.0",
        "spec.engine.args[port]: Forbidden: --port: Runway owns the server port (8000): the "
        "Service, the probes and the InferencePool target it; it cannot be changed",
    ]
    assert plan == {
        "models": [],
        "conflicts": [],
        "skipped": [
            {
                "owner": {"kind": "ModelDeployment", "namespace": "ml", "name": "my-vllm"},
                "reason": "rejected, so not served: " + "; ".join(denial),
            }
        ],
    }


def test_plan_registers_a_model_at_its_own_gateway_read_from_the_sources(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Gateway among the sources is read (not skipped with a note): its reported address is
    where the model with spec.gateway.gatewayRef is registered."""
    model = yaml.safe_load((EXAMPLES / "gateway" / "llama.yaml").read_text())
    model["spec"]["gateway"] = {"enabled": True, "gatewayRef": {"name": "team-gateway"}}
    gateway = {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "metadata": {"name": "team-gateway", "namespace": "models"},
        "spec": {
            "gatewayClassName": "istio",
            "listeners": [{"name": "http", "protocol": "HTTP", "port": 80}],
        },
        "status": {"addresses": [{"type": "IPAddress", "value": "10.0.0.7"}]},
    }
    (tmp_path / "model.yaml").write_text(yaml.safe_dump(model))
    (tmp_path / "gateway.yaml").write_text(yaml.safe_dump(gateway))

    assert main(["gateway-plan", str(tmp_path), "--gateway-url", "http://gw.example.com"]) == 0

    assert capsys.readouterr() == (
        "model     llama-3.1-8b  ModelDeployment/models/llama-8b  -> http://10.0.0.7/v1\n",
        "",
    )
