"""Choosing the next token on the device, from the counter hash: the same tokens on every lane.

Composed from protocol ops (no sampling op): a decode step's logits [1, vocab] become one int32
token id [1] inside the step's graph, so k steps run in one submission with no read-back between
them.

- greedy (temperature 0): argmax of the logits (the first index on ties).
- temperature T > 0: the Gumbel-max trick, argmax(logits / T - log(-log(u))) with u the counter
  hash's uniforms over the vocabulary (hash_uniform: the same bits on every backend; the counter
  fed per step, derived from the seed and the position) -- an exact sample of softmax(logits / T).
- top_k (1 <= k <= MAX_TOP_K): the k largest scaled logits, found by k rounds of argmax (each
  round masks its winner: the rounds give the candidates in descending order, ties by index);
  tokens below the k-th value are excluded (tokens equal to it stay, as transformers' filter).
- top_p (0 < p <= 1): among the candidates (top_k's, or the MAX_TOP_K largest when top_k is not
  given), the smallest prefix whose softmax mass reaches p, from an exclusive cumulative sum
  (a matmul with a triangular 0/1 matrix); tokens below the last kept value are excluded.
  Tokens outside the MAX_TOP_K most likely are never sampled with top_p (transformers' default
  top_k is 50 for the same reason).

What differs between lanes is only the logits' last bits (matmul and transcendental classes), so
a sampled sequence is the same everywhere unless two candidates tie within those bits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpulab.errors import GpuLabError
from gpulab.graph import Graph, Tensor

MAX_TOP_K = 64

__all__ = ["MAX_TOP_K", "SamplerInputs", "counter_for", "lowbias32", "sample", "sampler_key"]


@dataclass(frozen=True)
class SamplerInputs:
    """The per-step feeds a sampler reads: the counter (uint32 [1]), 1 / temperature (float32
    [1]; 0 for greedy) and top_p (float32 [1]; 1 keeps every candidate)."""

    counter: Tensor
    inv_temp: Tensor
    top_p: Tensor


def lowbias32(x: int) -> int:
    """Chris Wellons' lowbias32 (the counter hash's mixer, docs/protocol.md)."""
    x &= 0xFFFFFFFF
    x ^= x >> 16
    x = (x * 0x7FEB352D) & 0xFFFFFFFF
    x ^= x >> 15
    x = (x * 0x846CA68B) & 0xFFFFFFFF
    x ^= x >> 16
    return x


def counter_for(seed: int, position: int) -> int:
    """The hash counter of the token sampled at `position` for `seed`."""
    return (lowbias32(seed) + position) & 0xFFFFFFFF


def sampler_key(temperature: float, top_k: int | None, top_p: float | None) -> tuple:
    """Which sampler graph a request needs: ("basic",) for greedy and plain temperature,
    ("top", k) for top-k and top-p (k the candidates). Refuses bad arguments by name."""
    if not isinstance(temperature, (int, float)) or not temperature >= 0:
        raise GpuLabError("VALIDATION", f"temperature must be >= 0, got {temperature!r}")
    if top_k is not None and (not isinstance(top_k, int) or isinstance(top_k, bool) or top_k < 1):
        raise GpuLabError("VALIDATION", f"top_k must be a positive int or None, got {top_k!r}")
    if top_k is not None and top_k > MAX_TOP_K:
        raise GpuLabError(
            "LIMIT", f"top_k {top_k} is past the device sampler's limit of {MAX_TOP_K}"
        )
    if top_p is not None and (not isinstance(top_p, (int, float)) or not 0 < top_p <= 1):
        raise GpuLabError("VALIDATION", f"top_p must be in (0, 1] or None, got {top_p!r}")
    if temperature == 0 or (top_k is None and top_p is None):
        return ("basic",)
    return ("top", top_k if top_k is not None else MAX_TOP_K)


def _gumbel(g: Graph, counter: Tensor, vocab: int) -> Tensor:
    """-log(-log(u)), u the counter hash's uniforms [1, vocab] (u = 0 gives -inf: never drawn)."""
    u = g.rand([1, vocab], seed=0, counter=counter)
    return -((-(u.log())).log())


def _top_threshold(g: Graph, z: Tensor, k: int, top_p: Tensor) -> Tensor:
    """The smallest scaled logit kept [1, 1]: the k-th largest, raised to the last value of the
    top_p prefix among those k."""
    vocab = z.shape[1]
    iota = g.tensor(list(range(vocab)), shape=[1, vocab], dtype="int32")
    work, values = z, []
    for r in range(k):
        best = work.argmax(axis=1)  # [1]
        values.append(work.gather(1, best.reshape([1, 1])))  # [1, 1]
        if r < k - 1:
            work = g.where(iota.eq(best.reshape([1, 1])), -math.inf, work)
    cand = values
    while len(cand) > 1:  # concat takes 2..8 operands
        cand = [
            g.concat(cand[i : i + 8], axis=1) if len(cand[i : i + 8]) > 1 else cand[i]
            for i in range(0, len(cand), 8)
        ]
    vals = cand[0]  # [1, k], descending
    if k == 1:
        return vals
    probs = vals.softmax(axis=-1)
    before = g.tensor([1.0 if j < r else 0.0 for j in range(k) for r in range(k)], shape=[k, k])
    mass_before = probs @ before  # [1, k]: the mass of the candidates ahead of each
    keep = mass_before < top_p.reshape([1, 1])
    last_kept = g.where(keep, vals, math.inf).min(axis=1, keepdim=True)  # [1, 1]
    return last_kept.maximum(values[k - 1])


def sample(g: Graph, logits: Tensor, key: tuple, inputs: SamplerInputs) -> Tensor:
    """The next token id, int32 [1], of logits [1, vocab] by the sampler `key`."""
    vocab = logits.shape[1]
    greedy = logits.argmax(axis=1)
    z = logits * inputs.inv_temp.reshape([1, 1])
    noisy = z + _gumbel(g, inputs.counter, vocab)
    if key[0] == "top":
        floor = _top_threshold(g, z, key[1], inputs.top_p)
        noisy = g.where(z >= floor, noisy, -math.inf)
    drawn = noisy.argmax(axis=1)
    return g.where(inputs.inv_temp.eq(0.0), greedy, drawn)
