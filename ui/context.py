"""What a page's view reads about the running portal: its settings, its cluster (live mode) and
the signed-in user, kept on the app and the request rather than in globals."""

from __future__ import annotations

from dataclasses import dataclass

from flask import current_app, g

from kubeio.users import User
from renderer.output.schemapack import load_pack
from renderer.output.strict import Schemas
from ui.cluster import Cluster
from ui.settings import UiSettings

EXTENSION = "runway"
SCHEMAS = "runway.schemas"  # app.extensions: the schema pack, loaded once per app
OFFLINE_VIEWER = User(username="")  # offline: nobody is signed in, nothing acts on a cluster


@dataclass(frozen=True, slots=True)
class Portal:
    settings: UiSettings
    cluster: Cluster | None  # None offline


@dataclass(frozen=True, slots=True)
class NavItem:
    """A page's entry in the navigation: its endpoint, title, and whether it works offline."""

    endpoint: str
    title: str
    offline: bool = True


def portal() -> Portal:
    found: Portal = current_app.extensions[EXTENSION]
    return found


def viewer() -> User:
    """The signed-in user of this request (live mode), OFFLINE_VIEWER offline."""
    found: User = getattr(g, "viewer", OFFLINE_VIEWER)
    return found


def cluster() -> Cluster:
    """The cluster in live mode; a page that needs it is only routed in live mode."""
    found = portal().cluster
    if found is None:
        raise LookupError("this page needs a cluster: run `runway ui` without --offline")
    return found


def schemas() -> Schemas:
    """The schema pack every page's strict checks use (render's own), loaded at first use and
    then shared by the pages of this app."""
    found: Schemas | None = current_app.extensions.get(SCHEMAS)
    if found is None:
        found = current_app.extensions[SCHEMAS] = Schemas.from_pack(load_pack())
    return found
