"""How one `runway ui` runs: one frozen value built by cli/ui.py and passed down to the app."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8080
DEFAULT_INSTALL_PATH = "infrastructure/providers"


class Mode(StrEnum):
    OFFLINE = "offline"  # a source folder, no cluster: pages Models, Providers, Gateway, About
    LIVE = "live"  # connected to an API server: every page, each call as the signed-in user


@dataclass(frozen=True, slots=True)
class UiSettings:
    mode: Mode = Mode.OFFLINE
    sources: tuple[str, ...] = ()  # -f DIR: the source folder(s) read in offline mode, and
    # in live mode the folder a composed object's patch is made against
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    workers: int = 1
    threads: int = 8
    actions: bool = False  # the site enables actions (commit a branch, apply); read-only without
    apply_as_user: bool = False  # the "apply to the cluster" output (needs actions too)
    repo: str = ""  # the GitOps source repository a "commit to a new branch" output pushes from
    remote: str = "origin"
    secret_key: bytes = b""  # signs the CSRF tokens; every worker must share it
    kubeconfig: str | None = None
    context: str | None = None
    in_cluster: bool = False
    # where a provider's install objects go in the repository: <install_path>/<provider>.yaml
    install_path: str = DEFAULT_INSTALL_PATH

    @property
    def live(self) -> bool:
        return self.mode is Mode.LIVE
