"""KAITO's own admission rules (providers/kaito/rules.py): the whole
answer, failing and passing."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from core.fields.errors import FieldError, Reason
from core.model.kinds import ModelDeployment
from providers.kaito.rules import admission_checks as kaito_checks
from tests.support.builders import model_deployment, shipped_registry


def admission_checks(md: ModelDeployment) -> tuple[list[FieldError], list[str]]:
    """KAITO's checks with the shipped config's context, on a create."""
    return kaito_checks(md, shipped_registry().context("kaito"), None)


REPO = "bartowski/Llama-3.2-1B-Instruct-GGUF"
FILE = f"{REPO}/Llama-3.2-1B-Instruct-Q4_K_M.gguf"


def test_llamacpp_model_id_naming_a_repository_is_refused() -> None:
    md = ModelDeployment(model_deployment(model_id=REPO, engine="llamacpp", provider="kaito"))

    assert admission_checks(md) == (
        [
            FieldError(
                "spec.model.id",
                Reason.INVALID,
                "kaito's llama.cpp template loads one GGUF file"
                " (huggingface://<repo>/<file>.gguf) and"
                " 'bartowski/Llama-3.2-1B-Instruct-GGUF' names no .gguf file: give the file's"
                " path in the repository or set spec.engine.args.ggufUrl",
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
