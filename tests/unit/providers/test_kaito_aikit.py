"""KAITO's llama.cpp modes on aikit at AIKIT_VERSION (providers/kaito/aikit.py, build.py, and
their rules in rules.py): pre-made images, a Hugging Face GGUF on the runner (direct) and built in
the cluster (built), the model cache, and pipeline parallelism. The whole answer each time."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from core.admission.pipeline import admit
from core.fields.errors import FieldError, Reason
from core.model.kinds import ModelDeployment
from kubeio.shipped import bundled_versions
from providers.kaito.aikit import Gguf, gguf
from providers.kaito.build import registry_objects
from providers.kaito.render import render as kaito_render
from providers.kaito.rules import admission_checks as kaito_checks
from providers.kaito.rules import served_as
from renderer.output.builtin import BuiltinSchemas
from tests.support.builders import model_deployment, shipped_registry
from tests.support.paths import ROOT

SHIPPED = shipped_registry()
CONTEXT = SHIPPED.context("kaito")
FILE = "bartowski/Llama-3.2-1B-Instruct-GGUF/Llama-3.2-1B-Instruct-Q4_K_M.gguf"
URL = (
    "https://huggingface.co/bartowski/Llama-3.2-1B-Instruct-GGUF/resolve/main/"
    "Llama-3.2-1B-Instruct-Q4_K_M.gguf"
)
SERVED = "Llama-3.2-1B-Instruct-Q4_K_M"
BUILT = {"kaito.airunway.ai/gguf-mode": "built"}
PIPELINE = (
    "provider kaito cannot run a replica across 2 nodes: kaito chooses a preset's parallelism"
    " itself: it spans as many GPU nodes as the preset's weights need on the instance type and"
    " sets pipeline-parallel-size to that node count (KAITO at KAITO_VERSION"
    " pkg/model/interface.go:395-427 configureParallelism,"
    " pkg/workspace/inference/preset_inferences.go:168-189), and a Workspace has no field to ask"
    " for another (api/v1beta1/workspace_types.go:87-106); a llama.cpp template runs one pod."
    " Remove the key, or use a provider that offers multi-node serving"
)


def llamacpp(model_id: str | None = FILE, *, gpu: int = 0, **spec: Any) -> dict[str, Any]:
    return model_deployment(
        model_id=model_id, engine="llamacpp", provider="kaito", gpu=gpu or None, **spec
    )


def premade(image: str, *, gpu: int = 0, **spec: Any) -> dict[str, Any]:
    obj = llamacpp(None, gpu=gpu, **spec)
    obj["spec"]["model"]["source"] = "custom"
    obj["spec"]["engine"]["image"] = image
    return obj


def checks(obj: dict[str, Any]) -> tuple[list[FieldError], list[str]]:
    return kaito_checks(ModelDeployment(obj), CONTEXT, None)


def rendered(obj: dict[str, Any]) -> list[dict[str, Any]]:
    admission = admit(obj, registry=SHIPPED)
    assert admission.errors == ()
    return kaito_render(ModelDeployment(admission.obj), bundled_versions(), CONTEXT)


# Pre-made images (README.md's catalog at the pin)


@pytest.mark.parametrize(
    ("image", "served"),
    [
        ("ghcr.io/kaito-project/aikit/llama3.1:8b", "llama-3.1-8b-instruct"),
        ("ghcr.io/kaito-project/aikit/llama3.2:1b", "llama-3.2-1b-instruct"),
        ("ghcr.io/kaito-project/aikit/phi4:14b", "phi-4-14b-instruct"),
        ("ghcr.io/kaito-project/aikit/llama3.1:9b", None),  # not in the catalog
        ("registry.example.com/aikit/llama3.1:8b", None),  # not aikit's registry
    ],
)
def test_a_premade_image_serves_the_catalogs_name(image: str, served: str | None) -> None:
    assert served_as(ModelDeployment(premade(image)), CONTEXT) == served


def test_a_route_on_another_name_than_the_premade_images_is_refused() -> None:
    obj = premade("ghcr.io/kaito-project/aikit/llama3.1:8b", gateway={"enabled": True})
    obj["spec"]["gateway"]["modelName"] = "llama3.1"

    assert checks(obj) == (
        [
            FieldError(
                "spec.gateway.modelName",
                Reason.INVALID,
                "kaito's pods answer only to 'llama-3.1-8b-instruct' (the name KAITO or LocalAI"
                " serves the model under; Runway cannot rename it), so a route on another"
                " name reaches nothing: remove spec.gateway.modelName or set it to"
                " 'llama-3.1-8b-instruct'",
            )
        ],
        [],
    )


def test_an_aikit_image_the_catalog_does_not_list_is_warned_about() -> None:
    assert checks(premade("ghcr.io/kaito-project/aikit/llama3.1:9b")) == (
        [],
        [
            "spec.engine.image 'ghcr.io/kaito-project/aikit/llama3.1:9b' is not one of aikit"
            " v0.21.0's pre-made model images (README.md), so Runway does not know the name it"
            " serves: the route matches spec.gateway.modelName, else the model id or the"
            " ModelDeployment's name; set spec.gateway.modelName to the name the image's LocalAI"
            " config gives the model"
        ],
    )


def test_a_gpu_only_premade_image_without_a_gpu_is_refused() -> None:
    assert checks(premade("ghcr.io/kaito-project/aikit/flux1:dev")) == (
        [
            FieldError(
                "spec.resources.gpu.count",
                Reason.REQUIRED,
                "'ghcr.io/kaito-project/aikit/flux1:dev' runs only on NVIDIA GPUs (aikit v0.21.0"
                " README.md offers it in its CUDA table only): set spec.resources.gpu.count",
            )
        ],
        [],
    )
    assert checks(premade("ghcr.io/kaito-project/aikit/flux1:dev", gpu=1)) == ([], [])


def test_a_premade_image_runs_with_its_config_file_on_kaitos_port() -> None:
    (workspace,) = rendered(premade("ghcr.io/kaito-project/aikit/llama3.1:8b", gpu=1))

    assert workspace["inference"]["template"]["spec"]["containers"] == [
        {
            "name": "model",
            "image": "ghcr.io/kaito-project/aikit/llama3.1:8b",
            "args": ["--config-file=/config.yaml", "--address=:5000"],
            "ports": [{"containerPort": 5000, "protocol": "TCP"}],
            "env": [],
            "resources": {"limits": {"nvidia.com/gpu": "1"}, "requests": {"nvidia.com/gpu": "1"}},
            "securityContext": {"allowPrivilegeEscalation": False},
        }
    ]


# A Hugging Face GGUF: what the runner is given and the name it serves


@pytest.mark.parametrize(
    ("model_id", "url", "expected"),
    [
        (FILE, None, Gguf(URL, f"{SERVED}.gguf", SERVED)),
        (
            "org/repo/sub/dir/m.Q8_0.gguf",
            None,
            Gguf(
                "https://huggingface.co/org/repo/resolve/main/sub/dir/m.Q8_0.gguf",
                "m.Q8_0.gguf",
                "m.Q8_0",
            ),
        ),
        ("org/repo", f"huggingface://{FILE}", Gguf(URL, f"{SERVED}.gguf", SERVED)),
        (
            "org/repo",
            "https://example.com/m/x.gguf",
            Gguf("https://example.com/m/x.gguf", "x.gguf", "x"),
        ),
        ("org/repo", "https://example.com/x.gguf?download=true", None),
        ("org/repo", "http://example.com/x.gguf", None),
        ("org/repo", "huggingface://org/repo", None),
        ("org/repo/../x.gguf", None, None),
        ("org/repo/X.GGUF", None, None),
        ("org/repo", None, None),
    ],
)
def test_the_gguf_the_runner_is_given(
    model_id: str, url: str | None, expected: Gguf | None
) -> None:
    obj = llamacpp(model_id)
    if url is not None:
        obj["spec"]["engine"]["args"] = {"ggufUrl": url}

    assert gguf(ModelDeployment(obj)) == expected


def test_a_gguf_url_the_runner_cannot_fetch_is_refused() -> None:
    obj = llamacpp("org/repo")
    obj["spec"]["engine"]["args"] = {"ggufUrl": "https://example.com/x.gguf?download=true"}

    assert checks(obj) == (
        [
            FieldError(
                "spec.engine.args.ggufUrl",
                Reason.INVALID,
                "'https://example.com/x.gguf?download=true' is not a GGUF file aikit v0.21.0's"
                " runner can fetch: give an https URL whose path ends in <file>.gguf, without a"
                " query or fragment (the runner saves it under the URL's basename and serves the"
                " first *.gguf file: runner.go generateLlamaCppDownload), or"
                " huggingface://<org>/<repo>/<file>.gguf",
            )
        ],
        [],
    )


def test_a_hugging_face_gguf_is_routed_on_the_file_name_without_gguf() -> None:
    assert served_as(ModelDeployment(llamacpp()), CONTEXT) == SERVED


@pytest.mark.parametrize(("gpu", "runner"), [(0, "llama-cpp-cpu"), (1, "llama-cpp-cuda")])
def test_direct_mode_runs_aikits_runner_for_the_device_with_the_cache_at_models(
    gpu: int, runner: str
) -> None:
    volumes = [{"name": "cache", "purpose": "modelCache", "size": "10Gi"}]
    obj = llamacpp(gpu=gpu)
    obj["spec"]["model"]["storage"] = {"volumes": volumes}

    workspace, claim = rendered(obj)

    assert workspace["inference"]["template"]["spec"] == {
        "containers": [
            {
                "name": "model",
                "image": f"ghcr.io/kaito-project/aikit/runners/{runner}:v0.21.0",
                "args": [URL, "--address=:5000"],
                "ports": [{"containerPort": 5000, "protocol": "TCP"}],
                "env": [{"name": "HF_HOME", "value": "/model-cache"}],
                **(
                    {
                        "resources": {
                            "limits": {"nvidia.com/gpu": "1"},
                            "requests": {"nvidia.com/gpu": "1"},
                        }
                    }
                    if gpu
                    else {}
                ),
                "volumeMounts": [
                    {"name": "cache", "mountPath": "/model-cache"},
                    {"name": "cache", "mountPath": "/models"},
                ],
                "securityContext": {"allowPrivilegeEscalation": False},
            }
        ],
        "volumes": [{"name": "cache", "persistentVolumeClaim": {"claimName": "m-cache"}}],
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
    }
    assert (claim["kind"], claim["metadata"]["name"]) == ("PersistentVolumeClaim", "m-cache")


def test_a_token_is_said_not_to_reach_the_download() -> None:
    obj = llamacpp(secrets={"huggingFaceToken": "hf"})

    assert checks(obj) == (
        [],
        [
            "spec.secrets.huggingFaceToken does not reach the GGUF download: aikit v0.21.0's"
            " runner fetches an https URL with curl and no token"
            " (pkg/aikit2llb/inference/runner.go generateLlamaCppDownload), and the build"
            " fetches it as a BuildKit HTTP source without one (download.go handleHTTP): a gated"
            " file cannot be downloaded"
        ],
    )


# Built mode: the BuildKit Job before the Workspace


def test_built_mode_renders_the_aikitfile_the_job_and_then_the_workspace() -> None:
    obj = llamacpp(annotations=BUILT)

    config_map, job, workspace = rendered(obj)

    name = "m-e78b36919471-aikit-build"
    wave = {"airunway.ai/rendered-from": "ModelDeployment/ns/m"}
    labels = {"airunway.ai/model-deployment": "m", "app.kubernetes.io/managed-by": "runway"}
    assert config_map == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "labels": labels,
            "annotations": {**wave, "argocd.argoproj.io/sync-wave": "-1"},
        },
        "data": {
            "aikitfile.yaml": "#syntax=ghcr.io/kaito-project/aikit/aikit:v0.21.0\n"
            + "{\n"
            + ' "apiVersion": "v1alpha1",\n'
            + ' "models": [\n'
            + "  {\n"
            + f'   "name": "{SERVED}",\n'
            + f'   "source": "{URL}"\n'
            + "  }\n"
            + " ],\n"
            + ' "config": "[{\\"name\\": \\"'
            + SERVED
            + '\\", \\"backend\\": \\"llama-cpp\\", \\"parameters\\": {\\"model\\": \\"'
            + SERVED
            + '.gguf\\"}}]"\n'
            + "}\n"
        },
    }
    aikitfile = yaml.safe_load(config_map["data"]["aikitfile.yaml"])
    assert yaml.safe_load(aikitfile["config"]) == [
        {"name": SERVED, "backend": "llama-cpp", "parameters": {"model": f"{SERVED}.gguf"}}
    ]
    assert job["metadata"]["annotations"] == {**wave, "argocd.argoproj.io/sync-wave": "-1"}
    image = "docker.io/moby/buildkit:v0.28.0-rootless"
    pushed = "runway-registry.runway-system.svc.cluster.local:5000/ns/m:v0.21.0-e78b36919471"
    assert job["spec"] == {
        "backoffLimit": 2,
        "template": {
            "metadata": {"labels": {"airunway.ai/model-deployment": "m"}},
            "spec": {
                "restartPolicy": "Never",
                "initContainers": [
                    {
                        "name": "prepare",
                        "image": image,
                        "command": ["cp", "/aikitfile/aikitfile.yaml", "/workspace/aikitfile.yaml"],
                        "securityContext": {"runAsUser": 1000, "runAsGroup": 1000},
                        "volumeMounts": [
                            {"name": "aikitfile", "mountPath": "/aikitfile", "readOnly": True},
                            {"name": "workspace", "mountPath": "/workspace"},
                        ],
                    }
                ],
                "containers": [
                    {
                        "name": "buildkit",
                        "image": image,
                        "command": ["buildctl-daemonless.sh"],
                        "args": [
                            "build",
                            "--frontend",
                            "dockerfile.v0",
                            "--local",
                            "context=/workspace",
                            "--local",
                            "dockerfile=/workspace",
                            "--opt",
                            "filename=aikitfile.yaml",
                            "--output",
                            f"type=image,name={pushed},push=true,registry.insecure=true",
                        ],
                        "env": [
                            {"name": "BUILDKITD_FLAGS", "value": "--oci-worker-no-process-sandbox"}
                        ],
                        "securityContext": {
                            "seccompProfile": {"type": "Unconfined"},
                            "appArmorProfile": {"type": "Unconfined"},
                            "runAsUser": 1000,
                            "runAsGroup": 1000,
                        },
                        "volumeMounts": [
                            {"name": "workspace", "mountPath": "/workspace", "readOnly": True},
                            {"name": "buildkitd", "mountPath": "/home/user/.local/share/buildkit"},
                        ],
                    }
                ],
                "volumes": [
                    {"name": "aikitfile", "configMap": {"name": name}},
                    {"name": "workspace", "emptyDir": {}},
                    {"name": "buildkitd", "emptyDir": {}},
                ],
            },
        },
    }
    assert workspace["metadata"]["annotations"] == {**wave, "argocd.argoproj.io/sync-wave": "1"}
    spec = workspace["inference"]["template"]["spec"]
    assert spec["containers"][0]["image"] == "localhost:30500/ns/m:v0.21.0-e78b36919471"
    assert spec["containers"][0]["args"] == ["--config-file=/config.yaml", "--address=:5000"]
    assert spec["initContainers"] == [
        {
            "name": "wait-for-image",
            "image": "docker.io/library/registry:2.8.3",
            "command": [
                "sh",
                "-c",
                'until wget -qO- "$REGISTRY_TAGS" | grep -q "\\"$IMAGE_TAG\\""; do sleep 10; done',
            ],
            "env": [
                {
                    "name": "REGISTRY_TAGS",
                    "value": "http://runway-registry.runway-system.svc.cluster.local:5000"
                    "/v2/ns/m/tags/list",
                },
                {"name": "IMAGE_TAG", "value": "v0.21.0-e78b36919471"},
            ],
            "securityContext": {"allowPrivilegeEscalation": False},
        }
    ]
    schemas = BuiltinSchemas(bundled_versions().kubernetes)
    assert [schemas.check(o) for o in (config_map, job)] == [[], []]


def test_another_gguf_is_another_job() -> None:
    first = rendered(llamacpp(annotations=BUILT))[1]["metadata"]["name"]
    second = rendered(llamacpp("org/repo/other.gguf", annotations=BUILT))[1]["metadata"]["name"]

    assert first == "m-e78b36919471-aikit-build" and second != first


def test_the_job_name_fits_a_label_value_whatever_the_models_name() -> None:
    obj = llamacpp(annotations=BUILT)
    obj["metadata"]["name"] = "a" * 37 + "-" + "b" * 10

    (job,) = [o for o in rendered(obj) if o["kind"] == "Job"]

    assert job["metadata"]["name"] == "a" * 37 + "-e78b36919471-aikit-build"


def test_the_mode_comes_from_the_model_else_the_config() -> None:
    config = SHIPPED.configs["kaito"]
    assert "kaito.airunway.ai/gguf-mode" not in config.annotations  # direct is the default
    built_everywhere = type(CONTEXT)(CONTEXT.name, {**CONTEXT.settings, **BUILT}, CONTEXT.facts)
    md = ModelDeployment(admit(llamacpp(), registry=SHIPPED).obj)
    kinds = [o["kind"] for o in kaito_render(md, bundled_versions(), built_everywhere)]

    assert kinds == ["ConfigMap", "Job", "Workspace"]
    assert [o["kind"] for o in rendered(llamacpp())] == ["Workspace"]


def test_an_unknown_mode_is_refused() -> None:
    obj = llamacpp(annotations={"kaito.airunway.ai/gguf-mode": "bake"})

    assert checks(obj) == (
        [
            FieldError(
                "metadata.annotations[kaito.airunway.ai/gguf-mode]",
                Reason.INVALID,
                "kaito.airunway.ai/gguf-mode must be direct or built",
            )
        ],
        [],
    )


def test_a_claim_over_the_images_models_is_refused_on_premade_and_built() -> None:
    volumes = [{"name": "data", "claimName": "d", "mountPath": "/models"}]
    detail = (
        "/models holds the model of the aikit image this Workspace runs (aikit v0.21.0"
        " pkg/aikit2llb/inference/download.go handleHTTP): a claim mounted there hides it;"
        " mount it elsewhere"
    )
    error = FieldError("spec.model.storage.volumes[0].mountPath", Reason.INVALID, detail)
    image = "ghcr.io/kaito-project/aikit/llama3.2:1b"

    built = llamacpp(annotations=BUILT)
    built["spec"]["model"]["storage"] = {"volumes": volumes}
    custom = premade(image)
    custom["spec"]["model"]["storage"] = {"volumes": volumes}
    direct = llamacpp()
    direct["spec"]["model"]["storage"] = {"volumes": volumes}

    assert [checks(o)[0] for o in (built, custom, direct)] == [[error], [error], []]


def test_the_registry_is_shipped_once_and_passes_the_strict_check() -> None:
    shipped = list(yaml.safe_load_all((ROOT / "providers/kaito/registry.yaml").read_text()))
    schemas = BuiltinSchemas(bundled_versions().kubernetes)

    assert shipped == registry_objects(bundled_versions())
    assert [schemas.check(o) for o in shipped] == [[], [], []]
    assert [(o["kind"], o["metadata"]["namespace"]) for o in shipped] == [
        ("PersistentVolumeClaim", "runway-system"),
        ("Deployment", "runway-system"),
        ("Service", "runway-system"),
    ]
    assert shipped[2]["spec"]["ports"][0]["nodePort"] == 30500


# The model cache on presets, and pipeline parallelism


def test_the_model_cache_on_a_preset_is_refused_with_kaitos_reason() -> None:
    obj = model_deployment(model_id="phi-4", engine="vllm", gpu=1, provider="kaito")
    obj["spec"]["model"]["storage"] = {
        "volumes": [{"name": "c", "purpose": "modelCache", "size": "5Gi"}]
    }

    assert admit(obj, registry=SHIPPED).errors == (
        FieldError(
            "spec.model.storage.volumes",
            Reason.FORBIDDEN,
            "kaito cannot mount a claim into a preset Workspace: KAITO v0.10.0"
            " api/v1beta1/workspace_types.go:87-106 (InferenceSpec) gives a preset only its name,"
            " presetOptions, a config ConfigMap and adapters, and KAITO builds the preset's pods"
            " itself (pkg/workspace/inference); use engine llamacpp (a template Workspace mounts"
            " it) or another provider for the model cache",
        ),
    )


def test_pipeline_parallelism_is_refused_with_kaitos_reason() -> None:
    engine = {"type": "vllm", "args": {"pipeline-parallel-size": "2"}}
    obj = model_deployment(model_id="phi-4", engine=engine, gpu=1, provider="kaito")

    errors = admit(obj, registry=SHIPPED).errors

    assert [(e.path, e.reason) for e in errors] == [
        ("spec.engine.args[pipeline-parallel-size]", Reason.FORBIDDEN)
    ]
    assert errors[0].detail == PIPELINE


def test_no_example_names_an_image_aikit_does_not_publish() -> None:
    texts = [p.read_text() for p in sorted(Path(ROOT / "examples").rglob("*.yaml"))]

    assert [t for t in texts if "aikit/llama-cpp:" in t] == []


@given(
    st.one_of(
        st.text(max_size=80),
        st.builds(lambda tail: "https://huggingface.co/" + tail, st.text(max_size=60)),
        st.builds(lambda path: f"https://huggingface.co/{path}/m.gguf", st.text(max_size=30)),
        st.builds(lambda path: f"{path}/m.gguf", st.text(max_size=30)),
        st.builds(lambda tail: "huggingface://" + tail, st.text(max_size=60)),
    ),
    st.booleans(),
)
def test_any_gguf_reference_is_a_safe_https_url_or_refused(text: str, as_url: bool) -> None:
    """A tenant's model id or ggufUrl reaches a container's arguments and the aikitfile: what
    Runway passes on is an https URL of URL characters whose file is one safe path segment."""
    engine: dict[str, Any] = {"type": "llamacpp"}
    if as_url:
        engine["args"] = {"ggufUrl": text}
    obj = model_deployment(model_id=None if as_url else text, provider="kaito", engine=engine)
    source = gguf(ModelDeployment(obj))

    if source is not None:
        assert re.fullmatch(r"https://[A-Za-z0-9._~:/?#\[\]@!&()*+,;=%-]+", source.ref)
        assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._+-]*\.gguf", source.file)
        assert source.ref.endswith("/" + source.file)
        assert source.served == source.file.removesuffix(".gguf")
