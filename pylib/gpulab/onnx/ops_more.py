"""More ONNX operators as composites: ReduceProd, CenterCropPad, Compress, DepthToSpace and
SpaceToDepth (a flat index_select with indices worked out at load: exact, and no rank-6
intermediate as the reshape-transpose definition would need)."""

from __future__ import annotations

from ..graph import Tensor
from .ctx import NodeCtx, Op
from .ops_math import _floor_exact, _rounded, f32
from .ops_nn import _reduce_axes, reduce_axes
from .ops_shape import _axis, via_int
from .values import Value


def _reduce_prod(cx: NodeCtx) -> list[Value]:
    t = cx.t(0)
    keep = bool(cx.attr("keepdims", 1))
    axes = _reduce_axes(cx, t.ndim)
    if axes == [] or t.ndim == 0:
        return [t]
    x = f32(t)
    # |prod| = exp(sum(log|x|)) (a zero gives log 0 = -inf and so 0); the sign from the parity
    # of the negative count
    mag = reduce_axes(abs(x).log(), "sum", axes, keep).exp()
    negatives = reduce_axes((x < 0.0).cast("float32"), "sum", axes, keep)
    odd = negatives - _floor_exact(negatives * 0.5) * 2.0
    y = mag * (1.0 - odd * 2.0)
    return [y if t.dtype == "float32" else _rounded(y, "round").cast(t.dtype)]


def _center_crop_pad(cx: NodeCtx) -> list[Value]:
    t = cx.t(0)
    target = cx.ints(1, "shape")
    axes = [_axis(cx, a, t.ndim) for a in cx.attr("axes", list(range(t.ndim)))]
    if len(axes) != len(target):
        raise cx.invalid(f"shape {target} for axes {axes}")
    out = t
    for a, want in zip(axes, target):
        have = out.shape[a]
        if want < have:
            start = (have - want) // 2
            slices = [[None, None, 1] for _ in out.shape]
            slices[a] = [start, start + want, 1]
            out = via_int(out, lambda x, s=slices: x.graph.op("slice", a=x, slices=s))
        elif want > have:
            before = (want - have) // 2
            widths = [[0, 0] for _ in out.shape]
            widths[a] = [before, want - have - before]
            out = via_int(out, lambda x, w=widths: x.pad(w, 0))
    return [out]


def _compress(cx: NodeCtx) -> list[Value]:
    t = cx.t(0)
    cond = [bool(v) for v in cx.c(1, "condition").data]
    if cx.has_attr("axis"):
        axis = _axis(cx, cx.attr("axis"), t.ndim)
        src = t
    else:
        axis, src = 0, t.reshape([t.size])
    keep = [i for i, c in enumerate(cond[: src.shape[axis]]) if c]
    if not keep:
        raise cx.fail("the condition selects nothing: zero-size tensors are not supported")
    idx = cx.g.tensor(keep, dtype="int32")
    return [via_int(src, lambda x: x.index_select(axis, idx))]


def _permuted(t: Tensor, out_shape: list[int], source) -> Tensor:
    """out[flat index o] = t[source(n, c, h, w of o)] as one index_select of the flat t."""
    n, c, h, w = out_shape
    st = [t.shape[1] * t.shape[2] * t.shape[3], t.shape[2] * t.shape[3], t.shape[3], 1]
    idx = []
    for a in range(n):
        for b in range(c):
            for y in range(h):
                for x in range(w):
                    i = source(a, b, y, x)
                    idx.append(i[0] * st[0] + i[1] * st[1] + i[2] * st[2] + i[3])
    flat = t.reshape([t.size])
    picked = via_int(flat, lambda f: f.index_select(0, t.graph.tensor(idx, dtype="int32")))
    return picked.reshape(out_shape)


def _depth_to_space(cx: NodeCtx) -> list[Value]:
    t = cx.t(0)
    if t.ndim != 4:
        raise cx.invalid("DepthToSpace takes [N, C, H, W]")
    b = cx.attr("blocksize")
    mode = cx.attr("mode", "DCR")
    n, c, h, w = t.shape
    if c % (b * b):
        raise cx.invalid(f"{c} channels for blocksize {b}")
    co = c // (b * b)

    def source(a: int, ch: int, y: int, x: int) -> tuple[int, int, int, int]:
        i, j = y % b, x % b
        cin = (i * b + j) * co + ch if mode == "DCR" else ch * b * b + i * b + j
        return a, cin, y // b, x // b

    if mode not in ("DCR", "CRD"):
        raise cx.fail(f"attribute 'mode' = {mode!r}")
    return [_permuted(t, [n, co, h * b, w * b], source)]


def _space_to_depth(cx: NodeCtx) -> list[Value]:
    t = cx.t(0)
    if t.ndim != 4:
        raise cx.invalid("SpaceToDepth takes [N, C, H, W]")
    b = cx.attr("blocksize")
    n, c, h, w = t.shape
    if h % b or w % b:
        raise cx.invalid(f"spatial size {h}x{w} for blocksize {b}")

    def source(a: int, ch: int, y: int, x: int) -> tuple[int, int, int, int]:
        block, cin = divmod(ch, c)
        i, j = divmod(block, b)
        return a, cin, y * b + i, x * b + j

    return [_permuted(t, [n, c * b * b, h // b, w // b], source)]


MORE_OPS: dict[str, Op] = {
    "ReduceProd": Op(_reduce_prod, frozenset({"axes", "keepdims", "noop_with_empty_axes"}), (1,)),
    "CenterCropPad": Op(_center_crop_pad, frozenset({"axes"}), (1,)),
    "Compress": Op(_compress, frozenset({"axis"}), (1,)),
    "DepthToSpace": Op(_depth_to_space, frozenset({"blocksize", "mode"})),
    "SpaceToDepth": Op(_space_to_depth, frozenset({"blocksize"})),
}
