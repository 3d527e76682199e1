"""The shipped CRD manifests are exactly what `runway crds` generates."""

from __future__ import annotations

import pytest
import yaml

from cli.main import main
from cli.manifests import crds_yaml
from core.schema.crds import model_deployment_spec
from tests.support.paths import ROOT


@pytest.mark.parametrize(("folder", "part"), [("base", "runtime"), ("gateway", "gateway")])
def test_committed_crds_match_the_generator(folder: str, part: str) -> None:
    committed = (ROOT / "kustomize" / folder / "crds.yaml").read_text()

    assert committed == crds_yaml(part), "run `make manifests` and commit the result"


def test_runway_crds_prints_three_crds(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["crds"]) == 0

    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    assert [d["metadata"]["name"] for d in docs] == [
        "modeldeployments.airunway.ai",
        "inferenceproviderconfigs.airunway.ai",
        "externalmodelproviders.gateway.tokenfactory.mirantis.com",
    ]
    assert [d["spec"]["scope"] for d in docs] == ["Namespaced", "Cluster", "Namespaced"]
    assert docs[2]["spec"]["names"]["shortNames"] == ["emp"]
    assert all(d["spec"]["versions"][0]["subresources"] == {"status": {}} for d in docs)
    md_schema = docs[0]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert md_schema["properties"]["spec"] == model_deployment_spec()
    assert md_schema["required"] == ["spec"]
