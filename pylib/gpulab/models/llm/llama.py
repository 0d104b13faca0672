"""The llama architecture as protocol graphs, from gpulab.functional's composites.

As llama.cpp builds LLM_ARCH_LLAMA (and transformers' LlamaForCausalLM computes it): per layer
x += attn(rms_norm(x) * attn_norm), x += ffn(rms_norm(x) * ffn_norm), with attention
softmax(q k^T / sqrt(head_dim), causal) v over grouped key/value heads (query head h reads
key/value head h // (n_head / n_head_kv)), rotary embeddings on q and k, and the SwiGLU
feed-forward down(silu(gate(x)) * up(x)); then rms_norm(x) * output_norm and the output
projection (token_embd's rows when the file ties them).

Rotary pairs: llama.cpp's converter permutes the rows of attn_q / attn_k (convert_hf_to_gguf.py
`LlamaModel.permute`) so that the rotation pairs adjacent values (x0, x1), (x2, x3), ...
(ggml_rope's NORM mode); transformers' weights rotate x_i with x_{i + d/2}. Both are the same
model: the graph here rotates adjacent pairs of the file's rows (functional.rope "adjacent").

Angles: transformers' formula, inv_freq_i = 1 / base^(2i / head_dim) rounded to float32, the
angle f32(position * inv_freq_i) (inv_freq divided by the linear scaling factor, and by
rope_freqs_i when the file has Llama 3's factors), cos and sin in float64 rounded once to float32, tabulated on the host for every
position a graph reads (a constant input; a step picks its row with index_select).

Two graphs: `prompt_logits` (every position of a prompt at once, a causal mask) and `decode_step`
(one token at a position fed per step, the keys and values of every earlier position in carried
caches: gpulab.models.llm.session).
"""

from __future__ import annotations

import array
import math
from dataclasses import dataclass
from typing import Any

from gpulab import functional as F
from gpulab.graph import Graph, Tensor

from .config import Config
from .weights import LlamaWeights, Weight

__all__ = ["Layers", "prompt_logits", "rope_tables"]


def rope_tables(cfg: Config, weights: LlamaWeights, length: int) -> tuple[Any, Any]:
    """cos and signed sin tables [length, head_dim] for positions 0..length-1, adjacent pairs:
    row p holds (cos a_0, cos a_0, cos a_1, cos a_1, ...) and (-sin a_0, sin a_0, ...)."""
    half = cfg.head_dim // 2
    f32 = array.array("f", [0.0])

    def r32(x: float) -> float:
        f32[0] = x
        return f32[0]

    inv = [r32(1.0 / cfg.rope_base ** (2 * i / cfg.head_dim)) for i in range(half)]
    if cfg.rope_scale != 1.0:  # linear scaling, as transformers' "linear" rope type
        inv = [r32(v / cfg.rope_scale) for v in inv]
    if weights.rope_freqs is not None:
        factors = memoryview(weights.rope_freqs.data).cast("B").cast("f")
        inv = [r32(inv[i] / factors[i]) for i in range(half)]
    cos, sin = array.array("f"), array.array("f")
    for p in range(length):
        for i in range(half):
            angle = r32(p * inv[i])
            c, s = math.cos(angle), math.sin(angle)
            cos.extend((c, c))
            sin.extend((-s, s))
    return cos, sin


@dataclass
class Layers:
    """The weights of one graph as its input tensors (made on first use, once per graph)."""

    g: Graph
    weights: LlamaWeights
    cfg: Config

    def __post_init__(self) -> None:
        self._made: dict[str, Tensor] = {}

    def tensor(self, w: Weight) -> Tensor:
        t = self._made.get(w.name)
        if t is None:
            if w.quantized:
                t = self.g.quantized(w.data, w.kind, w.shape)
            else:
                t = self.g.tensor(w.data, shape=w.shape)
            self._made[w.name] = t
        return t

    def linear(self, x: Tensor, w: Weight) -> Tensor:
        """x @ w.T for a weight [out, in]: matmul_q on its blocks, or matmul reading the float
        transpose (the planners read a transpose in place)."""
        t = self.tensor(w)
        return x @ t.T if w.quantized else x @ t.transpose()

    def embed(self, ids: Tensor) -> Tensor:
        """Rows ids (int32 [T]) of token_embd: dequantize_rows on its blocks, else index_select."""
        w = self.weights.token_embd
        table = self.tensor(w)
        return table.dequantize_rows(ids) if w.quantized else F.embedding(ids, table)

    def norm(self, x: Tensor, w: Weight) -> Tensor:
        return F.rms_norm(x, self.tensor(w), self.cfg.rms_eps)

    def feed_forward(self, x: Tensor, i: int) -> Tensor:
        layer = self.weights.layers[i]
        h = self.norm(x, layer.ffn_norm)
        gated = F.swiglu(self.linear(h, layer.ffn_gate), self.linear(h, layer.ffn_up))
        return x + self.linear(gated, layer.ffn_down)

    def qkv(self, x: Tensor, i: int, cos: Tensor, sin: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """q [T, n_head, hd] and k [T, n_head_kv, hd] with their rotary embedding, v
        [T, n_head_kv, hd], from the normed x [T, n_embd]; cos / sin [T, 1, hd]."""
        cfg, layer = self.cfg, self.weights.layers[i]
        t = x.shape[0]
        h = self.norm(x, layer.attn_norm)
        q = self.linear(h, layer.attn_q).reshape([t, cfg.n_head, cfg.head_dim])
        k = self.linear(h, layer.attn_k).reshape([t, cfg.n_head_kv, cfg.head_dim])
        v = self.linear(h, layer.attn_v).reshape([t, cfg.n_head_kv, cfg.head_dim])
        return F.rope(q, cos, sin), F.rope(k, cos, sin), v

    def attention_out(self, x: Tensor, heads: Tensor, i: int) -> Tensor:
        """x plus the output projection of the attention heads [T, n_head * hd]."""
        return x + self.linear(heads, self.weights.layers[i].attn_output)

    def logits(self, x: Tensor) -> Tensor:
        return self.linear(self.norm(x, self.weights.output_norm), self.weights.output)


def causal_mask(cfg: Config, t: int) -> list[bool]:
    """[n_group * T, T] (rows (g, i)): position i attends to j <= i, for every query head of a
    key/value head's group."""
    rows = [[j <= i for j in range(t)] for i in range(t)]
    return [v for _ in range(cfg.n_group) for row in rows for v in row]


def prompt_logits(g: Graph, weights: LlamaWeights, cfg: Config, ids: Tensor) -> Tensor:
    """logits [T, vocab] of every position of a prompt (int32 ids [T]) in one graph."""
    t = ids.shape[0]
    layers = Layers(g, weights, cfg)
    cos_t, sin_t = rope_tables(cfg, weights, t)
    cos = g.tensor(cos_t, shape=[t, 1, cfg.head_dim])
    sin = g.tensor(sin_t, shape=[t, 1, cfg.head_dim])
    mask = g.tensor(causal_mask(cfg, t), shape=[cfg.n_group * t, t], dtype="bool")
    kv, grp, hd = cfg.n_head_kv, cfg.n_group, cfg.head_dim
    x = layers.embed(ids)
    for i in range(cfg.n_layer):
        q, k, v = layers.qkv(x, i, cos, sin)
        q = q.reshape([t, kv, grp, hd]).permute(1, 2, 0, 3).reshape([kv, grp * t, hd])
        keys_t = k.permute(1, 2, 0)  # [kv, hd, T]
        values = v.permute(1, 0, 2)  # [kv, T, hd]
        heads = F.cached_attention(q, keys_t, values, mask)  # [kv, grp * T, hd]
        heads = heads.reshape([kv, grp, t, hd]).permute(2, 0, 1, 3).reshape([t, cfg.n_head * hd])
        x = layers.attention_out(x, heads, i)
        x = layers.feed_forward(x, i)
    return layers.logits(x)
