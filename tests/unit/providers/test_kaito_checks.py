"""KAITO's own admission rules (providers/kaito/rules.py): the whole
answer, failing and passing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.admission.pipeline import admit
from core.fields.errors import FieldError, Reason
from core.model.kinds import ModelDeployment
from core.selection.configs import ProviderRegistry
from kubeio.registry import build_registry
from kubeio.shipped import bundled_config_objects, bundled_versions
from providers.kaito.render import render as kaito_render
from providers.kaito.rules import admission_checks as kaito_checks
from tests.support.builders import model_deployment, shipped_registry

SHIPPED = shipped_registry()


def admission_checks(md: ModelDeployment) -> tuple[list[FieldError], list[str]]:
    """KAITO's checks with the shipped config's context, on a create."""
    return kaito_checks(md, SHIPPED.context("kaito"), None)


REPO = "bartowski/Llama-3.2-1B-Instruct-GGUF"
FILE = f"{REPO}/Llama-3.2-1B-Instruct-Q4_K_M.gguf"


def test_llamacpp_model_id_naming_a_repository_is_refused() -> None:
    md = ModelDeployment(model_deployment(model_id=REPO, engine="llamacpp", provider="kaito"))

    assert admission_checks(md) == (
        [
            FieldError(
                "spec.model.id",
                Reason.INVALID,
                "'bartowski/Llama-3.2-1B-Instruct-GGUF' names no GGUF file: give"
                " <org>/<repo>/<file>.gguf or set spec.engine.args.ggufUrl (aikit v0.21.0's runner"
                " cannot fetch huggingface://<org>/<repo>/<file> and serves any *.gguf of a bare"
                " repo: runner.go generateLlamaCppDownload)",
            )
        ],
        [],
    )


def test_llamacpp_model_id_naming_a_gguf_file_or_a_gguf_url_is_accepted() -> None:
    by_file = model_deployment(model_id=FILE, engine="llamacpp", provider="kaito")
    by_url = model_deployment(
        model_id=REPO,
        engine={"type": "llamacpp", "args": {"ggufUrl": f"https://example.com/{FILE}"}},
        provider="kaito",
    )
    custom = model_deployment(model_id=REPO, engine="llamacpp", provider="kaito")
    custom["spec"]["model"]["source"] = "custom"

    for obj in (by_file, by_url, custom):
        assert admission_checks(ModelDeployment(obj)) == ([], [])


def test_preset_engine_settings_are_warned_about_by_field() -> None:
    engine: dict[str, object] = {"type": "vllm", "args": {"max-num-seqs": "8"}}
    engine |= {"extraArgs": ["--x"], "contextLength": 4096}
    md = ModelDeployment(model_deployment(engine=engine, gpu=1, provider="kaito"))

    assert admission_checks(md) == (
        [],
        [
            f"spec.engine.{field} is ignored by kaito: a preset Workspace has no field for engine"
            " settings (KAITO v0.10.0 api/v1beta1/workspace_types.go:54-102)"
            for field in ("args", "extraArgs", "contextLength")
        ],
    )


def test_preset_without_engine_settings_has_no_warnings() -> None:
    md = ModelDeployment(model_deployment(engine="vllm", gpu=1, provider="kaito"))

    assert admission_checks(md) == ([], [])


@settings(max_examples=60, deadline=None)
@given(st.text(min_size=1, max_size=4000).filter(lambda t: not t.lower().endswith(".gguf")))
def test_a_refused_llamacpp_model_id_is_shown_bounded(model_id: str) -> None:
    """Hostile ids (path parts, 300+ characters, control characters): one refusal at
    spec.model.id, the id shown at most 64 characters long, nothing else refused."""
    md = ModelDeployment(
        {
            "apiVersion": "airunway.ai/v1alpha1",
            "kind": "ModelDeployment",
            "metadata": {"name": "m", "namespace": "n"},
            "spec": {"model": {"id": model_id}, "engine": {"type": "llamacpp"}},
        }
    )

    errors, warnings = admission_checks(md)

    shown = model_id if len(model_id) <= 64 else model_id[:64] + "..."
    assert [(e.path, e.reason) for e in errors] == [("spec.model.id", Reason.INVALID)]
    assert repr(shown) in errors[0].detail and len(errors[0].detail) <= 250 + len(repr(shown))
    assert warnings == []


# KAITO's webhook, at the pin, for the Workspace Runway renders (providers/kaito/rules.py).

NAP = "kaito.airunway.ai/node-auto-provisioning"
GPU_TYPE = "kaito.airunway.ai/instance-type"
CPU_TYPE = "kaito.airunway.ai/cpu-instance-type"
CLOUD = "kaito.airunway.ai/cloud-provider"
TOKEN = {"huggingFaceToken": "hf-token"}
WHY = (
    "KAITO refuses to change it in an existing Workspace (KAITO v0.10.0 "
    "workspace_validation.go:{}); delete and recreate the ModelDeployment to change it"
)


def kaito_registry(annotations: dict[str, str] | None) -> ProviderRegistry:
    """The shipped configs, the kaito one with exactly `annotations` (None: none at all)."""
    configs = bundled_config_objects()
    for config in configs:
        if config["metadata"]["name"] == "kaito":
            config["metadata"]["annotations"] = {
                k: v for k, v in config["metadata"]["annotations"].items() if "kaito." not in k
            } | (annotations or {})
    return build_registry(configs)


def answer(registry: ProviderRegistry, obj: dict[str, Any], old: dict[str, Any] | None = None):  # type: ignore[no-untyped-def]
    admission = admit(obj, old=old, registry=registry)
    return [(e.path, e.reason, e.detail) for e in admission.errors], list(admission.warnings)


def workspace(registry: ProviderRegistry, obj: dict[str, Any]) -> dict[str, Any]:
    admission = admit(obj, registry=registry)
    assert admission.errors == ()
    md = ModelDeployment(admission.obj)
    (out,) = kaito_render(md, bundled_versions(), registry.context("kaito"))
    return out


def preset(model_id: str, *, gpu: int = 1, **spec: Any) -> dict[str, Any]:
    return model_deployment(model_id=model_id, engine="vllm", gpu=gpu, provider="kaito", **spec)


def llamacpp(*, gpu: int = 0, **spec: Any) -> dict[str, Any]:
    obj = model_deployment(model_id=FILE, engine="llamacpp", provider="kaito", gpu=gpu, **spec)
    obj["spec"]["engine"]["image"] = "ghcr.io/kaito-project/aikit/llama3.2:1b"
    return obj


def test_with_auto_provisioning_and_no_instance_type_anywhere_the_workspace_is_refused() -> None:
    registry = kaito_registry(None)  # an AI Runway config: KAITO's default install, NAP on

    assert answer(registry, preset("Qwen/Qwen3-8B")) == (
        [
            (
                "spec.provider.overrides.resource.instanceType",
                Reason.REQUIRED,
                "KAITO with node auto-provisioning (its default) requires resource.instanceType "
                "(KAITO v0.10.0 workspace_validation.go:146-150): set it here, or once for every "
                f"model as the annotation {GPU_TYPE} on the kaito InferenceProviderConfig (or set "
                f'{NAP}: "false" there when KAITO runs on your own nodes)',
            )
        ],
        [],
    )


def test_the_instance_type_comes_from_the_override_else_the_config_by_kind_of_node() -> None:
    registry = kaito_registry({GPU_TYPE: "Standard_NC48ads_A100_v4", CPU_TYPE: "Standard_D8s_v5"})
    override = {"resource": {"instanceType": "Standard_NC40ads_H100_v5"}}

    assert workspace(registry, preset("Qwen/Qwen3-8B"))["resource"]["instanceType"] == (
        "Standard_NC48ads_A100_v4"
    )
    assert workspace(registry, llamacpp())["resource"]["instanceType"] == "Standard_D8s_v5"
    assert workspace(registry, preset("Qwen/Qwen3-8B", overrides=override))["resource"][
        "instanceType"
    ] == ("Standard_NC40ads_H100_v5")


def test_without_auto_provisioning_no_instance_type_is_written_and_an_override_is_refused() -> None:
    registry = kaito_registry({NAP: "false", GPU_TYPE: "Standard_NC24ads_A100_v4"})
    override = {"resource": {"instanceType": "Standard_NC24ads_A100_v4"}}

    assert "instanceType" not in workspace(registry, preset("Qwen/Qwen3-8B"))["resource"]
    assert answer(registry, preset("Qwen/Qwen3-8B", overrides=override))[0] == [
        (
            "spec.provider.overrides.resource.instanceType",
            Reason.FORBIDDEN,
            "must be empty: the target KAITO runs without node auto-provisioning "
            f"({NAP}: false on the kaito InferenceProviderConfig), and KAITO then refuses "
            "any instanceType (KAITO v0.10.0 workspace_validation.go:141-145)",
        )
    ]


def test_an_instance_type_kaito_cannot_provision_is_refused_where_it_was_set() -> None:
    aws = kaito_registry({CLOUD: "aws", GPU_TYPE: "p4d.24xlarge"})
    typo = {"resource": {"instanceType": "p4d.24xlarg"}}

    assert answer(aws, preset("Qwen/Qwen3-8B"))[0] == []
    assert answer(aws, preset("Qwen/Qwen3-8B", overrides=typo))[0] == [
        (
            "spec.provider.overrides.resource.instanceType",
            Reason.INVALID,
            "instance type 'p4d.24xlarg' is not one KAITO v0.10.0 provisions on aws (pkg/sku; "
            "workspace_validation.go:483-489); did you mean p4d.24xlarge, p4de.24xlarge, p3dn.24xlarge?",
        )
    ]
    azure = kaito_registry({GPU_TYPE: "Basic_A1"})
    assert answer(azure, preset("Qwen/Qwen3-8B"))[0] == [
        (
            "spec.provider.name",
            Reason.INVALID,
            f"instance type 'Basic_A1' (annotation {GPU_TYPE} on the kaito "
            "InferenceProviderConfig) is not one KAITO v0.10.0 provisions on azure (pkg/sku; "
            "workspace_validation.go:483-489)",
        )
    ]
    # Azure also takes any N- or D-series name KAITO's table does not list
    assert (
        answer(kaito_registry({GPU_TYPE: "Standard_NC8ads_A10_v4"}), preset("Qwen/Qwen3-8B"))[0]
        == []
    )


def test_bad_install_annotations_are_named() -> None:
    registry = kaito_registry({NAP: "yes", CLOUD: "gcp", GPU_TYPE: "Standard_NC24ads_A100_v4"})

    where = "InferenceProviderConfig kaito metadata.annotations"
    assert answer(registry, preset("Qwen/Qwen3-8B"))[0][:2] == [
        ("spec.provider.name", Reason.INVALID, f"{where}[{NAP}] must be true or false, not 'yes'"),
        (
            "spec.provider.name",
            Reason.INVALID,
            f"{where}[{CLOUD}] must be one of arc, aws, azure, not 'gcp'",
        ),
    ]


@pytest.mark.parametrize("replicas", [0, 2, 5])
def test_replicas_other_than_one_are_refused(replicas: int) -> None:
    obj = preset("Qwen/Qwen3-8B", scaling={"replicas": replicas})

    assert answer(SHIPPED, obj)[0] == [
        (
            "spec.scaling.replicas",
            Reason.INVALID,
            "must be 1 for kaito: a Workspace runs one inference instance, and its "
            "resource.count is the number of GPU nodes that instance spans, not a replica "
            "count, and cannot change once created (KAITO v0.10.0 "
            "api/v1beta1/workspace_types.go:28, workspace_validation.go:551-553); run more "
            "instances as more ModelDeployments",
        )
    ]
    assert answer(SHIPPED, preset("Qwen/Qwen3-8B", scaling={"replicas": 1})) == ([], [])
    assert workspace(SHIPPED, preset("Qwen/Qwen3-8B"))["resource"]["count"] == 1


def test_unknown_and_deprecated_presets_are_refused() -> None:
    assert answer(SHIPPED, preset("llama-3.1-8b-instruc"))[0] == [
        (
            "spec.model.id",
            Reason.INVALID,
            "'llama-3.1-8b-instruc' is no KAITO v0.10.0 preset and no Hugging Face id "
            "(<org>/<repo>), so KAITO refuses it (workspace_validation.go:603-605); did you "
            "mean llama-3.1-8b-instruct, llama-3.3-70b-instruct, gemma-3-4b-instruct?",
        )
    ]
    assert answer(SHIPPED, preset("phi-2"))[0] == [
        (
            "spec.model.id",
            Reason.INVALID,
            "KAITO v0.10.0 no longer supports the deprecated preset 'phi-2' "
            "(workspace_validation.go:399)",
        )
    ]


def test_model_access_secret_only_where_the_preset_downloads_and_required_where_gated() -> None:
    gated_without = answer(SHIPPED, preset("meta-llama/Llama-3.1-8B-Instruct"))
    assert gated_without == (
        [
            (
                "spec.secrets.huggingFaceToken",
                Reason.REQUIRED,
                "KAITO preset llama-3.1-8b-instruct downloads gated weights and refuses a "
                "Workspace without a modelAccessSecret (workspace_validation.go:634-635): name "
                "the Secret holding HF_TOKEN",
            )
        ],
        [],
    )
    gated = workspace(SHIPPED, preset("meta-llama/Llama-3.1-8B-Instruct", secrets=TOKEN))
    assert gated["inference"] == {
        "preset": {
            "name": "meta-llama/Llama-3.1-8B-Instruct",
            "presetOptions": {"modelAccessSecret": "hf-token"},
        }
    }
    in_image = preset("falcon-7b", secrets=TOKEN)
    assert answer(SHIPPED, in_image) == (
        [],
        [
            "spec.secrets.huggingFaceToken is not passed to kaito: preset falcon-7b ships its "
            "weights in its image, and KAITO refuses a modelAccessSecret for it (KAITO v0.10.0 "
            "workspace_validation.go:637-638)"
        ],
    )
    assert workspace(SHIPPED, in_image)["inference"] == {"preset": {"name": "falcon-7b"}}
    # phi-4 is redirected to microsoft/phi-4 and generated: it downloads, so it takes the token
    assert workspace(SHIPPED, preset("phi-4", secrets=TOKEN))["inference"]["preset"] == {
        "name": "phi-4",
        "presetOptions": {"modelAccessSecret": "hf-token"},
    }


def test_a_gateway_model_name_other_than_the_served_one_is_refused() -> None:
    gateway = {"enabled": True, "modelName": "my-llama"}
    other = preset("meta-llama/Llama-3.1-8B-Instruct", secrets=TOKEN, gateway=gateway)
    same = preset(
        "meta-llama/Llama-3.1-8B-Instruct",
        secrets=TOKEN,
        gateway={"enabled": True, "modelName": "llama-3.1-8b-instruct"},
    )

    assert answer(SHIPPED, other)[0] == [
        (
            "spec.gateway.modelName",
            Reason.INVALID,
            "kaito's pods answer only to 'llama-3.1-8b-instruct' (the name KAITO or LocalAI "
            "serves the model under; Runway cannot rename it), so a route on another name "
            "reaches nothing: remove spec.gateway.modelName or set it to 'llama-3.1-8b-instruct'",
        )
    ]
    assert answer(SHIPPED, same) == ([], [])
    assert [e[0] for e in answer(SHIPPED, llamacpp(gateway=gateway))[0]] == [
        "spec.gateway.modelName"
    ]


def test_a_served_name_kaito_cannot_pass_is_warned_about() -> None:
    obj = preset("Qwen/Qwen3-8B", model={"id": "Qwen/Qwen3-8B", "servedName": "qwen"})

    assert answer(SHIPPED, obj) == (
        [],
        [
            "spec.model.servedName is not passed to kaito: preset qwen/qwen3-8b serves under "
            "'qwen3-8b' (KAITO v0.10.0 pkg/model/interface.go:334)"
        ],
    )


def test_without_auto_provisioning_a_gpu_preset_needs_one_gpu_product() -> None:
    registry = kaito_registry({NAP: "false"})
    pinned = preset("Qwen/Qwen3-8B", nodeSelector={"nvidia.com/gpu.product": "NVIDIA-A100"})

    assert answer(registry, preset("Qwen/Qwen3-8B")) == (
        [],
        [
            "kaito without node auto-provisioning refuses a preset Workspace whose matching "
            "nodes mix GPU products, counts or memory (KAITO v0.10.0 "
            "workspace_validation.go:454-462): set spec.nodeSelector nvidia.com/gpu.product "
            "to the one product the model runs on"
        ],
    )
    assert answer(registry, pinned) == ([], [])
    assert answer(SHIPPED, preset("Qwen/Qwen3-8B")) == ([], [])  # NAP picks the nodes


def stored(obj: dict[str, Any]) -> dict[str, Any]:
    admission = admit(obj, registry=SHIPPED)
    assert admission.errors == ()
    return dict(admission.obj)


def test_what_kaito_keeps_immutable_is_refused_on_update_at_the_field_that_changes_it() -> None:
    gated = preset("meta-llama/Llama-3.1-8B-Instruct", secrets=TOKEN)
    old = stored(gated)
    moved = preset(
        "meta-llama/Llama-3.1-8B-Instruct",
        secrets={"huggingFaceToken": "other"},
        nodeSelector={"pool": "b"},
        overrides={"resource": {"instanceType": "Standard_NC48ads_A100_v4"}},
    )

    assert answer(SHIPPED, moved, old)[0] == [
        (
            "spec.nodeSelector",
            Reason.IMMUTABLE,
            "changes resource.labelSelector: " + WHY.format("580-584"),
        ),
        (
            "spec.secrets.huggingFaceToken",
            Reason.IMMUTABLE,
            "changes inference.preset.presetOptions: " + WHY.format("660-661"),
        ),
        (
            "spec.provider.overrides.resource.instanceType",
            Reason.IMMUTABLE,
            "changes resource.instanceType from 'Standard_NC24ads_A100_v4': "
            + WHY.format("573-574"),
        ),
    ]
    assert answer(SHIPPED, gated, old) == ([], [])
    # a token a preset never receives can change freely
    in_image = stored(preset("falcon-7b", secrets=TOKEN))
    assert (
        answer(SHIPPED, preset("falcon-7b", secrets={"huggingFaceToken": "x"}), in_image)[0] == []
    )
    # llama.cpp moving onto GPUs changes the selector (nvidia.com/gpu.present)
    cpu = stored(llamacpp())
    assert [(p, r) for p, r, _ in answer(SHIPPED, llamacpp(gpu=1), cpu)[0]] == [
        ("spec.resources.gpu.count", Reason.IMMUTABLE),
        ("spec.provider.overrides.resource.instanceType", Reason.IMMUTABLE),
    ]


PRESETS = json.loads(
    (Path(__file__).resolve().parents[3] / "providers/kaito/facts/presets.json").read_text()
)


@settings(max_examples=80, deadline=None)
@given(
    name=st.sampled_from(sorted(PRESETS["presets"]) + sorted(PRESETS["huggingFaceIds"])),
    upper=st.lists(st.booleans(), min_size=64, max_size=64),
    token=st.booleans(),
)
def test_every_preset_serves_under_its_name_and_takes_a_token_only_if_it_downloads(
    name: str, upper: list[bool], token: bool
) -> None:
    """Any preset, by preset name or HF id, in any letter case (KAITO lower-cases it): the route
    matches the catalog's served name, and the token is rendered iff the preset downloads."""
    model_id = "".join(c.upper() if u else c for c, u in zip(name, upper, strict=False))
    resolved = str(PRESETS["redirects"].get(name, name))
    facts = PRESETS["presets"].get(PRESETS["huggingFaceIds"].get(resolved, resolved))
    obj = preset(model_id, gateway={"enabled": True})
    if token:
        obj["spec"]["secrets"] = dict(TOKEN)
    if facts is not None and facts["downloadAuthRequired"] and not token:
        assert [e[0] for e in answer(SHIPPED, obj)[0]] == ["spec.secrets.huggingFaceToken"]
        return
    admission = admit(obj, registry=SHIPPED)
    assert admission.errors == ()
    md = ModelDeployment(admission.obj)
    served = facts["servedName"] if facts else resolved.rsplit("/", 1)[-1]
    downloads = facts["downloadAtRuntime"] if facts else True
    assert SHIPPED.served_as(md) == served
    (rendered,) = kaito_render(md, bundled_versions(), SHIPPED.context("kaito"))
    options = rendered["inference"]["preset"].get("presetOptions")
    assert options == ({"modelAccessSecret": "hf-token"} if token and downloads else None)


@settings(max_examples=80, deadline=None)
@given(
    values=st.dictionaries(
        st.sampled_from([NAP, CLOUD, GPU_TYPE, CPU_TYPE]), st.text(max_size=3000), max_size=4
    )
)
def test_hostile_install_annotations_get_named_bounded_errors_never_a_crash(
    values: dict[str, str],
) -> None:
    """Whatever a config's kaito annotations hold: admission answers, every error is at the
    instance-type field or names the provider config, and no detail echoes more than 64
    characters of a value."""
    errors, _ = answer(kaito_registry(values), preset("Qwen/Qwen3-8B"))

    for path, _reason, detail in errors:
        assert path in ("spec.provider.name", "spec.provider.overrides.resource.instanceType")
        assert len(detail) < 600


def test_the_kaito_facts_are_at_the_pin_and_hold_together() -> None:
    """providers/kaito/facts/presets.json (`make kaito-facts`): taken at KAITO_VERSION, every HF
    id maps to a preset it lists, and each cloud lists instance types with their GPUs."""
    assert PRESETS["kaito"] == f"v{bundled_versions().pin('kaito')}"
    assert set(PRESETS["huggingFaceIds"].values()) <= set(PRESETS["presets"])
    assert set(PRESETS["deprecated"]).isdisjoint(PRESETS["presets"])
    assert sorted(PRESETS["instanceTypes"]) == ["arc", "aws", "azure"]
    assert all(
        sku["gpus"] >= 1 for cloud in PRESETS["instanceTypes"].values() for sku in cloud.values()
    )
    assert PRESETS["install"] == {"nodeAutoProvisioning": True, "cloudProvider": "azure"}
    downloads = sorted(n for n, p in PRESETS["presets"].items() if p["downloadAtRuntime"])
    assert (len(PRESETS["presets"]), len(downloads)) == (29, 11)


def test_messages_name_the_kaito_release_the_facts_were_read_at() -> None:
    shipped = SHIPPED.context("kaito")
    facts = {**shipped.facts, "presets": {**shipped.facts["presets"], "kaito": "v9.8.7"}}
    context = type(shipped)(shipped.name, shipped.settings, facts)
    md = ModelDeployment(
        model_deployment(model_id="phi-4", gpu=1, provider="kaito", scaling={"replicas": 2})
    )

    assert kaito_checks(md, context, None) == (
        [
            FieldError(
                "spec.scaling.replicas",
                Reason.INVALID,
                "must be 1 for kaito: a Workspace runs one inference instance, and its"
                " resource.count is the number of GPU nodes that instance spans, not a replica"
                " count, and cannot change once created (KAITO v9.8.7"
                " api/v1beta1/workspace_types.go:28, workspace_validation.go:551-553); run more"
                " instances as more ModelDeployments",
            )
        ],
        [],
    )
