"""The decode step graph: one token at a fed position against carried key/value caches."""

from __future__ import annotations

from dataclasses import dataclass

from gpulab import functional as F
from gpulab.graph import Graph, Tensor

from .config import Config
from .llama import Layers, rope_tables
from .sampling import SamplerInputs, sample
from .weights import LlamaWeights

__all__ = ["DecodeGraph", "decode_graph"]


@dataclass
class DecodeGraph:
    """A step graph and what Graph.prepare needs: feeds, carry, and the read-back `out`."""

    graph: Graph
    feeds: list[Tensor]
    carry: dict[Tensor, Tensor]
    out: Tensor


def decode_graph(
    weights: LlamaWeights, cfg: Config, capacity: int, chunk: int, key: tuple
) -> DecodeGraph:
    """One decode step over a cache of `capacity` positions, writing its token into slot
    `slot` of an out buffer of `chunk` tokens; sampler `key` (sampling.sampler_key)."""
    g = Graph()
    tok = g.input([1], name="tok", dtype="int32")  # the prompt's token, or -1: the carried one
    pos = g.input([1], name="pos", dtype="int32")
    slot = g.input([1], name="slot", dtype="int32")  # -1: keep no token
    inputs = SamplerInputs(
        counter=g.input([1], name="counter", dtype="uint32"),
        inv_temp=g.input([1], name="inv_temp"),
        top_p=g.input([1], name="top_p"),
    )
    last = g.tensor([0], dtype="int32")
    out = g.tensor([0] * chunk, dtype="int32")
    kv, grp, hd = cfg.n_head_kv, cfg.n_group, cfg.head_dim
    layers = Layers(g, weights, cfg)
    cos_t, sin_t = rope_tables(cfg, weights, capacity)
    cos = g.tensor(cos_t, shape=[capacity, hd]).index_select(0, pos).reshape([1, 1, hd])
    sin = g.tensor(sin_t, shape=[capacity, hd]).index_select(0, pos).reshape([1, 1, hd])
    positions = list(range(capacity))
    key_at = g.tensor(positions, shape=[1, 1, capacity], dtype="int32").eq(pos)
    value_at = g.tensor(positions, shape=[1, capacity, 1], dtype="int32").eq(pos)
    seen = g.tensor(positions, shape=[1, 1, capacity], dtype="int32") <= pos
    token = g.where(tok >= 0, tok, last)
    x = layers.embed(token)  # [1, n_embd]
    carry: dict[Tensor, Tensor] = {}
    zeros_k = [0.0] * (kv * hd * capacity)
    for i in range(cfg.n_layer):
        keys_in = g.tensor(zeros_k, shape=[kv, hd, capacity])
        values_in = g.tensor(zeros_k, shape=[kv, capacity, hd])
        q, k, v = layers.qkv(x, i, cos, sin)
        keys = F.kv_cache_write(keys_in, k.reshape([kv, hd, 1]), key_at)
        values = F.kv_cache_write(values_in, v.reshape([kv, 1, hd]), value_at)
        heads = F.cached_attention(q.reshape([kv, grp, hd]), keys, values, seen)
        x = layers.attention_out(x, heads.reshape([1, cfg.n_head * hd]), i)
        x = layers.feed_forward(x, i)
        carry[keys_in] = keys
        carry[values_in] = values
    token_next = sample(g, layers.logits(x), key, inputs)
    slots = g.tensor(list(range(chunk)), dtype="int32")
    out_next = g.where(slots.eq(slot), token_next, out)
    carry[last] = token_next
    carry[out] = out_next
    feeds = [tok, pos, slot, inputs.counter, inputs.inv_temp, inputs.top_p]
    return DecodeGraph(g, feeds, carry, out_next)
