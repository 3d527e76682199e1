"""A provider's installation (core/checks/installation.py) as objects for the GitOps repository,
and as the equivalent `helm` commands. Nothing here runs Helm or talks to a cluster.

Two stages: `plan_install` turns an Installation into InstallPlan (each chart from a declared
Helm repository at an exact version: what a GitOps tool can fetch and pin), or FieldErrors saying
why a chart cannot be installed that way; then `flux_objects`, `argocd_objects` and
`helm_commands` write the plan out, deterministically.

Fields, at the pins of core/model/versions.env:
  * Flux: source.toolkit.fluxcd.io/v1 HelmRepository (spec.url, spec.interval) and
    helm.toolkit.fluxcd.io/v2 HelmRelease (spec.chart.spec {chart, version, sourceRef},
    releaseName, targetNamespace, storageNamespace, install.createNamespace, install.crds,
    values), as the CRDs of source-controller FLUX_SOURCE_CONTROLLER_VERSION and helm-controller
    FLUX_HELM_CONTROLLER_VERSION (config/crd/bases) declare them.
  * Argo CD: argoproj.io/v1alpha1 Application with one Helm source (repoURL, chart,
    targetRevision, helm {releaseName, valuesObject, skipCrds}), destination {server,
    namespace}, syncPolicy {automated, syncOptions: CreateNamespace=true, ServerSideApply=true}
    (manifests/crds/application-crd.yaml at ARGOCD_VERSION). Server-side apply because operator
    charts carry CRDs larger than the annotation client-side apply keeps.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from core.checks.installation import (
    HelmChart,
    HelmRepo,
    Installation,
    annotation_path,
    read_installation,
)
from core.fields.errors import FieldError, Reason
from core.fields.paths import FieldPath
from core.model.names import NameRule, name_problem
from core.model.urls import url_problem

FLUX_SOURCE_API = "source.toolkit.fluxcd.io/v1"
FLUX_HELM_API = "helm.toolkit.fluxcd.io/v2"
ARGOCD_API = "argoproj.io/v1alpha1"


class Flavour(StrEnum):
    """Which GitOps engine the objects are for."""

    FLUX = "flux"
    ARGOCD = "argocd"


@dataclass(frozen=True, slots=True)
class GitOpsSettings:
    """Where the GitOps objects live and how they reconcile (the site's choices)."""

    flux_namespace: str = "flux-system"
    argocd_namespace: str = "argocd"
    argocd_project: str = "default"
    destination_server: str = "https://kubernetes.default.svc"
    interval: str = "10m"  # how often Flux reconciles a release
    repository_interval: str = "1h"  # how often Flux reads a repository's index
    automated: bool = True  # Argo CD syncs without a person pressing Sync


# Flux's duration pattern (HelmRelease and HelmRepository spec.interval).
_DURATION = re.compile(r"([0-9]+(\.[0-9]+)?(ms|s|m|h))+")


def settings_errors(settings: GitOpsSettings) -> list[FieldError]:
    """What is wrong with a site's GitOps settings (paths name the settings' fields)."""
    at = FieldPath.root("gitops")
    errors = []
    for field in ("flux_namespace", "argocd_namespace"):
        why = name_problem(getattr(settings, field), NameRule.LABEL)
        if why is not None:
            errors.append(FieldError(str(at.child(field)), Reason.INVALID, why))
    why = name_problem(settings.argocd_project, NameRule.SUBDOMAIN)
    if why is not None:
        errors.append(FieldError(str(at.child("argocd_project")), Reason.INVALID, why))
    found = url_problem(settings.destination_server)
    if found is not None:
        errors.append(FieldError(str(at.child("destination_server")), Reason.INVALID, found[0]))
    for field in ("interval", "repository_interval"):
        if not _DURATION.fullmatch(getattr(settings, field)):
            detail = "must be a Flux duration such as 10m or 1h30m"
            errors.append(FieldError(str(at.child(field)), Reason.INVALID, detail))
    return errors


@dataclass(frozen=True, slots=True)
class Release:
    """One chart, ready for GitOps: from `repo`, chart `chart` at exact `version`."""

    name: str
    repo: HelmRepo
    chart: str
    version: str
    namespace: str
    create_namespace: bool
    skip_crds: bool
    set_json: tuple[tuple[str, str], ...]

    def values(self) -> dict[str, Any]:
        """The --set-json overrides as one nested values document (keys never overlap: the
        reader refuses a key inside another's value)."""
        out: dict[str, Any] = {}
        for key, text in self.set_json:
            *parents, last = key.split(".")
            node = out
            for part in parents:
                node = node.setdefault(part, {})
            node[last] = json.loads(text)
        return out


@dataclass(frozen=True, slots=True)
class InstallPlan:
    releases: tuple[Release, ...]

    def repos(self) -> tuple[HelmRepo, ...]:
        """The repositories the releases use, each once, by name."""
        return tuple(
            sorted({r.repo.name: r.repo for r in self.releases}.values(), key=lambda r: r.name)
        )


def plan_install(installation: Installation) -> InstallPlan | list[FieldError]:
    """The releases a GitOps tool can install, or why a chart cannot be installed that way."""
    repos = {repo.name: repo for repo in installation.repos}
    errors: list[FieldError] = []
    releases = []
    for i, chart in enumerate(installation.charts):
        release = _release(chart, repos, i, errors)
        if release is not None:
            releases.append(release)
    return errors if errors else InstallPlan(tuple(releases))


def _release(
    chart: HelmChart, repos: Mapping[str, HelmRepo], i: int, errors: list[FieldError]
) -> Release | None:
    at = annotation_path().child("helmCharts").index(i)
    before = len(errors)
    repo_name, slash, name = chart.chart.partition("/")
    if not slash or "/" in name or repo_name not in repos:
        known = ", ".join(sorted(repos)) or "none declared"
        errors.append(
            FieldError(
                str(at.child("chart")),
                Reason.INVALID,
                f"{chart.chart!r}: a GitOps install needs <repository>/<chart> naming one of helmRepos ({known}), not a URL or a local path",
            )
        )
    elif name_problem(name, NameRule.SUBDOMAIN) is not None:
        errors.append(
            FieldError(
                str(at.child("chart")),
                Reason.INVALID,
                f"{name!r} is not a chart name Runway writes",
            )
        )
    if not chart.version:
        errors.append(
            FieldError(
                str(at.child("version")), Reason.REQUIRED, "a GitOps install pins the chart version"
            )
        )
    for field, given in (
        ("fetchUrl", bool(chart.fetch_url)),
        ("preCrdUrls", bool(chart.pre_crd_urls)),
        ("preInstallMissingCrds", chart.pre_install_missing_crds),
    ):
        if given:
            errors.append(
                FieldError(
                    str(at.child(field)),
                    Reason.FORBIDDEN,
                    "AI Runway's installer runs this itself; a GitOps install has no such step",
                )
            )
    if len(errors) != before:
        return None
    return Release(
        chart.release, repos[repo_name], name, chart.version, chart.namespace,
        chart.create_namespace, chart.skip_crds, chart.set_json,
    )  # fmt: skip


def flux_objects(
    plan: InstallPlan, settings: GitOpsSettings = GitOpsSettings()
) -> list[dict[str, Any]]:
    """A HelmRepository per repository, then a HelmRelease per chart, in the Flux namespace."""
    out: list[dict[str, Any]] = [
        {
            "apiVersion": FLUX_SOURCE_API,
            "kind": "HelmRepository",
            "metadata": {"name": repo.name, "namespace": settings.flux_namespace},
            "spec": {"interval": settings.repository_interval, "url": repo.url},
        }
        for repo in plan.repos()
    ]
    for release in plan.releases:
        spec: dict[str, Any] = {
            "interval": settings.interval,
            "releaseName": release.name,
            "targetNamespace": release.namespace,
            "storageNamespace": release.namespace,  # the release lives where `helm -n` keeps it
            "chart": {
                "spec": {
                    "chart": release.chart,
                    "version": release.version,
                    "sourceRef": {
                        "kind": "HelmRepository",
                        "name": release.repo.name,
                        "namespace": settings.flux_namespace,
                    },
                }
            },
        }
        install: dict[str, Any] = {}
        if release.create_namespace:
            install["createNamespace"] = True
        if release.skip_crds:
            install["crds"] = "Skip"
        if install:
            spec["install"] = install
        if release.set_json:
            spec["values"] = release.values()
        out.append(
            {
                "apiVersion": FLUX_HELM_API,
                "kind": "HelmRelease",
                "metadata": {"name": release.name, "namespace": settings.flux_namespace},
                "spec": spec,
            }
        )
    return [_sorted(obj) for obj in out]


def argocd_objects(
    plan: InstallPlan, settings: GitOpsSettings = GitOpsSettings()
) -> list[dict[str, Any]]:
    """An Application with one Helm source per chart, in the Argo CD namespace."""
    out = []
    for release in plan.releases:
        helm: dict[str, Any] = {"releaseName": release.name}
        if release.set_json:
            helm["valuesObject"] = release.values()
        if release.skip_crds:
            helm["skipCrds"] = True
        options = ["ServerSideApply=true"]
        if release.create_namespace:
            options.insert(0, "CreateNamespace=true")
        sync: dict[str, Any] = {"syncOptions": options}
        if settings.automated:
            sync["automated"] = {"prune": True, "selfHeal": True}
        out.append(
            {
                "apiVersion": ARGOCD_API,
                "kind": "Application",
                "metadata": {"name": release.name, "namespace": settings.argocd_namespace},
                "spec": {
                    "project": settings.argocd_project,
                    "source": {
                        "repoURL": release.repo.url,
                        "chart": release.chart,
                        "targetRevision": release.version,
                        "helm": helm,
                    },
                    "destination": {
                        "server": settings.destination_server,
                        "namespace": release.namespace,
                    },
                    "syncPolicy": sync,
                },
            }
        )
    return [_sorted(obj) for obj in out]


def gitops_objects(
    plan: InstallPlan, flavour: Flavour, settings: GitOpsSettings = GitOpsSettings()
) -> list[dict[str, Any]]:
    return (
        flux_objects(plan, settings) if flavour is Flavour.FLUX else argocd_objects(plan, settings)
    )


def helm_commands(plan: InstallPlan) -> list[str]:
    """The same install by hand: `helm repo add` and `helm repo update` per repository, then
    `helm upgrade --install` per chart; every argument shell-quoted."""
    lines = []
    for repo in plan.repos():
        lines.append(shlex.join(["helm", "repo", "add", repo.name, repo.url]))
        lines.append(shlex.join(["helm", "repo", "update", repo.name]))
    for release in plan.releases:
        argv = [
            "helm",
            "upgrade",
            "--install",
            release.name,
            f"{release.repo.name}/{release.chart}",
        ]
        argv += ["--version", release.version, "--namespace", release.namespace]
        if release.create_namespace:
            argv.append("--create-namespace")
        if release.skip_crds:
            argv.append("--skip-crds")
        for key, text in release.set_json:
            argv += ["--set-json", f"{key}={text}"]
        lines.append(shlex.join(argv))
    return lines


@dataclass(frozen=True, slots=True)
class InstallOutput:
    """Everything the Providers page shows for one config and flavour."""

    installation: Installation
    objects: tuple[dict[str, Any], ...]  # none: nothing to install with Helm
    commands: tuple[str, ...]


def install_output(
    config: Mapping[str, Any], flavour: Flavour, settings: GitOpsSettings = GitOpsSettings()
) -> InstallOutput | list[FieldError]:
    """A config's installation, its GitOps objects and helm commands, or every problem."""
    installation = read_installation(config)
    if isinstance(installation, list):
        return installation
    plan = plan_install(installation)
    if isinstance(plan, list):
        return plan
    objects = gitops_objects(plan, flavour, settings)
    return InstallOutput(installation, tuple(objects), tuple(helm_commands(plan)))


def _sorted(value: Any) -> Any:
    """The same value with every mapping's keys in sorted order (deterministic output)."""
    if isinstance(value, Mapping):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value
