"""What a provider package offers the core: the Provider value providers/<name>/ builds.

The core never imports a provider. The edges hand the Provider values in (through the
registry), and every question whose answer depends on the provider is a call on its value,
never a switch on its name or its kinds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, TypeAlias

from core.fields.errors import FieldError
from core.fields.paths import FieldPath
from core.model.kinds import ApiKind, ModelDeployment, dig
from core.model.versions import Versions

# A kind of object a provider renders and the status controller watches.
UpstreamKind = ApiKind


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
class Server:
    """One serving container among the rendered objects: the object holding it, its field path
    there, its pods' labels (when the object's pod template says them), and, when the object
    gives its GPUs apart from the container's limits, their count and the field that does."""

    owner: Mapping[str, Any]
    path: str
    container: Mapping[str, Any]
    labels: Mapping[str, str]
    gpus: int | None = None
    gpus_at: str = ""
    # The pods one replica of this container spans (a multi-node replica: the leader's and its
    # workers', each with `gpus`); tensor parallel x pipeline parallel covers all of them.
    nodes: int = 1

    @property
    def ref(self) -> str:
        return f"{self.owner.get('kind')}/{dig(self.owner, 'metadata', 'name')}"

    @property
    def args(self) -> list[str]:
        return [str(a) for a in self.container.get("args") or ()]


@dataclass(frozen=True, slots=True)
class ServiceEndpoint:
    """A Service in the model's namespace that serves its OpenAI API, and the Service's port."""

    name: str
    port: int


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

    def fact(self, name: str) -> Mapping[str, Any]:
        """The facts file `name` (providers/<provider>/facts/<name>.json), {} when absent."""
        found = self.facts.get(name)
        return found if isinstance(found, Mapping) else {}


# The hooks' types, as the Provider value and its roles hold them.
CheckOverrides: TypeAlias = Callable[[Mapping[str, Any], FieldPath], list[FieldError]]
Render: TypeAlias = Callable[[ModelDeployment, Versions, ProviderContext], list[dict[str, Any]]]
PoolSelector: TypeAlias = Callable[[ModelDeployment], dict[str, str]]
ModelPort: TypeAlias = Callable[[ModelDeployment], int]
WorkloadStatus: TypeAlias = Callable[[ModelDeployment, Mapping[str, Mapping[str, Any]]], Workload]
OperatorPods: TypeAlias = Callable[[Sequence[Mapping[str, Any]]], list[PodGroup]]
OperatorService: TypeAlias = Callable[[ModelDeployment], ServiceEndpoint | None]
ServingContainers: TypeAlias = Callable[[Mapping[str, Any]], list[Server]]
AdmissionChecks: TypeAlias = Callable[
    [ModelDeployment, ProviderContext, ModelDeployment | None], tuple[list[FieldError], list[str]]
]
ServedAs: TypeAlias = Callable[[ModelDeployment, ProviderContext], str | None]
PickerConfig: TypeAlias = Callable[[ModelDeployment, str | None, ProviderContext], str | None]
Invariants: TypeAlias = Callable[
    [ModelDeployment, Sequence[Mapping[str, Any]], ProviderContext], list[str]
]
FlagCatalogOf: TypeAlias = Callable[[str], str | None]
OwnedFlags: TypeAlias = Callable[[str], Mapping[str, str]]
IsTestBackend: TypeAlias = Callable[[ModelDeployment], bool]


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


def no_operator_pods(objects: Sequence[Mapping[str, Any]]) -> list[PodGroup]:
    """For a provider whose serving pods are Runway's own Deployments (their templates say the
    labels), or whose operator selects its pods itself."""
    return []


def no_operator_service(md: ModelDeployment) -> ServiceEndpoint | None:
    """For a provider whose model Service Runway renders itself (the gateway sync finds it
    among the rendered objects), or whose operator creates none."""
    return None


def no_serving_containers(obj: Mapping[str, Any]) -> list[Server]:
    """For a provider whose serving containers are in Deployments Runway renders (the core finds
    them) or in pods its operator builds from settings, not containers."""
    return []


def no_flag_catalog(engine: str) -> str | None:
    """For a provider whose pods take no command-line flags from the spec."""
    return None


def no_owned_flags(catalog: str) -> Mapping[str, str]:
    """For a provider whose pods take no command-line flags from the spec."""
    return {}


@dataclass(frozen=True, slots=True)
class Overrides:
    """Layer 2 of spec.provider.overrides: the roots the provider accepts and its check of them
    (providers/<name>/overrides.py)."""

    roots: frozenset[str]
    check: CheckOverrides
    # Roots whose own `replicas`/`resources` are typed, bounded keys of this layer 2 (the global
    # sizing rule leaves them to it: core/checks/overrides.py check_global).
    sized: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Pods:
    """Where the serving pods are: the labels every serving pod of a ModelDeployment carries
    once its operator has created it, the port its model server listens on, and the pods the
    operator creates from the rendered objects (not the Deployments Runway renders), and the
    Service its operator creates for the model, when Runway renders none (the gateway sync
    registers it in LiteLLM)."""

    selector: PoolSelector
    port: ModelPort
    operator_pods: OperatorPods = no_operator_pods
    operator_service: OperatorService = no_operator_service


@dataclass(frozen=True, slots=True)
class Watched:
    """What the provider's upstream objects are (the kinds it renders, which the status
    controller watches) and how their status reads (its status hook)."""

    kinds: tuple[UpstreamKind, ...]
    workload_status: WorkloadStatus


@dataclass(frozen=True, slots=True)
class Rules:
    """The provider's own admission rules, the name its engine answers to when the operator
    decides it, and the configuration its pool's picker runs; each defaults to having none."""

    admission_checks: AdmissionChecks = no_admission_checks
    served_as: ServedAs = spec_served_name
    picker_config: PickerConfig = configured_picker


@dataclass(frozen=True, slots=True)
class Flags:
    """The flag catalog of the entry point the pods run for an engine, and the flags Runway
    sets itself under a catalog; the default: no flags from the spec."""

    catalog: FlagCatalogOf = no_flag_catalog
    owned: OwnedFlags = no_owned_flags


@dataclass(frozen=True, slots=True)
class MultiNode:
    """Whether the provider places one replica across several nodes (pipeline parallelism,
    spec.engine.args["pipeline-parallel-size"] > 1), and, when it does not, why: admission
    refuses such a model with that reason (core/checks/parallel.py)."""

    offered: bool = False
    why_not: str = "the provider places every replica on one node"


class PodSecurityLevel(StrEnum):
    """The Pod Security Standards' levels (kubernetes.io/docs/concepts/security/
    pod-security-standards), as the namespace label pod-security.kubernetes.io/enforce names them."""

    PRIVILEGED = "privileged"
    BASELINE = "baseline"
    RESTRICTED = "restricted"


@dataclass(frozen=True, slots=True)
class PodSecurity:
    """The Pod Security level every pod Runway writes for a provider meets, and, below
    restricted, why not (with the upstream source that says so) and what the next stricter level
    refuses in those pods, each as the API server's Pod Security admission words it (e.g.
    "runAsNonRoot != true"): the e2e check (tests/e2e/test_pod_security.py) holds both true.
    `apart` gives the pods of another kind of object (the object that templates them) a level of
    their own, with its reason: e.g. an image build Job beside the serving pods."""

    level: PodSecurityLevel = PodSecurityLevel.RESTRICTED
    reason: str = ""
    refused: tuple[str, ...] = ()
    apart: Mapping[str, PodSecurity] = field(default_factory=dict)

    def of(self, kind: str) -> PodSecurity:
        """The declaration for the pods an object of `kind` templates."""
        return self.apart.get(kind, self)


@dataclass(frozen=True, slots=True)
class Provider:
    """A provider package as the core sees it: the one value its __init__ builds (PROVIDER),
    its hooks grouped by role, each role declared in the module that implements it
    (overrides.py, pods.py, status.py, rules.py, flags.py). A role or hook the provider does not
    name takes the default beside it, so a package names only what it has."""

    name: str
    # Layer 2 of spec.provider.overrides: the roots it accepts and its check of them.
    overrides: Overrides
    # The upstream objects for a hydrated, valid ModelDeployment (primary first): the provider's
    # container builders at work.
    render: Render
    # Where the serving pods are: their labels, the port their model server listens on, the
    # pods the operator creates (the core's invariants look for them there).
    pods: Pods
    # The upstream kinds it renders (the status controller watches them:
    # kubeio.upstream.upstream_kinds) and the workload's state read from them.
    watched: Watched
    # Its own admission rules, the name its engine answers to when the operator decides it,
    # and the configuration its pool's picker runs.
    rules: Rules = Rules()
    # The flag catalog of the entry point its pods run, and the flags Runway owns there.
    flags: Flags = Flags()
    # Broken invariants of the provider's own wiring among the rendered objects, as messages.
    invariants: Invariants = no_invariants
    # The serving containers in one rendered object of the provider's own kinds (the core finds
    # those of the Deployments Runway renders): where the core's GPU and served-name invariants
    # look.
    serving_containers: ServingContainers = no_serving_containers
    # The provider's test backend runs instead of an engine (no GPU, no gateway), and why
    # admission then selects the vLLM engine it simulates (the engine-selected reason).
    is_test_backend: IsTestBackend = no_test_backend
    test_backend_reason: str = ""
    # Whether it places a replica across nodes (pipeline parallelism), or why not.
    multinode: MultiNode = MultiNode()
    # The Pod Security level the pods Runway writes for it meet (restricted unless it says
    # otherwise, and why).
    pod_security: PodSecurity = PodSecurity()
