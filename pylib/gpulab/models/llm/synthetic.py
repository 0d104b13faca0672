"""Llama-shaped GGUF files with random weights, written by gguf-py's writer (tests, benchmarks).

The tensors carry llama.cpp's names and layouts, and attn_q / attn_k are permuted as llama.cpp's
converter permutes transformers' rows (convert_hf_to_gguf.py LlamaModel.permute), so a file is
what `convert_hf_to_gguf.py` would write for a LlamaForCausalLM holding `hf_weights(...)`. The
vocabulary is a real one: byte-level BPE ("gpt2", SmolLM2's "smollm" pre-tokenizer) or
SentencePiece-style pieces with scores ("llama"), learned by a small BPE trainer from a fixed
text, padded with unused tokens to the vocabulary size asked.

Needs numpy and gguf-py (the test extra): natively only.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .tokenizer import BYTE, BYTE_CHAR, CONTROL, NORMAL, PRE_TOKENIZERS, UNKNOWN, UNUSED

TEXT = (
    "The quick brown fox jumps over the lazy dog. A student opens the page, writes Python in a "
    "notebook cell and runs it on the laptop's GPU: no install, no account. Once upon a time "
    "there was a little language model that lived in a browser tab. It read every token twice "
    "and wrote its answers one word at a time, 1, 2, 3 and 42 of them! The weather today is "
    "cloudy with a chance of rain; tomorrow it will be sunny and warm. Numbers like 3.14159 "
    "and 2718 appear in stories about mathematics, and names like Ada, Alan and Grace appear "
    "in stories about computers. Where does the river go? It flows to the sea, and the sea "
    "gives the rain back to the hills. Zürich, café, naïve and 東京 are words too. "
)
SPECIALS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
SPM_SPECIALS = ("<unk>", "<s>", "</s>")

__all__ = ["ModelSpec", "hf_permute", "write_llama_gguf"]


@dataclass(frozen=True)
class ModelSpec:
    """The shape and types of a synthetic model."""

    n_layer: int = 2
    n_embd: int = 64
    n_head: int = 4
    n_head_kv: int = 2
    n_ff: int = 128
    context_length: int = 256
    vocab_size: int | None = None  # None: the learned vocabulary's size
    weight_type: str = "F32"  # F32, F16, Q8_0, Q4_0, Q4_K, Q6_K: every matrix
    embd_type: str | None = None  # token_embd's type (None: weight_type)
    tied: bool = True
    tokenizer: str = "gpt2"  # gpt2 (byte-level BPE) or llama (SentencePiece-style)
    pre: str = "smollm"
    merges: int = 200
    rope_base: float = 10000.0
    rms_eps: float = 1e-5
    seed: int = 0
    random_blocks: bool = False  # quantized tensors as random blocks (fast; benchmarks)
    # more metadata: (key, value, gguf.GGUFValueType) triples (a tuple: specs are hashable)
    extra: tuple[tuple[str, Any, Any], ...] = ()


def _train_bpe(words: list[tuple[str, ...]], merges: int) -> list[tuple[str, str]]:
    """The `merges` most frequent pair merges of words (ties: the larger pair), BPE's rule."""
    counts = Counter(words)
    out: list[tuple[str, str]] = []
    for _ in range(merges):
        pairs: Counter[tuple[str, str]] = Counter()
        for w, c in counts.items():
            for pair in itertools.pairwise(w):
                pairs[pair] += c
        if not pairs:
            break
        best = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))[0]
        out.append(best)
        merged: Counter[tuple[str, ...]] = Counter()
        for w, c in counts.items():
            merged[_merge(w, best)] += c
        counts = merged
    return out


def _merge(word: tuple[str, ...], pair: tuple[str, str]) -> tuple[str, ...]:
    out, i = [], 0
    while i < len(word):
        if i + 1 < len(word) and (word[i], word[i + 1]) == pair:
            out.append(word[i] + word[i + 1])
            i += 2
        else:
            out.append(word[i])
            i += 1
    return tuple(out)


def gpt2_vocab(spec: ModelSpec) -> dict[str, Any]:
    """tokens, token types and merges of a byte-level BPE learned from TEXT."""
    pieces = PRE_TOKENIZERS[spec.pre](TEXT)
    words = [tuple(BYTE_CHAR[b] for b in p.encode("utf-8")) for p in pieces]
    merges = _train_bpe(words, spec.merges)
    tokens = [*SPECIALS, *(BYTE_CHAR[b] for b in range(256))]
    seen = set(tokens)
    for a, b in merges:
        if a + b not in seen:
            tokens.append(a + b)
            seen.add(a + b)
    types = [CONTROL] * len(SPECIALS) + [NORMAL] * (len(tokens) - len(SPECIALS))
    return {
        "model": "gpt2",
        "tokens": tokens,
        "types": types,
        "merges": [f"{a} {b}" for a, b in merges],
        "bos": 0,
        "eos": 0,
    }


def llama_vocab(spec: ModelSpec) -> dict[str, Any]:
    """tokens, types and scores of SentencePiece-style pieces learned from TEXT."""
    words = [tuple("\u2581" + w) for w in TEXT.split()]
    merges = _train_bpe(words, spec.merges)
    chars = sorted({c for w in words for c in w})
    tokens = [*SPM_SPECIALS, *(f"<0x{b:02X}>" for b in range(256))]
    types = [UNKNOWN, CONTROL, CONTROL] + [BYTE] * 256
    scores = [0.0] * len(tokens)
    for c in chars:
        tokens.append(c)
        types.append(NORMAL)
        scores.append(-1e4)
    seen = set(tokens)
    for rank, (a, b) in enumerate(merges):
        if a + b not in seen:
            tokens.append(a + b)
            types.append(NORMAL)
            scores.append(-float(rank))
            seen.add(a + b)
    return {
        "model": "llama",
        "tokens": tokens,
        "types": types,
        "scores": scores,
        "bos": 1,
        "eos": 2,
        "unk": 0,
    }


def hf_permute(w: Any, n_head: int) -> Any:
    """llama.cpp's converter permutation of transformers' q / k rows (its LlamaModel.permute)."""
    return (
        w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
        .swapaxes(1, 2)
        .reshape(w.shape)
    )


def hf_weights(spec: ModelSpec, vocab_size: int) -> dict[str, Any]:
    """transformers' LlamaForCausalLM state dict (float32 numpy arrays) of random weights:
    linear weights N(0, 1 / fan_in), embeddings N(0, 1), norms 1 + N(0, 0.1)."""
    import numpy as np

    rng = np.random.default_rng(spec.seed)
    d, hd = spec.n_embd, spec.n_embd // spec.n_head
    kv = spec.n_head_kv * hd

    def lin(out_f: int, in_f: int) -> Any:
        return (rng.standard_normal((out_f, in_f)) / np.sqrt(in_f)).astype(np.float32)

    def norm() -> Any:
        return (1 + 0.1 * rng.standard_normal(d)).astype(np.float32)

    w = {"model.embed_tokens.weight": rng.standard_normal((vocab_size, d)).astype(np.float32)}
    for i in range(spec.n_layer):
        p = f"model.layers.{i}."
        w[p + "input_layernorm.weight"] = norm()
        w[p + "self_attn.q_proj.weight"] = lin(spec.n_head * hd, d)
        w[p + "self_attn.k_proj.weight"] = lin(kv, d)
        w[p + "self_attn.v_proj.weight"] = lin(kv, d)
        w[p + "self_attn.o_proj.weight"] = lin(d, spec.n_head * hd)
        w[p + "post_attention_layernorm.weight"] = norm()
        w[p + "mlp.gate_proj.weight"] = lin(spec.n_ff, d)
        w[p + "mlp.up_proj.weight"] = lin(spec.n_ff, d)
        w[p + "mlp.down_proj.weight"] = lin(d, spec.n_ff)
    w["model.norm.weight"] = norm()
    if not spec.tied:
        w["lm_head.weight"] = lin(vocab_size, d)
    return w


GGUF_NAMES = {
    "input_layernorm": "attn_norm",
    "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output",
    "post_attention_layernorm": "ffn_norm",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}


def _gguf_name(hf: str) -> str:
    if hf == "model.embed_tokens.weight":
        return "token_embd.weight"
    if hf == "model.norm.weight":
        return "output_norm.weight"
    if hf == "lm_head.weight":
        return "output.weight"
    rest = hf.removeprefix("model.layers.")
    layer, _, part = rest.partition(".")
    return f"blk.{layer}.{GGUF_NAMES[part.removesuffix('.weight')]}.weight"


def _encoded(array: Any, kind: str, random_blocks: bool, rng: Any) -> tuple[Any, Any]:
    """(data, raw dtype) of a float matrix as gguf-py's writer takes it."""
    import gguf
    import numpy as np

    qtype = gguf.GGMLQuantizationType[kind]
    if kind == "F32":
        return array, None
    if kind == "F16":
        return array.astype(np.float16), None
    n, k = array.shape
    per, nbytes = gguf.GGML_QUANT_SIZES[qtype]
    if random_blocks:  # throughput does not depend on the values: valid blocks, small scales
        raw = rng.integers(0, 256, (n * k // per, nbytes), dtype=np.uint8)
        scale = np.float16(1.0 / 256)
        raw[:, 0:2] = np.frombuffer(scale.tobytes(), np.uint8)
        if kind == "Q6_K":
            raw[:, 208:210] = raw[:, 0:2]
        return raw.reshape(n, -1), qtype
    if kind in ("Q8_0", "Q4_0"):
        return gguf.quants.quantize(array, qtype), qtype
    from gpulab import quant

    raw = np.frombuffer(quant.quantize(array, kind.lower()), np.uint8)
    return raw.reshape(n, -1), qtype


def write_llama_gguf(path: str | Path, spec: ModelSpec = ModelSpec()) -> dict[str, Any]:
    """Write the model to path; returns {"vocab", "hf_weights"} (the transformers state dict,
    its q/k rows unpermuted; quantized tensors' values are their blocks' decode, not these)."""
    import gguf
    import numpy as np

    vocab = gpt2_vocab(spec) if spec.tokenizer == "gpt2" else llama_vocab(spec)
    tokens, types = list(vocab["tokens"]), list(vocab["types"])
    size = spec.vocab_size or len(tokens)
    if size < len(tokens):
        raise ValueError(f"vocab_size {size} is smaller than the learned {len(tokens)} tokens")
    for i in range(len(tokens), size):
        tokens.append(f"<unused{i}>")
        types.append(UNUSED)
    hf = hf_weights(spec, size)
    rng = np.random.default_rng(spec.seed + 1)
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("synthetic")
    w.add_context_length(spec.context_length)
    w.add_embedding_length(spec.n_embd)
    w.add_block_count(spec.n_layer)
    w.add_feed_forward_length(spec.n_ff)
    w.add_head_count(spec.n_head)
    w.add_head_count_kv(spec.n_head_kv)
    w.add_layer_norm_rms_eps(spec.rms_eps)
    w.add_rope_freq_base(spec.rope_base)
    w.add_rope_dimension_count(spec.n_embd // spec.n_head)
    w.add_vocab_size(size)
    w.add_tokenizer_model(vocab["model"])
    if vocab["model"] == "gpt2":
        w.add_tokenizer_pre(spec.pre)
        w.add_token_merges(vocab["merges"])
    else:
        w.add_token_scores(vocab["scores"] + [-1e9] * (size - len(vocab["scores"])))
        w.add_unk_token_id(vocab["unk"])
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_bos_token_id(vocab["bos"])
    w.add_eos_token_id(vocab["eos"])
    w.add_add_bos_token(vocab["model"] == "llama")
    for key, value, vtype in spec.extra:
        w.add_key_value(key, value, vtype)
    for name, array in hf.items():
        gname = _gguf_name(name)
        if ".attn_q." in gname:
            array = hf_permute(array, spec.n_head)
        elif ".attn_k." in gname:
            array = hf_permute(array, spec.n_head_kv)
        if array.ndim == 1:
            w.add_tensor(gname, array)
            continue
        kind = (
            spec.embd_type if gname == "token_embd.weight" and spec.embd_type else spec.weight_type
        )
        data, qtype = _encoded(array, kind, spec.random_blocks, rng)
        if qtype is None:
            w.add_tensor(gname, data)
        else:
            w.add_tensor(gname, data, raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return {"vocab": {**vocab, "tokens": tokens, "types": types}, "hf_weights": hf}
