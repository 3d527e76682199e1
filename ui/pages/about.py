"""Page 6, About: Runway's version and pins, the mode and settings this portal runs with, and in
live mode the connection state and which of the kinds Runway reads and writes have CRDs."""

from __future__ import annotations

from dataclasses import dataclass

import kubernetes
from flask import Blueprint, render_template

from core.model.kinds import EMP_GROUP, GROUP
from kubeio.client import api_failure
from kubeio.shipped import bundled_versions, runway_version
from kubeio.upstream import upstream_kinds
from ui.cluster import TIMEOUT
from ui.context import NavItem, portal

blueprint = Blueprint("about", __name__)
NAV = NavItem("about.page", "About")
# The CRDs the pages read, by group: Runway's own, the gateway's and the GitOps tools'; the
# providers' upstream groups join them (watched_groups).
OWN_GROUPS = (
    GROUP,
    EMP_GROUP,
    "inference.networking.k8s.io",
    "inference.networking.x-k8s.io",
    "gateway.networking.k8s.io",
    "source.toolkit.fluxcd.io",
    "helm.toolkit.fluxcd.io",
    "kustomize.toolkit.fluxcd.io",
    "argoproj.io",
)


def watched_groups() -> frozenset[str]:
    """OWN_GROUPS and the API groups of the kinds the providers render (kubeio.objects)."""
    return frozenset((*OWN_GROUPS, *(kind.group for kind in upstream_kinds())))


@dataclass(frozen=True, slots=True)
class Connection:
    server: str
    version: str = ""  # the API server's gitVersion
    problem: str = ""  # why it could not be read
    crds: tuple[tuple[str, str], ...] = ()  # (name, served versions) of the watched groups


def connection() -> Connection | None:
    """The API server as the portal's own client sees it (None offline)."""
    found = portal().cluster
    if found is None:
        return None
    try:
        client = found.own()
        server = client.configuration.host
        info = kubernetes.client.VersionApi(client).get_code(_request_timeout=TIMEOUT)
        crds = kubernetes.client.ApiextensionsV1Api(client).list_custom_resource_definition(
            _request_timeout=TIMEOUT
        )
    except Exception as err:
        failure = api_failure(err)
        if failure is None:
            raise
        return Connection(server="", problem=failure)
    groups = watched_groups()
    present = sorted(
        (str(crd.metadata.name), ", ".join(v.name for v in crd.spec.versions if v.served))
        for crd in crds.items
        if crd.metadata is not None and crd.spec.group in groups
    )
    return Connection(server=server, version=info.git_version, crds=tuple(present))


@blueprint.get("/about")
def page() -> str:
    return render_template(
        "about.html",
        runway=runway_version(),
        pins=sorted(bundled_versions().as_env().items()),
        settings=portal().settings,
        connection=connection(),
    )
