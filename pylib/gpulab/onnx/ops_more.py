"""More ONNX operators as composites: ReduceProd, CenterCropPad, Compress, DepthToSpace and
SpaceToDepth (a flat index_select with indices worked out at load: exact, and no rank-6
intermediate as the reshape-transpose definition would need)."""

from __future__ import annotations

import array
import math

from ..graph import Tensor
from .ctx import NodeCtx, Op
from .limits import LIMITS
from .ops_math import _floor_exact, _rounded, f32
from .ops_nn import _reduce_axes, reduce_axes
from .ops_shape import _axis, via_int
from .values import Value, int_range


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
    target = cx.ints(1, "shape", most=LIMITS["max_rank"])
    axes = [_axis(cx, a, t.ndim) for a in cx.attr("axes", list(range(t.ndim)))]
    if len(axes) != len(target) or len(set(axes)) != len(axes):
        raise cx.invalid(f"shape {target} for axes {axes}")
    if any(d < 1 for d in target):
        raise cx.fail(f"shape {target}: zero-size and negative sizes are not supported")
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
    idx = cx.g.tensor(keep, dtype="int32")
    return [via_int(src, lambda x: x.index_select(axis, idx))]


def _permuted(t: Tensor, out_shape: list[int], source) -> Tensor:
    """out[flat index o] = t[source(n, c, h, w of o)] as one index_select of the flat t."""
    n, c, h, w = out_shape
    st = [t.shape[1] * t.shape[2] * t.shape[3], t.shape[2] * t.shape[3], t.shape[3], 1]
    idx = array.array("i")
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


def _topk(cx: NodeCtx) -> list[Value]:
    """TopK by k rounds of argmax (argmin for the smallest): each round takes the first best
    index (ties: the lower index first, as ONNX) and masks it out."""
    from .ops_shape import concat

    x = cx.t(0)
    k = int(cx.one(1, "K", integer=True))
    axis = _axis(cx, cx.attr("axis", -1), x.ndim)
    largest = bool(cx.attr("largest", 1))
    if not cx.attr("sorted", 1):
        raise cx.fail("attribute 'sorted' = 0 is not supported")
    n = x.shape[axis]
    if not 1 <= k <= n:
        raise cx.fail(f"K = {k} for an axis of {n} (zero-size results are not supported)")
    if x.dtype == "bool":
        raise cx.fail("bool input")
    if 3 * k > LIMITS["max_nodes"]:  # each round: an arg op, a gather, a where
        raise cx.limit(
            f"K = {k} rounds of {'argmax' if largest else 'argmin'} would make {3 * k} nodes, "
            f"more than max_nodes {LIMITS['max_nodes']}"
        )
    g = cx.g
    worst = (
        (-math.inf if largest else math.inf)
        if x.dtype == "float32"
        else (-(2**31) if largest else 2**31 - 1)
    )
    shape = [1] * x.ndim
    shape[axis] = n
    iota = g.tensor(int_range(0, n), shape=shape, dtype="int32")
    cur, values, indices = x, [], []
    for _ in range(k):
        idx = g.op("argmax" if largest else "argmin", a=cur, axis=axis, keepdim=True)
        values.append(x.gather(axis, idx))
        indices.append(idx)
        cur = g.where(iota.eq(idx), worst, cur)
    return [concat(values, axis), concat(indices, axis)]


def _scatter_elements(cx: NodeCtx) -> list[Value]:
    from .ops_shape import _gather_indices

    data, updates = cx.t(0), cx.t(2)
    axis = _axis(cx, cx.attr("axis", 0), data.ndim)
    reduction = cx.attr("reduction", "none")
    idx = _gather_indices(cx, 1, data.shape[axis])
    if data.dtype == "bool":
        raise cx.fail("bool data")
    if reduction == "add":
        return [data.scatter_add(axis, idx, updates)]
    if reduction != "none":
        raise cx.fail(f"attribute 'reduction' = {reduction!r} is not supported (none, add)")
    # each position written once (ONNX leaves repeated indices undefined for "none"): the
    # updates summed into zeros, taken where some index hit
    g = cx.g
    code = "f" if data.dtype == "float32" else "i"
    zeros = g.tensor(array.array(code, [0]) * data.size, shape=list(data.shape), dtype=data.dtype)
    ones = g.tensor(array.array("i", [1]) * updates.size, shape=list(updates.shape), dtype="int32")
    hits = g.tensor(array.array("i", [0]) * data.size, shape=list(data.shape), dtype="int32")
    hit = hits.scatter_add(axis, idx, ones) > g.tensor(0, dtype="int32")
    placed = zeros.scatter_add(axis, idx, updates)
    return [g.where(hit, placed, data)]


def _reverse_sequence(cx: NodeCtx) -> list[Value]:
    """ReverseSequence: along time_axis, batch entry b takes position L_b - 1 - t for t < L_b
    (L = sequence_lens, clamped to 0..T) and t itself after; those source positions are worked
    out on the device from sequence_lens (it need not be known at load) and gathered."""
    from .. import functional as F

    x = cx.t(0)
    batch_axis, time_axis = cx.attr("batch_axis", 1), cx.attr("time_axis", 0)
    if x.ndim < 2 or {batch_axis, time_axis} != {0, 1}:
        raise cx.invalid(
            f"batch_axis {batch_axis} and time_axis {time_axis} must be 0 and 1 (in either "
            f"order) of an input of rank >= 2, the input has rank {x.ndim}"
        )
    steps, batch = x.shape[time_axis], x.shape[batch_axis]
    lens = cx.t(1)
    if list(lens.shape) != [batch] or lens.dtype != "int32":
        raise cx.invalid(f"sequence_lens must be [{batch}] integers, is {list(lens.shape)}")
    pair = [1, 1]
    pair[time_axis] = steps
    t = cx.g.tensor(array.array("f", range(steps)), shape=pair)
    pair = [1, 1]
    pair[batch_axis] = batch
    n = f32(lens).maximum(0.0).minimum(float(steps)).reshape(pair)
    src = cx.g.where(t < n, n - 1.0 - t, t)
    src = src.reshape(list(src.shape) + [1] * (x.ndim - 2))
    idx = F.broadcast_to(src, list(x.shape)).cast("int32")
    return [via_int(x, lambda v: v.gather(time_axis, idx))]


MORE_OPS.update(
    {
        "ReverseSequence": Op(_reverse_sequence, frozenset({"batch_axis", "time_axis"})),
        "TopK": Op(_topk, frozenset({"axis", "largest", "sorted"}), (1,)),
        "ScatterElements": Op(_scatter_elements, frozenset({"axis", "reduction"})),
        # Scatter: ScatterElements' name before opset 11 (no `reduction`; deprecated since)
        "Scatter": Op(_scatter_elements, frozenset({"axis"})),
    }
)


def _rotary(cx: NodeCtx) -> list[Value]:
    """RotaryEmbedding as onnx.reference does it; the interleaved layout is split and joined
    with index_select (no rank-5 intermediate)."""
    x = cx.t(0)
    if x.dtype != "float32":
        raise cx.fail(f"input of type {x.dtype} (float only)")
    g = cx.g
    four_d = x.ndim == 4
    if four_d:
        t = x.permute([0, 2, 1, 3])  # [B, S, H, D]
    elif x.ndim == 3:
        heads = cx.attr("num_heads", 0)
        if not heads:
            raise cx.invalid("a 3-D input needs num_heads")
        b, s, hidden = x.shape
        if hidden % heads:
            raise cx.invalid(f"attribute 'num_heads' = {heads} does not divide {hidden}")
        t = x.reshape([b, s, heads, hidden // heads])
    else:
        raise cx.invalid(f"input of rank {x.ndim} (3 or 4)")
    b, s, _h, d = t.shape
    rot = cx.attr("rotary_embedding_dim", 0) or d
    if rot > d or rot % 2:
        raise cx.invalid(f"attribute 'rotary_embedding_dim' = {rot} for heads of {d} (even, <= d)")
    half = rot // 2
    cos, sin = cx.t(1), cx.t(2)
    if cx.has(3):
        pos = cx.t(3).reshape([b * s])
        cos = cos.index_select(0, pos).reshape([b, s, half])
        sin = sin.index_select(0, pos).reshape([b, s, half])
    cos = cos.reshape([cos.shape[0], cos.shape[1], 1, half])
    sin = sin.reshape([sin.shape[0], sin.shape[1], 1, half])
    inter = bool(cx.attr("interleaved", 0))

    def pick(idx: list[int]) -> Tensor:
        return t.index_select(3, g.tensor(idx, dtype="int32"))

    if inter:
        x1, x2 = pick(list(range(0, rot, 2))), pick(list(range(1, rot, 2)))
    else:
        x1, x2 = pick(list(range(half))), pick(list(range(half, rot)))
    real = cos * x1 - sin * x2
    imag = sin * x1 + cos * x2
    joined = g.concat([real, imag], axis=3)
    if inter:  # real0, imag0, real1, imag1, ...
        order = [k // 2 + (half if k % 2 else 0) for k in range(rot)]
        joined = joined.index_select(3, g.tensor(order, dtype="int32"))
    out = joined if rot == d else g.concat([joined, pick(list(range(rot, d)))], axis=3)
    return [out.permute([0, 2, 1, 3]) if four_d else out.reshape(list(x.shape))]


MORE_OPS["RotaryEmbedding"] = Op(
    _rotary, frozenset({"interleaved", "rotary_embedding_dim", "num_heads"})
)


def _grid_sample(cx: NodeCtx) -> list[Value]:
    """GridSample (2-D; nearest and bilinear; zeros and border padding) as onnx.reference
    does it: the grid denormalized, each tap's flat index and in-range mask computed on the
    device, the taps gathered from X flattened to [N, C, H*W]."""
    from .. import functional as F

    x, grid = cx.t(0), cx.t(1)
    if x.ndim != 4 or x.dtype != "float32":
        raise cx.fail(f"input of rank {x.ndim} / type {x.dtype} (2-D float only)")
    if grid.ndim != 4 or grid.shape[0] != x.shape[0] or grid.shape[3] != 2:
        raise cx.invalid(f"grid of shape {list(grid.shape)} for X {list(x.shape)}")
    mode = {"bilinear": "linear", "linear": "linear", "nearest": "nearest"}.get(
        cx.attr("mode", "linear")
    )
    padding = cx.attr("padding_mode", "zeros")
    if mode is None or padding not in ("zeros", "border"):
        raise cx.fail(
            f"mode {cx.attr('mode', 'linear')!r} / padding_mode {padding!r} is not "
            f"supported (nearest, linear; zeros, border)"
        )
    align = bool(cx.attr("align_corners", 0))
    g = cx.g
    n, c, h, w = x.shape
    _, ho, wo, _two = grid.shape

    def coord(k: int, size: int) -> Tensor:
        v = grid.index_select(3, g.tensor([k], dtype="int32")).reshape([n, ho, wo])
        u = (v + 1.0) * (0.5 * (size - 1)) if align else ((v + 1.0) * size - 1.0) * 0.5
        if mode == "nearest":
            u = _rounded(u, "round")
        if padding == "border":
            lo, hi = (0.0, size - 1.0) if align else (-0.5, size - 0.5)
            outside = g.where(u < lo, 1.0, g.where(u > hi, 1.0, 0.0)).eq(1.0)
            u = g.where(outside, u.clamp(0.0, size - 1.0), u)
        return u

    gx, gy = coord(0, w), coord(1, h)
    flat = x.reshape([n, c, h * w])

    def tap(iy: Tensor, ix: Tensor) -> Tensor:
        inside = (
            (ix >= 0.0).cast("float32")
            * (ix <= w - 1.0).cast("float32")
            * (iy >= 0.0).cast("float32")
            * (iy <= h - 1.0).cast("float32")
        )
        cy, cxx = iy.clamp(0.0, h - 1.0), ix.clamp(0.0, w - 1.0)
        idx = (cy * float(w) + cxx).cast("int32").reshape([n, 1, ho * wo])
        vals = flat.gather(2, F.onnx_expand(idx, [n, c, ho * wo])).reshape([n, c, ho, wo])
        if padding == "zeros":
            vals = g.where(inside.reshape([n, 1, ho, wo]).eq(1.0), vals, 0.0)
        return vals

    if mode == "nearest":
        return [tap(gy, gx)]
    x0, y0 = _floor_exact(gx), _floor_exact(gy)
    x1, y1 = x0 + 1.0, y0 + 1.0
    wx1, wy1 = gx - x0, gy - y0
    wx0, wy0 = 1.0 - wx1, 1.0 - wy1

    def weight(a: Tensor, b: Tensor) -> Tensor:
        return (a * b).reshape([n, 1, ho, wo])

    out = (
        tap(y0, x0) * weight(wy0, wx0)
        + tap(y0, x1) * weight(wy0, wx1)
        + tap(y1, x0) * weight(wy1, wx0)
        + tap(y1, x1) * weight(wy1, wx1)
    )
    return [out]


MORE_OPS["GridSample"] = Op(_grid_sample, frozenset({"mode", "padding_mode", "align_corners"}))


def _diagonal(cx: NodeCtx, t: Tensor, letters: str) -> tuple[Tensor, str]:
    """Repeated letters of one operand (a diagonal, 'ii'): one flat index_select."""
    uniq = "".join(dict.fromkeys(letters))
    if uniq == letters:
        return t, letters
    sizes = {ch: t.shape[i] for i, ch in enumerate(letters)}
    st = [math.prod(t.shape[i + 1 :]) for i in range(t.ndim)]
    out_shape = [sizes[ch] for ch in uniq]
    idx = []
    for pos in range(math.prod(out_shape)):
        rem, coords = pos, {}
        for ch, n in zip(reversed(uniq), reversed(out_shape)):
            coords[ch] = rem % n
            rem //= n
        idx.append(sum(coords[ch] * s for ch, s in zip(letters, st)))
    flat = t.reshape([t.size]).index_select(0, cx.g.tensor(idx, dtype="int32"))
    return flat.reshape(out_shape), uniq


def _einsum(cx: NodeCtx) -> list[Value]:
    """Einsum of one or two operands without ellipsis: each operand permuted and reshaped onto
    the union of the letters (output letters first), multiplied with broadcasting, the
    contracted letters summed (rank at most 4)."""
    eq = cx.attr("equation").replace(" ", "")
    if "..." in eq:
        raise cx.fail("an ellipsis in the equation is not supported")
    lhs, _, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != cx.n_inputs or len(terms) > 2:
        raise cx.fail(f"equation {eq!r}: one or two operands are supported")
    letters = "".join(terms) + rhs
    if not all(ch.isascii() and ch.isalpha() for ch in letters) or "->" in rhs:
        raise cx.invalid(f"attribute 'equation' {eq!r}: terms of ASCII letters expected")
    if len(set(rhs)) != len(rhs) or any(ch not in lhs for ch in rhs):
        raise cx.invalid(f"attribute 'equation' {eq!r}: each output letter once, from an input")
    if "->" not in eq:
        counts = {ch: lhs.count(ch) for ch in lhs if ch.isalpha()}
        rhs = "".join(sorted(ch for ch, k in counts.items() if k == 1))
    ops = []
    for i, term in enumerate(terms):
        t = f32(cx.t(i))
        if len(term) != t.ndim:
            raise cx.invalid(f"term {term!r} for an operand of rank {t.ndim}")
        ops.append(_diagonal(cx, t, term))
    union = rhs + "".join(dict.fromkeys(ch for _, ls in ops for ch in ls if ch not in rhs))
    if len(union) > 4:
        raise cx.fail(f"equation {eq!r} needs rank {len(union)} (at most 4)")
    placed = []
    for t, ls in ops:
        order = sorted(range(len(ls)), key=lambda i: union.index(ls[i]))
        if order != list(range(len(ls))):
            t = t.permute(order)
        ls = "".join(ls[i] for i in order)
        shape = [t.shape[ls.index(ch)] if ch in ls else 1 for ch in union]
        placed.append(t.reshape(shape))
    prod = placed[0] if len(placed) == 1 else placed[0] * placed[1]
    contracted = list(range(len(rhs), len(union)))
    if contracted:
        prod = reduce_axes(prod, "sum", contracted, False)
    if not rhs and prod.ndim:
        prod = prod.reshape([])
    cx.macs += prod.size * max(
        1, math.prod(placed[0].shape[d] for d in contracted) if contracted else 1
    )
    out_dtype = cx.dtype(0)
    return [prod if out_dtype == "float32" else prod.cast(out_dtype)]


MORE_OPS["Einsum"] = Op(_einsum, frozenset({"equation"}))
