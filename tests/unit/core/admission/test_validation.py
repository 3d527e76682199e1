"""Spec validation: every rule with an accepted and a rejected case, all errors at once."""

from __future__ import annotations

from typing import Any

import pytest

from core.admission.hydrate import hydrate
from core.admission.pipeline import admit
from core.admission.validation import Operation, Verdict, check_spec
from core.fields.errors import FieldError, Reason
from core.selection.configs import ProviderRegistry
from tests.support.builders import (
    disaggregated,
    engine_capability,
    model_deployment,
    provider_config,
    registry_of,
)
from tests.support.validation import check, errors


def test_valid_object_has_no_errors_and_no_warnings(shipped: ProviderRegistry) -> None:
    assert check(model_deployment(gpu=1), shipped) == Verdict((), ())


def test_conflicting_images_are_rejected_and_equal_ones_accepted(shipped: ProviderRegistry) -> None:
    same = model_deployment(gpu=1, image="repo/a:1", engine={"image": "repo/a:1"})
    different = model_deployment(gpu=1, image="repo/a:1", engine={"image": "repo/b:2"})

    assert errors(same, shipped) == []
    assert errors(different, shipped) == [
        (
            "spec.engine.image",
            Reason.INVALID,
            "conflicts with spec.image; remove spec.image or set both to the same value (spec.engine.image is preferred)",
        )
    ]


def test_flag_in_both_args_and_extra_args_is_rejected(shipped: ProviderRegistry) -> None:
    obj = model_deployment(
        gpu=1,
        engine={
            "args": {"max-num-seqs": "8", "seed": "1"},
            "extraArgs": ["--max-num-seqs=4", "--disable-log-stats", "--", "seed"],
        },
    )

    assert errors(obj, shipped) == [
        (
            "spec.engine.extraArgs[0]",
            Reason.DUPLICATE,
            'launch flag "max-num-seqs" is also set in spec.engine.args; set it in exactly one place',
        )
    ]


def test_arg_keys_must_be_flag_names_without_dashes(shipped: ProviderRegistry) -> None:
    # max_num_seqs is accepted: vLLM's parser reads underscores as dashes.
    obj = model_deployment(gpu=1, engine={"args": {"--port": "1", "max_num_seqs": "2", "a b": "x"}})

    assert errors(obj, shipped) == [
        (
            "spec.engine.args[--port]",
            Reason.INVALID,
            "an argument name is letters, digits, '_' and '-', without leading dashes (Runway adds --)",
        ),
        (
            "spec.engine.args[a b]",
            Reason.INVALID,
            "an argument name is letters, digits, '_' and '-', without leading dashes (Runway adds --)",
        ),
    ]


def test_model_id_is_required_for_huggingface_but_not_custom(shipped: ProviderRegistry) -> None:
    assert errors(model_deployment(model_id=None), shipped) == [
        ("spec.model.id", Reason.REQUIRED, "required when spec.model.source is huggingface")
    ]
    assert errors(model_deployment(model={"source": "custom"}), shipped) == []


def test_explicit_provider_must_exist(shipped: ProviderRegistry) -> None:
    obj = model_deployment(gpu=1, engine="vllm", provider="ollama")

    assert errors(obj, shipped) == [
        (
            "spec.provider.name",
            Reason.NOT_FOUND,
            'InferenceProviderConfig "ollama" not found (configured: dynamo, kaito, kuberay, llmd, vllm)',
        )
    ]


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (
            model_deployment(engine="sglang", provider="kaito"),
            (
                "spec.engine.type",
                "provider kaito does not offer engine sglang (offers: llamacpp, vllm)",
            ),
        ),
        (
            disaggregated()
            | {
                "spec": disaggregated()["spec"]
                | {"provider": {"name": "vllm"}, "engine": {"type": "vllm"}}
            },
            (
                "spec.serving.mode",
                "provider vllm does not offer disaggregated serving for engine vllm",
            ),
        ),
        (
            model_deployment(engine="vllm", gpu=0, provider="llmd"),
            (
                "spec.resources.gpu.count",
                "provider llmd does not run engine vllm without a GPU; set spec.resources.gpu.count > 0",
            ),
        ),
        (
            model_deployment(
                engine="vllm",
                provider="kaito",
                mode="disaggregated",
                scaling={"prefill": {"gpu": {"count": 1}}, "decode": {"gpu": {"count": 1}}},
            ),
            (
                "spec.serving.mode",
                "provider kaito does not offer disaggregated serving for engine vllm",
            ),
        ),
    ],
    ids=["engine", "serving-mode", "cpu", "kaito-disaggregated"],
)
def test_explicit_provider_must_support_engine_mode_and_placement(
    obj: dict[str, Any], expected: tuple[str, str], shipped: ProviderRegistry
) -> None:
    assert [(e.path, e.detail) for e in check_spec(obj, registry=shipped).errors] == [expected]


def test_explicit_provider_on_gpu_only_where_it_declares_gpu_support() -> None:
    registry = registry_of(
        provider_config("kaito", engines=[engine_capability("llamacpp", gpu=False, cpu=True)])
    )

    obj = model_deployment(
        model_id="org/model/model.gguf", engine="llamacpp", gpu=1, provider="kaito"
    )

    assert [(e.path, e.detail) for e in check_spec(obj, registry=registry).errors] == [
        ("spec.resources.gpu.count", "provider kaito does not run engine llamacpp on GPUs")
    ]


def test_configured_provider_without_renderer_is_rejected() -> None:
    registry = registry_of(provider_config("acme"))

    obj = model_deployment(engine="vllm", gpu=1, provider="acme")

    assert [(e.path, e.reason) for e in check_spec(obj, registry=registry).errors] == [
        ("spec.provider.name", Reason.UNSUPPORTED)
    ]


def test_explicit_provider_that_is_not_ready_is_admitted_with_a_warning() -> None:
    registry = registry_of(provider_config("llmd", ready=False))

    verdict = check(model_deployment(gpu=1, provider="llmd"), registry)

    assert verdict == Verdict(
        (), ("provider llmd is not ready (its InferenceProviderConfig status.ready is false)",)
    )


def test_valid_disaggregated_object_passes(shipped: ProviderRegistry) -> None:
    assert errors(disaggregated(), shipped) == []


def test_disaggregated_rules_report_every_problem(shipped: ProviderRegistry) -> None:
    obj = model_deployment(
        mode="disaggregated",
        gpu=2,
        scaling={"prefill": {"gpu": {"count": 0}}},
    )

    assert errors(obj, shipped) == [
        (
            "spec.resources.gpu",
            Reason.FORBIDDEN,
            "cannot be set in disaggregated mode; set spec.scaling.prefill.gpu and spec.scaling.decode.gpu",
        ),
        ("spec.scaling.prefill.gpu.count", Reason.REQUIRED, "must be > 0 in disaggregated mode"),
        ("spec.scaling.decode", Reason.REQUIRED, "required in disaggregated mode"),
    ]


def test_disaggregated_without_scaling_is_rejected(shipped: ProviderRegistry) -> None:
    obj = model_deployment(mode="disaggregated", engine="vllm", provider="dynamo")

    assert [(e.path, e.reason) for e in check_spec(obj, registry=shipped).errors] == [
        ("spec.scaling", Reason.REQUIRED)
    ]


@pytest.mark.parametrize(
    ("spec", "path", "limit"),
    [
        ({"resources": {"gpu": {"count": 65}}}, "spec.resources.gpu.count", "64"),
        ({"resources": {"gpu": {"count": 1}, "cpu": "513"}}, "spec.resources.cpu", "512"),
        ({"resources": {"gpu": {"count": 1}, "memory": "4097Gi"}}, "spec.resources.memory", "4Ti"),
        (
            {"resources": {"gpu": {"count": 1}}, "scaling": {"replicas": 33}},
            "spec.scaling.replicas",
            "32",
        ),
    ],
    ids=["gpu", "cpu", "memory", "replicas"],
)
def test_ceilings_reject_one_past_the_limit(
    spec: dict[str, Any], path: str, limit: str, shipped: ProviderRegistry
) -> None:
    assert errors(model_deployment(**spec), shipped) == [
        (path, Reason.INVALID, f"exceeds the maximum allowed ({limit})")
    ]


def test_ceilings_accept_the_limit_itself(shipped: ProviderRegistry) -> None:
    obj = model_deployment(
        engine="vllm",
        resources={"gpu": {"count": 64}, "cpu": "512", "memory": "4Ti"},
        scaling={"replicas": 32},
    )

    assert errors(obj, shipped) == []


def test_component_ceilings_and_bad_quantities(shipped: ProviderRegistry) -> None:
    obj = model_deployment(
        mode="disaggregated",
        resources={"cpu": "lots"},
        scaling={
            "prefill": {"replicas": 33, "gpu": {"count": 65}, "memory": "5Ti"},
            "decode": {"gpu": {"count": 1}, "memory": "-1Gi"},
        },
    )

    assert errors(obj, shipped) == [
        (
            "spec.resources.cpu",
            Reason.INVALID,
            "not a valid resource quantity (such as 4, 500m, 32Gi)",
        ),
        ("spec.scaling.prefill.replicas", Reason.INVALID, "exceeds the maximum allowed (32)"),
        ("spec.scaling.prefill.gpu.count", Reason.INVALID, "exceeds the maximum allowed (64)"),
        ("spec.scaling.prefill.memory", Reason.INVALID, "exceeds the maximum allowed (4Ti)"),
        ("spec.scaling.decode.memory", Reason.INVALID, "must not be negative"),
    ]


def test_dotted_names_are_rejected_on_create_only(shipped: ProviderRegistry) -> None:
    obj = model_deployment("llama-3.1", gpu=1)
    stored = hydrate(obj, registry=shipped).obj

    assert errors(obj, shipped) == [
        (
            "metadata.name",
            Reason.INVALID,
            "must be a DNS-1035 label: lower-case letters, digits and '-', starting with a letter and ending with a letter or digit",
        )
    ]
    assert errors(obj, shipped, old=stored, operation=Operation.UPDATE) == []


def test_warnings_are_collected_and_never_deny(shipped: ProviderRegistry) -> None:
    obj = model_deployment(
        engine={"type": "trtllm", "contextLength": 4096, "trustRemoteCode": True},
        gpu=1,
        model={
            "id": "x",
            "source": "custom",
            "servedName": "x",
            "storage": {
                "volumes": [
                    {"name": "a", "claimName": "a", "purpose": "modelCache", "readOnly": True},
                    {
                        "name": "b",
                        "claimName": "b",
                        "purpose": "compilationCache",
                        "readOnly": True,
                    },
                ]
            },
        },
        scaling={"replicas": 1, "prefill": {"replicas": 1}},
    )

    verdict = check(obj, shipped)

    assert verdict.errors == ()
    assert verdict.warnings == (
        "spec.model.servedName is ignored when spec.model.source is custom",
        "spec.engine.trustRemoteCode: true runs code from the model repository inside the serving pods",
        'volume "b": a compilation cache needs write access; readOnly makes it useless',
        "spec.model.storage.volumes[0].readOnly is not honoured by Dynamo: its operator mounts "
        "every volume read-write (the DynamoGraphDeployment's volumeMounts have no readOnly)",
        "spec.model.storage.volumes[1].readOnly is not honoured by Dynamo: its operator mounts "
        "every volume read-write (the DynamoGraphDeployment's volumeMounts have no readOnly)",
        "spec.scaling.prefill and spec.scaling.decode are ignored in aggregated mode",
    )


def test_read_only_model_cache_for_huggingface_warns(shipped: ProviderRegistry) -> None:
    volumes = [{"name": "a", "claimName": "a", "purpose": "modelCache", "readOnly": True}]
    obj = model_deployment(gpu=1, model={"id": "x", "storage": {"volumes": volumes}})

    # a 1-GPU vLLM model selects Dynamo, which mounts volumes read-write
    assert check(obj, shipped).warnings == (
        'volume "a": the model cache is read-only, so the model is not downloaded; the claim must already hold it',
        "spec.model.storage.volumes[0].readOnly is not honoured by Dynamo: its operator mounts "
        "every volume read-write (the DynamoGraphDeployment's volumeMounts have no readOnly)",
    )
    obj["spec"]["provider"] = {"name": "vllm"}  # Runway's own Deployments honour readOnly
    assert check(obj, shipped).warnings == (
        'volume "a": the model cache is read-only, so the model is not downloaded; the claim must already hold it',
    )


def test_every_error_is_reported_at_once_in_check_order(shipped: ProviderRegistry) -> None:
    obj = model_deployment(
        "a.b",
        model_id=None,
        gpu=65,
        image="a:1",
        engine={"image": "b:1"},
        provider="kaito",
        overrides={"resource": {"count": 2}},
    )

    assert [e.path for e in check_spec(obj, registry=shipped).errors] == [
        "spec.engine.image",
        "spec.model.id",
        "spec.provider.overrides.resource.count",
        "spec.resources.gpu.count",
        "metadata.name",
    ]


def test_admission_reports_structure_errors_first_and_alone(shipped: ProviderRegistry) -> None:
    obj = model_deployment(gpu=1, resources={"gpu": {"count": "one"}})
    admission = admit(obj, registry=shipped)

    assert (admission.allowed, admission.errors, admission.warnings) == (
        False,
        (FieldError("spec.resources.gpu.count", Reason.INVALID, "must be integer, not string"),),
        (),
    )
