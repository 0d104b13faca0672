"""The llama family's composites (gpulab.models.llm): RMSNorm, SiLU / SwiGLU, rotary embeddings
and attention against key/value caches, from the public Tensor/Graph op API."""

from __future__ import annotations

import math

from ..errors import GpuLabError
from ..graph import Tensor
from .library import declare


def rms_norm(x: Tensor, weight: Tensor | None = None, eps: float = 1e-6, axes: int = 1) -> Tensor:
    """x / sqrt(mean(x^2) + eps) over the last `axes` axes, times weight (transformers'
    LlamaRMSNorm, llama.cpp's rms_norm, ONNX's RMSNormalization)."""
    shape = list(x.shape)
    if axes == 1:
        flat = x
    else:
        flat = x.reshape(shape[: len(shape) - axes] + [math.prod(shape[len(shape) - axes :])])
    y = flat / ((flat * flat).mean(axis=-1, keepdim=True) + eps).sqrt()
    y = y.reshape(shape) if axes != 1 else y
    return y * weight if weight is not None else y


@declare(functional="silu", nn="SiLU", inplace=True, aten="silu.default")
def silu(x: Tensor) -> Tensor:
    """x * sigmoid(x) (torch.nn.functional.silu)."""
    return x * x.sigmoid()


def swiglu(gate: Tensor, up: Tensor) -> Tensor:
    """silu(gate) * up: the llama feed-forward's gated unit."""
    return silu(gate) * up


def swap_pairs(x: Tensor) -> Tensor:
    """x with each adjacent pair of its last axis swapped: (x1, x0, x3, x2, ...) (a strided
    slice, exact)."""
    shape = list(x.shape)
    pairs = x.reshape(shape[:-1] + [shape[-1] // 2, 2])
    slices = [[None, None, 1]] * (len(shape)) + [[None, None, -1]]
    return x.graph.op("slice", a=pairs, slices=slices).reshape(shape)


def rotate_half(x: Tensor) -> Tensor:
    """(-x2, x1) of the last axis split in halves (transformers' rotate_half)."""
    shape = list(x.shape)
    half = shape[-1] // 2
    whole = [[None, None, 1]] * (len(shape) - 1)
    x1 = x.graph.op("slice", a=x, slices=[*whole, [0, half, 1]])
    x2 = x.graph.op("slice", a=x, slices=[*whole, [half, None, 1]])
    return x.graph.concat([-x2, x1], axis=len(shape) - 1)


def rope(x: Tensor, cos: Tensor, sin: Tensor, pairs: str = "adjacent") -> Tensor:
    """Rotary position embedding of x [..., head_dim] by angle tables broadcast against it:
    x * cos + partner(x) * sin. `pairs` "adjacent" rotates (x0, x1), (x2, x3), ... (llama.cpp's
    rope for the llama architecture, whose converter permutes q/k rows so): cos holds each
    pair's cosine twice and sin (-sin, +sin) per pair; "halves" rotates x_i with x_{i+d/2}
    (transformers' rotate_half): cos and sin hold the d/2 values twice. The products and the
    sum round as x0 cos - x1 sin does."""
    if pairs == "adjacent":
        partner = swap_pairs(x)
    elif pairs == "halves":
        partner = rotate_half(x)
    else:
        raise GpuLabError("VALIDATION", f"rope pairs must be adjacent or halves, got {pairs!r}")
    return x * cos + partner * sin


def cached_attention(
    q: Tensor,
    keys_t: Tensor,
    values: Tensor,
    mask: Tensor | None = None,
    scale: float | None = None,
) -> Tensor:
    """softmax(q @ keys_t * scale, where mask) @ values with the keys held transposed, as a KV
    cache keeps them ([..., head_dim, T]: no transpose per step). Grouped-query attention puts
    a key/value head's query heads in q's rows: q [Hkv, G * Tq, hd], keys_t [Hkv, hd, Tk],
    values [Hkv, Tk, hd] -> [Hkv, G * Tq, hd]. mask: bool, True = attend (broadcast)."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = (q @ keys_t) * scale
    if mask is not None:
        scores = scores.graph.where(mask, scores, -math.inf)
    return scores.softmax(axis=-1) @ values


def kv_cache_write(cache: Tensor, new: Tensor, at: Tensor) -> Tensor:
    """The cache with `new` written where the bool `at` is true (a one-hot of the step's
    position along the cache's time axis, broadcast): where(at, new, cache), exact. A prepared
    session carries the result into the next step."""
    return cache.graph.where(at, new, cache)
