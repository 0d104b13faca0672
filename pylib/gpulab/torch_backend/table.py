"""THE aten table: each aten overload the backend lowers -> a function building protocol ops.

The overloads an entry of the op library declares (gpulab.functional: `@declare(aten=...)`)
lower to the entry's function (DECLARED, below: the node's arguments as they are, or the
parser of PARSERS where aten's differ); the others are lowered here by hand (`@lowers`) until
they have their entry.

A lowering takes `(cx, *args, **kwargs)`: the aten node's arguments with every FX node replaced
by what it lowered to (a `gpulab.Tensor`, a tuple of them, or a Python value), and `cx` (the
`Graph` as `cx.g`, the node's torch value as `cx.meta`). It builds nodes only through the public
op API and `gpulab.functional`, so what it makes is validated as it is appended and runs on
every backend. An aten op not in `ATEN_TABLE` is "unmapped": the graph holding it runs in eager
PyTorch (or, strict, is refused naming it). `DECOMPOSITIONS` is PyTorch's core-aten table less
the ops lowered here whole (gelu_backward -> gelu_grad keeps erf out of the backward graph).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.fx
from torch._decomp import core_aten_decompositions

from .. import functional as F
from ..errors import GpuLabError
from ..functional.dtypes import torch_dtypes
from ..graph import Graph, Tensor

aten = torch.ops.aten

# torch dtype -> the protocol dtype it is held in (the frontends' one dtype map)
DTYPES = {getattr(torch, d.name): d.held_as for d in torch_dtypes()}


@dataclass
class Ctx:
    """What a lowering sees besides its arguments."""

    g: Graph
    meta: Any = None  # the node's torch value (a FakeTensor, or a tuple of them)
    node: Any = None  # the FX node being lowered

    def wants(self, index: int) -> bool:
        """Whether result `index` of a multi-result op is read (getitem users)."""
        users = getattr(self.node, "users", None)
        if users is None:
            return True
        return any(u.target is operator.getitem and u.args[1] == index for u in users)


Lowering = Callable[..., Any]
# what a lowering raises when it cannot build its nodes: the graph (or partition) then runs in
# eager PyTorch, the error its reason (GpuLabError: the builder's refusal, named)
LOWERING_ERRORS = (
    GpuLabError,
    TypeError,
    ValueError,
    IndexError,
    KeyError,
    AttributeError,
    RuntimeError,
)
ATEN_TABLE: dict[Any, Lowering] = {}
# an entry that lowers only some uses of its op: node -> "" (lowerable) or why not
CONDITIONS: dict[Any, Callable[[torch.fx.Node], str]] = {}


def refusal(node: torch.fx.Node) -> str:
    """Why an FX call cannot be lowered ("" when it can): no table entry, or its condition."""
    if node.target is operator.getitem:  # as lowerable as the call it picks from
        source = node.args[0]
        is_call = isinstance(source, torch.fx.Node) and source.op == "call_function"
        return refusal(source) if is_call else ""
    if node.target not in ATEN_TABLE:
        return "no lowering"
    check = CONDITIONS.get(node.target)
    return check(node) if check else ""


def lowers(*overloads: Any) -> Callable[[Lowering], Lowering]:
    """Register a lowering for aten overloads (one entry each in ATEN_TABLE)."""

    def register(fn: Lowering) -> Lowering:
        for overload in overloads:
            if overload in ATEN_TABLE:
                raise ValueError(f"{overload} is lowered twice")
            ATEN_TABLE[overload] = fn
        return fn

    return register


def protocol_dtype(dtype: torch.dtype) -> str:
    """The protocol dtype a torch dtype travels as, or UNSUPPORTED naming it."""
    if dtype not in DTYPES:
        raise GpuLabError(
            "UNSUPPORTED",
            f"torch dtype {dtype} has no protocol dtype (float32, int64/int32 as int32, bool)",
        )
    return DTYPES[dtype]


def constant(g: Graph, value: Any, dtype: torch.dtype | None, shape: Sequence[int] = ()) -> Tensor:
    """A constant of a torch dtype: float32 as `full`, int32/bool as data."""
    kind = protocol_dtype(dtype or torch.float32)
    shape = [int(n) for n in shape]
    if kind == "float32":
        return g.full(shape, float(value))
    np_dtype = np.int32 if kind == "int32" else np.bool_
    return g.tensor(np.full(shape, value, dtype=np_dtype), dtype=kind)


def _dims(x: Tensor, dims: Any) -> list[int]:
    """aten's dim list (None or [] = every axis) as non-negative axes."""
    if dims is None or (isinstance(dims, (list, tuple)) and not dims):
        return list(range(x.ndim))
    dims = [dims] if isinstance(dims, int) else list(dims)
    return sorted({d % max(x.ndim, 1) for d in dims})


def _reduce(x: Tensor, dims: Any, keepdim: bool, op: str, out: Any = None) -> Tensor:
    """One protocol reduction per axis, the highest axis first (axes keep their numbers).
    sum/mean of bool or int32 (torch counts masks) go through float32, exact below 2^24, and
    come back as the result's dtype (`out`, the node's torch value)."""
    if op in ("sum", "mean") and x.dtype != "float32":
        y = _reduce(x.cast("float32"), dims, keepdim, op)
        kind = protocol_dtype(out.dtype) if out is not None else "float32"
        return y if kind == "float32" else y.cast(kind)
    axes = _dims(x, dims)
    if x.ndim == 0:
        return x
    if len(axes) == x.ndim and not keepdim and op in ("sum", "mean"):
        return x.graph.op(op, a=x)
    for axis in reversed(axes):
        x = x.graph.op(op, a=x, axis=axis, keepdim=keepdim)
    return x


def _promote(cx: Ctx, *xs: Any) -> list[Any]:
    """Tensor operands cast to the result's dtype (torch's type promotion already decided it:
    float32 / int64 mixes are float32)."""
    kind = protocol_dtype(cx.meta.dtype) if isinstance(cx.meta, torch.Tensor) else None
    return [
        x.cast(kind) if isinstance(x, Tensor) and kind and x.dtype != kind and kind != "bool" else x
        for x in xs
    ]


def _int_exact(cx: Ctx, op: Callable[[Any, Any], Tensor], a: Any, b: Any) -> Tensor:
    """op on float32 operands; an int result (a step counter + 1) is computed in float32 and
    cast back: exact below 2^24, the protocol's arithmetic being float32."""
    a, b = _promote(cx, a, b)
    kinds = {x.dtype for x in (a, b) if isinstance(x, Tensor)}
    if kinds == {"int32"}:
        a, b = (x.cast("float32") if isinstance(x, Tensor) else x for x in (a, b))
        return op(a, b).cast("int32")
    return op(a, b)


def _common(a: Any, b: Any) -> list[Any]:
    """Comparison operands in one dtype: float32 if either is, else int32 (a bool mask
    compares as 0/1: the comparisons take float32 and int32)."""
    kinds = {x.dtype for x in (a, b) if isinstance(x, Tensor)}
    if len(kinds) < 2 and "bool" not in kinds:
        return [a, b]
    kind = "float32" if "float32" in kinds else "int32"
    return [x.cast(kind) if isinstance(x, Tensor) and x.dtype != kind else x for x in (a, b)]


# -- elementwise ---------------------------------------------------------------------------------


@lowers(aten.add.Tensor, aten.add.Scalar)
def _add(cx: Ctx, a: Any, b: Any, alpha: Any = 1) -> Tensor:
    return _int_exact(cx, lambda p, q: p + (q if alpha == 1 else q * alpha), a, b)


@lowers(aten.sub.Tensor, aten.sub.Scalar)
def _sub(cx: Ctx, a: Any, b: Any, alpha: Any = 1) -> Tensor:
    return _int_exact(cx, lambda p, q: p - (q if alpha == 1 else q * alpha), a, b)


@lowers(aten.rsub.Scalar, aten.rsub.Tensor)
def _rsub(cx: Ctx, a: Any, b: Any, alpha: Any = 1) -> Tensor:
    return _int_exact(cx, lambda p, q: q - (p if alpha == 1 else p * alpha), a, b)


@lowers(aten.mul.Tensor, aten.mul.Scalar)
def _mul(cx: Ctx, a: Any, b: Any) -> Tensor:
    if isinstance(a, Tensor) and a.dtype == "bool" and isinstance(b, Tensor) and b.dtype == "bool":
        return _logical_and(cx, a, b)
    return _int_exact(cx, lambda p, q: p * q, a, b)


@lowers(aten.div.Tensor, aten.div.Scalar)
def _div(cx: Ctx, a: Any, b: Any) -> Tensor:
    a, b = _promote(cx, a, b)
    return a / b


def _unary(op: str) -> Lowering:
    return lambda cx, a: cx.g.op(op, a=a)


for _name, _overload in (
    ("neg", aten.neg.default),
    ("exp", aten.exp.default),
    ("log", aten.log.default),
    ("sqrt", aten.sqrt.default),
    ("abs", aten.abs.default),
):
    lowers(_overload)(_unary(_name))


@lowers(aten.rsqrt.default)
def _rsqrt(cx: Ctx, a: Tensor) -> Tensor:
    return 1.0 / a.sqrt()


@lowers(aten.reciprocal.default)
def _reciprocal(cx: Ctx, a: Tensor) -> Tensor:
    return 1.0 / a


@lowers(aten.erf.default)
def _erf(cx: Ctx, a: Tensor) -> Tensor:
    return F.erf(a)


@lowers(aten.pow.Tensor_Scalar)
def _pow(cx: Ctx, a: Tensor, exponent: Any) -> Tensor:
    if exponent == 2:
        return a.square()
    if exponent == 1:
        return a
    if exponent == 0.5:
        return a.sqrt()
    if exponent == -1:
        return 1.0 / a
    if float(exponent).is_integer() and 2 < exponent <= 4:
        out = a
        for _ in range(int(exponent) - 1):
            out = out * a
        return out
    return (a.log() * float(exponent)).exp()  # a > 0 only, as the protocol has no pow


@lowers(aten.pow.Scalar)
def _pow_scalar(cx: Ctx, base: Any, exponent: Tensor) -> Tensor:
    return (exponent * math.log(float(base))).exp()


@lowers(aten.maximum.default)
def _maximum(cx: Ctx, a: Tensor, b: Tensor) -> Tensor:
    return a.maximum(b)


@lowers(aten.minimum.default)
def _minimum(cx: Ctx, a: Tensor, b: Tensor) -> Tensor:
    return a.minimum(b)


@lowers(aten.clamp.default)
def _clamp(cx: Ctx, a: Tensor, lo: Any = None, hi: Any = None) -> Tensor:
    return a.clamp(lo, hi)


@lowers(aten.clamp_min.default)
def _clamp_min(cx: Ctx, a: Tensor, lo: Any) -> Tensor:
    return a.clamp(lo, None)


@lowers(aten.clamp_max.default)
def _clamp_max(cx: Ctx, a: Tensor, hi: Any) -> Tensor:
    return a.clamp(None, hi)


# -- comparisons, masks, selection ---------------------------------------------------------------


def _compare(method: str) -> Lowering:
    def compare(cx: Ctx, a: Any, b: Any) -> Tensor:
        a, b = _common(a, b)
        return getattr(a, method)(b)

    return compare


for _method, _ops in (
    ("eq", (aten.eq.Tensor, aten.eq.Scalar)),
    ("ne", (aten.ne.Tensor, aten.ne.Scalar)),
    ("__lt__", (aten.lt.Tensor, aten.lt.Scalar)),
    ("__le__", (aten.le.Tensor, aten.le.Scalar)),
    ("__gt__", (aten.gt.Tensor, aten.gt.Scalar)),
    ("__ge__", (aten.ge.Tensor, aten.ge.Scalar)),
):
    lowers(*_ops)(_compare(_method))


@lowers(aten.bitwise_not.default, aten.logical_not.default)
def _not(cx: Ctx, a: Tensor) -> Tensor:
    if a.dtype != "bool":
        raise GpuLabError("UNSUPPORTED", f"bitwise_not of {a.dtype} (bool only)")
    return a.cast("int32").eq(0)


@lowers(aten.logical_and.default, aten.bitwise_and.Tensor)
def _logical_and(cx: Ctx, a: Tensor, b: Tensor) -> Tensor:
    if a.dtype != "bool" or b.dtype != "bool":
        raise GpuLabError("UNSUPPORTED", f"logical_and of {a.dtype} and {b.dtype} (bool only)")
    return cx.g.where(a, b.cast("int32"), 0).ne(0)  # where's values are float32/int32


@lowers(aten.logical_or.default, aten.bitwise_or.Tensor)
def _logical_or(cx: Ctx, a: Tensor, b: Tensor) -> Tensor:
    if a.dtype != "bool" or b.dtype != "bool":
        raise GpuLabError("UNSUPPORTED", f"logical_or of {a.dtype} and {b.dtype} (bool only)")
    return cx.g.where(a, 1, b.cast("int32")).ne(0)


@lowers(aten.sign.default)
def _sign(cx: Ctx, a: Tensor) -> Tensor:
    """torch.sign: -1, 0 or 1 (0 for NaN and both zeros), as two masks."""
    return (a > 0).cast("float32") - (a < 0).cast("float32")


@lowers(aten.where.self)
def _where(cx: Ctx, cond: Tensor, a: Any, b: Any) -> Tensor:
    a, b = _promote(cx, a, b)
    return cx.g.where(cond, a, b)


@lowers(aten.scalar_tensor.default)
def _scalar_tensor(cx: Ctx, value: Any, dtype: Any = None, **_: Any) -> Tensor:
    return constant(cx.g, value, dtype or torch.float32)


@lowers(aten.full.default)
def _full(cx: Ctx, size: Sequence[int], value: Any, dtype: Any = None, **_: Any) -> Tensor:
    return constant(cx.g, value, dtype or cx.meta.dtype, size)


@lowers(aten.full_like.default)
def _full_like(cx: Ctx, a: Tensor, value: Any, dtype: Any = None, **_: Any) -> Tensor:
    return constant(cx.g, value, dtype or cx.meta.dtype, a.shape)


@lowers(aten.arange.start_step, aten.arange.start, aten.arange.default)
def _arange(cx: Ctx, *bounds: Any, dtype: Any = None, **_: Any) -> Tensor:
    """A constant: the values are known when the graph is lowered (static shapes)."""
    kind = protocol_dtype(dtype or cx.meta.dtype)
    values = np.arange(*bounds, dtype=np.int64 if kind == "int32" else np.float64)
    return cx.g.tensor(values.astype(np.int32 if kind == "int32" else np.float32), dtype=kind)


@lowers(aten._to_copy.default)
def _to_copy(cx: Ctx, a: Tensor, dtype: Any = None, **_: Any) -> Tensor:
    kind = protocol_dtype(dtype) if dtype is not None else a.dtype
    return a if kind == a.dtype else a.cast(kind)


# -- linear algebra ------------------------------------------------------------------------------


@lowers(aten.mm.default, aten.bmm.default)
def _mm(cx: Ctx, a: Tensor, b: Tensor) -> Tensor:
    return a @ b


@lowers(aten.addmm.default)
def _addmm(cx: Ctx, bias: Tensor, a: Tensor, b: Tensor, beta: Any = 1, alpha: Any = 1) -> Tensor:
    y = a @ b
    y = y if alpha == 1 else y * alpha
    return y + (bias if beta == 1 else bias * beta)


# -- reductions and rows -------------------------------------------------------------------------


@lowers(aten.sum.dim_IntList)
def _sum_dims(cx: Ctx, a: Tensor, dims: Any, keepdim: bool = False, dtype: Any = None) -> Tensor:
    return _reduce(a, dims, keepdim, "sum", cx.meta)


@lowers(aten.sum.default)
def _sum(cx: Ctx, a: Tensor, dtype: Any = None) -> Tensor:
    return _reduce(a, None, False, "sum", cx.meta) if a.ndim else a


@lowers(aten.mean.dim)
def _mean_dims(cx: Ctx, a: Tensor, dims: Any, keepdim: bool = False, dtype: Any = None) -> Tensor:
    return _reduce(a, dims, keepdim, "mean", cx.meta)


@lowers(aten.mean.default)
def _mean(cx: Ctx, a: Tensor, dtype: Any = None) -> Tensor:
    return a.mean() if a.ndim else a


@lowers(aten.amax.default)
def _amax(cx: Ctx, a: Tensor, dims: Any = (), keepdim: bool = False) -> Tensor:
    return _reduce(a, dims, keepdim, "reduce_max")


@lowers(aten.amin.default)
def _amin(cx: Ctx, a: Tensor, dims: Any = (), keepdim: bool = False) -> Tensor:
    return _reduce(a, dims, keepdim, "reduce_min")


@lowers(aten.any.dim, aten.any.dims, aten.any.default)
def _any(cx: Ctx, a: Tensor, dims: Any = None, keepdim: bool = False) -> Tensor:
    """Any nonzero: the max of the 0/1 words over the axes."""
    ints = (a.ne(0) if a.dtype != "bool" else a).cast("int32")
    return _reduce(ints, dims, keepdim, "reduce_max").ne(0)


@lowers(aten.all.dim, aten.all.dims, aten.all.default)
def _all(cx: Ctx, a: Tensor, dims: Any = None, keepdim: bool = False) -> Tensor:
    ints = (a.ne(0) if a.dtype != "bool" else a).cast("int32")
    return _reduce(ints, dims, keepdim, "reduce_min").ne(0)


@lowers(aten.argmax.default)
def _argmax(cx: Ctx, a: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    return a.argmax(axis=dim, keepdim=keepdim)


@lowers(aten._softmax.default)
def _softmax(cx: Ctx, a: Tensor, dim: int, half_to_float: bool = False) -> Tensor:
    return a.softmax(axis=dim)


@lowers(aten._log_softmax.default)
def _log_softmax(cx: Ctx, a: Tensor, dim: int, half_to_float: bool = False) -> Tensor:
    return a.log_softmax(axis=dim)


def _no_dropout(node: torch.fx.Node) -> str:
    """Fused attention lowers without dropout (torch's dropout draws from its generator)."""
    dropout = node.args[3] if len(node.args) > 3 else node.kwargs.get("dropout_p", 0.0)
    return "" if not dropout else f"dropout_p={dropout}"


@lowers(aten._scaled_dot_product_flash_attention_for_cpu.default)
def _sdpa(
    cx: Ctx,
    q: Tensor,
    k: Tensor,
    v: Tensor,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    *,
    attn_mask: Any = None,
    scale: Any = None,
) -> tuple[Tensor, Tensor]:
    """(output, logsumexp) of torch's fused CPU attention (functional.attention_lse)."""
    return F.attention_lse(q, k, v, attn_mask, scale, is_causal)


@lowers(aten._scaled_dot_product_flash_attention_for_cpu_backward.default)
def _sdpa_backward(
    cx: Ctx,
    grad: Tensor,
    q: Tensor,
    k: Tensor,
    v: Tensor,
    out: Tensor,
    logsumexp: Tensor,
    dropout_p: float,
    is_causal: bool,
    *,
    attn_mask: Any = None,
    scale: Any = None,
) -> tuple[Tensor, Tensor, Tensor]:
    """(dq, dk, dv), recomputed from q, k, v (functional.attention_grad): the saved output and
    logsumexp are not read, so it holds whoever computed them."""
    return F.attention_grad(q, k, v, grad, attn_mask, scale, is_causal)


def _no_dropout_backward(node: torch.fx.Node) -> str:
    dropout = node.args[6] if len(node.args) > 6 else node.kwargs.get("dropout_p", 0.0)
    return "" if not dropout else f"dropout_p={dropout}"


CONDITIONS[aten._scaled_dot_product_flash_attention_for_cpu.default] = _no_dropout
CONDITIONS[aten._scaled_dot_product_flash_attention_for_cpu_backward.default] = _no_dropout_backward


@lowers(aten.native_layer_norm.default)
def _layer_norm(
    cx: Ctx, a: Tensor, shape: Sequence[int], weight: Any, bias: Any, eps: float
) -> tuple[Tensor, Tensor, Tensor]:
    return F.layer_norm_stats(a, weight, bias, eps, axes=len(shape))


_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


@lowers(aten._native_batch_norm_legit_no_training.default)
def _batch_norm_eval(
    cx: Ctx,
    x: Tensor,
    weight: Any,
    bias: Any,
    running_mean: Tensor,
    running_var: Tensor,
    momentum: float,
    eps: float,
) -> tuple[Tensor]:
    return (F.batch_norm_eval(x, running_mean, running_var, weight, bias, eps),)


@lowers(aten._native_batch_norm_legit_functional.default)
def _batch_norm_train(
    cx: Ctx,
    x: Tensor,
    weight: Any,
    bias: Any,
    running_mean: Tensor,
    running_var: Tensor,
    training: bool,
    momentum: float,
    eps: float,
) -> tuple[Tensor, ...]:
    """(y, mean, rstd, new running mean, new running var) as torch's training batch norm."""
    if not training:
        raise GpuLabError("UNSUPPORTED", "batch norm (functional) with training=False")
    mean, rstd, unbiased = F.batch_stats(x, eps)
    y = F.batch_norm(x, mean, rstd, weight, bias)
    new_mean = running_mean * (1.0 - momentum) + mean * momentum
    new_var = running_var * (1.0 - momentum) + unbiased * momentum
    return y, mean, rstd, new_mean, new_var


def _first_only(node: torch.fx.Node) -> str:
    """Only the first result is read (eval batch norm's other two are empty tensors)."""
    used = all(u.target is operator.getitem and u.args[1] == 0 for u in node.users)
    return "" if used else "its saved statistics are used"


CONDITIONS[aten._native_batch_norm_legit_no_training.default] = _first_only


@lowers(aten.nll_loss_forward.default)
def _nll_loss(
    cx: Ctx, logp: Tensor, target: Tensor, weight: Any, reduction: int, ignore_index: int
) -> tuple[Tensor, Tensor]:
    if weight is not None or logp.ndim != 2:
        raise GpuLabError("UNSUPPORTED", "nll_loss: class weights or inputs other than [N, C]")
    return F.nll_loss(logp, target, _REDUCTIONS[reduction], ignore_index)


@lowers(aten.nll_loss_backward.default)
def _nll_loss_backward(
    cx: Ctx,
    grad: Tensor,
    logp: Tensor,
    target: Tensor,
    weight: Any,
    reduction: int,
    ignore_index: int,
    total: Tensor,
) -> Tensor:
    if weight is not None or logp.ndim != 2:
        raise GpuLabError("UNSUPPORTED", "nll_loss: class weights or inputs other than [N, C]")
    return F.nll_loss_grad(grad, logp, target, total, _REDUCTIONS[reduction], ignore_index)


# -- layout --------------------------------------------------------------------------------------


@lowers(aten.view.default, aten._unsafe_view.default, aten.reshape.default)
def _view(cx: Ctx, a: Tensor, shape: Sequence[int]) -> Tensor:
    shape = [int(n) for n in shape]
    if list(a.shape) == shape:
        return a
    if a.dtype == "bool":  # reshape takes float32/int32: through int32, exact
        return a.cast("int32").reshape(shape).cast("bool")
    return a.reshape(shape)


@lowers(aten.permute.default)
def _permute(cx: Ctx, a: Tensor, dims: Sequence[int]) -> Tensor:
    dims = [d % a.ndim for d in dims]
    return a if dims == sorted(dims) else a.permute(dims)


@lowers(aten.t.default)
def _t(cx: Ctx, a: Tensor) -> Tensor:
    return a if a.ndim < 2 else a.transpose()


@lowers(aten.transpose.int)
def _transpose(cx: Ctx, a: Tensor, d0: int, d1: int) -> Tensor:
    dims = list(range(a.ndim))
    dims[d0], dims[d1] = dims[d1], dims[d0]
    return _permute(cx, a, dims)


@lowers(aten.expand.default)
def _expand(cx: Ctx, a: Tensor, shape: Sequence[int]) -> Tensor:
    lead = len(shape) - a.ndim
    target = [a.shape[i - lead] if n == -1 else int(n) for i, n in enumerate(shape)]
    if a.dtype == "float32" or list(a.shape) == target:
        return F.broadcast_to(a, target)
    # int32/bool: where's broadcast keeps the bits (the protocol's add is float32 only)
    everywhere = cx.g.tensor(np.ones(target, dtype=np.bool_), dtype="bool")
    ints = a.cast("int32") if a.dtype == "bool" else a
    out = cx.g.where(everywhere, ints, ints)
    return out.ne(0) if a.dtype == "bool" else out


@lowers(
    aten.clone.default,
    aten.alias.default,
    aten.detach.default,
    aten.lift_fresh_copy.default,
    aten.contiguous.default,
)
def _identity(cx: Ctx, a: Tensor, **_: Any) -> Tensor:
    return a


@lowers(aten.unsqueeze.default)
def _unsqueeze(cx: Ctx, a: Tensor, dim: int) -> Tensor:
    return _view(cx, a, cx.meta.shape)


@lowers(aten.squeeze.dim, aten.squeeze.dims, aten.squeeze.default)
def _squeeze(cx: Ctx, a: Tensor, dims: Any = None) -> Tensor:
    return _view(cx, a, cx.meta.shape)


@lowers(aten.slice.Tensor)
def _slice(
    cx: Ctx, a: Tensor, dim: int = 0, start: Any = None, end: Any = None, step: int = 1
) -> Tensor:
    key = [slice(None)] * a.ndim
    n = a.shape[dim]
    key[dim] = slice(
        None if start is None else max(min(start, n), -n),
        None if end is None else max(min(end, n), -n),
        step,
    )
    return a[tuple(key)]


@lowers(aten.select.int)
def _select(cx: Ctx, a: Tensor, dim: int, index: int) -> Tensor:
    key: list[Any] = [slice(None)] * a.ndim
    key[dim] = index
    return a[tuple(key)]


@lowers(aten.slice_scatter.default)
def _slice_scatter(
    cx: Ctx, a: Tensor, src: Tensor, dim: int = 0, start: Any = None, end: Any = None, step: int = 1
) -> Tensor:
    key = [slice(None)] * a.ndim
    n = a.shape[dim]
    key[dim] = slice(
        None if start is None else max(min(start, n), -n),
        None if end is None else max(min(end, n), -n),
        step,
    )
    return a.slice_scatter(src, tuple(key))


@lowers(aten.split_with_sizes.default)
def _split_sizes(cx: Ctx, a: Tensor, sizes: Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    out, start = [], 0
    for size in sizes:
        out.append(_slice(cx, a, dim, start, start + size))
        start += size
    return tuple(out)


@lowers(aten.split.Tensor)
def _split(cx: Ctx, a: Tensor, size: int, dim: int = 0) -> tuple[Tensor, ...]:
    n = a.shape[dim]
    return _split_sizes(cx, a, [min(size, n - s) for s in range(0, n, size)], dim)


@lowers(aten.cat.default)
def _cat(cx: Ctx, tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    parts = [t for t in tensors if t.size or t.ndim != 1]  # torch lets empty [0] tensors in
    if len(parts) == 1:
        return parts[0]
    while len(parts) > 8:  # concat takes 2..8 operands: join in groups of 8
        parts = [
            cx.g.concat(parts[i : i + 8], axis=dim) if len(parts[i : i + 8]) > 1 else parts[i]
            for i in range(0, len(parts), 8)
        ]
    return cx.g.concat(parts, axis=dim)


@lowers(aten.index_select.default)
def _index_select(cx: Ctx, a: Tensor, dim: int, idx: Tensor) -> Tensor:
    return a.index_select(dim, idx)


@lowers(aten.gather.default)
def _gather(cx: Ctx, a: Tensor, dim: int, idx: Tensor, sparse_grad: bool = False) -> Tensor:
    return a.gather(dim, idx)


def _one_index(node: torch.fx.Node) -> str:
    """aten.index.Tensor lowers with one index tensor (x[idx], x[:, idx]); more is gather-like
    advanced indexing the table does not do."""
    given = [i for i in node.args[1] if i is not None]
    return "" if len(given) == 1 else f"{len(given)} index tensors (one is lowered)"


@lowers(aten.index.Tensor)
def _index(cx: Ctx, a: Tensor, indices: Sequence[Any]) -> Tensor:
    axis = next(k for k, i in enumerate(indices) if i is not None)
    idx = indices[axis]
    if idx.dtype == "bool":
        raise GpuLabError("UNSUPPORTED", "indexing with a bool mask (a data-dependent shape)")
    flat = idx.reshape([idx.size]) if idx.ndim != 1 else idx
    picked = a.index_select(axis, flat)
    shape = list(a.shape[:axis]) + list(idx.shape) + list(a.shape[axis + 1 :])
    return _view(cx, picked, shape)


CONDITIONS[aten.index.Tensor] = _one_index


def _accumulating_one_index(node: torch.fx.Node) -> str:
    """index_put lowers as index_add: one index tensor, accumulate=True (x[idx]'s backward);
    a plain put's "last write wins" is not a protocol op."""
    accumulate = node.args[3] if len(node.args) > 3 else node.kwargs.get("accumulate", False)
    return _one_index(node) or ("" if accumulate else "accumulate=False")


@lowers(aten.index_put.default)
def _index_put(
    cx: Ctx, a: Tensor, indices: Sequence[Any], values: Tensor, accumulate: bool = False
) -> Tensor:
    axis = next(k for k, i in enumerate(indices) if i is not None)
    idx = indices[axis]
    flat = idx.reshape([idx.size]) if idx.ndim != 1 else idx
    shape = list(a.shape[:axis]) + [flat.size] + list(a.shape[axis + 1 :])
    src = F.broadcast_to(values, list(a.shape[:axis]) + list(idx.shape) + list(a.shape[axis + 1 :]))
    return a.index_add(axis, flat, _view(cx, src, shape))


CONDITIONS[aten.index_put.default] = _accumulating_one_index


@lowers(aten.embedding.default)
def _embedding(cx: Ctx, weight: Tensor, idx: Tensor, *_: Any) -> Tensor:
    return F.embedding(idx, weight)


@lowers(aten.embedding_dense_backward.default)
def _embedding_backward(
    cx: Ctx, grad: Tensor, idx: Tensor, rows: int, padding_idx: int, by_freq: bool
) -> Tensor:
    """The table's gradient: grad's rows added at idx (index_add, the protocol's fixed order);
    rows looked up at padding_idx get none."""
    if by_freq:
        raise GpuLabError("UNSUPPORTED", "embedding backward with scale_grad_by_freq=True")
    width = grad.shape[-1]
    flat_idx = idx.reshape([idx.size]) if idx.ndim != 1 else idx
    flat = grad.reshape([idx.size, width])
    if padding_idx >= 0:
        flat = cx.g.where(F.unsqueeze(flat_idx, -1).ne(padding_idx), flat, 0.0)
    return cx.g.full([rows, width], 0.0).index_add(0, flat_idx, flat)


# -- windows (protocol v6: conv2d, max_pool2d, avg_pool2d) ----------------------------------


@lowers(aten.convolution.default)
def _convolution(
    cx: Ctx,
    x: Tensor,
    w: Tensor,
    bias: Any,
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    transposed: bool,
    output_padding: Sequence[int],
    groups: int,
) -> Tensor:
    if transposed or x.ndim != 4:
        raise GpuLabError("UNSUPPORTED", "convolution: only 2-D, not transposed (conv2d)")
    return x.conv2d(
        w, bias, stride=list(stride), padding=list(padding), dilation=list(dilation), groups=groups
    )


def _plain_conv(node: torch.fx.Node) -> str:
    """convolution_backward lowers for 2-D, not transposed, padding <= the dilated kernel - 1
    (any groups, strides and dilations)."""
    _, _, w, _, _, padding, dilation, transposed, _, _, _ = node.args
    kernel = w.meta["val"].shape[2:] if isinstance(w, torch.fx.Node) else ()
    if transposed or len(kernel) != 2:
        return "only 2-D, not transposed"
    if any(p > (k - 1) * d for p, k, d in zip(padding, kernel, dilation, strict=True)):
        return "padding past the dilated kernel - 1"
    return ""


@lowers(aten.convolution_backward.default)
def _convolution_backward(
    cx: Ctx,
    gy: Tensor,
    x: Tensor,
    w: Tensor,
    bias_sizes: Any,
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    transposed: bool,
    output_padding: Any,
    groups: int,
    mask: Sequence[bool],
) -> tuple[Any, Any, Any]:
    """(grad_input, grad_weight, grad_bias) of conv2d, each a conv2d or a sum:
    grad_weight = conv2d(x as [C/g, g*N, H, W], gy as [M, N, oH, oW], dilation = stride,
    stride = dilation, groups g), its first kH x kW taps; grad_input = conv2d(gy with
    stride - 1 zeros between its taps (index_add), the kernel flipped (index_select) and
    transposed within each group, dilation as the forward's, padding dilated kernel - 1 -
    padding, groups g)."""
    g = groups
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    (sh, sw), (dh, dw) = stride, dilation
    gx = gw = gb = None
    if mask[2]:
        gb = gy.sum(axis=3).sum(axis=2).sum(axis=0)
    if mask[1]:
        xs = x.reshape([n, g, cg, h * wd]).permute([2, 1, 0, 3]).reshape([cg, g * n, h, wd])
        full = xs.conv2d(
            gy.permute([1, 0, 2, 3]),
            padding=list(padding),
            stride=[dh, dw],
            dilation=[sh, sw],
            groups=g,
        )
        gw = full[:, :, :kh, :kw].permute([1, 0, 2, 3])
    if mask[0]:
        up = _spread(cx.g, _spread(cx.g, gy, 2, sh), 3, sw)
        flipped = w.index_select(2, list(range(kh - 1, -1, -1)))
        flipped = flipped.index_select(3, list(range(kw - 1, -1, -1)))
        flipped = (
            flipped.reshape([g, m // g, cg, kh * kw])
            .permute([0, 2, 1, 3])
            .reshape([c, m // g, kh, kw])
        )
        eh, ew = (kh - 1) * dh + 1, (kw - 1) * dw + 1  # the dilated kernel
        ph, pw = eh - 1 - padding[0], ew - 1 - padding[1]
        rh = h - (up.shape[2] + 2 * ph - eh + 1)  # rows the strides never reached
        rw = wd - (up.shape[3] + 2 * pw - ew + 1)
        gx = up.conv2d(flipped, padding=[ph, pw, ph + rh, pw + rw], dilation=[dh, dw], groups=g)
    return gx, gw, gb


def _spread(g: Graph, t: Tensor, axis: int, step: int) -> Tensor:
    """t with step - 1 zeros between its entries along axis (a stride's transpose)."""
    if step == 1:
        return t
    n = t.shape[axis]
    shape = list(t.shape)
    shape[axis] = (n - 1) * step + 1
    return g.full(shape, 0.0).index_add(axis, list(range(0, shape[axis], step)), t)


CONDITIONS[aten.convolution_backward.default] = _plain_conv


@lowers(aten.max_pool2d_with_indices.default)
def _max_pool(
    cx: Ctx,
    x: Tensor,
    kernel: Sequence[int],
    stride: Sequence[int] = (),
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
) -> tuple[Tensor, Tensor]:
    """(values, indices): the protocol's max_pool2d, and its window argmax as torch's flat
    indices (what the backward scatters into), made only when something reads them."""
    stride = list(stride) or list(kernel)
    pads, dil = _two(padding), _two(dilation)
    out = x.max_pool2d(list(kernel), stride, pads, dil, ceil_mode)
    if not cx.wants(1):
        return (out, None)  # type: ignore[return-value]
    idx = F.max_pool2d_indices(x, list(kernel), stride, pads, dil, out.shape[2:])
    return out, idx


@lowers(aten.max_pool2d_with_indices_backward.default)
def _max_pool_backward(
    cx: Ctx,
    dy: Tensor,
    x: Tensor,
    kernel: Any,
    stride: Any,
    padding: Any,
    dilation: Any,
    ceil_mode: bool,
    indices: Tensor,
) -> Tensor:
    return F.max_pool2d_grad(dy, indices, x.shape)


@lowers(aten.avg_pool2d_backward.default)
def _avg_pool_backward(
    cx: Ctx,
    dy: Tensor,
    x: Tensor,
    kernel: Any,
    stride: Any,
    padding: Any,
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: Any,
) -> Tensor:
    if divisor_override is not None:
        raise GpuLabError("UNSUPPORTED", "avg_pool2d backward with divisor_override")
    kernel = _two(kernel)
    return F.avg_pool2d_grad(
        dy, x.shape, kernel, _two(stride) if stride else kernel, _two(padding), count_include_pad
    )


def _two(v: Any) -> list[int]:
    return [v, v] if isinstance(v, int) else list(v) * (2 if len(v) == 1 else 1)


@lowers(aten.avg_pool2d.default)
def _avg_pool(
    cx: Ctx,
    x: Tensor,
    kernel: Sequence[int],
    stride: Sequence[int] = (),
    padding: Any = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: Any = None,
) -> Tensor:
    if divisor_override is not None:
        raise GpuLabError("UNSUPPORTED", "avg_pool2d with divisor_override")
    return x.avg_pool2d(
        list(kernel), list(stride) or None, _two(padding), ceil_mode, count_include_pad
    )


@lowers(aten.constant_pad_nd.default)
def _pad(cx: Ctx, a: Tensor, pad: Sequence[int], value: float = 0.0) -> Tensor:
    widths = [[0, 0] for _ in range(a.ndim)]
    for i in range(len(pad) // 2):  # torch lists the last axis first
        widths[a.ndim - 1 - i] = [int(pad[2 * i]), int(pad[2 * i + 1])]
    return a.pad(widths, value)


# -- the op library's declarations ---------------------------------------------------------------
# Each aten overload an entry of gpulab.functional declares lowers to the entry's function with
# the node's arguments as they are (`generic`), or through the parser below where aten's
# arguments differ from the function's.

PARSERS: dict[Any, Lowering] = {}


def parses(*overloads: Any) -> Callable[[Lowering], Lowering]:
    """Register the parser of declared aten overloads (the declaration is the entry's)."""

    def register(fn: Lowering) -> Lowering:
        for overload in overloads:
            PARSERS[overload] = fn
        return fn

    return register


@parses(aten.elu.default)
def _elu(cx: Ctx, a: Tensor, alpha: Any = 1.0, scale: Any = 1.0, input_scale: Any = 1.0) -> Tensor:
    """aten's elu: F.elu's alpha, and an output scale (F.selu traces to elu(x, alpha, scale)),
    which is the library's selu; an input scale other than 1 is refused."""
    if input_scale != 1:
        raise GpuLabError("UNSUPPORTED", f"elu with input_scale {input_scale}")
    return F.elu(a, alpha) if scale == 1 else F.selu(a, alpha, scale)


def overload(name: str) -> Any:
    """aten's OpOverload for a declared name ("softplus.default")."""
    packet, _, variant = name.partition(".")
    return getattr(getattr(aten, packet), variant)


def generic(fn: Callable[..., Tensor]) -> Lowering:
    """The identity mapping: the aten node's arguments are the function's."""

    def lower(cx: Ctx, *args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    lower.__name__ = fn.__name__
    return lower


def _declared() -> dict[Any, str]:
    """Every declared aten overload lowered (ATEN_TABLE): overload -> its entry's name."""
    made = {}
    for entry in F.entries():
        for name in entry.aten:
            target = overload(name)
            lowers(target)(PARSERS.get(target) or generic(entry.fn))
            made[target] = entry.name
    orphans = [str(p) for p in PARSERS if p not in made]
    if orphans:
        raise ValueError(f"aten parsers of overloads no entry declares: {orphans}")
    return made


DECLARED = _declared()


def _decompositions() -> dict[Any, Callable[..., Any]]:
    """Core aten decompositions, less the ops this table lowers whole."""
    return {op: fn for op, fn in core_aten_decompositions().items() if op not in ATEN_TABLE}


DECOMPOSITIONS = _decompositions()


def name(target: Any) -> str:
    """aten.addmm.default, as explain and the messages write an op."""
    return (
        str(target)
        if isinstance(target, torch._ops.OpOverload)
        else getattr(target, "__name__", str(target))
    )
