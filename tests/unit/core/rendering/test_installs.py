"""A provider's installation annotation: read into typed values (or whole FieldError lists), then
written as Flux and Argo CD objects that pass the schema pack's strict check, and as the helm
commands that do the same by hand."""

from __future__ import annotations

import json
from typing import Any

import pytest

from core.checks.installation import (
    DOCUMENTATION_ANNOTATION,
    INSTALLATION_ANNOTATION,
    MAX_INSTALLATION_BYTES,
    HelmChart,
    HelmRepo,
    Installation,
    InstallStep,
    read_installation,
)
from core.fields.errors import FieldError, Reason
from core.rendering.installs import (
    Flavour,
    GitOpsSettings,
    InstallOutput,
    InstallPlan,
    argocd_objects,
    flux_objects,
    gitops_objects,
    helm_commands,
    install_output,
    plan_install,
    settings_errors,
)
from kubeio.shipped import bundled_config_objects, bundled_versions
from renderer.output.schemapack import load_pack
from renderer.output.strict import Schemas, check_objects

AT = f"metadata.annotations[{INSTALLATION_ANNOTATION}]"
CHARTED = ("dynamo", "kaito", "kuberay")


@pytest.fixture(scope="module")
def schemas() -> Schemas:
    return Schemas.from_pack(load_pack())


def shipped() -> dict[str, dict[str, Any]]:
    return {c["metadata"]["name"]: c for c in bundled_config_objects()}


def config(installation: Any, **annotations: str) -> dict[str, Any]:
    text = installation if isinstance(installation, str) else json.dumps(installation)
    return {
        "metadata": {"name": "p", "annotations": {INSTALLATION_ANNOTATION: text, **annotations}}
    }


def plan_of(obj: dict[str, Any]) -> InstallPlan:
    installation = read_installation(obj)
    assert isinstance(installation, Installation)
    plan = plan_install(installation)
    assert isinstance(plan, InstallPlan)
    return plan


def test_the_kaito_config_reads_whole() -> None:
    pins = bundled_versions().as_env()
    version = pins["KAITO_VERSION"]

    assert read_installation(shipped()["kaito"]) == Installation(
        description="KAITO's workspace controller and its CRDs, from KAITO's Helm repository",
        default_namespace="kaito-workspace",
        repos=(HelmRepo("kaito", "https://kaito-project.github.io/kaito/charts/kaito"),),
        charts=(
            HelmChart(
                "kaito-workspace",
                "kaito/workspace",
                version,
                "kaito-workspace",
                create_namespace=True,
            ),
        ),
        steps=(
            InstallStep(
                "Add the Helm repository",
                "Adds the chart repository of the KAITO workspace controller to Helm as kaito.",
                "helm repo add kaito https://kaito-project.github.io/kaito/charts/kaito",
            ),
            InstallStep(
                "Update the repository index",
                f"Reads the repository's chart list, so version {version} is found.",
                "helm repo update kaito",
            ),
            InstallStep(
                "Install the KAITO workspace controller",
                f"Installs or upgrades release kaito-workspace (chart workspace {version}) in "
                "namespace kaito-workspace, creating it if needed.",
                f"helm upgrade --install kaito-workspace kaito/workspace --version {version} "
                "--namespace kaito-workspace --create-namespace",
            ),
        ),
        documentation_url="https://kaito-project.github.io/kaito/docs/",
    )


def test_the_kaito_config_gives_flux_and_argocd_objects() -> None:
    version = bundled_versions().as_env()["KAITO_VERSION"]
    plan = plan_of(shipped()["kaito"])

    assert flux_objects(plan) == [
        {
            "apiVersion": "source.toolkit.fluxcd.io/v1",
            "kind": "HelmRepository",
            "metadata": {"name": "kaito", "namespace": "flux-system"},
            "spec": {"interval": "1h", "url": "https://kaito-project.github.io/kaito/charts/kaito"},
        },
        {
            "apiVersion": "helm.toolkit.fluxcd.io/v2",
            "kind": "HelmRelease",
            "metadata": {"name": "kaito-workspace", "namespace": "flux-system"},
            "spec": {
                "chart": {
                    "spec": {
                        "chart": "workspace",
                        "sourceRef": {
                            "kind": "HelmRepository",
                            "name": "kaito",
                            "namespace": "flux-system",
                        },
                        "version": version,
                    }
                },
                "install": {"createNamespace": True},
                "interval": "10m",
                "releaseName": "kaito-workspace",
                "storageNamespace": "kaito-workspace",
                "targetNamespace": "kaito-workspace",
            },
        },
    ]
    assert argocd_objects(plan) == [
        {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "Application",
            "metadata": {"name": "kaito-workspace", "namespace": "argocd"},
            "spec": {
                "destination": {
                    "namespace": "kaito-workspace",
                    "server": "https://kubernetes.default.svc",
                },
                "project": "default",
                "source": {
                    "chart": "workspace",
                    "helm": {"releaseName": "kaito-workspace"},
                    "repoURL": "https://kaito-project.github.io/kaito/charts/kaito",
                    "targetRevision": version,
                },
                "syncPolicy": {
                    "automated": {"prune": True, "selfHeal": True},
                    "syncOptions": ["CreateNamespace=true", "ServerSideApply=true"],
                },
            },
        }
    ]


def test_every_shipped_chart_is_at_its_pin_and_its_steps_are_the_helm_commands() -> None:
    pins = bundled_versions().as_env()
    configs = shipped()
    wanted = {"dynamo": "DYNAMO_VERSION", "kaito": "KAITO_VERSION", "kuberay": "KUBERAY_VERSION"}

    versions = {name: [r.version for r in plan_of(configs[name]).releases] for name in CHARTED}
    steps = {
        name: [s.command for s in installation.steps]
        for name in CHARTED
        if isinstance(installation := read_installation(configs[name]), Installation)
    }

    assert versions == {name: [pins[pin]] for name, pin in wanted.items()}
    assert steps == {name: helm_commands(plan_of(configs[name])) for name in CHARTED}


def test_the_helm_commands_of_the_shipped_charts() -> None:
    pins = bundled_versions().as_env()

    assert {name: helm_commands(plan_of(shipped()[name])) for name in CHARTED} == {
        "dynamo": [
            "helm repo add nvidia-ai-dynamo https://helm.ngc.nvidia.com/nvidia/ai-dynamo",
            "helm repo update nvidia-ai-dynamo",
            "helm upgrade --install dynamo-platform nvidia-ai-dynamo/dynamo-platform --version "
            f"{pins['DYNAMO_VERSION']} --namespace dynamo-system --create-namespace",
        ],
        "kaito": [
            "helm repo add kaito https://kaito-project.github.io/kaito/charts/kaito",
            "helm repo update kaito",
            "helm upgrade --install kaito-workspace kaito/workspace --version "
            f"{pins['KAITO_VERSION']} --namespace kaito-workspace --create-namespace",
        ],
        "kuberay": [
            "helm repo add kuberay https://ray-project.github.io/kuberay-helm/",
            "helm repo update kuberay",
            "helm upgrade --install kuberay-operator kuberay/kuberay-operator --version "
            f"{pins['KUBERAY_VERSION']} --namespace ray-system --create-namespace",
        ],
    }


def test_providers_without_an_operator_have_steps_and_nothing_to_install() -> None:
    configs = shipped()

    found = {name: read_installation(configs[name]) for name in ("llmd", "vllm")}

    assert {
        name: (len(i.steps), i.charts, plan_install(i))
        for name, i in found.items()
        if isinstance(i, Installation)
    } == {
        "llmd": (2, (), InstallPlan(())),
        "vllm": (2, (), InstallPlan(())),
    }
    assert [flux_objects(InstallPlan(())), argocd_objects(InstallPlan(()))] == [[], []]


@pytest.mark.parametrize("flavour", list(Flavour))
@pytest.mark.parametrize("name", sorted(shipped()))
def test_every_shipped_install_object_passes_the_strict_check(
    name: str, flavour: Flavour, schemas: Schemas
) -> None:
    objects = gitops_objects(plan_of(shipped()[name]), flavour)
    kubernetes = bundled_versions().kubernetes

    checked = check_objects(objects, schemas, kubernetes=kubernetes)

    kinds = {Flavour.FLUX: ["HelmRepository", "HelmRelease"], Flavour.ARGOCD: ["Application"]}
    assert [(o["kind"], errors) for o, errors in checked] == [
        (kind, []) for kind in (kinds[flavour] if name in CHARTED else [])
    ]


def test_the_objects_are_deterministic_with_sorted_keys() -> None:
    plan = plan_of(shipped()["dynamo"])

    for flavour in Flavour:
        first, second = gitops_objects(plan, flavour), gitops_objects(plan, flavour)
        text = json.dumps(first)
        assert text == json.dumps(second) == json.dumps(first, sort_keys=True)


def test_settings_place_the_objects(schemas: Schemas) -> None:
    settings = GitOpsSettings(
        flux_namespace="gitops",
        argocd_namespace="argo",
        argocd_project="platform",
        destination_server="https://cluster.example.com",
        interval="5m",
        repository_interval="30m",
        automated=False,
    )
    plan = plan_of(shipped()["kuberay"])

    flux = flux_objects(plan, settings)
    argo = argocd_objects(plan, settings)

    assert [(o["kind"], o["metadata"]["namespace"], o["spec"]["interval"]) for o in flux] == [
        ("HelmRepository", "gitops", "30m"),
        ("HelmRelease", "gitops", "5m"),
    ]
    assert flux[1]["spec"]["chart"]["spec"]["sourceRef"]["namespace"] == "gitops"
    assert argo[0]["metadata"] == {"name": "kuberay-operator", "namespace": "argo"}
    assert argo[0]["spec"]["project"] == "platform"
    assert argo[0]["spec"]["destination"]["server"] == "https://cluster.example.com"
    assert argo[0]["spec"]["syncPolicy"] == {
        "syncOptions": ["CreateNamespace=true", "ServerSideApply=true"]
    }
    kubernetes = bundled_versions().kubernetes
    assert [e for _, e in check_objects(flux + argo, schemas, kubernetes=kubernetes)] == [[]] * 3


VALUED = {
    "helmRepos": [
        {"name": "charts", "url": "https://charts.example.com/stable"},
        {"name": "unused", "url": "https://unused.example.com"},
    ],
    "helmCharts": [
        {
            "name": "platform",
            "chart": "charts/platform",
            "version": "v2.0.0-rc.1",
            "namespace": "platform-system",
            "skipCrds": True,
            "values": {
                "global.grove.install": True,
                "global.grove.enabled": True,
                "operator.args": ["--a=1", "it's"],
                "resources": {"limits": {"cpu": "1"}},
            },
        },
        {
            "name": "extra",
            "chart": "charts/extra",
            "version": "1.0.0",
            "namespace": "platform-system",
        },
    ],
}


def test_values_are_set_json_for_helm_and_one_document_for_gitops(schemas: Schemas) -> None:
    plan = plan_of(config(VALUED))
    nested = {
        "global": {"grove": {"enabled": True, "install": True}},
        "operator": {"args": ["--a=1", "it's"]},
        "resources": {"limits": {"cpu": "1"}},
    }

    flux = flux_objects(plan)
    argo = argocd_objects(plan)

    assert helm_commands(plan) == [
        "helm repo add charts https://charts.example.com/stable",
        "helm repo update charts",
        "helm upgrade --install platform charts/platform --version v2.0.0-rc.1 --namespace "
        "platform-system --skip-crds --set-json global.grove.enabled=true --set-json "
        "global.grove.install=true --set-json "
        """'operator.args=["--a=1","it'"'"'s"]' --set-json 'resources={"limits":{"cpu":"1"}}'""",
        "helm upgrade --install extra charts/extra --version 1.0.0 --namespace platform-system",
    ]
    assert [o["metadata"]["name"] for o in flux] == ["charts", "platform", "extra"]
    assert flux[1]["spec"]["values"] == nested
    assert flux[1]["spec"]["install"] == {"crds": "Skip"}
    assert "install" not in flux[2]["spec"]
    assert argo[0]["spec"]["source"]["helm"] == {
        "releaseName": "platform",
        "skipCrds": True,
        "valuesObject": nested,
    }
    assert argo[0]["spec"]["syncPolicy"]["syncOptions"] == ["ServerSideApply=true"]
    kubernetes = bundled_versions().kubernetes
    assert [e for _, e in check_objects(flux + argo, schemas, kubernetes=kubernetes)] == [[]] * 5


def test_a_bad_annotation_gets_every_error_with_its_path() -> None:
    bad = {
        "description": 7,
        "defaultNamespace": "Bad_NS",
        "helmRepo": [],
        "helmRepos": [
            {"name": "charts", "url": "ftp://charts.example.com"},
            {"name": "charts", "url": "https://user:pw@example.com"},
            "not an object",
        ],
        "helmCharts": [
            {
                "name": "x" * 54,
                "chart": "charts/a b",
                "version": "^1.2",
                "namespace": "",
                "createNamespace": "yes",
                "values": {
                    "a.b": 1,
                    "a": {"b": 2},
                    "list[0]": 1,
                    "n": 2**64,
                    "z": {"": 1, "\x00": 2},
                },
            },
            {"chart": "charts/ok", "namespace": "ok", "unknown": 1},
        ],
        "steps": [{"title": "t"}, {"title": "t", "description": "d", "command": ["x"]}],
    }
    charts = f"{AT}.helmCharts"

    assert read_installation(config(bad, **{DOCUMENTATION_ANNOTATION: "javascript:alert(1)"})) == [
        FieldError(
            f"metadata.annotations[{DOCUMENTATION_ANNOTATION}]",
            Reason.INVALID,
            "must be an http:// or https:// URL with a host",
        ),
        FieldError(f"{AT}.helmRepo", Reason.UNKNOWN_FIELD, "not a field of AI Runway's installation format"),
        FieldError(f"{AT}.description", Reason.INVALID, "must be a string"),
        FieldError(f"{AT}.defaultNamespace", Reason.INVALID, "'Bad_NS' is not a namespace name: must be an RFC 1123 label: lower-case letters, digits and '-', starting and ending with a letter or digit"),
        FieldError(f"{AT}.helmRepos[0].url", Reason.INVALID, "'ftp://charts.example.com' must be an http:// or https:// URL with a host"),
        FieldError(f"{AT}.helmRepos[1].url", Reason.INVALID, "'https://user:pw@example.com' must not carry credentials: everyone who may read the config reads them"),
        FieldError(f"{AT}.helmRepos[2]", Reason.INVALID, "must be a JSON object"),
        FieldError(f"{charts}[0].name", Reason.INVALID, f"{'x' * 54!r} is not a Helm release name: must be at most 53 characters, not 54"),
        FieldError(f"{charts}[0].chart", Reason.INVALID, "'charts/a b' must not contain whitespace or control characters"),
        FieldError(f"{charts}[0].version", Reason.INVALID, "'^1.2' is not an exact chart version (SemVer such as 1.2.3): a range would install whatever is newest"),
        FieldError(f"{charts}[0].namespace", Reason.REQUIRED, "must be given"),
        FieldError(f"{charts}[0].values[list[0]]", Reason.INVALID, "must be a dotted Helm values path (letters, digits, '_' and '-' between dots)"),
        FieldError(f"{charts}[0].values[n]", Reason.INVALID, "holds an integer outside the 64-bit range Kubernetes stores"),
        FieldError(f"{charts}[0].values[z]", Reason.INVALID, "holds a key with a NUL character"),
        FieldError(f"{charts}[0].values[a.b]", Reason.DUPLICATE, "is inside 'a', which is set too"),
        FieldError(f"{charts}[0].createNamespace", Reason.INVALID, "must be true or false"),
        FieldError(f"{charts}[1].unknown", Reason.UNKNOWN_FIELD, "not a field of AI Runway's installation format"),
        FieldError(f"{charts}[1].name", Reason.REQUIRED, "must be given"),
        FieldError(f"{AT}.steps[0].description", Reason.REQUIRED, "must be given"),
        FieldError(f"{AT}.steps[1].command", Reason.INVALID, "must be a string"),
        FieldError(f"{AT}.helmRepos[1].name", Reason.DUPLICATE, "'charts'"),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("text", "detail", "reason"),
    [
        ("{", "is not JSON: Expecting property name enclosed in double quotes at character 1", Reason.INVALID),
        ('{"steps": [], "steps": []}', "is not JSON Runway reads: duplicate key 'steps'", Reason.INVALID),
        ('{"helmCharts": [{"values": {"a": NaN}}]}', "is not JSON Runway reads: NaN is not a JSON number", Reason.INVALID),
        ('{"description": 1e999}', "is not JSON Runway reads: 1e999 is out of range", Reason.INVALID),
        ("[" * 100_000, f"may not be longer than {MAX_INSTALLATION_BYTES} bytes", Reason.TOO_LONG),
        ("[" * 30_000 + "]" * 30_000, "nests too deeply", Reason.INVALID),
        ("[]", "must be a JSON object", Reason.INVALID),
    ],
    ids=["broken", "duplicate-key", "nan", "infinite", "too-long", "too-deep", "not-an-object"],
)  # fmt: skip
def test_unreadable_text_is_one_error_on_the_annotation(
    text: str, detail: str, reason: Reason
) -> None:
    assert read_installation(config(text)) == [FieldError(AT, reason, detail)]


def test_lists_past_their_bound_are_refused_without_reading_them() -> None:
    many: dict[str, list[dict[str, str]]] = {
        "helmRepos": [{}] * 17,
        "helmCharts": [{}] * 17,
        "steps": [{}] * 33,
    }

    assert read_installation(config(many)) == [
        FieldError(f"{AT}.helmRepos", Reason.TOO_MANY, "must have at most 16 items, not 17"),
        FieldError(f"{AT}.helmCharts", Reason.TOO_MANY, "must have at most 16 items, not 17"),
        FieldError(f"{AT}.steps", Reason.TOO_MANY, "must have at most 32 items, not 33"),
    ]


def test_no_annotation_is_an_empty_installation() -> None:
    assert read_installation({"metadata": {"name": "p"}}) == Installation()
    assert read_installation({}) == Installation()


def test_charts_a_gitops_tool_cannot_install_are_refused_by_the_plan() -> None:
    installation = read_installation(
        config(
            {
                "helmRepos": [{"name": "charts", "url": "https://charts.example.com"}],
                "helmCharts": [
                    {"name": "a", "chart": "https://charts.example.com/a-1.0.0.tgz", "namespace": "a"},
                    {"name": "b", "chart": "other/b", "version": "1.0.0", "namespace": "b"},
                    {"name": "c", "chart": "charts/c", "namespace": "c", "fetchUrl": "https://x.example.com/c.tgz"},
                    {"name": "d", "chart": "charts/d", "version": "1.0.0", "namespace": "d", "preCrdUrls": ["https://x.example.com/crd.yaml"], "preInstallMissingCrds": True},
                ],
            }
        )
    )  # fmt: skip
    assert isinstance(installation, Installation)
    charts = f"{AT}.helmCharts"
    runs_itself = "AI Runway's installer runs this itself; a GitOps install has no such step"
    not_a_repo = "a GitOps install needs <repository>/<chart> naming one of helmRepos (charts), not a URL or a local path"

    assert plan_install(installation) == [
        FieldError(f"{charts}[0].chart", Reason.INVALID, f"'https://charts.example.com/a-1.0.0.tgz': {not_a_repo}"),
        FieldError(f"{charts}[0].version", Reason.REQUIRED, "a GitOps install pins the chart version"),
        FieldError(f"{charts}[1].chart", Reason.INVALID, f"'other/b': {not_a_repo}"),
        FieldError(f"{charts}[2].version", Reason.REQUIRED, "a GitOps install pins the chart version"),
        FieldError(f"{charts}[2].fetchUrl", Reason.FORBIDDEN, runs_itself),
        FieldError(f"{charts}[3].preCrdUrls", Reason.FORBIDDEN, runs_itself),
        FieldError(f"{charts}[3].preInstallMissingCrds", Reason.FORBIDDEN, runs_itself),
    ]  # fmt: skip


def test_install_output_is_what_the_providers_page_shows() -> None:
    configs = shipped()
    kaito = install_output(configs["kaito"], Flavour.ARGOCD)
    plan = plan_of(configs["kaito"])
    installation = read_installation(configs["kaito"])
    assert isinstance(installation, Installation)

    assert kaito == InstallOutput(
        installation,
        tuple(argocd_objects(plan)),
        tuple(helm_commands(plan)),
    )
    vllm = install_output(configs["vllm"], Flavour.FLUX)
    assert isinstance(vllm, InstallOutput)
    assert (vllm.objects, vllm.commands, len(vllm.installation.steps)) == ((), (), 2)
    assert install_output(config("{"), Flavour.FLUX) == [
        FieldError(
            AT,
            Reason.INVALID,
            "is not JSON: Expecting property name enclosed in double quotes at character 1",
        )
    ]
    unpinned = {
        "helmRepos": [{"name": "r", "url": "https://r.example.com"}],
        "helmCharts": [{"name": "a", "chart": "r/a", "namespace": "a"}],
    }
    assert install_output(config(unpinned), Flavour.FLUX) == [
        FieldError(
            f"{AT}.helmCharts[0].version",
            Reason.REQUIRED,
            "a GitOps install pins the chart version",
        )
    ]


def test_settings_are_checked() -> None:
    assert settings_errors(GitOpsSettings()) == []
    assert settings_errors(
        GitOpsSettings(
            flux_namespace="Flux",
            argocd_namespace="",
            argocd_project="a_b",
            destination_server="kubernetes.default.svc",
            interval="10 minutes",
            repository_interval="1d",
        )
    ) == [
        FieldError("gitops.flux_namespace", Reason.INVALID, "must be an RFC 1123 label: lower-case letters, digits and '-', starting and ending with a letter or digit"),
        FieldError("gitops.argocd_namespace", Reason.INVALID, "must be a non-empty string"),
        FieldError("gitops.argocd_project", Reason.INVALID, "must be an RFC 1123 subdomain: dot-separated RFC 1123 labels: lower-case letters, digits and '-'"),
        FieldError("gitops.destination_server", Reason.INVALID, "must be an http:// or https:// URL with a host"),
        FieldError("gitops.interval", Reason.INVALID, "must be a Flux duration such as 10m or 1h30m"),
        FieldError("gitops.repository_interval", Reason.INVALID, "must be a Flux duration such as 10m or 1h30m"),
    ]  # fmt: skip
