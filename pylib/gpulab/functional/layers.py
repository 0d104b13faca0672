"""Composite layers as protocol graphs, built only from the public Tensor/Graph op API.

One source for every frontend: `gpulab.torch` (its `nn.functional`), the `torch.compile` backend,
the ONNX loader and the models (MiniLM) call these, so a layer is the same op sequence (and so
the same bits) wherever it comes from, and autograd differentiates it through its protocol ops.
Frontends add their composites here (one section each, below) rather than writing them twice.
"""

from __future__ import annotations

import array
import math
import struct
from collections.abc import Sequence

from ..errors import GpuLabError
from ..graph import Graph, Tensor

# -- shapes ------------------------------------------------------------------------------------


def _axis(t: Tensor, axis: int) -> int:
    """A non-negative axis of t, or VALIDATION naming it."""
    if not -t.ndim <= axis < t.ndim:
        raise GpuLabError("VALIDATION", f"axis {axis} is out of range for shape {list(t.shape)}")
    return axis % t.ndim


def unsqueeze(t: Tensor, axis: int) -> Tensor:
    """A new axis of size 1 at `axis` (negative counts from the end of the result)."""
    if not -(t.ndim + 1) <= axis <= t.ndim:
        raise GpuLabError(
            "VALIDATION", f"unsqueeze axis {axis} is out of range for shape {list(t.shape)}"
        )
    axis %= t.ndim + 1
    shape = list(t.shape)
    return t.reshape(shape[:axis] + [1] + shape[axis:])


def squeeze(t: Tensor, axis: int | None = None) -> Tensor:
    """Axes of size 1 removed (all of them, or the one named; a named axis of another size is
    kept, as torch does)."""
    shape = list(t.shape)
    if axis is None:
        return t.reshape([n for n in shape if n != 1])
    axis = _axis(t, axis)
    return t.reshape(shape[:axis] + shape[axis + 1 :]) if shape[axis] == 1 else t


def flatten(t: Tensor, start: int = 0, end: int = -1) -> Tensor:
    """Axes start..end (inclusive) merged into one."""
    if t.ndim == 0:
        return t.reshape([1])
    start, end = _axis(t, start), _axis(t, end)
    shape = list(t.shape)
    return t.reshape(shape[:start] + [math.prod(shape[start : end + 1])] + shape[end + 1 :])


def broadcast_to(t: Tensor, shape: Sequence[int]) -> Tensor:
    """t broadcast to `shape` by multiplying with ones (exact: x * 1 is x, NaN stays NaN)."""
    shape = list(shape)
    if list(t.shape) == shape:
        return t
    if t.dtype == "float32":
        return t * t.graph.full(shape, 1.0)
    return t + t.graph.tensor([0] * math.prod(shape), shape=shape, dtype=t.dtype)


# -- layers ------------------------------------------------------------------------------------


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """x @ weight.T + bias, weight [out, in] as in torch.nn.Linear."""
    y = x @ weight.transpose()
    return y + bias if bias is not None else y


def layer_norm(
    x: Tensor,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
    axes: int = 1,
) -> Tensor:
    """torch.nn.functional.layer_norm over the last `axes` axes (their elements as one row):
    (x - mean) * rstd, rstd = 1 / sqrt(biased variance + eps), then the affine weight and bias
    of those axes' shape (layer_norm_stats' y: one formula; the unused mean and rstd nodes are
    pruned from the graph)."""
    return layer_norm_stats(x, weight, bias, eps, axes)[0]


def embedding(idx: Tensor, table: Tensor) -> Tensor:
    """Rows of table [V, D] picked by int32 idx of any shape -> idx.shape + [D]."""
    flat = idx.reshape([idx.size]) if idx.ndim != 1 else idx
    rows = table.index_select(0, flat)
    return rows.reshape(list(idx.shape) + [table.shape[-1]])


def diagonal_mask(g: Graph, rows: int, cols: int, k: int, compare: str) -> Tensor:
    """The bool [rows, cols] mask of `col <compare> row + k` (eq: the k-th diagonal, ge: on and
    above it, le: on and below it), compared on the device from two int32 ranges (no
    rows x cols list on the host; k is clamped to where the comparison still means the same)."""
    k = max(-(rows + cols), min(rows + cols, k))
    shifted = g.tensor(array.array("i", range(k, rows + k)), shape=[rows, 1], dtype="int32")
    col = g.tensor(array.array("i", range(cols)), shape=[1, cols], dtype="int32")
    return g.op(compare, a=col, b=shifted)


def triangle(x: Tensor, k: int = 0, upper: bool = False) -> Tensor:
    """torch's tril (upper=False: keeps col <= row + k) and triu (upper=True: col >= row + k)
    over the last two axes, ONNX's Trilu; the rest zeroed (float32 or int32 x, rank >= 2)."""
    mask = diagonal_mask(x.graph, x.shape[-2], x.shape[-1], k, "ge" if upper else "le")
    return x.graph.where(mask, x, 0.0 if x.dtype == "float32" else 0)


def masked_fill(x: Tensor, mask: Tensor, value: float) -> Tensor:
    """x where mask is false, value where it is true (mask bool, broadcast with x)."""
    return x.graph.where(mask, value, x)


def attention(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, scale: float | None = None
) -> Tensor:
    """softmax(q @ k^T * scale + mask) @ v over the last two axes (batch axes broadcast).
    mask: bool (True = attend, as torch's scaled_dot_product_attention) or float (added)."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = (q @ k.transpose()) * scale
    if mask is not None:
        scores = (
            scores.graph.where(mask, scores, -math.inf) if mask.dtype == "bool" else scores + mask
        )
    return scores.softmax(axis=-1) @ v


def causal_mask(g: Graph, rows: int, cols: int) -> Tensor:
    """torch's is_causal mask: bool [rows, cols], row i attends columns j <= i (top-left)."""
    return g.tensor([[j <= i for j in range(cols)] for i in range(rows)], dtype="bool")


def _attention_probs(
    q: Tensor, k: Tensor, mask: Tensor | None, scale: float | None, causal: bool
) -> tuple[Tensor, Tensor, Tensor | None]:
    """(probabilities, masked scaled scores, the rows every key is masked from or None):
    softmax of q @ k^T * scale + mask, a row masked everywhere all 0 (torch's fused kernels
    give such a row 0 output and 0 gradient, not softmax's NaN)."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = (q @ k.transpose()) * scale
    masks = [causal_mask(q.graph, q.shape[-2], k.shape[-2])] if causal else []
    return masked_softmax(scores, masks + ([mask] if mask is not None else []))


def masked_softmax(scores: Tensor, masks: Sequence[Tensor]) -> tuple[Tensor, Tensor, Tensor | None]:
    """(probabilities, masked scores, the rows every key is masked from or None): softmax over
    the last axis of scores with each mask applied (bool: False is -inf; float: added), a row
    masked everywhere all 0 (torch's fused attention and ONNX's Attention give such a row 0,
    not softmax's NaN)."""
    g = scores.graph
    for m in masks:
        scores = g.where(m, scores, -math.inf) if m.dtype == "bool" else scores + m
    if not masks:
        return scores.softmax(axis=-1), scores, None
    dead = scores.max(axis=-1, keepdim=True).eq(-math.inf)
    return g.where(dead, 0.0, scores.softmax(axis=-1)), scores, dead


def attention_lse(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    scale: float | None = None,
    causal: bool = False,
) -> tuple[Tensor, Tensor]:
    """torch's fused attention forward (`_scaled_dot_product_flash_attention_for_cpu`):
    (softmax(q @ k^T * scale + mask) @ v, the rows' natural logsumexp of the masked scaled
    scores [..., L]); causal adds torch's is_causal mask; a row masked everywhere gives 0
    output and 0 logsumexp, as torch's kernel does."""
    probs, scores, dead = _attention_probs(q, k, mask, scale, causal)
    top = scores.max(axis=-1, keepdim=True)
    if dead is not None:
        top = q.graph.where(dead, 0.0, top)
    lse = (scores - top).exp().sum(axis=-1, keepdim=True).log() + top
    if dead is not None:
        lse = q.graph.where(dead, 0.0, lse)
    return probs @ v, squeeze(lse, -1)


def attention_grad(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    dout: Tensor,
    mask: Tensor | None = None,
    scale: float | None = None,
    causal: bool = False,
) -> tuple[Tensor, Tensor, Tensor]:
    """(dq, dk, dv) of attention_lse's output, recomputed from q, k, v alone (nothing the
    forward saved is read, so it is right whichever side ran the forward):
    dv = P^T dO, dS = P * (dO V^T - rowsum(P * dO V^T)), dq = dS K * scale, dk = dS^T Q * scale."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    probs, _, _ = _attention_probs(q, k, mask, scale, causal)
    dv = probs.transpose() @ dout
    dp = dout @ v.transpose()
    ds = probs * (dp - (probs * dp).sum(axis=-1, keepdim=True))
    return (ds @ k) * scale, (ds.transpose() @ q) * scale, dv


def l2_normalize(x: Tensor, axis: int = -1, eps: float = 1e-12) -> Tensor:
    """torch.nn.functional.normalize(p=2): x / max(||x||, eps) along axis."""
    norm = (x * x).sum(axis=axis, keepdim=True).sqrt()
    return x / norm.maximum(eps)


# -- losses ------------------------------------------------------------------------------------


def mse_loss(a: Tensor, b: Tensor, reduction: str = "mean") -> Tensor:
    """torch.nn.functional.mse_loss: mean (or sum, or none) of (a - b)^2."""
    d = a - b
    sq = d * d
    if reduction == "none":
        return sq
    if reduction in ("mean", "sum"):
        return sq.mean() if reduction == "mean" else sq.sum()
    raise GpuLabError(
        "VALIDATION", f"mse_loss reduction must be mean, sum or none, got {reduction!r}"
    )


# -- the torch.compile backend's composites (gpulab.torch_backend) ----------------------------
# aten ops that are not one protocol op; every frontend that meets them can share these.

SQRT2 = math.sqrt(2.0)


def erf(x: Tensor) -> Tensor:
    """erf(x) = 2 * Phi(x * sqrt 2) - 1, Phi(u) = gelu(u) / u (gelu is exact-erf in the
    protocol); near 0 (|x| < 1e-3, where that quotient cancels) the series 2x/sqrt(pi) *
    (1 - x^2/3). Absolute error about 1e-7 (a few float32 ulps of 1)."""
    g = x.graph
    xc = x.clamp(-10.0, 10.0)  # erf is +-1 in float32 past |x| > 4; keeps u * Phi finite
    u = xc * SQRT2
    near = xc.abs() < 1e-3
    safe_u = g.where(near, 1.0, u)  # the quotient's branch never divides by zero
    far = u.gelu() / safe_u * 2.0 - 1.0
    series = xc * (2.0 / math.sqrt(math.pi)) * (1.0 - xc * xc * (1.0 / 3.0))
    return g.where(near, series, far)


def gelu_tanh(x: Tensor) -> Tensor:
    """torch's gelu(approximate="tanh"): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    inner = (x + x * x * x * 0.044715) * math.sqrt(2.0 / math.pi)
    return x * 0.5 * (inner.tanh() + 1.0)


def gelu_tanh_grad(x: Tensor, dy: Tensor) -> Tensor:
    """dy * d/dx gelu_tanh(x): 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 * 0.044715 x^2),
    t = tanh(k (x + 0.044715 x^3)), k = sqrt(2/pi)."""
    k = math.sqrt(2.0 / math.pi)
    t = ((x + x * x * x * 0.044715) * k).tanh()
    slope = (1.0 - t * t) * (x * x * (3 * 0.044715) + 1.0) * (x * (0.5 * k))
    return dy * ((t + 1.0) * 0.5 + slope)


def layer_norm_stats(
    x: Tensor, weight: Tensor | None, bias: Tensor | None, eps: float, axes: int = 1
) -> tuple[Tensor, Tensor, Tensor]:
    """aten.native_layer_norm over the last `axes` axes: (y, mean, rstd), mean and rstd with
    those axes kept as 1 (what the backward graph reads)."""
    shape = list(x.shape)
    lead, norm = shape[: len(shape) - axes], shape[len(shape) - axes :]
    flat = x.reshape(lead + [math.prod(norm)]) if axes != 1 else x
    mu = flat.mean(axis=-1, keepdim=True)
    d = flat - mu
    rstd = 1.0 / ((d * d).mean(axis=-1, keepdim=True) + eps).sqrt()
    y = (d * rstd).reshape(shape) if axes != 1 else d * rstd
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    kept = lead + [1] * axes
    return y, mu.reshape(kept), rstd.reshape(kept)


def one_hot(target: Tensor, classes: int) -> Tensor:
    """float32 [..., classes]: 1 where the class is target's (int32) value, else 0."""
    iota = target.graph.tensor(list(range(classes)), dtype="int32")
    return unsqueeze(target, -1).eq(iota).cast("float32")


def nll_loss(
    logp: Tensor, target: Tensor, reduction: str = "mean", ignore_index: int = -100
) -> tuple[Tensor, Tensor]:
    """torch's nll_loss over [N, C] log-probabilities and int32 targets [N] (no class
    weights): (loss, total weight), rows whose target is ignore_index left out."""
    valid = target.ne(ignore_index)
    picked = (logp * one_hot(target, logp.shape[-1])).sum(axis=-1)  # ignored rows: all zeros
    keep = valid.cast("float32")
    total = keep.sum()
    summed = -(picked * keep).sum()
    if reduction == "none":
        return -(picked * keep), total
    return (summed / total if reduction == "mean" else summed), total


def nll_loss_grad(
    grad: Tensor,
    logp: Tensor,
    target: Tensor,
    total: Tensor,
    reduction: str = "mean",
    ignore_index: int = -100,
) -> Tensor:
    """The gradient of nll_loss w.r.t. logp: -grad (/ total for mean) at each row's target."""
    keep = unsqueeze(target.ne(ignore_index).cast("float32"), -1)
    hot = one_hot(target, logp.shape[-1]) * keep
    scale = grad if reduction != "none" else unsqueeze(grad, -1)
    if reduction == "mean":
        scale = scale / total
    return -(hot * scale)


def _per_channel(t: Tensor, ndim: int) -> Tensor:
    """A [C] tensor shaped [1, C, 1, ...] to broadcast over [N, C, ...] of rank ndim."""
    return t.reshape([1, t.shape[0]] + [1] * (ndim - 2))


def batch_norm(
    x: Tensor, mean: Tensor, rstd: Tensor, weight: Tensor | None, bias: Tensor | None
) -> Tensor:
    """(x - mean) * rstd * weight + bias over the channel axis 1 (mean, rstd, weight, bias
    [C])."""
    y = (x - _per_channel(mean, x.ndim)) * _per_channel(rstd, x.ndim)
    if weight is not None:
        y = y * _per_channel(weight, x.ndim)
    return y + _per_channel(bias, x.ndim) if bias is not None else y


def batch_norm_eval(
    x: Tensor,
    mean: Tensor,
    var: Tensor,
    weight: Tensor | None,
    bias: Tensor | None,
    eps: float = 1e-5,
) -> Tensor:
    """Batch norm from running statistics (inference; aten's no-training form, ONNX's
    BatchNormalization): batch_norm with rstd = 1 / sqrt(var + eps)."""
    return batch_norm(x, mean, 1.0 / (var + eps).sqrt(), weight, bias)


def instance_norm(x: Tensor, weight: Tensor, bias: Tensor, eps: float = 1e-5) -> Tensor:
    """Per sample and channel of [N, C, ...]: layer_norm over the spatial axes, then the
    channel's weight and bias ([C])."""
    n, c = x.shape[0], x.shape[1]
    flat = x.reshape([n, c, math.prod(x.shape[2:])])
    y = layer_norm(flat, None, None, eps).reshape(list(x.shape))
    return y * _per_channel(weight, x.ndim) + _per_channel(bias, x.ndim)


def batch_stats(x: Tensor, eps: float) -> tuple[Tensor, Tensor, Tensor]:
    """Per channel (axis 1) of [N, C, ...]: (mean, rstd = 1 / sqrt(biased var + eps), the
    unbiased variance torch keeps in running_var)."""
    axes = [0] + list(range(2, x.ndim))
    count = math.prod(x.shape[a] for a in axes)
    mean = x
    for a in reversed(axes):
        mean = mean.mean(axis=a, keepdim=True)
    d = x - mean
    var = d * d
    for a in reversed(axes):
        var = var.mean(axis=a, keepdim=True)
    mean, var = mean.reshape([x.shape[1]]), var.reshape([x.shape[1]])
    rstd = 1.0 / (var + eps).sqrt()
    return mean, rstd, var * (count / max(count - 1, 1))


def max_pool2d_indices(
    x: Tensor,
    kernel: Sequence[int],
    strides: Sequence[int],
    padding: Sequence[int],
    dilations: Sequence[int],
    out_hw: Sequence[int],
) -> Tensor:
    """torch's max_pool2d indices: for each output of an NCHW x, the flat h * W + w of its
    window's first maximum (argmax over the window's taps, padding -inf so it never wins),
    int32 [N, C, OH, OW]; the integer arithmetic in float32 (exact: H * W < 2^24)."""
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (dh, dw), (oh, ow) = kernel, strides, dilations, out_hw
    top, left = padding[0], padding[1]
    bottom = max(0, (oh - 1) * sh + (kh - 1) * dh + 1 - h - top)
    right = max(0, (ow - 1) * sw + (kw - 1) * dw + 1 - w - left)
    padded = x.pad([[0, 0], [0, 0], [top, bottom], [left, right]], -math.inf)
    cols = [
        t.reshape([n, c, 1, oh * ow])
        for t in window_taps(padded, kernel, strides, dilations, out_hw)
    ]
    while len(cols) > 1:  # concat takes 2..8 operands: groups of 8 keep the taps' order
        cols = [
            x.graph.concat(cols[i : i + 8], axis=2) if len(cols[i : i + 8]) > 1 else cols[i]
            for i in range(0, len(cols), 8)
        ]
    k = cols[0].argmax(axis=2).cast("float32")  # [N, C, OH*OW]: which tap won
    row = (k * (1.0 / kw)).cast("int32").cast("float32")  # floor: k >= 0
    col = k - row * kw
    g = x.graph
    base_h = g.tensor([(p // ow) * sh - top for p in range(oh * ow)])
    base_w = g.tensor([(p % ow) * sw - left for p in range(oh * ow)])
    flat = (base_h + row * dh) * w + base_w + col * dw
    return flat.cast("int32").reshape([n, c, oh, ow])


def max_pool2d_grad(dy: Tensor, indices: Tensor, in_shape: Sequence[int]) -> Tensor:
    """max_pool2d's input gradient: dy added at each output's index (scatter_add, the
    protocol's fixed order), [N, C, H, W]."""
    n, c, h, w = in_shape
    count = indices.shape[2] * indices.shape[3]
    zeros = dy.graph.full([n, c, h * w], 0.0)
    picked = indices.reshape([n, c, count])
    return zeros.scatter_add(2, picked, dy.reshape([n, c, count])).reshape([n, c, h, w])


def avg_pool2d_grad(
    dy: Tensor,
    in_shape: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    padding: Sequence[int],
    count_include_pad: bool,
) -> Tensor:
    """avg_pool2d's input gradient: each output's dy / its divisor added to every tap of its
    window (one index_add pair per tap into the padded input), the padding cropped. The
    divisors are torch's (taps inside the input, or inside the padded input)."""
    import numpy as np

    n, c, h, w = in_shape
    (kh, kw), (sh, sw), (top, left) = kernel, strides, padding[:2]
    oh, ow = dy.shape[2], dy.shape[3]
    hp = max(h + 2 * top, (oh - 1) * sh + kh)
    wp = max(w + 2 * left, (ow - 1) * sw + kw)
    lo_h, hi_h = (-top, h + top) if count_include_pad else (0, h)
    lo_w, hi_w = (-left, w + left) if count_include_pad else (0, w)
    rows = np.arange(oh)[:, None] * sh - top + np.arange(kh)[None, :]
    cols = np.arange(ow)[:, None] * sw - left + np.arange(kw)[None, :]
    count_h = ((rows >= lo_h) & (rows < hi_h)).sum(1)
    count_w = ((cols >= lo_w) & (cols < hi_w)).sum(1)
    divisor = (count_h[:, None] * count_w[None, :]).astype(np.float32)
    share = dy / dy.graph.tensor(divisor)
    g = dy.graph
    grad = g.full([n, c, hp, wp], 0.0)
    for i in range(kh):
        for j in range(kw):
            wide = g.full([n, c, oh, wp], 0.0).index_add(3, [q * sw + j for q in range(ow)], share)
            grad = grad.index_add(2, [p * sh + i for p in range(oh)], wide)
    return grad[:, :, top : top + h, left : left + w]


# -- ONNX's composites (gpulab.onnx) -----------------------------------------------------------


def onnx_expand(t: Tensor, shape: Sequence[int]) -> Tensor:
    """t broadcast to `shape` (NumPy rules; leading axes added) by picking index 0 of each
    size-1 axis n times (index_select): exact at any dtype the op takes, no arithmetic."""
    shape = list(shape)
    if len(shape) < t.ndim:
        raise GpuLabError("VALIDATION", f"cannot expand {list(t.shape)} to {shape}")
    out = t.reshape([1] * (len(shape) - t.ndim) + list(t.shape)) if len(shape) > t.ndim else t
    for axis, (have, want) in enumerate(zip(out.shape, shape)):
        if have == want:
            continue
        if have != 1:
            raise GpuLabError("VALIDATION", f"cannot expand {list(t.shape)} to {shape}")
        out = out.index_select(axis, t.graph.tensor([0] * want, dtype="int32"))
    return out


def window_taps(
    x: Tensor,
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    out_hw: Sequence[int],
) -> list[Tensor]:
    """The kernel's taps of an (already padded) NCHW x: for each (i, j) of the kernel the
    strided slice x[:, :, i*dh :: sh, j*dw :: sw] of the output's size [N, C, OH, OW]."""
    (kh, kw), (sh, sw), (dh, dw), (oh, ow) = kernel, strides, dilations, out_hw
    taps = []
    for i in range(kh):
        for j in range(kw):
            r0, c0 = i * dh, j * dw
            slices = [
                [None, None, 1],
                [None, None, 1],
                [r0, r0 + (oh - 1) * sh + 1, sh],
                [c0, c0 + (ow - 1) * sw + 1, sw],
            ]
            taps.append(x.graph.op("slice", a=x, slices=slices))
    return taps


def conv2d_im2col(
    x: Tensor,
    w: Tensor,
    strides: Sequence[int],
    dilations: Sequence[int],
    out_hw: Sequence[int],
    groups: int = 1,
) -> Tensor:
    """A 2-D convolution of a padded NCHW x by w [M, C/groups, KH, KW] as im2col + matmul:
    the taps joined to [N, G, C/G * KH*KW, OH*OW], then w [G, M/G, C/G * KH*KW] @ that."""
    n, c = x.shape[0], x.shape[1]
    m, cg, kh, kw = w.shape
    oh, ow = out_hw
    taps = window_taps(x, (kh, kw), strides, dilations, out_hw)
    cols = [t.reshape([n, c, 1, oh * ow]) for t in taps]
    while len(cols) > 1:  # concat takes 2..8 operands
        cols = [
            x.graph.concat(cols[i : i + 8], axis=2) if len(cols[i : i + 8]) > 1 else cols[i]
            for i in range(0, len(cols), 8)
        ]
    stacked = cols[0].reshape([n, groups, cg * kh * kw, oh * ow])
    weights = w.reshape([groups, m // groups, cg * kh * kw])
    y = weights @ stacked  # [N, G, M/G, OH*OW]
    return y.reshape([n, m, oh, ow])


# -- MiniLM's composites (sentence embeddings, gpulab.models.minilm) ---------------------------


def linear_t(x: Tensor, weight_t: Tensor, bias: Tensor | None = None) -> Tensor:
    """linear with the weight already transposed, [in, out]: x @ weight_t + bias (a model
    that transposes its weights once on the host saves a transpose node every run)."""
    y = x @ weight_t
    return y + bias if bias is not None else y


def masked_mean(x: Tensor, mask: Tensor, eps: float = 1e-9) -> Tensor:
    """Mean over the token axis of x [..., L, D] counting only the positions where the float
    mask [..., L] is 1: sum(x * mask) / max(sum(mask), eps), sentence-transformers' mean
    pooling (a row of zeros gives zeros, not NaN)."""
    m = unsqueeze(mask, -1)
    total = (x * m).sum(axis=-2)
    return total / m.sum(axis=-2).maximum(eps)


# -- torch's interpolate and adaptive pooling over the v6 window ops ---------------------------

_INTERPOLATE_MODES = {
    # torch mode -> (resize mode, coordinate_transformation_mode, nearest_mode)
    "nearest": ("nearest", "asymmetric", "floor"),
    "nearest-exact": ("nearest", "half_pixel", "round_prefer_ceil"),
    "bilinear": ("linear", "half_pixel", "round_prefer_floor"),
}


def interpolate(
    x: Tensor,
    size: Sequence[int],
    mode: str = "nearest",
    align_corners: bool | None = None,
    scale: Sequence[float] | None = None,
) -> Tensor:
    """torch.nn.functional.interpolate of an NCHW x to `size` (h, w) with mode nearest,
    nearest-exact or bilinear (align_corners as torch); other modes are refused by name.

    `scale`: torch's scale_factor per axis when it is not recomputed (torch's default): the
    coordinate map then steps by float32(1 / scale), not in / out. Where the two steps are the
    same float32 (every integer factor), or align_corners ignores the scale, this is the
    protocol's resize; else the map is torch's own source indices (and float32 weights,
    bilinear) taken with index_select, so it matches torch's kernel where resize cannot."""
    if mode not in _INTERPOLATE_MODES:
        raise GpuLabError(
            "VALIDATION",
            f"interpolate: mode must be one of {', '.join(_INTERPOLATE_MODES)}, got {mode!r}",
        )
    if align_corners is not None and mode != "bilinear":
        raise GpuLabError("VALIDATION", f"interpolate: align_corners is for bilinear, not {mode}")
    steps = [None, None] if scale is None or align_corners else [_step(s) for s in scale]
    ins = (x.shape[2], x.shape[3])
    if any(st is not None and st != _step(None, n, o) for st, n, o in zip(steps, ins, size)):
        return _interpolate_taps(x, size, mode, steps)
    resize_mode, coords, rounding = _INTERPOLATE_MODES[mode]
    if align_corners:
        coords = "align_corners"
    return x.resize(
        size, mode=resize_mode, coordinate_transformation_mode=coords, nearest_mode=rounding
    )


def _f32(v: float) -> float:
    """v rounded to float32 (one rounding of an exact or double result: as float32 math)."""
    return float(struct.unpack("f", struct.pack("f", v))[0])


def _step(scale: float | None, n_in: int = 0, n_out: int = 1) -> float:
    """torch's compute_scales_value<float>: float32(1 / scale) when a scale > 0 is given, else
    float32(in) / out."""
    if scale is not None and scale > 0:
        return _f32(1.0 / scale)
    return _f32(n_in / n_out)


def _source_taps(
    mode: str, n_in: int, n_out: int, step: float | None
) -> list[tuple[int, int, float, float]]:
    """Per output index, torch CPU's (index0, index1, lambda0, lambda1) along one axis
    (UpSample.h: nearest_idx, nearest_exact_idx, compute_source_index_and_lambda), its float
    arithmetic done in float32; nearest modes take index0 with weight 1."""
    st = _step(None, n_in, n_out) if step is None else step
    taps = []
    for o in range(n_out):
        if mode == "nearest":
            if n_out == n_in or n_out == 2 * n_in:
                i = o if n_out == n_in else o >> 1
            else:
                i = min(math.floor(_f32(o * st)), n_in - 1)
            taps.append((i, i, 1.0, 0.0))
        elif mode == "nearest-exact":
            i = min(math.floor(_f32((o + 0.5) * st)), n_in - 1)
            taps.append((i, i, 1.0, 0.0))
        elif n_out == n_in:
            taps.append((o, o, 1.0, 0.0))
        else:
            real = max(_f32(_f32(st * _f32(o + 0.5)) - 0.5), 0.0)
            i0 = min(math.floor(real), n_in - 1)
            lam1 = min(max(_f32(real - i0), 0.0), 1.0)
            taps.append((i0, i0 + (1 if i0 < n_in - 1 else 0), _f32(1.0 - lam1), lam1))
    return taps


def _interpolate_taps(
    x: Tensor, size: Sequence[int], mode: str, steps: Sequence[float | None]
) -> Tensor:
    """interpolate with torch's source indices: per axis (width, then height, as torch's
    h0 * (w0 * x00 + w1 * x01) + h1 * (...)) index_select of the sources, weighted (bilinear)."""
    g = x.graph
    out = x
    for axis, n_out, step in ((3, size[1], steps[1]), (2, size[0], steps[0])):
        taps = _source_taps(mode, x.shape[axis], n_out, step)
        first = out.index_select(axis, [t[0] for t in taps])
        if mode != "bilinear":
            out = first
            continue
        shape = [1, 1, 1, 1]
        shape[axis] = n_out
        w0 = g.tensor([t[2] for t in taps]).reshape(*shape)
        w1 = g.tensor([t[3] for t in taps]).reshape(*shape)
        out = w0 * first + w1 * out.index_select(axis, [t[1] for t in taps])
    return out


def adaptive_avg_pool2d(x: Tensor, output_size: Sequence[int]) -> Tensor:
    """torch's adaptive_avg_pool2d where each output size divides the input's (kernel = stride
    = in / out, as every ResNet-style global pool); other sizes are refused."""
    h, w = x.shape[2], x.shape[3]
    oh, ow = output_size
    if h % oh or w % ow:
        raise GpuLabError(
            "VALIDATION",
            f"adaptive_avg_pool2d: output {list(output_size)} must divide the input's {[h, w]}",
        )
    kernel = (h // oh, w // ow)
    return x.avg_pool2d(kernel, stride=kernel)
