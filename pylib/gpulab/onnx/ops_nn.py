"""Network ONNX operators: MatMul, Gemm, reductions, ArgMax, Softmax, normalizations, pools."""

from __future__ import annotations

import math

from .. import functional as F
from ..graph import Tensor
from .ctx import NodeCtx, Op
from .limits import LIMITS
from .ops_math import f32
from .ops_shape import _axis
from .values import Value, int_range

RANK = LIMITS["max_rank"]

# -- matrix products --------------------------------------------------------------------------


def _matmul(cx: NodeCtx) -> list[Value]:
    a, b = cx.t(0), cx.t(1)
    if a.dtype != "float32" or b.dtype != "float32":
        raise cx.fail(f"inputs of type {a.dtype}, {b.dtype} (float only)")
    squeeze = []
    if a.ndim == 1:
        a = a.reshape([1, a.shape[0]])
        squeeze.append(-2)
    if b.ndim == 1:
        b = b.reshape([b.shape[0], 1])
        squeeze.append(-1)
    y = a @ b
    cx.macs += y.size * a.shape[-1]
    if squeeze:
        shape = list(y.shape)
        for ax in sorted(squeeze):
            shape.pop(len(shape) + ax)
        y = y.reshape(shape)
    return [y]


def _gemm(cx: NodeCtx) -> list[Value]:
    a, b = cx.t(0), cx.t(1)
    if a.ndim != 2 or b.ndim != 2:
        raise cx.invalid("A and B must be 2-D")
    if cx.attr("transA", 0):
        a = a.transpose()
    if cx.attr("transB", 0):
        b = b.transpose()
    alpha, beta = cx.attr("alpha", 1.0), cx.attr("beta", 1.0)
    y = a @ b
    cx.macs += y.size * a.shape[1]
    if alpha != 1.0:
        y = y * alpha
    if cx.has(2):
        c = cx.t(2)
        y = y + (c * beta if beta != 1.0 else c)
    return [y]


# -- reductions -------------------------------------------------------------------------------

_REDUCE_AXES_INPUT_SINCE = {"ReduceSum": 13}


def _reduce_axes(cx: NodeCtx, rank: int) -> list[int] | None:
    """The reduced axes (sorted), or None for all; [] for none (noop_with_empty_axes)."""
    since = _REDUCE_AXES_INPUT_SINCE.get(cx.node.op_type, 18)
    if cx.opset >= since:
        axes = cx.ints(1, "axes", most=RANK) if cx.has(1) else []
    else:
        axes = list(cx.attr("axes", []))
        cx.at_most(len(axes), RANK, "attribute 'axes'")
    if not axes:
        return [] if cx.attr("noop_with_empty_axes", 0) else None
    norm = sorted({_axis(cx, a, rank) for a in axes})
    return norm


def reduce_axes(t: Tensor, op: str, axes: list[int] | None, keep: bool) -> Tensor:
    """op (sum, mean, reduce_max, reduce_min) over several axes, one axis at a time."""
    rank = t.ndim
    if axes is None:
        axes = list(range(rank))
    out = t
    for a in sorted(axes, reverse=True):
        out = out.graph.op(op, a=out, axis=a, keepdim=True)
    if not keep:
        out = out.reshape([d for i, d in enumerate(t.shape) if i not in axes])
    return out


def _reduce(kind: str) -> Op:
    def lower(cx: NodeCtx) -> list[Value]:
        t = cx.t(0)
        keep = bool(cx.attr("keepdims", 1))
        axes = _reduce_axes(cx, t.ndim)
        if axes == []:
            return [t]
        if t.ndim == 0:
            return [t]
        is_int = t.dtype == "int32"
        if kind in ("max", "min"):
            if t.dtype == "bool":
                raise cx.fail("bool input")
            return [reduce_axes(t, "reduce_" + kind, axes, keep)]
        x = f32(t)
        if kind == "sum":
            y = reduce_axes(x, "sum", axes, keep)
        elif kind == "mean":
            y = reduce_axes(x, "mean", axes, keep)
        elif kind == "sum_square":
            y = reduce_axes(x * x, "sum", axes, keep)
        elif kind == "l1":
            y = reduce_axes(abs(x), "sum", axes, keep)
        elif kind == "l2":
            y = reduce_axes(x * x, "sum", axes, keep).sqrt()
        elif kind == "log_sum":
            y = reduce_axes(x, "sum", axes, keep).log()
        else:  # log_sum_exp, shifted by the max for range
            m = reduce_axes(x, "reduce_max", axes, True)
            m = cx.g.where(abs(m).eq(math.inf), m * 0.0, m)
            s = reduce_axes((x - m).exp(), "sum", axes, True).log() + m
            y = (
                s
                if keep
                else s.reshape(
                    [
                        d
                        for i, d in enumerate(t.shape)
                        if i not in (axes if axes is not None else range(t.ndim))
                    ]
                )
            )
        return [y.cast("int32") if is_int else y]

    return Op(lower, frozenset({"axes", "keepdims", "noop_with_empty_axes"}), (1,))


def _arg(kind: str) -> Op:
    def lower(cx: NodeCtx) -> list[Value]:
        t = cx.t(0)
        axis = _axis(cx, cx.attr("axis", 0), t.ndim)
        keep = bool(cx.attr("keepdims", 1))
        if not cx.attr("select_last_index", 0):
            return [cx.g.op(kind, a=t, axis=axis, keepdim=keep)]
        # the last index on ties: the first of the reversed axis, counted from the end
        n = t.shape[axis]
        backwards = int_range(0, n)
        backwards.reverse()
        rev = t.index_select(axis, cx.g.tensor(backwards, dtype="int32"))
        first = cx.g.op(kind, a=rev, axis=axis, keepdim=keep)
        return [((first.cast("float32") * -1.0) + float(n - 1)).cast("int32")]

    return Op(lower, frozenset({"axis", "keepdims", "select_last_index"}))


# -- softmax family ---------------------------------------------------------------------------


def _rows(kind: str) -> Op:
    """Softmax / LogSoftmax: opset 13 over one axis (default -1); before 13 the input is
    flattened to 2-D at `axis` (default 1) and normalized over the second dimension."""

    def lower(cx: NodeCtx) -> list[Value]:
        t = cx.t(0)
        if cx.opset >= 13:
            axis = _axis(cx, cx.attr("axis", -1), t.ndim)
            return [cx.g.op(kind, a=t, axis=axis)]
        axis = _axis(cx, cx.attr("axis", 1), t.ndim)
        flat = t.reshape([math.prod(t.shape[:axis]), math.prod(t.shape[axis:])])
        return [cx.g.op(kind, a=flat, axis=1).reshape(list(t.shape))]

    return Op(lower, frozenset({"axis"}))


def cumulative(cx: NodeCtx, xf: Tensor, axis: int, exclusive: bool, reverse: bool) -> Tensor:
    """Running sums of float32 xf along axis: the op library's running_sum (a matmul by the
    [n, n] triangle of ones), within the loader's element and MAC limits."""
    from ..functional.scans import running_sum

    n = xf.shape[axis]
    cx.elements([n, n], f"the triangle of a running sum over {n} elements")
    y = running_sum(xf, axis, exclusive, reverse)
    cx.macs += y.size * n
    return y


def _cumsum(cx: NodeCtx) -> list[Value]:
    x = cx.t(0)
    axis = _axis(cx, int(cx.one(1, "axis", integer=True)), x.ndim)
    y = cumulative(cx, f32(x), axis, bool(cx.attr("exclusive", 0)), bool(cx.attr("reverse", 0)))
    return [y if x.dtype == "float32" else y.cast(x.dtype)]


def _cumprod(cx: NodeCtx) -> list[Value]:
    """Running products: exp of the running sum of log|x|, the sign from the running count of
    negatives, 0 from the first zero on (its log left out of the sums)."""
    from .ops_math import _floor_exact, _rounded

    x = cx.t(0)
    axis = _axis(cx, int(cx.one(1, "axis", integer=True)), x.ndim)
    excl, rev = bool(cx.attr("exclusive", 0)), bool(cx.attr("reverse", 0))
    g = cx.g
    xf = f32(x)
    zero = xf.eq(0.0)
    logs = g.where(zero, 0.0, abs(xf).log())
    mag = cumulative(cx, logs, axis, excl, rev).exp()
    negatives = cumulative(cx, (xf < 0.0).cast("float32"), axis, excl, rev)
    zeros = cumulative(cx, zero.cast("float32"), axis, excl, rev)
    odd = negatives - _floor_exact(negatives * 0.5) * 2.0
    y = g.where(zeros > 0.0, 0.0, mag * (1.0 - odd * 2.0))
    return [y if x.dtype == "float32" else _rounded(y, "round").cast(x.dtype)]


def _onehot(cx: NodeCtx) -> list[Value]:
    idx = cx.t(0)
    raw_depth = cx.one(1, "depth")
    if not math.isfinite(raw_depth) or raw_depth < 1:
        raise cx.invalid(f"depth {raw_depth} (input 1) must be at least 1")
    depth = int(raw_depth)
    values = cx.t(2)
    axis = cx.attr("axis", -1)
    rank = idx.ndim + 1
    axis = _axis(cx, axis, rank)
    shape = list(idx.shape)
    shape.insert(axis, 1)
    iota_shape = [1] * rank
    iota_shape[axis] = depth
    out_shape = list(idx.shape)
    out_shape.insert(axis, depth)
    cx.elements(out_shape, f"the one-hot of depth {depth}")
    i = f32(idx)
    i = cx.g.where(i < 0.0, i + float(depth), i).cast("int32")
    iota = cx.g.tensor(int_range(0, depth), shape=iota_shape, dtype="int32")
    hot = i.reshape(shape).eq(iota)
    off = values.index_select(0, cx.g.tensor([0], dtype="int32")).reshape([])
    on = values.index_select(0, cx.g.tensor([1], dtype="int32")).reshape([])
    return [cx.g.where(hot, on, off)]


def _hardmax(cx: NodeCtx) -> list[Value]:
    t = cx.t(0)
    if cx.opset >= 13:
        axis = _axis(cx, cx.attr("axis", -1), t.ndim)
        x = t
    else:
        axis = 1
        a = _axis(cx, cx.attr("axis", 1), t.ndim)
        x = t.reshape([math.prod(t.shape[:a]), math.prod(t.shape[a:])])
    n = x.shape[axis]
    best = x.argmax(axis=axis, keepdim=True)
    shape = [1] * x.ndim
    shape[axis] = n
    iota = cx.g.tensor(int_range(0, n), shape=shape, dtype="int32")
    return [iota.eq(best).cast("float32").reshape(list(t.shape))]


# -- normalizations ---------------------------------------------------------------------------


def _stashed_float(cx: NodeCtx) -> None:
    if cx.attr("stash_type", 1) != 1:
        raise cx.fail("attribute 'stash_type' other than 1 (float) is not supported")


def _layer_norm(cx: NodeCtx) -> list[Value]:
    """gpulab.functional.layer_norm_stats over the axes from `axis`; Mean and InvStdDev are
    its statistics, shaped X.shape[:axis] + [1] * (rank - axis)."""
    x = cx.t(0)
    axis = _axis(cx, cx.attr("axis", -1), x.ndim)
    _stashed_float(cx)
    bias = cx.t(2) if cx.has(2) else None
    y, mean, rstd = F.layer_norm_stats(x, cx.t(1), bias, cx.attr("epsilon", 1e-5), x.ndim - axis)
    return [y] if cx.outputs_wanted() == 1 else [y, mean, rstd]


def _rms_norm(cx: NodeCtx) -> list[Value]:
    cx.only_first_output()
    x = cx.t(0)
    axis = _axis(cx, cx.attr("axis", -1), x.ndim)
    _stashed_float(cx)
    return [F.rms_norm(x, cx.t(1), cx.attr("epsilon", 1e-5), x.ndim - axis)]


def _trilu(cx: NodeCtx) -> list[Value]:
    x = cx.t(0)
    if x.ndim < 2:
        raise cx.invalid("Trilu takes rank >= 2")
    k = int(cx.one(1, "k", integer=True)) if cx.has(1) else 0
    upper = cx.attr("upper", 1)
    if x.dtype == "bool":
        return [F.triangle(x.cast("int32"), k, bool(upper)).cast("bool")]
    return [F.triangle(x, k, bool(upper))]


def _swiglu(cx: NodeCtx) -> list[Value]:
    """SwiGLU (opset 28): Swish_alpha(A) * B, A and B of one shape (no broadcasting)."""
    a, b = cx.t(0), cx.t(1)
    if a.dtype != "float32" or b.dtype != "float32":
        raise cx.fail(f"inputs of types {a.dtype}, {b.dtype} (float only)")
    if list(a.shape) != list(b.shape):
        raise cx.invalid(f"A {list(a.shape)} and B {list(b.shape)} differ in shape")
    return [F.swish(a, cx.attr("alpha", 1.0)) * b]


def _batch_norm(cx: NodeCtx) -> list[Value]:
    if cx.attr("training_mode", 0):
        raise cx.fail("training mode (training_mode = 1) is not supported")
    if cx.outputs_wanted() > 1:
        raise cx.fail("the running mean/var outputs (training) are not supported")
    if cx.opset < 7 and cx.attr("is_test", 0) == 0:
        raise cx.fail("training mode is not supported")
    x, scale, bias, mean, var = (cx.t(i) for i in range(5))
    return [F.batch_norm_eval(x, mean, var, scale, bias, cx.attr("epsilon", 1e-5))]


def _instance_norm(cx: NodeCtx) -> list[Value]:
    return [F.instance_norm(cx.t(0), cx.t(1), cx.t(2), cx.attr("epsilon", 1e-5))]


def _global_pool(op: str) -> Op:
    def lower(cx: NodeCtx) -> list[Value]:
        t = cx.t(0)
        return [reduce_axes(t, op, list(range(2, t.ndim)), True)]

    return Op(lower)


def _lp_norm(cx: NodeCtx) -> list[Value]:
    t = cx.t(0)
    axis = _axis(cx, cx.attr("axis", -1), t.ndim)
    p = cx.attr("p", 2)
    if p == 2:
        norm = (t * t).sum(axis=axis, keepdim=True).sqrt()
    elif p == 1:
        norm = abs(t).sum(axis=axis, keepdim=True)
    else:
        raise cx.fail(f"attribute 'p' = {p} is not supported (1 or 2)")
    return [cx.g.where(norm.eq(0.0), t * 0.0, t / norm)]


NN_OPS: dict[str, Op] = {
    "MatMul": Op(_matmul),
    "Gemm": Op(_gemm, frozenset({"alpha", "beta", "transA", "transB", "broadcast"})),
    "ReduceSum": _reduce("sum"),
    "ReduceMean": _reduce("mean"),
    "ReduceMax": _reduce("max"),
    "ReduceMin": _reduce("min"),
    "ReduceSumSquare": _reduce("sum_square"),
    "ReduceL1": _reduce("l1"),
    "ReduceL2": _reduce("l2"),
    "ReduceLogSum": _reduce("log_sum"),
    "ReduceLogSumExp": _reduce("log_sum_exp"),
    "ArgMax": _arg("argmax"),
    "ArgMin": _arg("argmin"),
    "Softmax": _rows("softmax"),
    "LogSoftmax": _rows("log_softmax"),
    "Hardmax": Op(_hardmax, frozenset({"axis"})),
    "CumSum": Op(_cumsum, frozenset({"exclusive", "reverse"}), (1,)),
    "CumProd": Op(_cumprod, frozenset({"exclusive", "reverse"}), (1,)),
    "OneHot": Op(_onehot, frozenset({"axis"}), (1,)),
    "LayerNormalization": Op(_layer_norm, frozenset({"axis", "epsilon", "stash_type"})),
    "BatchNormalization": Op(
        _batch_norm, frozenset({"epsilon", "momentum", "training_mode", "is_test", "spatial"})
    ),
    "InstanceNormalization": Op(_instance_norm, frozenset({"epsilon"})),
    "GlobalAveragePool": _global_pool("mean"),
    "GlobalMaxPool": _global_pool("reduce_max"),
    "LpNormalization": Op(_lp_norm, frozenset({"axis", "p"})),
    "RMSNormalization": Op(_rms_norm, frozenset({"axis", "epsilon", "stash_type"})),
    "Trilu": Op(_trilu, frozenset({"upper"}), (1,)),
    "SwiGLU": Op(_swiglu, frozenset({"alpha"})),
}
