"""The webhook's settings: one frozen value, from flags or from RUNWAY_* variables."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from core.fields.errors import UsageError
from core.model.destinations import Destinations

STALE_LOW, STALE_HIGH = 1, 3600


class SettingsError(UsageError):
    """A setting of the webhook or the portal that cannot be used; startup stops and names it."""


@dataclass(frozen=True, slots=True)
class Settings:
    """Variables (defaults are the safe ones):

    RUNWAY_HOST (127.0.0.1), RUNWAY_PORT (8443), RUNWAY_CERT and RUNWAY_KEY (PEM files; required
    to serve), RUNWAY_PROVIDERS (directories of InferenceProviderConfig YAML, separated by ":";
    empty: the five shipped configs), RUNWAY_IN_CLUSTER (true: watch InferenceProviderConfigs
    with the pod's service account), RUNWAY_KUBECONFIG (watch them through this kubeconfig),
    RUNWAY_WORKERS (2), RUNWAY_THREADS (64: threads per worker, the requests one worker reads or
    answers at once; idle connections wait without a thread, see webhook/worker.py),
    RUNWAY_MAX_BODY_BYTES (3 MiB, the API server's own
    request limit), RUNWAY_ALLOW_DESTINATIONS (host names and CIDRs, separated by ",", that an
    ExternalModelProvider's base URL may name although they are internal; empty: public only),
    RUNWAY_VERBOSE (0; 1: every allowed admission is logged too), RUNWAY_STALE_SECONDS (60: a cluster source whose data has not been current this long is not
    ready, see webhook/source.py). PROMETHEUS_MULTIPROC_DIR is set by the server itself at
    start (webhook/multiprocess.py): the directory its workers' metrics are written to.
    """

    host: str = "127.0.0.1"
    port: int = 8443
    cert: str = ""
    key: str = ""
    providers: tuple[str, ...] = ()
    in_cluster: bool = False
    kubeconfig: str = ""
    workers: int = 2
    threads: int = 64
    max_body_bytes: int = 3 * 1024 * 1024
    allow_destinations: tuple[str, ...] = ()
    stale_seconds: int = 60
    metrics_dir: str = ""
    verbose: int = 0  # 1 or more: the webhook's DEBUG lines too (each allowed admission)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        providers = tuple(p for p in env.get("RUNWAY_PROVIDERS", "").split(":") if p)
        return cls(
            host=env.get("RUNWAY_HOST", "127.0.0.1"),
            port=_int(env, "RUNWAY_PORT", 8443, low=0, high=65535),
            cert=env.get("RUNWAY_CERT", ""),
            key=env.get("RUNWAY_KEY", ""),
            providers=providers,
            in_cluster=_bool(env, "RUNWAY_IN_CLUSTER"),
            kubeconfig=env.get("RUNWAY_KUBECONFIG", ""),
            workers=_int(env, "RUNWAY_WORKERS", 2, low=1, high=64),
            threads=_int(env, "RUNWAY_THREADS", 64, low=1, high=1024),
            max_body_bytes=_int(
                env, "RUNWAY_MAX_BODY_BYTES", 3 * 1024 * 1024, low=1024, high=1 << 30
            ),
            allow_destinations=tuple(
                d.strip() for d in env.get("RUNWAY_ALLOW_DESTINATIONS", "").split(",") if d.strip()
            ),
            stale_seconds=_int(env, "RUNWAY_STALE_SECONDS", 60, low=STALE_LOW, high=STALE_HIGH),
            metrics_dir=env.get("PROMETHEUS_MULTIPROC_DIR", ""),
            verbose=_int(env, "RUNWAY_VERBOSE", 0, low=0, high=2),
        ).checked()

    def checked(self) -> Settings:
        """Refuse combinations that cannot work, naming the setting."""
        sources = sum(bool(x) for x in (self.providers, self.in_cluster, self.kubeconfig))
        if sources > 1:
            raise SettingsError(
                "RUNWAY_PROVIDERS",
                "choose one provider source: directories, in-cluster or a kubeconfig",
            )
        if not STALE_LOW <= self.stale_seconds <= STALE_HIGH:
            raise SettingsError(
                "--stale-seconds", f"must be between {STALE_LOW} and {STALE_HIGH} seconds"
            )
        self.destinations()
        return self

    def destinations(self) -> Destinations:
        """The internal destinations an ExternalModelProvider may name anyway."""
        try:
            return Destinations.parse(self.allow_destinations)
        except ValueError as err:
            raise SettingsError("RUNWAY_ALLOW_DESTINATIONS", str(err)) from None

    def to_env(self) -> dict[str, str]:
        """The same settings as RUNWAY_* variables (for worker processes)."""
        return {
            "RUNWAY_HOST": self.host,
            "RUNWAY_PORT": str(self.port),
            "RUNWAY_CERT": self.cert,
            "RUNWAY_KEY": self.key,
            "RUNWAY_PROVIDERS": ":".join(self.providers),
            "RUNWAY_IN_CLUSTER": "true" if self.in_cluster else "false",
            "RUNWAY_KUBECONFIG": self.kubeconfig,
            "RUNWAY_WORKERS": str(self.workers),
            "RUNWAY_THREADS": str(self.threads),
            "RUNWAY_MAX_BODY_BYTES": str(self.max_body_bytes),
            "RUNWAY_ALLOW_DESTINATIONS": ",".join(self.allow_destinations),
            "RUNWAY_STALE_SECONDS": str(self.stale_seconds),
            "PROMETHEUS_MULTIPROC_DIR": self.metrics_dir,
        }


def _int(env: Mapping[str, str], name: str, default: int, *, low: int, high: int) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        shown = repr(raw) if len(raw) <= 40 else f"{raw[:40]!r}... ({len(raw)} characters)"
        raise SettingsError(name, f"must be a whole number, not {shown}") from None
    if not low <= value <= high:
        raise SettingsError(name, f"must be between {low} and {high}")
    return value


def _bool(env: Mapping[str, str], name: str) -> bool:
    raw = env.get(name, "").strip().lower()
    if raw in ("", "0", "false", "no", "off"):
        return False
    if raw in ("1", "true", "yes", "on"):
        return True
    raise SettingsError(name, f"must be true or false, not {raw!r}")
