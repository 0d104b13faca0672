"""transformers' LlamaForCausalLM holding a GGUF file's values: the oracle the tests (native
and in the page) compare `gpulab.models.llm` with. Needs torch and transformers (the `test`
extra); imported only by tests.

The file is read with gguf-py and dequantized with `gguf.quants.dequantize` (the blocks' own
values); the q/k rows llama.cpp's converter permuted are returned to transformers' order; the
model runs in float32 on the CPU.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gguf
import numpy as np

from . import synthetic

__all__ = ["greedy_reference", "reference_logits", "reference_model"]


def reference_model(path: str | Path) -> Any:
    """transformers' LlamaForCausalLM holding the file's values (gguf-py's decode), q/k rows
    returned to transformers' order."""
    import torch
    import transformers

    reader = gguf.GGUFReader(str(path))
    meta = {k: f.contents() for k, f in reader.fields.items() if not k.startswith("GGUF.")}
    n_head, n_kv = meta["llama.attention.head_count"], meta["llama.attention.head_count_kv"]
    d = meta["llama.embedding_length"]
    names = {v: k for k, v in synthetic.GGUF_NAMES.items()}
    state = {}
    for t in reader.tensors:
        values = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        values = values.reshape([int(x) for x in reversed(t.shape)])
        if ".attn_q." in t.name or ".attn_k." in t.name:
            heads = n_head if ".attn_q." in t.name else n_kv
            half = values.shape[0] // heads // 2
            values = values.reshape(heads, half, 2, -1).swapaxes(1, 2).reshape(values.shape)
        if t.name == "token_embd.weight":
            key = "model.embed_tokens.weight"
        elif t.name == "output_norm.weight":
            key = "model.norm.weight"
        elif t.name == "output.weight":
            key = "lm_head.weight"
        else:
            _, layer, part, _ = t.name.split(".")
            key = f"model.layers.{layer}.{names[part]}.weight"
        state[key] = torch.from_numpy(values.copy())
    vocab = state["model.embed_tokens.weight"].shape[0]
    config = transformers.LlamaConfig(
        vocab_size=vocab,
        hidden_size=d,
        intermediate_size=meta["llama.feed_forward_length"],
        num_hidden_layers=meta["llama.block_count"],
        num_attention_heads=n_head,
        num_key_value_heads=n_kv,
        max_position_embeddings=meta["llama.context_length"],
        rms_norm_eps=meta["llama.attention.layer_norm_rms_epsilon"],
        rope_theta=meta["llama.rope.freq_base"],
        tie_word_embeddings="lm_head.weight" not in state,
        attention_bias=False,
        mlp_bias=False,
    )
    model = transformers.LlamaForCausalLM(config).eval()
    missing, unexpected = model.load_state_dict(state, strict=False)
    if unexpected or not set(missing) <= {"lm_head.weight"}:
        raise AssertionError(f"state dict: missing {missing}, unexpected {unexpected}")
    return model


def reference_logits(model: Any, ids: list[int]) -> np.ndarray:
    """The model's logits [len(ids), vocab] for a prompt."""
    import torch

    with torch.no_grad():
        return model(torch.tensor([ids])).logits[0].numpy()


def greedy_reference(model: Any, ids: list[int], n: int) -> tuple[list[int], list[float]]:
    """transformers' greedy tokens and, at each step, its top-two margin."""
    import torch

    tokens, margins = list(ids), []
    with torch.no_grad():
        for _ in range(n):
            logits = model(torch.tensor([tokens])).logits[0, -1]
            top = torch.topk(logits, 2).values
            margins.append(float(top[0] - top[1]))
            tokens.append(int(torch.argmax(logits)))
    return tokens[len(ids) :], margins
