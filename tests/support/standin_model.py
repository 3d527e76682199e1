"""Stand-in weights for the serving tier (tests/serving): a small model of the real model's
architecture, with random weights and a tokenizer trained here, laid out in the Hugging Face cache
under the real model id, so that an engine started with `--model <real id>` and
`HF_HUB_OFFLINE=1` finds it where a download would have put it. Nothing comes from a hub.

`python tests/support/standin_model.py HF_HOME MODEL_ID` runs under a serving virtualenv
(.cache/serving/vllm or .cache/serving/dynamo: tokenizers, safetensors and numpy are there, torch is
not needed). It is deterministic: the same id gives the same bytes, and the snapshot's name is the
hash of its files, so a cached model is reused exactly when nothing about it changed.

Each architecture keeps what the engine's model class reads (the class name, the fused or split
projections, q/k norms, the rotary fraction, tied embeddings) and shrinks the sizes: two layers,
a hidden size of 256, heads of 64 (vLLM's CPU attention refuses a head size below 32), a vocabulary
of 2,048, and the real context length, so the rendered --max-model-len stays as rendered."""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

LAYERS = 2
HIDDEN = 256
HEAD = 64
HEADS = HIDDEN // HEAD  # 4: divisible by the tensor-parallel sizes the examples render (1, 2)
KV_HEADS = 2
INTERMEDIATE = 512
VOCAB = 2048
SPECIAL = ("<|endoftext|>", "<|system|>", "<|user|>", "<|assistant|>")
# A template of the shape chat models ship: each message after its role's token, then the
# assistant's token when a reply is wanted.
CHAT_TEMPLATE = (
    "{% for message in messages %}<|{{ message['role'] }}|>{{ message['content'] }}\n"
    "{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"
)

# The architecture of each model id the examples name, from the model's own config.json: the
# class vLLM and Dynamo load, and the fields in which the architectures differ.
ARCHITECTURES: dict[str, dict[str, Any]] = {
    "Qwen/Qwen3-0.6B": {
        "architectures": ["Qwen3ForCausalLM"],
        "model_type": "qwen3",
        "head_dim": HEAD,
        "max_position_embeddings": 40960,
        "rope_theta": 1000000,
        "tie_word_embeddings": True,
        "attention_bias": False,
    },
    "mistralai/Mistral-7B-Instruct-v0.3": {
        "architectures": ["MistralForCausalLM"],
        "model_type": "mistral",
        "head_dim": HEAD,
        "max_position_embeddings": 32768,
        "rope_theta": 1000000.0,
        "sliding_window": None,
        "tie_word_embeddings": False,
    },
    "microsoft/Phi-4-mini-instruct": {
        "architectures": ["Phi3ForCausalLM"],
        "model_type": "phi3",
        "max_position_embeddings": 131072,
        "original_max_position_embeddings": 131072,
        "partial_rotary_factor": 0.75,
        "rope_theta": 10000.0,
        "tie_word_embeddings": True,
        "sliding_window": 262144,
    },
}


def config(model_id: str) -> dict[str, Any]:
    """The stand-in's config.json."""
    return {
        **ARCHITECTURES[model_id],
        "hidden_size": HIDDEN,
        "intermediate_size": INTERMEDIATE,
        "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS,
        "num_key_value_heads": KV_HEADS,
        "hidden_act": "silu",
        "rms_norm_eps": 1e-6,
        "vocab_size": VOCAB,
        "bos_token_id": 0,
        "eos_token_id": 0,
        "torch_dtype": "bfloat16",
    }


def shapes(model_id: str) -> Iterator[tuple[str, tuple[int, ...]]]:
    """Every tensor the architecture's checkpoint holds, with its shape."""
    arch = ARCHITECTURES[model_id]["model_type"]
    q, kv = HEADS * HEAD, KV_HEADS * HEAD
    yield "model.embed_tokens.weight", (VOCAB, HIDDEN)
    for i in range(LAYERS):
        layer = f"model.layers.{i}"
        yield f"{layer}.input_layernorm.weight", (HIDDEN,)
        yield f"{layer}.post_attention_layernorm.weight", (HIDDEN,)
        yield f"{layer}.self_attn.o_proj.weight", (HIDDEN, q)
        yield f"{layer}.mlp.down_proj.weight", (HIDDEN, INTERMEDIATE)
        if arch == "phi3":  # fused projections (Phi3's checkpoint layout)
            yield f"{layer}.self_attn.qkv_proj.weight", (q + 2 * kv, HIDDEN)
            yield f"{layer}.mlp.gate_up_proj.weight", (2 * INTERMEDIATE, HIDDEN)
            continue
        yield f"{layer}.self_attn.q_proj.weight", (q, HIDDEN)
        yield f"{layer}.self_attn.k_proj.weight", (kv, HIDDEN)
        yield f"{layer}.self_attn.v_proj.weight", (kv, HIDDEN)
        yield f"{layer}.mlp.gate_proj.weight", (INTERMEDIATE, HIDDEN)
        yield f"{layer}.mlp.up_proj.weight", (INTERMEDIATE, HIDDEN)
        if arch == "qwen3":  # per-head RMS norms on q and k
            yield f"{layer}.self_attn.q_norm.weight", (HEAD,)
            yield f"{layer}.self_attn.k_norm.weight", (HEAD,)
    yield "model.norm.weight", (HIDDEN,)
    if not ARCHITECTURES[model_id]["tie_word_embeddings"]:
        yield "lm_head.weight", (VOCAB, HIDDEN)


def corpus() -> list[str]:
    """Deterministic training text for the tokenizer: words spelled from a fixed seed."""
    import numpy as np  # noqa: PLC0415  (the serving virtualenv's)

    rng = np.random.default_rng(7)
    letters = np.array(list("etaoinshrdlucmfwypvbgkqjxz"))
    words = ["".join(rng.choice(letters, size=int(n))) for n in rng.integers(1, 9, size=40000)]
    return [" ".join(words[i : i + 20]) for i in range(0, len(words), 20)]


def files(model_id: str) -> dict[str, bytes]:
    """The snapshot: config, weights, tokenizer."""
    import numpy as np  # noqa: PLC0415
    from safetensors.numpy import save  # noqa: PLC0415
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers  # noqa: PLC0415

    rng = np.random.default_rng(int.from_bytes(hashlib.sha256(model_id.encode()).digest()[:4]))
    tensors = {}
    for name, shape in shapes(model_id):
        if name.endswith("norm.weight"):
            tensors[name] = np.ones(shape, dtype=np.float32)
        else:
            tensors[name] = (rng.standard_normal(shape) * 0.02).astype(np.float32)
    tokenizer = Tokenizer(models.BPE(unk_token=None))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB,
        special_tokens=list(SPECIAL),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(corpus(), trainer=trainer)
    tokenizer_config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": SPECIAL[0],
        "eos_token": SPECIAL[0],
        "pad_token": SPECIAL[0],
        "model_max_length": ARCHITECTURES[model_id]["max_position_embeddings"],
        "chat_template": CHAT_TEMPLATE,
    }
    return {
        "config.json": _json(config(model_id)),
        "generation_config.json": _json({"bos_token_id": 0, "eos_token_id": 0}),
        "model.safetensors": save(tensors, metadata={"format": "pt"}),
        "tokenizer.json": tokenizer.to_str().encode(),
        "tokenizer_config.json": _json(tokenizer_config),
        "special_tokens_map.json": _json({"bos_token": SPECIAL[0], "eos_token": SPECIAL[0]}),
    }


def _json(value: Any) -> bytes:
    return (json.dumps(value, indent=2, sort_keys=True) + "\n").encode()


def write(hf_home: Path, model_id: str) -> Path:
    """The model under HF_HOME/hub in the cache layout huggingface_hub reads offline; returns the
    snapshot folder. An existing snapshot with the same name is kept as it is."""
    content = files(model_id)
    digest = hashlib.sha1()
    for name in sorted(content):
        digest.update(name.encode() + b"\0" + content[name])
    revision = digest.hexdigest()
    repo = hf_home / "hub" / ("models--" + model_id.replace("/", "--"))
    snapshot = repo / "snapshots" / revision
    if not (snapshot / "model.safetensors").exists():
        snapshot.mkdir(parents=True, exist_ok=True)
        for name, data in content.items():
            (snapshot / name).write_bytes(data)
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    (repo / "refs" / "main").write_text(revision)
    return snapshot


if __name__ == "__main__":
    print(write(Path(sys.argv[1]), sys.argv[2]))
