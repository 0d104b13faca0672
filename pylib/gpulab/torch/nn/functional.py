"""torch.nn.functional of the subset: the functions of the op library's declarations (relu,
gelu, elu, ...: gpulab.torch._library) and the parsers written here (linear, dropout,
cross_entropy, ...) over gpulab.functional's composites."""

from __future__ import annotations

import math
from typing import Any

from ... import functional as GF
from .._dtype import float32, int32, int64
from .._library import functions
from .._random import Generator, pick
from .._refuse import refuse
from .._tape import current
from ..tensor import Tensor, _axis, as_tensor_like, where

DECLARED = functions("functional")
globals().update(DECLARED)

__all__ = [
    "batch_norm",
    "cross_entropy",
    "dropout",
    "embedding",
    "layer_norm",
    "linear",
    "log_softmax",
    "mse_loss",
    "nll_loss",
    "one_hot",
    "scaled_dot_product_attention",
    "softmax",
]
__all__ += list(DECLARED)


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """input @ weight.T + bias (gpulab.functional.linear); a 1-D input is one row, a 1-D
    weight one output feature (its axis dropped), as torch's matmul rules."""
    if weight.ndim == 1:
        out = linear(input, weight.unsqueeze(0), None).squeeze(-1)
        return out if bias is None else out + bias
    if input.ndim == 1:
        return linear(input.unsqueeze(0), weight, bias).squeeze(0)
    node = GF.linear(input._f(), weight._f(), bias._f() if bias is not None else None)
    return Tensor._result(node, float32, input, weight, bias, op="linear")


def softmax(input: Tensor, dim: int | None = None, dtype: Any = None) -> Tensor:
    return input.softmax(-1 if dim is None else dim, dtype=dtype)


def log_softmax(input: Tensor, dim: int | None = None, dtype: Any = None) -> Tensor:
    return input.log_softmax(-1 if dim is None else dim, dtype=dtype)


def dropout(
    input: Tensor,
    p: float = 0.5,
    training: bool = True,
    inplace: bool = False,
    generator: Generator | None = None,
) -> Tensor:
    """Our counter-hash dropout (the protocol's `dropout` op): each call draws the next
    counter of the generator (default: torch.manual_seed's), so masks are the same on every
    backend but differ from torch's RNG (docs/torch.md)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    gen = pick(generator)
    counter = current().draw(gen.next_counter())
    node = input._f().dropout(p, seed=gen.seed, counter=counter)
    return Tensor._result(node, float32, input, op="dropout")


def embedding(
    input: Tensor,
    weight: Tensor,
    padding_idx: int | None = None,
    max_norm: float | None = None,
    **kwargs: Any,
) -> Tensor:
    """Rows of weight picked by integer indices (gpulab.functional.embedding); the rows read
    at `padding_idx` get no gradient (torch's rule: the padding row is never trained)."""
    if max_norm is not None:
        raise refuse("F.embedding(max_norm=...)", "nn.functional")
    idx = as_tensor_like(input)
    if idx.dtype not in (int64, int32):
        raise RuntimeError(
            f"Expected tensor for argument #1 'indices' to have one of the "
            f"following scalar types: Long, Int; but got {idx.dtype.name}"
        )
    node = GF.embedding(idx._n(), weight._f())
    rows = Tensor._result(node, float32, weight, idx, op="embedding")
    if padding_idx is None:
        return rows
    pad = _padding_row(padding_idx, weight.shape[0])
    # the same values; where the index is the padding row, the detached copy (no gradient)
    return where((idx == pad).unsqueeze(-1), rows.detach(), rows) if rows.requires_grad else rows


def _padding_row(padding_idx: int, rows: int) -> int:
    if not -rows <= padding_idx < rows:
        raise AssertionError("Padding_idx must be within num_embeddings")
    return padding_idx % rows


def layer_norm(
    input: Tensor,
    normalized_shape: Any,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Over the trailing axes normalized_shape names (gpulab.functional.layer_norm: their
    elements as one row), weight and bias of that shape."""
    shape = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
    k = len(shape)
    if k == 0 or k > input.ndim or list(input.shape[input.ndim - k :]) != shape:
        raise RuntimeError(
            f"Given normalized_shape={shape}, expected input with shape "
            f"[*, {', '.join(map(str, shape))}], but got input of size{list(input.shape)}"
        )
    node = GF.layer_norm(
        input._f(),
        weight._f() if weight is not None else None,
        bias._f() if bias is not None else None,
        eps,
        axes=k,
    )
    return Tensor._result(node, float32, input, weight, bias, op="layer_norm")


def _reduce(loss: Tensor, reduction: str, what: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction ({what})")


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot of class indices (num_classes must be given: shapes are static)."""
    if num_classes < 0:
        raise refuse(
            "F.one_hot without num_classes (the class count from the data)", "nn.functional"
        )
    idx = as_tensor_like(tensor)
    classes = current().graph.tensor(list(range(num_classes)), dtype="int32")
    node = idx._n().reshape(list(idx.shape) + [1]).eq(classes).cast("int32")
    return Tensor._result(node, int64, op="one_hot")


def cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: Any = None,
    ignore_index: int = -100,
    reduce: Any = None,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """torch's cross_entropy for logits [C], [N, C] or [N, C, d1, ...] with class indices
    (int: weight= and ignore_index= as nll_loss) or class probabilities (float, weight= per
    class; mean over rows, as torch) as target; label_smoothing and the legacy
    size_average/reduce are refused by name."""
    if label_smoothing:
        raise refuse("F.cross_entropy(label_smoothing=...)", "nn.functional")
    _refuse_legacy(size_average, reduce, "cross_entropy")
    t = as_tensor_like(target)
    if not t.dtype.is_floating_point and (
        weight is not None or input.ndim > 2 or ignore_index != -100
    ):
        return nll_loss(
            input.log_softmax(0 if input.ndim == 1 else 1),
            t,
            weight,
            ignore_index=ignore_index,
            reduction=reduction,
        )
    if t.dtype.is_floating_point and (weight is not None or input.ndim > 2):
        axis = 0 if input.ndim == 1 else 1  # the class axis
        terms = input.log_softmax(axis) * t
        if weight is not None:  # per class: [C, 1, ...] against [N, C, d1, ...]
            terms = terms * as_tensor_like(weight).reshape(-1, *([1] * (input.ndim - axis - 1)))
        return _reduce(-terms.sum(axis), reduction, "cross_entropy")
    x = input if input.ndim == 2 else input.unsqueeze(0)
    if t.dtype.is_floating_point:
        probs = t if t.ndim == 2 else t.unsqueeze(0)
    else:
        tt = t if t.ndim == 1 else t.reshape(1)
        probs = one_hot(tt, x.shape[1]).float()
    if reduction == "mean":
        node = x._f().cross_entropy(probs._n())  # one fused op: mean over rows
        return Tensor._result(node, float32, x, probs, op="cross_entropy")
    per_row = -(x.log_softmax(1) * probs).sum(1)
    out = _reduce(per_row, reduction, "cross_entropy")
    return out if input.ndim == 2 or reduction != "none" else out.reshape([])


def _refuse_legacy(size_average: Any, reduce: Any, what: str) -> None:
    if size_average is not None or reduce is not None:
        raise refuse(
            f"F.{what}(size_average=, reduce=) (deprecated: give reduction=)", "nn.functional"
        )


def _classes_as_rows(input: Tensor, target: Tensor) -> tuple[Tensor, Tensor, tuple[int, ...]]:
    """[C] / [N, C] / [N, C, d1, ...] scores as rows [M, C], the targets as [M], and the shape
    of an unreduced loss ([] / [N] / [N, d1, ...])."""
    if input.ndim == 1:
        return input.unsqueeze(0), target.reshape(1), ()
    if input.ndim == 2:
        return input, target.reshape(-1), (input.shape[0],)
    classes_last = input.permute(0, *range(2, input.ndim), 1)
    shape = (input.shape[0], *input.shape[2:])
    return classes_last.reshape(-1, input.shape[1]), target.reshape(-1), shape


def nll_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: Any = None,
    ignore_index: int = -100,
    reduce: Any = None,
    reduction: str = "mean",
) -> Tensor:
    """torch's nll_loss: -weight[t] * input[n, t] for log-probabilities [C], [N, C] or
    [N, C, d1, ...], rows whose target is ignore_index left out; mean divides by the summed
    weights of the rows kept (NaN when none is, as torch). A target outside [0, C) that is not
    ignore_index is the gather's error, never a silent zero."""
    _refuse_legacy(size_average, reduce, "nll_loss")
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction (nll_loss)")
    rows, t, shape = _classes_as_rows(input, as_tensor_like(target))
    kept = t.ne(ignore_index)
    safe = t.masked_fill(~kept, 0)  # ignored rows read class 0, weighted 0
    picked = rows.gather(1, safe.reshape(-1, 1)).reshape(-1)
    w = kept.float()
    if weight is not None:
        w = as_tensor_like(weight).index_select(0, safe) * w
    loss = -(picked * w)
    if reduction == "none":
        return loss.reshape(shape)
    return loss.sum() if reduction == "sum" else loss.sum() / w.sum()


def mse_loss(
    input: Tensor,
    target: Tensor,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
) -> Tensor:
    tgt = as_tensor_like(target)
    if tuple(input.shape) != tuple(tgt.shape):
        tgt = tgt.expand_as(input) if tgt.numel() <= input.numel() else tgt
    node = GF.mse_loss(input._f(), tgt._f(), reduction=reduction)
    return Tensor._result(node, float32, input, tgt, op="mse_loss")


def l1_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    return _reduce((input - target).abs(), reduction, "l1_loss")


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    **kwargs: Any,
) -> Tensor:
    """softmax(q k^T * scale + mask) v (gpulab.functional.attention); is_causal builds the
    lower-triangular bool mask; dropout_p > 0 is refused by name."""
    if dropout_p:
        raise refuse("scaled_dot_product_attention(dropout_p > 0)", "nn.functional")
    mask = attn_mask
    if is_causal:
        n, m = query.shape[-2], key.shape[-2]
        tri = [[j <= i for j in range(m)] for i in range(n)]
        from ..creation import tensor

        mask = tensor(tri)
    node = GF.attention(
        query._f(), key._f(), value._f(), mask._n() if mask is not None else None, scale
    )
    return Tensor._result(node, float32, query, key, value, mask, op="attention")


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
    if p != 2.0:
        raise refuse(f"F.normalize(p={p})", "nn.functional")
    node = GF.l2_normalize(input._f(), axis=_axis(dim, input.ndim), eps=eps)
    return Tensor._result(node, float32, input, op="normalize")


def __getattr__(name: str) -> Any:
    raise refuse(f"torch.nn.functional.{name}", "nn.functional")


# -- convolution and pooling (the protocol v6 ops) ----------------------------------------


def _conv_padding(padding: Any, weight: Tensor, dilation: Any, stride: Any) -> Any:
    """torch's padding argument: an int, a pair, "valid" or "same" (stride 1)."""
    if padding == "valid":
        return 0
    if padding == "same":
        if stride not in (1, (1, 1), [1, 1]):
            raise ValueError("padding='same' is not supported for strided convolutions")
        dh, dw = (dilation, dilation) if isinstance(dilation, int) else dilation
        th, tw = dh * (weight.shape[2] - 1), dw * (weight.shape[3] - 1)
        return (th // 2, tw // 2, th - th // 2, tw - tw // 2)  # top, left, bottom, right
    return padding


def conv2d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
) -> Tensor:
    """The protocol's conv2d ([N, C, H, W] only)."""
    if input.ndim != 4:
        raise refuse(f"F.conv2d of a rank-{input.ndim} input (give [N, C, H, W])", "nn.functional")
    pads = _conv_padding(padding, weight, dilation, stride)
    node = input._f().conv2d(
        weight._f(),
        bias._f() if bias is not None else None,
        stride=stride,
        padding=pads,
        dilation=dilation,
        groups=groups,
    )
    return Tensor._result(node, float32, input, weight, bias, op="conv2d")


def max_pool2d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Tensor:
    x = input._f()
    node = x.max_pool2d(kernel_size, stride or None, padding, dilation, ceil_mode)
    out = Tensor._result(node, float32, input, op="max_pool2d")
    if not return_indices:
        return out
    kernel = _pair_of(kernel_size)
    strides = _pair_of(stride) if stride else kernel
    flat = GF.max_pool2d_indices(
        x, kernel, strides, _pair_of(padding), _pair_of(dilation), node.shape[2:]
    )
    return out, Tensor._result(flat, int64, op="max_pool2d_indices")  # type: ignore[return-value]


def avg_pool2d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Tensor:
    if divisor_override is not None:
        raise refuse("F.avg_pool2d(divisor_override=...)", "nn.functional")
    node = input._f().avg_pool2d(kernel_size, stride or None, padding, ceil_mode, count_include_pad)
    return Tensor._result(node, float32, input, op="avg_pool2d")


def _pair_of(v: Any) -> list[int]:
    return [int(v), int(v)] if isinstance(v, int) else [int(n) for n in v]


def interpolate(
    input: Tensor,
    size: Any = None,
    scale_factor: Any = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
    antialias: bool = False,
) -> Tensor:
    """gpulab.functional.interpolate (nearest, nearest-exact, bilinear) of [N, C, H, W]. A
    scale_factor gives the size floor(H * s), floor(W * s) and, unless recompute_scale_factor,
    the coordinate map (torch's default: a non-integer s maps by 1 / s, not by the sizes)."""
    if antialias:
        raise refuse("F.interpolate(antialias=True)", "nn.functional")
    if (size is None) == (scale_factor is None):
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None and recompute_scale_factor:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    scale = None
    if scale_factor is not None:
        pair = scale_factor if isinstance(scale_factor, (list, tuple)) else [scale_factor] * 2
        scale = [float(f) for f in pair]
        size = [math.floor(float(n) * f) for n, f in zip(input.shape[2:], scale, strict=True)]
        if recompute_scale_factor:
            scale = None
    node = GF.interpolate(input._f(), _pair_of(size), mode, align_corners, scale)
    return Tensor._result(node, float32, input, op="interpolate")


def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:
    """Where each output size divides the input's (gpulab.functional.adaptive_avg_pool2d)."""
    node = GF.adaptive_avg_pool2d(input._f(), _pair_of(output_size))
    return Tensor._result(node, float32, input, op="adaptive_avg_pool2d")


def batch_norm(
    input: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """torch's batch norm over the channel axis 1 of [N, C, ...]: in training the batch's
    statistics (gpulab.functional.batch_stats: biased variance for the output), and the running
    ones updated in place as torch does (mean, and the unbiased variance, by `momentum`); else
    the running statistics (gpulab.functional.batch_norm_eval)."""
    if input.numel() == 0:
        return input.clone()  # torch returns the empty input's shape, whatever its rank
    if input.ndim < 2:
        raise ValueError(f"expected 2D or more input (got {input.ndim}D input)")
    optional = [t._f() if t is not None else None for t in (weight, bias)]
    if not training:
        if running_mean is None or running_var is None:
            raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
        node = GF.batch_norm_eval(input._f(), running_mean._f(), running_var._f(), *optional, eps)
        return Tensor._result(
            node, float32, input, running_mean, running_var, weight, bias, op="batch_norm"
        )
    if input.numel() // input.shape[1] <= 1:
        raise ValueError(
            f"Expected more than 1 value per channel when training, got input size {list(input.shape)}"
        )
    mean, rstd, unbiased = GF.batch_stats(input._f(), eps)
    node = GF.batch_norm(input._f(), mean, rstd, *optional)
    out = Tensor._result(node, float32, input, weight, bias, op="batch_norm")
    if running_mean is not None and running_var is not None:
        batch_mean = Tensor._result(mean, float32, input, op="batch_norm").detach()
        batch_var = Tensor._result(unbiased, float32, input, op="batch_norm").detach()
        running_mean.copy_(running_mean * (1.0 - momentum) + batch_mean * momentum)
        running_var.copy_(running_var * (1.0 - momentum) + batch_var * momentum)
    return out
