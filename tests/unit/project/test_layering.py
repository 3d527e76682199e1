"""The rooms of docs/internals/development.md "Layout" and what each may import, checked on the source.

core/ is pure and layered (each sub-package imports only those before it); a provider package
imports only core/ and itself; kubeio/ is the one room every edge may import; no edge
(webhook/, renderer/, gateway/, certs/, controller/) imports another; cli/ sits on top, and ui/
(the portal) beside it over the edges whose functions it shows (not webhook/, controller/, certs/). An import through
`importlib` counts: a module that imports dynamically has every room path it spells checked as
an import. And no module outside a provider's package names a provider or its upstream kinds.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from core.model.kinds import Engine
from core.rendering.inferencegateway import GATEWAY_KINDS
from core.rendering.pods import DEPLOYMENTS
from providers.modules import plugins
from tests.support.paths import ROOT

CORE_ORDER = (
    "fields",
    "model",
    "schema",
    "cel",
    "checks",
    "selection",
    "rendering",
    "admission",
    "status",
)
EDGES = ("webhook", "renderer", "gateway", "certs", "controller")
# ui/ (the portal) sits on top like cli/: it calls the very functions `render`, `explain` and
# `gateway-plan` call (renderer/, gateway/), so no second API can drift; nothing imports it.
FRONTS = ("cli", "ui")
ROOMS = ("core", "providers", "kubeio", *EDGES, *FRONTS)
# What the forbidden lists are built from: the plug-ins themselves, so a sixth provider is
# covered. A provider's upstream kinds and their API groups, less the core's own (apps/v1
# Deployments Runway renders for several providers, and the gateway's objects).
PLUGINS = plugins()
PROVIDERS = tuple(p.name for p in PLUGINS)
CORE_KINDS = (DEPLOYMENTS, *GATEWAY_KINDS)
UPSTREAM_KINDS = sorted(
    {k.kind for p in PLUGINS for k in p.watched.kinds} - {k.kind for k in CORE_KINDS}
)
UPSTREAM_GROUPS = sorted(
    {k.group for p in PLUGINS for k in p.watched.kinds} - {k.group for k in CORE_KINDS}
)
# A provider named like an engine (Direct vLLM's "vllm" and core.model.kinds.Engine.VLLM): the
# word is the engine's everywhere (flags, images, the container's name), so it counts as the
# provider only where it is compared with something that mentions a provider.
ENGINE_NAMED = {name for name in PROVIDERS if name in {e.value for e in Engine}}
IO_IN_CORE = {
    "flask",
    "gunicorn",
    "werkzeug",
    "kubernetes",
    "dulwich",
    "git",
    "pygit2",
    "requests",
    "urllib3",
    "http",
    "socket",
    "subprocess",
    "os",
    "logging",
    "threading",
    "random",
    "time",
    "datetime",
    "importlib",
}
ROOM_PATH = re.compile(rf"^({'|'.join(ROOMS)})(\.[a-z_]+)*$")


def imports_of(source: str) -> set[str]:
    """Every module `source` imports (dotted), including what it names for importlib."""
    tree = ast.parse(source)
    found: set[str] = set()
    dynamic = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            if node.module in ("core", "providers"):
                found |= {f"{node.module}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            dynamic |= name in ("import_module", "__import__")
    if dynamic:
        found |= {
            node.value
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and ROOM_PATH.match(node.value)
        }
    return found


def room_of(module: str) -> str:
    """The room a dotted module name belongs to: `core.cel`, `providers.kaito`, `renderer`...;
    '' for what is not ours."""
    parts = module.split(".")
    if parts[0] == "core":
        return f"core.{parts[1]}" if len(parts) > 1 and parts[1] in CORE_ORDER else "core"
    if parts[0] == "providers":
        return f"providers.{parts[1]}" if len(parts) > 1 and parts[1] in PROVIDERS else "providers"
    return parts[0] if parts[0] in ROOMS else ""


def allowed(room: str, target: str) -> bool:
    """May a module of `room` import one of `target`?"""
    if target in ("", room):
        return True
    if room.startswith("core"):
        if not target.startswith("core"):
            return False
        if target == "core" or room == "core":
            return room == "core"
        return CORE_ORDER.index(target[5:]) <= CORE_ORDER.index(room[5:])
    if room.startswith("providers."):
        return target.startswith("core")
    if room == "providers":
        return target.startswith(("core", "providers"))
    if room == "kubeio":
        return target.startswith(("core", "providers"))
    if room in EDGES:
        return target.startswith(("core", "providers")) or target == "kubeio"
    if room == "ui":
        return target not in ("cli", "webhook", "controller", "certs")
    return room == "cli"  # cli may import every room


def violations(path: Path, source: str) -> list[str]:
    module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    room = room_of(module)
    out = [
        f"{module} imports {imported}"
        for imported in sorted(imports_of(source))
        if not allowed(room, room_of(imported))
    ]
    if room.startswith("core"):
        top = {name.split(".")[0] for name in imports_of(source)}
        out += [f"{module} does I/O through {name}" for name in sorted(top & IO_IN_CORE)]
    return out


PRODUCT = sorted(p for room in ROOMS for p in (ROOT / room).rglob("*.py"))
CORE = [p for p in PRODUCT if p.relative_to(ROOT).parts[0] == "core"]


@pytest.mark.parametrize("path", PRODUCT, ids=lambda p: str(p.relative_to(ROOT)))
def test_each_module_imports_only_what_its_room_may(path: Path) -> None:
    assert violations(path, path.read_text()) == []


@pytest.mark.parametrize("path", CORE, ids=lambda p: str(p.relative_to(ROOT)))
def test_core_module_imports_only_at_the_top(path: Path) -> None:
    tree = ast.parse(path.read_text())
    nested = [
        node.lineno
        for func in ast.walk(tree)
        if isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef)
        for node in ast.walk(func)
        if isinstance(node, ast.Import | ast.ImportFrom)
    ]
    assert nested == []


@pytest.mark.parametrize(
    ("path", "source", "expected"),
    [
        (
            "webhook/x.py",
            "from renderer.render import render_one\n",
            ["webhook.x imports renderer.render"],
        ),
        ("gateway/x.py", "import certs.bundle\n", ["gateway.x imports certs.bundle"]),
        (
            "cli/x.py",
            "import importlib\nimportlib.import_module('renderer.apply')\n",
            [],
        ),
        (
            "renderer/x.py",
            "import importlib\nNAME = 'webhook.app'\nimportlib.import_module(NAME)\n",
            ["renderer.x imports webhook.app"],
        ),
        ("renderer/x.py", "from kubeio.registry import build_registry\n", []),
        (
            "providers/kaito/x.py",
            "from providers.vllm.pods import pool_selector\n",
            ["providers.kaito.x imports providers.vllm.pods"],
        ),
        (
            "core/model/x.py",
            "from core.admission.pipeline import admit\n",
            ["core.model.x imports core.admission.pipeline"],
        ),
        (
            "core/cel/x.py",
            "from kubeio.shipped import bundled_versions\n",
            ["core.cel.x imports kubeio.shipped"],
        ),
        ("core/cel/x.py", "import os\n", ["core.cel.x does I/O through os"]),
        ("kubeio/x.py", "from webhook.app import create_app\n", ["kubeio.x imports webhook.app"]),
    ],
    ids=lambda v: v if isinstance(v, str) and v.endswith(".py") else "",
)
def test_the_rule_catches_each_kind_of_wrong_import(
    path: str, source: str, expected: list[str]
) -> None:
    assert violations(ROOT / path, source) == expected


def test_every_room_is_really_checked() -> None:
    rooms = {room_of(".".join(p.relative_to(ROOT).with_suffix("").parts)) for p in PRODUCT}
    assert rooms == {
        *(f"core.{sub}" for sub in CORE_ORDER),
        "core",
        "providers",
        *(f"providers.{name}" for name in PROVIDERS),
        "kubeio",
        *EDGES,
        *FRONTS,
    }


def _docstrings(tree: ast.AST) -> set[int]:
    return {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }


def _named_in(text: str) -> list[str]:
    """What a string constant names: a provider's name as a word (not one named like an engine:
    see ENGINE_NAMED), an upstream kind (the whole string), or an API group of a provider (the
    whole string, or an apiVersion `group/v...`)."""
    words = [
        n
        for n in PROVIDERS
        if n not in ENGINE_NAMED
        and re.search(rf"(?<![\w.-]){re.escape(n)}(?![\w-]|\.\w)", text, re.I)
    ]
    kinds = [text] if text in UPSTREAM_KINDS else []
    groups = [g for g in UPSTREAM_GROUPS if text == g or re.match(rf"{re.escape(g)}/v\d", text)]
    return words + kinds + groups


def provider_names_in(path: Path, source: str) -> list[str]:
    """Where `source` names a provider outside its package: a string constant (docstrings and
    comments may) naming a provider, one of its upstream kinds or API groups (_named_in), or a
    provider named like an engine compared with a provider."""
    tree = ast.parse(source)
    docstrings = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
        ):
            found += [f"{path.name}:{node.lineno} {name!r}" for name in _named_in(node.value)]
        if isinstance(node, ast.Compare) and "provider" in ast.unparse(node):
            for constant in ast.walk(node):
                if isinstance(constant, ast.Constant) and constant.value in ENGINE_NAMED:
                    found.append(
                        f"{path.name}:{node.lineno} compares a provider with {constant.value!r}"
                    )
    return found


OUTSIDE_PROVIDERS = [
    p
    for p in PRODUCT
    if not (p.relative_to(ROOT).parts[0] == "providers" and p.parent.name in PROVIDERS)
    and p.relative_to(ROOT) != Path("providers/modules.py")
]


@pytest.mark.parametrize("path", OUTSIDE_PROVIDERS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_outside_a_provider_package_names_a_provider(path: Path) -> None:
    assert provider_names_in(path, path.read_text()) == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('if md.provider_name == "kaito":\n    pass\n', ["x.py:1 'kaito'"]),
        (
            'if provider in ("vllm", "llmd"):\n    pass\n',
            ["x.py:1 'llmd'", "x.py:1 compares a provider with 'vllm'"],
        ),
        ('ENGINE = "vllm"\n', []),
        ('IMAGE = "vllm/vllm-openai"\n', []),
        ('"""Dynamo, KAITO: kaito and dynamo in prose."""\n', []),
        ("# kaito in a comment\nX = 1\n", []),
        ('REASON = "the Dynamo mocker serves no gateway"\n', ["x.py:1 'dynamo'"]),
        ('MESSAGE = f"{x} is not a KubeRay option"\n', ["x.py:1 'kuberay'"]),
        (
            'if obj["kind"] == "DynamoGraphDeployment":\n    pass\n',
            ["x.py:1 'DynamoGraphDeployment'"],
        ),
        ('GROUPS = ("kaito.sh", "ray.io")\n', ["x.py:1 'kaito.sh'", "x.py:1 'ray.io'"]),
        ('API = "nvidia.com/v1alpha1"\n', ["x.py:1 'nvidia.com'"]),
        ('GPU = "nvidia.com/gpu"\n', []),
        ('KIND = "Deployment"\n', []),
        ('KIND = "InferencePool"\n', []),
        ('LABEL = "llmd-like"\n', []),
    ],
)
def test_the_name_rule_catches_a_switch_on_a_provider(source: str, expected: list[str]) -> None:
    assert sorted(provider_names_in(ROOT / "x.py", source)) == sorted(expected)


def test_the_forbidden_lists_come_from_the_plug_ins() -> None:
    assert (
        ("dynamo", "kaito", "kuberay", "llmd", "vllm"),
        ["DynamoGraphDeployment", "RayService", "Workspace"],
        ["kaito.sh", "nvidia.com", "ray.io"],
        {"vllm"},
    ) == (PROVIDERS, UPSTREAM_KINDS, UPSTREAM_GROUPS, ENGINE_NAMED)
