"""Conv, MaxPool, AveragePool, LpPool (1-D and 2-D): the protocol's v6 window ops (conv2d,
max_pool2d, avg_pool2d) where they take the attributes, else composites: the window's taps
are strided slices of the padded input (functional.window_taps); Conv joins them and
multiplies (im2col + matmul), the pools combine them with maximum / a sum divided by the
window's count / a p-norm. 3-D windows would need rank 5 and are refused.
"""

from __future__ import annotations

import array
import math

from .. import functional as F
from ..errors import GpuLabError
from ..graph import Tensor
from .ctx import NodeCtx, Op
from .values import Value

WINDOW_ATTRS = frozenset({"auto_pad", "kernel_shape", "pads", "strides", "dilations"})


def _window(cx: NodeCtx, x: Tensor, kernel: list[int], ceil_mode: bool = False):
    """(pads_begin, pads_end, extra_end, out) per spatial axis, from the attributes."""
    spatial = list(x.shape[2:])
    k = len(spatial)
    strides = list(cx.attr("strides", [1] * k))
    dil = list(cx.attr("dilations", [1] * k))
    auto = cx.attr("auto_pad", "NOTSET")
    pads = list(cx.attr("pads", [0] * 2 * k))
    if len(kernel) != k or len(strides) != k or len(dil) != k or len(pads) != 2 * k:
        raise cx.invalid(
            f"kernel {kernel}, strides {strides}, dilations {dil}, pads {pads} for {k} spatial axes"
        )
    # (kernel_shape, strides and dilations are >= 1 and pads >= 0: their specs, attrs.COMMON)
    begin, end, extra, out = [], [], [], []
    for d in range(k):
        n, s, dk = spatial[d], strides[d], (kernel[d] - 1) * dil[d] + 1
        if auto in ("SAME_UPPER", "SAME_LOWER"):
            o = -(-n // s)
            total = max(0, (o - 1) * s + dk - n)
            small = total // 2
            b, e = (small, total - small) if auto == "SAME_UPPER" else (total - small, small)
        elif auto == "VALID":
            b, e = 0, 0
            o = (n - dk) // s + 1
        elif auto == "NOTSET":
            b, e = pads[d], pads[d + k]
            span = n + b + e - dk
            o = (-(-span // s) if ceil_mode else span // s) + 1
            if ceil_mode and (o - 1) * s >= n + b:
                o -= 1
        else:
            raise cx.fail(f"attribute 'auto_pad' = {auto!r} is not supported")
        if o <= 0:
            raise cx.fail(f"the window is larger than the padded input on spatial axis {d}")
        begin.append(b)
        end.append(e)
        extra.append(max(0, (o - 1) * s + dk - (n + b + e)))
        out.append(o)
    return begin, end, extra, out, strides, dil


def _as_2d(cx: NodeCtx, x: Tensor) -> Tensor:
    if x.ndim == 3:
        return x.reshape([x.shape[0], x.shape[1], 1, x.shape[2]])
    if x.ndim != 4:
        raise cx.fail(
            f"a {x.ndim - 2}-D window (input rank {x.ndim}) is not supported (1-D and 2-D)"
        )
    return x


def _two(values: list[int], fill: int) -> list[int]:
    return [fill] + values if len(values) == 1 else values


def _padded(x: Tensor, begin, end, extra, value: float) -> Tensor:
    widths = [[0, 0], [0, 0]] + [[b, e + x_] for b, e, x_ in zip(begin, end, extra)]
    if any(w for pair in widths for w in pair):
        return x.pad(widths, value)
    return x


def _window_op(cx: NodeCtx, op: str, want: list[int], **fields) -> Tensor | None:
    """The protocol's own window op (v6: conv2d, max_pool2d, avg_pool2d), or None where it
    refuses these attributes or would give another shape (then the tap composite serves)."""
    try:
        y = cx.g.op(op, **fields)
    except GpuLabError:
        return None
    return y if list(y.shape) == want else None


def _conv(cx: NodeCtx) -> list[Value]:
    x, w = cx.t(0), cx.t(1)
    if x.ndim != w.ndim:
        raise cx.invalid(f"X rank {x.ndim} and W rank {w.ndim} differ")
    one_d = x.ndim == 3
    x4, w4 = _as_2d(cx, x), _as_2d(cx, w)
    kernel = list(cx.attr("kernel_shape", list(w.shape[2:])))
    if kernel != list(w.shape[2:]):
        raise cx.invalid(f"kernel_shape {kernel} differs from W's {list(w.shape[2:])}")
    groups = cx.attr("group", 1)
    if x.shape[1] != w.shape[1] * groups or w.shape[0] % groups:
        raise cx.invalid(f"X has {x.shape[1]} channels, W {list(w.shape)} with group {groups}")
    begin, end, extra, out, strides, dil = _window(cx, x, kernel)
    if one_d:
        begin, end, extra = (_two(v, 0) for v in (begin, end, extra))
        out = _two(out, 1)
        strides, dil = _two(strides, 1), _two(dil, 1)
    bias = [cx.t(2)] if cx.has(2) else []
    want = [x.shape[0], w.shape[0], out[0], out[1]]
    y = _window_op(
        cx,
        "conv2d",
        want,
        a=x4,
        w=w4,
        bias=bias,
        strides=strides,
        padding=[begin[0], begin[1], end[0], end[1]],
        dilations=dil,
        groups=groups,
    )
    if y is None:
        xp = _padded(x4, begin, end, extra, 0.0)
        y = F.conv2d_im2col(xp, w4, strides, dil, out, groups)
        if bias:
            y = y + bias[0].reshape([w.shape[0], 1, 1])
    cx.macs += y.size * w.shape[1] * math.prod(kernel)
    return [y.reshape(list(y.shape[:2]) + [y.shape[3]]) if one_d else y]


def _counts(n: int, b: int, e: int, k: int, s: int, dil: int, o: int, include: bool) -> list:
    """Per output position of one axis: how many window taps fall inside the counted
    region (the input, or the input and its explicit pads): the taps t in 0..k-1 with
    lo <= start + t * dil < hi, counted without visiting them."""
    lo, hi = (-b, n + e) if include else (0, n)
    out = []
    for p in range(o):
        start = p * s - b
        first = max(0, -((start - lo) // dil))  # ceil((lo - start) / dil)
        last = min(k - 1, (hi - 1 - start) // dil)
        out.append(max(0, last - first + 1))
    return out


def _pool(kind: str) -> Op:
    attrs = (
        WINDOW_ATTRS
        | {"ceil_mode", "storage_order"}
        | ({"count_include_pad"} if kind == "avg" else set())
        | ({"p"} if kind == "lp" else set())
    )

    def lower(cx: NodeCtx) -> list[Value]:
        if cx.outputs_wanted() > 1:
            raise cx.fail("the Indices output is not supported")
        if cx.attr("storage_order", 0):
            raise cx.fail("attribute 'storage_order' = 1 is not supported")
        x = cx.t(0)
        if x.dtype != "float32":
            raise cx.fail(f"input of type {x.dtype} (float only)")
        one_d = x.ndim == 3
        x4 = _as_2d(cx, x)
        kernel = list(cx.attr("kernel_shape"))
        ceil_mode = bool(cx.attr("ceil_mode", 0))
        begin, end, extra, out, strides, dil = _window(cx, x, kernel, ceil_mode)
        spatial = list(x.shape[2:])
        if one_d:
            kernel, spatial = _two(kernel, 1), _two(spatial, 1)
            begin, end, extra = (_two(v, 0) for v in (begin, end, extra))
            out = _two(out, 1)
            strides, dil = _two(strides, 1), _two(dil, 1)
        if kind in ("max", "avg"):
            fields = {
                "a": x4,
                "kernel": kernel,
                "strides": strides,
                "dilations": dil,
                "padding": [begin[0], begin[1], end[0], end[1]],
                "ceil_mode": ceil_mode,
            }
            if kind == "avg":
                fields["count_include_pad"] = bool(cx.attr("count_include_pad", 0))
            want = [x.shape[0], x.shape[1], out[0], out[1]]
            y = _window_op(cx, f"{kind}_pool2d", want, **fields)
            if y is not None:
                return [y.reshape([y.shape[0], y.shape[1], y.shape[3]]) if one_d else y]
        pad_value = -math.inf if kind == "max" else 0.0
        xp = _padded(x4, begin, end, extra, pad_value)
        taps = F.window_taps(xp, kernel, strides, dil, out)
        if kind == "lp":
            p = cx.attr("p", 2)
            if p < 1:
                raise cx.fail(f"attribute 'p' = {p} is not supported (p >= 1)")
            # |t|^p (p > 2: exp(p log|t|), 0 at t = 0)
            taps = [
                abs(t) if p == 1 else t * t if p == 2 else (abs(t).log() * float(p)).exp()
                for t in taps
            ]
        acc = taps[0]
        for t in taps[1:]:
            acc = cx.g.op("maximum", a=acc, b=t) if kind == "max" else acc + t
        if kind == "lp" and cx.attr("p", 2) == 2:
            acc = acc.sqrt()
        elif kind == "lp" and cx.attr("p", 2) > 2:
            acc = (acc.log() * (1.0 / cx.attr("p"))).exp()
        if kind == "avg":
            include = bool(cx.attr("count_include_pad", 0))
            ch, cw = (
                _counts(
                    spatial[d], begin[d], end[d], kernel[d], strides[d], dil[d], out[d], include
                )
                for d in (0, 1)
            )
            counts = [float(a * b) for a in ch for b in cw]
            acc = acc / cx.g.tensor(counts, shape=[out[0], out[1]])
        if one_d:
            acc = acc.reshape([acc.shape[0], acc.shape[1], acc.shape[3]])
        return [acc]

    return Op(lower, frozenset(attrs))


POOL_OPS: dict[str, Op] = {
    "Conv": Op(_conv, WINDOW_ATTRS | {"group"}),
    "MaxPool": _pool("max"),
    "AveragePool": _pool("avg"),
    "LpPool": _pool("lp"),
}


def _spread(x: Tensor, axis: int, stride: int) -> Tensor:
    """stride - 1 zeros between the elements along axis: one zero row appended, then an
    index_select that takes it between the originals (exact)."""
    n = x.shape[axis]
    if stride == 1 or n == 1:
        return x
    widths = [[0, 0] for _ in x.shape]
    widths[axis] = [0, 1]
    padded = x.pad(widths, 0.0)
    # element j, then stride - 1 picks of the zero row (index n), for each but the last
    idx = array.array("i")
    gap = array.array("i", [n]) * (stride - 1)
    for j in range(n - 1):
        idx.append(j)
        idx.extend(gap)
    idx.append(n - 1)
    return padded.index_select(axis, x.graph.tensor(idx, dtype="int32"))


def _backwards(n: int) -> array.array:
    idx = array.array("i", range(n))
    idx.reverse()
    return idx


def _conv_transpose(cx: NodeCtx) -> list[Value]:
    """ConvTranspose as a stride-1 conv2d of the input spread by the strides, padded by
    (k - 1) * d - pads (+ output_padding), with the kernel flipped and its channel axes
    exchanged (per group)."""
    x, w = cx.t(0), cx.t(1)
    if x.dtype != "float32" or x.ndim not in (3, 4) or w.ndim != x.ndim:
        raise cx.fail(f"input of rank {x.ndim} / type {x.dtype} (float, 1-D or 2-D)")
    one_d = x.ndim == 3
    x4, w4 = _as_2d(cx, x), _as_2d(cx, w)
    groups = cx.attr("group", 1)
    c, mg, kh, kw = w4.shape
    if x.shape[1] != c or c % groups:
        raise cx.invalid(f"X has {x.shape[1]} channels, W {list(w.shape)} with group {groups}")
    k = x.ndim - 2
    kernel = list(cx.attr("kernel_shape", list(w.shape[2:])))
    if kernel != list(w.shape[2:]):
        raise cx.invalid(f"kernel_shape {kernel} differs from W's {list(w.shape[2:])}")
    kernel = [kh, kw]
    lists = {
        name: list(cx.attr(name, [fill] * k))
        for name, fill in (("strides", 1), ("dilations", 1), ("output_padding", 0))
    }
    for name, values in lists.items():
        if len(values) != k:
            raise cx.invalid(f"attribute {name!r} {values} for {k} spatial axes")
    strides, dil = _two(lists["strides"], 1), _two(lists["dilations"], 1)
    outpad = _two(lists["output_padding"], 0)
    spatial = list(x4.shape[2:])
    auto = cx.attr("auto_pad", "NOTSET")
    begin, end = [0, 0], [0, 0]
    full = [
        strides[d] * (spatial[d] - 1) + outpad[d] + (kernel[d] - 1) * dil[d] + 1 for d in range(2)
    ]
    if cx.has_attr("output_shape") or auto in ("SAME_UPPER", "SAME_LOWER"):
        given = list(cx.attr("output_shape", [1] * k))
        if len(given) != k:
            raise cx.invalid(f"attribute 'output_shape' {given} for {k} spatial axes")
        want = (
            _two(given, 1)
            if cx.has_attr("output_shape")
            else [spatial[d] * strides[d] for d in range(2)]
        )
        for d in range(2):
            total = full[d] - want[d]
            small = total // 2
            begin[d], end[d] = (
                (small, total - small) if auto == "SAME_UPPER" else (total - small, small)
            )
    elif auto == "NOTSET":
        given = list(cx.attr("pads", [0] * 2 * k))
        if len(given) != 2 * k:
            raise cx.invalid(f"attribute 'pads' {given} for {k} spatial axes")
        begin, end = _two(given[:k], 0), _two(given[k:], 0)
    elif auto != "VALID":
        raise cx.fail(f"attribute 'auto_pad' = {auto!r} is not supported")
    out = [full[d] - begin[d] - end[d] for d in range(2)]
    if min(out) <= 0:
        raise cx.fail(f"output size {out}: zero-size tensors are not supported")
    n = x4.shape[0]
    spread_shape = [n, c] + [(spatial[d] - 1) * strides[d] + 1 for d in range(2)]
    cx.elements(spread_shape, f"the input spread by strides {strides}")
    cx.elements([n, mg * groups, *out], f"the result (strides {strides}, pads, output_shape)")
    spread = _spread(_spread(x4, 2, strides[0]), 3, strides[1])
    lo = [(kernel[d] - 1) * dil[d] - begin[d] for d in range(2)]
    hi = [(kernel[d] - 1) * dil[d] - end[d] + outpad[d] for d in range(2)]
    if min(lo + hi) < 0:
        crop = [[None, None, 1], [None, None, 1]] + [
            [max(0, -lo[d]), spread.shape[2 + d] - max(0, -hi[d]), 1] for d in range(2)
        ]
        spread = cx.g.op("slice", a=spread, slices=crop)
        lo, hi = [max(0, v) for v in lo], [max(0, v) for v in hi]
    flipped = w4.index_select(2, cx.g.tensor(_backwards(kh), dtype="int32"))
    flipped = flipped.index_select(3, cx.g.tensor(_backwards(kw), dtype="int32"))
    cg = c // groups
    parts = []
    for gi in range(groups):
        xs = (
            spread
            if groups == 1
            else cx.g.op(
                "slice",
                a=spread,
                slices=[
                    [None, None, 1],
                    [gi * cg, (gi + 1) * cg, 1],
                    [None, None, 1],
                    [None, None, 1],
                ],
            )
        )
        ws = (
            flipped
            if groups == 1
            else cx.g.op(
                "slice",
                a=flipped,
                slices=[
                    [gi * cg, (gi + 1) * cg, 1],
                    [None, None, 1],
                    [None, None, 1],
                    [None, None, 1],
                ],
            )
        )
        ws = ws.permute([1, 0, 2, 3])  # [M/g, C/g, kH, kW]
        want = [x.shape[0], mg, out[0], out[1]]
        y = _window_op(
            cx,
            "conv2d",
            want,
            a=xs,
            w=ws,
            bias=[],
            strides=[1, 1],
            padding=[lo[0], lo[1], hi[0], hi[1]],
            dilations=dil,
            groups=1,
        )
        if y is None:
            xp = _padded(xs, lo, hi, [0, 0], 0.0)
            y = F.conv2d_im2col(xp, ws, [1, 1], dil, out, 1)
        parts.append(y)
    y = parts[0] if groups == 1 else cx.g.concat(parts, axis=1)
    cx.macs += y.size * cg * kh * kw
    if cx.has(2):
        y = y + cx.t(2).reshape([mg * groups, 1, 1])
    return [y.reshape(list(y.shape[:2]) + [y.shape[3]]) if one_d else y]


POOL_OPS["ConvTranspose"] = Op(
    _conv_transpose,
    WINDOW_ATTRS | {"group", "output_padding", "output_shape"},
)
