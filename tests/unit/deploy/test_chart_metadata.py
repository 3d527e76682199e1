"""Chart.yaml's Artifact Hub annotations (https://artifacthub.io/docs/topics/annotations/helm/):
each is a string, the lists are YAML inside it, and what they name is what the chart ships."""

from __future__ import annotations

import tomllib
from typing import Any

import yaml

from tests.support.paths import ROOT

CHART = ROOT / "charts" / "runway"


def metadata() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((CHART / "Chart.yaml").read_text())
    return loaded


def annotation(name: str) -> Any:
    text = metadata()["annotations"][f"artifacthub.io/{name}"]
    assert isinstance(text, str), name
    return yaml.safe_load(text)


def test_every_annotation_is_a_string_and_the_flags_are_false() -> None:
    annotations = metadata()["annotations"]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]

    assert sorted(annotations) == [
        "artifacthub.io/changes",
        "artifacthub.io/containsSecurityUpdates",
        "artifacthub.io/crds",
        "artifacthub.io/crdsExamples",
        "artifacthub.io/images",
        "artifacthub.io/license",
        "artifacthub.io/links",
        "artifacthub.io/prerelease",
    ]
    assert all(isinstance(v, str) for v in annotations.values())
    assert annotations["artifacthub.io/license"] == project["license"]
    assert (annotation("prerelease"), annotation("containsSecurityUpdates")) == (False, False)


def test_the_links_are_a_list_of_names_and_urls_under_home() -> None:
    chart = metadata()
    links = annotation("links")

    assert chart["sources"] == [chart["home"]]
    assert [sorted(link) for link in links] == [["name", "url"]] * len(links)
    assert [link["url"] for link in links] == [
        chart["home"],
        f"{chart['home']}/blob/main/docs/helm.md",
        f"{chart['home']}/blob/main/docs/image.md",
    ]
    assert all((ROOT / link["url"].split("/blob/main/")[1]).exists() for link in links[1:])


def test_the_images_are_the_ones_the_chart_deploys_by_default() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    proxy = values["ui"]["oauth2Proxy"]["image"]

    assert annotation("images") == [
        {"name": "runway", "image": f"{values['image']['repository']}:{values['image']['tag']}"},
        {"name": "oauth2-proxy", "image": f"{proxy['repository']}:{proxy['tag']}"},
    ]


def test_the_crds_are_the_ones_the_chart_installs_and_the_example_is_a_shipped_one() -> None:
    shipped = [d for d in yaml.safe_load_all((ROOT / "kustomize/base/crds.yaml").read_text()) if d]
    crds = annotation("crds")

    assert [(c["kind"], c["version"], c["name"]) for c in crds] == [
        (d["spec"]["names"]["kind"], v["name"], d["metadata"]["name"])
        for d in shipped
        for v in d["spec"]["versions"]
    ]
    assert all(c["displayName"] and c["description"] for c in crds)
    assert annotation("crdsExamples") == [
        yaml.safe_load((ROOT / "examples/vllm-1gpu.yaml").read_text())
    ]


def test_the_changes_are_kinds_artifact_hub_knows() -> None:
    changes = annotation("changes")

    assert changes and all(sorted(c) == ["description", "kind"] for c in changes)
    assert {c["kind"] for c in changes} <= {
        "added",
        "changed",
        "deprecated",
        "removed",
        "fixed",
        "security",
    }
    assert metadata()["kubeVersion"] == ">=1.30.0-0"
    assert "icon" not in metadata()  # the project has no icon yet
