"""Engine flag catalogs and the admission check of user flags against them."""

from __future__ import annotations

from typing import Any

import pytest

from core.admission.pipeline import admit
from core.checks.flags import Flag, FlagCatalog
from core.fields.errors import Reason
from core.model.kinds import ModelDeployment
from core.selection.configs import ProviderRegistry
from kubeio.registry import build_registry
from kubeio.shipped import bundled_config_objects, bundled_flag_catalogs, bundled_versions
from providers.modules import plugins
from tests.support.builders import model_deployment
from tools.flags import add_argument_flags

PINS = bundled_versions()
CATALOGS = bundled_flag_catalogs()
PORT_DETAIL = (
    "--port: Runway owns the server port (8000): the Service, the probes and the "
    "InferencePool target it; it cannot be changed"
)

PLUGINS = {plugin.name: plugin for plugin in plugins()}


def verdict(obj: dict[str, Any], registry: ProviderRegistry) -> tuple[list[Any], tuple[str, ...]]:
    admission = admit(obj, registry=registry)
    return [(e.path, e.reason, e.detail) for e in admission.errors], admission.validation_warnings


def test_catalogs_record_the_pinned_versions_sources_and_images() -> None:
    assert sorted(CATALOGS) == [
        "dynamo-frontend",
        "dynamo-mocker",
        "dynamo-sglang",
        "dynamo-trtllm",
        "dynamo-vllm",
        "kuberay",
        "vllm",
    ]
    vllm = CATALOGS["vllm"]
    assert (vllm.engine, vllm.version, vllm.image) == (
        "vllm",
        PINS.vllm.lstrip("v"),
        f"vllm/vllm-openai:{PINS.vllm}",
    )
    assert vllm.sources == (
        "vllm/engine/arg_utils.py",
        "vllm/config/*.py",
        "vllm/entrypoints/common/cli_args.py",
    )
    # KubeRay: the engine kwargs Ray Serve LLM accepts (FrontendArgs + AsyncEngineArgs fields) of
    # the vLLM ray[llm]==RAY_VERSION declares as its floor, for the ray-llm image Runway renders.
    ray = CATALOGS["kuberay"]
    assert (ray.engine, ray.version, ray.image) == (
        "ray-serve-llm",
        f"{PINS.pin('ray')} (vllm 0.18.0)",
        f"rayproject/ray-llm:{PINS.pin('ray')}-py311-cu128",
    )
    assert ray.sources == (
        "vllm==0.18.0:vllm/engine/arg_utils.py (AsyncEngineArgs)",
        "vllm==0.18.0:vllm/config/*.py",
        "vllm==0.18.0:vllm/entrypoints/openai/cli_args.py (FrontendArgs)",
    )
    runtimes = {"vllm": "vllm-runtime", "sglang": "sglang-runtime", "trtllm": "tensorrtllm-runtime"}
    for engine, runtime in runtimes.items():
        catalog = CATALOGS[f"dynamo-{engine}"]
        assert catalog.engine == f"dynamo.{engine}"
        assert catalog.version.startswith(f"{PINS.pin('dynamo')} (")
        assert catalog.image == f"nvcr.io/nvidia/ai-dynamo/{runtime}:{PINS.pin('dynamo')}"
        assert catalog.sources[0] == (
            f"ai-dynamo=={PINS.pin('dynamo')}:dynamo/common/configuration/groups/runtime_args.py"
        )


def test_the_mocker_and_frontend_catalogs_come_from_their_own_parsers() -> None:
    mocker, frontend = CATALOGS["dynamo-mocker"], CATALOGS["dynamo-frontend"]
    assert (mocker.engine, mocker.version, mocker.image, mocker.sources) == (
        "dynamo.mocker",
        PINS.pin("dynamo"),
        f"nvcr.io/nvidia/ai-dynamo/dynamo-planner:{PINS.pin('dynamo')}",
        (f"ai-dynamo=={PINS.pin('dynamo')}:dynamo/mocker/args.py",),
    )
    assert (frontend.engine, frontend.version, frontend.image, frontend.sources) == (
        "dynamo.frontend",
        PINS.pin("dynamo"),
        f"nvcr.io/nvidia/ai-dynamo/vllm-runtime:{PINS.pin('dynamo')}",
        (
            f"ai-dynamo=={PINS.pin('dynamo')}:dynamo/frontend/frontend_args.py",
            f"ai-dynamo=={PINS.pin('dynamo')}:dynamo/common/configuration/groups/kv_router_args.py",
            f"ai-dynamo=={PINS.pin('dynamo')}:dynamo/common/configuration/groups/aic_perf_args.py",
        ),
    )
    # the mocker's parser spells the KV cache size as vLLM does, and has no vLLM engine flags
    assert mocker.flags["--num-gpu-blocks-override"] == Flag(
        "--num-gpu-blocks-override", "required", "int"
    )
    assert mocker.flags["--speedup-ratio"].type == "float"
    assert not mocker.knows("--served-model-name") and not mocker.knows("--model")
    assert frontend.knows("--router-mode") and not frontend.knows("--router_mode")
    # argparse's BooleanOptionalAction negates long options only: --no-interactive, never --no-
    assert frontend.knows("-i") and frontend.knows("--no-interactive")
    assert not frontend.knows("--no-")


def test_catalog_knows_switches_values_and_parser_spellings() -> None:
    vllm = CATALOGS["vllm"]
    assert vllm.flags["--enforce-eager"].value == "none"
    assert vllm.flags["--no-enable-prefix-caching"].value == "none"
    assert (vllm.flags["--max-model-len"].value, vllm.flags["--max-model-len"].type) == (
        "required",
        "int",
    )
    assert vllm.knows("--max_model_len=8")  # vLLM's parser reads underscores as dashes
    assert vllm.knows("--compilation-config.mode")  # and dotted keys of a JSON flag
    assert not vllm.knows("--disable-log-requests")  # removed before the pinned release
    sglang = CATALOGS["dynamo-sglang"]
    assert sglang.knows("--disable-radix-cache")
    assert not sglang.knows("--enable-prefix-caching")
    assert not sglang.knows("--max_running_requests")  # argparse: no underscore spelling
    assert CATALOGS["dynamo-trtllm"].knows("--trtllm.kv_cache_config.free_gpu_memory_fraction")


def test_catalog_parse_reads_what_make_flags_writes() -> None:
    text = (
        '{"engine": "e", "version": "1", "image": "i:1", "method": "m", "sources": ["a.py"],'
        ' "underscoresAsDashes": false, "dottedKeys": false, "prefixes": [],'
        ' "flags": {"--x": {"value": "none", "type": "bool"}}}'
    )
    catalog = FlagCatalog.parse("e", text)

    assert (catalog.name, catalog.version, catalog.image, catalog.sources) == (
        "e",
        "1",
        "i:1",
        ("a.py",),
    )
    assert catalog.knows("--x") and not catalog.knows("--y")
    assert catalog.suggestion("--xx") == "; did you mean --x?"


@pytest.mark.parametrize(
    ("provider", "engine", "catalog"),
    [
        ("vllm", "vllm", "vllm"),
        ("llmd", "vllm", "vllm"),
        ("dynamo", "vllm", "dynamo-vllm"),
        ("dynamo", "sglang", "dynamo-sglang"),
        ("dynamo", "trtllm", "dynamo-trtllm"),
        ("kaito", "vllm", None),
        ("kaito", "llamacpp", None),
        ("kuberay", "vllm", "kuberay"),
    ],
    ids=str,
)
def test_each_provider_engine_maps_to_the_catalog_of_its_entry_point(
    provider: str, engine: str, catalog: str | None
) -> None:
    assert PLUGINS[provider].flags.catalog(engine) == catalog


def test_every_owned_flag_is_a_flag_of_its_engine() -> None:
    owned = {
        (plugin.name, name): plugin.flags.owned(name) for plugin in plugins() for name in CATALOGS
    }
    assert {at for at, flags in owned.items() if flags} == {
        ("dynamo", "dynamo-sglang"),
        ("dynamo", "dynamo-trtllm"),
        ("dynamo", "dynamo-vllm"),
        ("kuberay", "kuberay"),
        ("llmd", "vllm"),
        ("vllm", "vllm"),
    }
    for (provider, name), flags in owned.items():
        assert [f for f in flags if f not in CATALOGS[name].flags] == [], (provider, name)


@pytest.mark.parametrize("provider", ["vllm", "llmd"])
@pytest.mark.parametrize(
    ("engine", "path"),
    [
        ({"extraArgs": ["--port=9000"]}, "spec.engine.extraArgs[0]"),
        ({"extraArgs": ["--port", "9000"]}, "spec.engine.extraArgs[0]"),
        ({"args": {"port": "9000"}}, "spec.engine.args[port]"),
    ],
    ids=["extra-equals", "extra-separate", "args"],
)
def test_the_server_port_cannot_be_set_in_user_args(
    shipped: ProviderRegistry, provider: str, engine: dict[str, Any], path: str
) -> None:
    obj = model_deployment(gpu=1, provider=provider, engine={"type": "vllm", **engine})

    assert verdict(obj, shipped) == ([(path, Reason.FORBIDDEN, PORT_DETAIL)], ())


@pytest.mark.parametrize(
    ("provider", "engine", "extra", "detail"),
    [
        (
            "vllm",
            "vllm",
            ["--served-model-name", "x"],
            "--served-model-name: set spec.model.servedName (or spec.gateway.modelName)",
        ),
        (
            "vllm",
            "vllm",
            ["--host=127.0.0.1"],
            "--host: Runway binds the server to 0.0.0.0 so the Service reaches it; it cannot be changed",
        ),
        (
            "llmd",
            "vllm",
            ["-tp", "2"],
            "-tp: set spec.resources.gpu.count (or the component's gpu.count); Runway sets the tensor-parallel size to it",
        ),
        (
            "dynamo",
            "sglang",
            ["--tp-size", "2"],
            "--tp-size: set spec.resources.gpu.count (or the component's gpu.count); Runway sets the tensor-parallel size to it",
        ),
        ("dynamo", "vllm", ["--max_model_len=9"], "--max-model-len: set spec.engine.contextLength"),
    ],
    ids=["served-name", "host", "short-tp", "sglang-tp", "underscore-spelling"],
)
def test_runway_owned_flags_are_refused_with_the_spec_field_to_use(
    shipped: ProviderRegistry, provider: str, engine: str, extra: list[str], detail: str
) -> None:
    obj = model_deployment(gpu=1, provider=provider, engine={"type": engine, "extraArgs": extra})

    assert verdict(obj, shipped) == ([("spec.engine.extraArgs[0]", Reason.FORBIDDEN, detail)], ())


def test_unknown_flag_is_refused_with_a_suggestion_for_the_default_image(
    shipped: ProviderRegistry,
) -> None:
    obj = model_deployment(
        gpu=1,
        provider="vllm",
        engine={
            "type": "vllm",
            "args": {"max-num-seq": "4"},
            "extraArgs": ["--disable-log-requests"],
        },
    )

    assert verdict(obj, shipped) == (
        [
            (
                "spec.engine.args[max-num-seq]",
                Reason.INVALID,
                "--max-num-seq is not a flag of vllm 0.33.0; did you mean --max-num-seqs?",
            ),
            (
                "spec.engine.extraArgs[0]",
                Reason.INVALID,
                "--disable-log-requests is not a flag of vllm 0.33.0; did you mean --enable-log-requests?",
            ),
        ],
        (),
    )


def test_naming_the_default_image_still_checks_flags(shipped: ProviderRegistry) -> None:
    obj = model_deployment(
        gpu=1,
        provider="vllm",
        engine={
            "type": "vllm",
            "image": f"vllm/vllm-openai:{PINS.vllm}",
            "extraArgs": ["--disable-log-requests"],
        },
    )

    assert verdict(obj, shipped)[0] == [
        (
            "spec.engine.extraArgs[0]",
            Reason.INVALID,
            "--disable-log-requests is not a flag of vllm 0.33.0; did you mean --enable-log-requests?",
        )
    ]


def test_unknown_flag_is_only_a_warning_for_another_image(shipped: ProviderRegistry) -> None:
    obj = model_deployment(
        gpu=1,
        provider="vllm",
        engine={"type": "vllm", "image": "example.com/my-vllm:1", "extraArgs": ["--my-patch"]},
    )

    assert verdict(obj, shipped) == (
        [],
        (
            "spec.engine.extraArgs[0]: --my-patch is not a flag of vllm 0.33.0; did you mean "
            "--root-path? (not refused: spec.engine.image runs example.com/my-vllm:1, which the "
            "catalog may not describe)",
        ),
    )


def test_owned_flags_are_refused_for_another_image_too(shipped: ProviderRegistry) -> None:
    obj = model_deployment(
        gpu=1,
        provider="vllm",
        engine={"type": "vllm", "image": "example.com/my-vllm:1", "extraArgs": ["--port=9000"]},
    )

    assert verdict(obj, shipped) == (
        [("spec.engine.extraArgs[0]", Reason.FORBIDDEN, PORT_DETAIL)],
        (),
    )


def test_sglang_on_dynamo_refuses_the_vllm_prefix_caching_flag(shipped: ProviderRegistry) -> None:
    obj = model_deployment(
        gpu=1, provider="dynamo", engine={"type": "sglang", "args": {"enable-prefix-caching": ""}}
    )

    assert verdict(obj, shipped) == (
        [
            (
                "spec.engine.args[enable-prefix-caching]",
                Reason.INVALID,
                "--enable-prefix-caching is not a flag of dynamo.sglang 1.1.1 (sglang 0.5.10.post1); "
                "did you mean --enable-prefix-mm-cache?",
            )
        ],
        (),
    )


def test_a_registry_without_catalogs_checks_no_flags() -> None:
    registry = build_registry(bundled_config_objects(), flags={})
    obj = model_deployment(gpu=1, provider="vllm", engine={"type": "vllm", "extraArgs": ["--nope"]})

    assert verdict(obj, registry) == ([], ())


def test_the_mocker_takes_no_user_flags_and_admission_checks_them_as_dynamo_vllm(
    shipped: ProviderRegistry,
) -> None:
    mocker = {"airunway.ai/dynamo-test-backend": "mocker"}
    used = model_deployment(
        provider="dynamo",
        engine={"type": "vllm", "args": {"max-num-seqs": "8"}},
        annotations=mocker,
    )
    admission = admit(used, registry=shipped)
    assert admission.errors == ()
    (graph, *_) = PLUGINS["dynamo"].render(
        ModelDeployment(admission.obj), PINS, shipped.context("dynamo")
    )
    worker = graph["spec"]["services"]["VllmWorker"]["extraPodSpec"]["mainContainer"]
    assert worker["args"] == [
        "--model-path", "org/model", "--model-name", "org/model", "--speedup-ratio", "1000.0",
        "--num-gpu-blocks-override", "4096", "--block-size", "16", "--max-num-seqs", "64",
    ]  # fmt: skip
    # a mocker flag is not a flag of the engine the mocker stands in for
    refused = model_deployment(
        provider="dynamo",
        engine={"type": "vllm", "args": {"speedup-ratio": "2"}},
        annotations=mocker,
    )
    assert verdict(refused, shipped)[0] == [
        (
            "spec.engine.args[speedup-ratio]",
            Reason.INVALID,
            "--speedup-ratio is not a flag of dynamo.vllm 1.1.1 (vllm 0.19.0)",
        )
    ]


def test_make_flags_negates_long_options_only() -> None:
    text = (
        "p.add_argument('-i', '--interactive', action=argparse.BooleanOptionalAction)\n"
        "p.add_argument('--enable-expert-parallel', '-ep', action=argparse.BooleanOptionalAction)\n"
    )
    switch = {"value": "none", "type": "bool"}

    assert add_argument_flags(text) == {
        "-i": switch,
        "--interactive": switch,
        "--no-interactive": switch,
        "--enable-expert-parallel": switch,
        "--no-enable-expert-parallel": switch,
        "-ep": switch,
    }
