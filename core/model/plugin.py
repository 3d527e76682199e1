"""What a provider package offers the core: the plug-in interface of providers/<name>/.

The core never imports a provider. The edges hand the plug-ins in (through the registry), and
every question whose answer depends on the provider is a call on its plug-in, never a switch
on its name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from core.fields.errors import FieldError
from core.fields.paths import FieldPath
from core.model.kinds import ModelDeployment
from core.model.versions import Versions


class UpstreamKind(NamedTuple):
    """A kind of object a provider renders and the status controller watches, as the API
    server's custom-object calls name it."""

    group: str
    version: str
    plural: str
    kind: str


@dataclass(frozen=True, slots=True)
class PodGroup:
    """Serving pods an upstream operator creates from one rendered object: where they come from,
    the labels the operator gives them, and the port they serve on when the operator fixes it
    (None: the rendered containers say it)."""

    where: str
    labels: Mapping[str, str]
    port: int | None = None
    owner: str = ""  # Kind/name of the object, when the operator fixes the port
    port_reason: str = ""
    # The model names the pods answer to, when the operator's config (not container args) says
    # them, and the field that does.
    serves: tuple[str, ...] = ()
    serves_at: str = ""


@dataclass(frozen=True, slots=True)
class Workload:
    """What a provider's upstream objects report, mapped by its status hook (status.py) into
    the terms of a ModelDeployment's status: a phase (Pending, Deploying, Running, Failed), a
    reason and message saying why, the replica counts and the Service that serves the model.
    `created` is False while the primary upstream object does not exist."""

    phase: str
    reason: str
    message: str
    desired: int = 0
    ready: int = 0
    available: int = 0
    service: str = ""
    port: int = 0
    created: bool = True


@dataclass(frozen=True, slots=True)
class ProviderContext:
    """What a provider's hooks know beyond the ModelDeployment: the metadata.annotations of its
    InferenceProviderConfig (settings a platform team sets once, such as how its operator is
    installed) and the facts shipped beside the provider (providers/<name>/facts/<fact>.json,
    parsed, by file name: data read from the operator's sources at the pin)."""

    name: str = ""
    settings: Mapping[str, str] = field(default_factory=dict)
    facts: Mapping[str, Any] = field(default_factory=dict)


def no_test_backend(md: ModelDeployment) -> bool:
    """For a provider without a test backend: the engine always runs."""
    return False


def no_admission_checks(
    md: ModelDeployment, context: ProviderContext, old: ModelDeployment | None
) -> tuple[list[FieldError], list[str]]:
    """For a provider with no admission rules of its own beyond layer 2 of the overrides."""
    return [], []


def spec_served_name(md: ModelDeployment, context: ProviderContext) -> str | None:
    """For a provider whose engine answers to the name the spec gives it (servednames.py)."""
    return None


def configured_picker(
    md: ModelDeployment, configured: str | None, context: ProviderContext
) -> str | None:
    """For a provider whose pool's picker runs what its InferenceProviderConfig says."""
    return configured


def no_invariants(
    md: ModelDeployment, objects: Sequence[Mapping[str, Any]], context: ProviderContext
) -> list[str]:
    """For a provider with no cross-object invariants beyond core/rendering/invariants.py's."""
    return []


def no_flag_catalog(engine: str) -> str | None:
    """For a provider whose pods take no command-line flags from the spec."""
    return None


def no_owned_flags(catalog: str) -> Mapping[str, str]:
    return {}


class ProviderPlugin(Protocol):
    """A provider package (providers/<name>/__init__.py) as the core sees it."""

    @property
    def NAME(self) -> str: ...  # noqa: N802 - a module constant

    @property
    def OVERRIDE_ROOTS(self) -> frozenset[str]: ...  # noqa: N802 - a module constant

    @property
    def UPSTREAM_KINDS(self) -> tuple[UpstreamKind, ...]: ...  # noqa: N802 - a module constant

    def check_overrides(self, overrides: Mapping[str, Any], at: FieldPath) -> list[FieldError]:
        """Layer 2 of spec.provider.overrides."""
        ...

    def render(
        self, md: ModelDeployment, pins: Versions, context: ProviderContext
    ) -> list[dict[str, Any]]:
        """The upstream objects for a hydrated, valid ModelDeployment (primary first)."""
        ...

    def pool_selector(self, md: ModelDeployment) -> dict[str, str]:
        """Labels every serving pod of `md` carries once its operator has created it."""
        ...

    def model_port(self, md: ModelDeployment) -> int:
        """The port the model server in those pods listens on."""
        ...

    def operator_pods(self, objects: Sequence[Mapping[str, Any]]) -> list[PodGroup]:
        """The serving pods the operator creates from `objects` (not Deployments Runway renders,
        whose templates say their labels)."""
        ...

    def flag_catalog(self, engine: str) -> str | None:
        """The flag catalog of the entry point the pods run for `engine`, if any."""
        ...

    def owned_flags(self, catalog: str) -> Mapping[str, str]:
        """{flag: why} for the flags Runway sets itself when the pods run `catalog`."""
        ...

    def admission_checks(
        self, md: ModelDeployment, context: ProviderContext, old: ModelDeployment | None
    ) -> tuple[list[FieldError], list[str]]:
        """(errors, warnings) of the provider's own admission rules for a hydrated object
        (`old`: the stored object, on an update), as its operator's own webhook would answer."""
        ...

    def workload_status(
        self, md: ModelDeployment, observed: Mapping[str, Mapping[str, Any]]
    ) -> Workload:
        """The workload's state from the upstream objects as the cluster holds them (`observed`:
        by `Kind/name`, in `md`'s namespace, status included; a missing key: not created)."""
        ...

    def served_as(self, md: ModelDeployment, context: ProviderContext) -> str | None:
        """The name the model server answers to when the operator, not the spec, decides it
        (KAITO's presets), else None."""
        ...

    def picker_config(
        self, md: ModelDeployment, configured: str | None, context: ProviderContext
    ) -> str | None:
        """The EndpointPickerConfig the picker of `md`'s pool runs; `configured` is the
        configData of its InferenceProviderConfig (None: the picker's built-in default)."""
        ...

    def invariants(
        self, md: ModelDeployment, objects: Sequence[Mapping[str, Any]], context: ProviderContext
    ) -> list[str]:
        """Broken invariants of the provider's own wiring among `objects`, as messages."""
        ...

    def is_test_backend(self, md: ModelDeployment) -> bool:
        """The provider's test backend runs instead of an engine (no GPU, no gateway)."""
        ...
