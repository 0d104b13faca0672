"""gpulab.functional: the op library. Every op and composite once, built only from the public
Tensor/Graph op API, with the names it has in every frontend.

`gpulab.torch` (Tensor methods, torch functions, `nn.functional`, `nn` modules), the
`torch.compile` backend (aten overloads) and the ONNX loader (operator types) build their
surfaces from the declarations here (`library.py`: `@declare(...)` on each function), and the
models call these functions directly. So a layer is the same op sequence (and so the same bits)
wherever it comes from, and the one autograd differentiates it through its protocol ops: a
composite needs no gradient rule. A frontend keeps only its argument parsers and its glue.

- `activations`: relu, gelu, elu, softplus, ... (`elementwise`: log1p, expm1);
- `rounding`: trunc, floor, ceil, round half to even (exact for every float32, gradient 0);
- `scans`: running sums (cumsum; ONNX CumSum), a matmul by a triangle of ones;
- `layers`: shapes, linear, normalizations, attention, losses, pooling and convolution helpers;
- `language`: the llama family's RMSNorm, SiLU / SwiGLU, rotary embeddings, cached attention.
"""

from __future__ import annotations

from . import activations, elementwise, rounding, scans  # noqa: F401  (their @declare fill the library)
from .language import (
    cached_attention,
    kv_cache_write,
    rms_norm,
    rope,
    rotate_half,
    swap_pairs,
    swiglu,
)
from .layers import (
    SQRT2,
    adaptive_avg_pool2d,
    attention,
    attention_grad,
    attention_lse,
    avg_pool2d_grad,
    batch_norm,
    batch_norm_eval,
    batch_stats,
    broadcast_to,
    conv2d_im2col,
    diagonal_mask,
    embedding,
    erf,
    flatten,
    gelu_tanh,
    gelu_tanh_grad,
    instance_norm,
    interpolate,
    l2_normalize,
    layer_norm,
    layer_norm_stats,
    linear,
    linear_t,
    masked_fill,
    masked_mean,
    masked_softmax,
    max_pool2d_grad,
    max_pool2d_indices,
    mse_loss,
    nll_loss,
    nll_loss_grad,
    one_hot,
    onnx_expand,
    squeeze,
    triangle,
    unsqueeze,
    window_taps,
)
from .library import ENTRIES, Entry, Onnx, by_name, declare, entries, onnx_names

# every entry of the library is gpulab.functional.<its name>
globals().update({name: entry.fn for name, entry in ENTRIES.items()})
SELU_ALPHA, SELU_SCALE = activations.SELU_ALPHA, activations.SELU_SCALE

__all__ = [
    "ENTRIES",
    "SELU_ALPHA",
    "SELU_SCALE",
    "SQRT2",
    "Entry",
    "Onnx",
    "adaptive_avg_pool2d",
    "attention",
    "attention_grad",
    "attention_lse",
    "avg_pool2d_grad",
    "batch_norm",
    "batch_norm_eval",
    "batch_stats",
    "broadcast_to",
    "by_name",
    "cached_attention",
    "conv2d_im2col",
    "declare",
    "diagonal_mask",
    "embedding",
    "entries",
    "erf",
    "flatten",
    "gelu_tanh",
    "gelu_tanh_grad",
    "instance_norm",
    "interpolate",
    "kv_cache_write",
    "l2_normalize",
    "layer_norm",
    "layer_norm_stats",
    "linear",
    "linear_t",
    "masked_fill",
    "masked_mean",
    "masked_softmax",
    "max_pool2d_grad",
    "max_pool2d_indices",
    "mse_loss",
    "nll_loss",
    "nll_loss_grad",
    "one_hot",
    "onnx_expand",
    "onnx_names",
    "rms_norm",
    "rope",
    "rotate_half",
    "squeeze",
    "swap_pairs",
    "swiglu",
    "triangle",
    "unsqueeze",
    "window_taps",
]
__all__ += list(ENTRIES)
