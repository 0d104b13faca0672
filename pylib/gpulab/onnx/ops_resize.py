"""ONNX Resize (opset 11+; nearest, linear, cubic): the protocol's v6 `resize` op where it
says exactly this Resize (4-D, the last two axes, nearest/linear, scale = out / in), else
separable per-axis maps computed at load.

For each resized axis the sampling (coordinate_transformation_mode, nearest_mode, cubic_coeff_a,
exclude_outside, edge clamping) is worked out in Python exactly as onnx.reference's op_resize
does, giving each output position its input taps and weights. Nearest picks one tap: an
`index_select` (exact). Linear and cubic multiply by the [out, in] weight matrix along the axis
(`matmul`). tf_crop_and_resize and antialias are refused.
"""

from __future__ import annotations

import array
import math

from ..errors import GpuLabError
from ..graph import Tensor
from .ctx import NodeCtx, Op
from .ops_shape import _axis
from .values import Value

MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric")


def _source(x: int, scale: float, n_in: int, n_out: int, ctm: str) -> float:
    width = scale * n_in
    if ctm == "align_corners":
        return 0.0 if width == 1 else x * (n_in - 1) / (width - 1)
    if ctm == "asymmetric":
        return x / scale
    if ctm == "pytorch_half_pixel":
        return -0.5 if width == 1 else (x + 0.5) / scale - 0.5
    if ctm == "half_pixel":
        return (x + 0.5) / scale - 0.5
    adjustment = n_out / width  # half_pixel_symmetric
    return n_in / 2 * (1 - adjustment) + (x + 0.5) / scale - 0.5


def _coeffs(ratio: float, mode: str, nearest: str, a: float) -> list[float]:
    if mode == "nearest":
        if ratio == 1:
            return [0.0, 1.0]
        pick_right = {
            "round_prefer_floor": ratio > 0.5,
            "round_prefer_ceil": ratio >= 0.5,
            "floor": False,
            "ceil": True,
        }[nearest]
        return [0.0, 1.0] if pick_right else [1.0, 0.0]
    if mode == "linear":
        return [1 - ratio, ratio]
    r = ratio
    return [
        ((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a,
        ((a + 2) * r - (a + 3)) * r * r + 1,
        ((a + 2) * (1 - r) - (a + 3)) * (1 - r) * (1 - r) + 1,
        ((a * ((1 - r) + 1) - 5 * a) * ((1 - r) + 1) + 8 * a) * ((1 - r) + 1) - 4 * a,
    ]


def axis_taps(
    n_in: int,
    n_out: int,
    scale: float,
    mode: str,
    ctm: str,
    nearest: str,
    a: float,
    exclude_outside: bool,
) -> list[dict[int, float]]:
    """Per output position: {input index: weight}."""
    rows = []
    for x in range(n_out):
        src = _source(x, scale, n_in, n_out, ctm)
        ratio = 1.0 if float(src).is_integer() else src - math.floor(src)
        coeffs = _coeffs(ratio, mode, nearest, a)
        n = len(coeffs)
        start = (int(src) if float(src).is_integer() else math.ceil(src)) - n // 2
        idxs = list(range(start, start + n))
        if exclude_outside:
            coeffs = [0.0 if not 0 <= i < n_in else c for c, i in zip(coeffs, idxs)]
            total = sum(coeffs) or 1.0
            coeffs = [c / total for c in coeffs]
        row: dict[int, float] = {}
        for c, i in zip(coeffs, idxs):
            j = min(max(i, 0), n_in - 1)
            row[j] = row.get(j, 0.0) + c
        rows.append(row)
    return rows


def _along(t: Tensor, axis: int, fn) -> Tensor:
    """fn applied to t with `axis` moved last, moved back after."""
    if axis == t.ndim - 1:
        return fn(t)
    perm = [d for d in range(t.ndim) if d != axis] + [axis]
    back = [perm.index(d) for d in range(t.ndim)]
    return fn(t.permute(perm)).permute(back)


def _resize(cx: NodeCtx) -> list[Value]:
    if cx.opset < 11:
        raise cx.fail("Resize before opset 11 is not supported")
    x = cx.t(0)
    if x.dtype != "float32":
        raise cx.fail(f"input of type {x.dtype} (float only)")
    mode = cx.attr("mode", "nearest")
    ctm = cx.attr("coordinate_transformation_mode", "half_pixel")
    if mode not in ("nearest", "linear", "cubic"):
        raise cx.fail(f"attribute 'mode' = {mode!r}")
    if ctm not in MODES:
        raise cx.fail(f"attribute 'coordinate_transformation_mode' = {ctm!r} is not supported")
    if cx.attr("antialias", 0):
        raise cx.fail("attribute 'antialias' = 1 is not supported")
    nearest = cx.attr("nearest_mode", "round_prefer_floor")
    if nearest not in ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil"):
        raise cx.fail(f"attribute 'nearest_mode' = {nearest!r}")
    rank = x.ndim
    axes = [_axis(cx, a, rank) for a in cx.attr("axes", list(range(rank)))]
    if not axes or len(set(axes)) != len(axes):
        raise cx.invalid(f"attribute 'axes' {axes} must name distinct axes")
    shape = list(x.shape)
    scales = [1.0] * rank
    sizes = list(shape)
    if cx.has(3):
        given = cx.ints(3, "sizes", most=rank)
        if len(given) != len(axes):
            raise cx.invalid(f"sizes {given} for axes {axes}")
        for a, s in zip(axes, given):
            sizes[a] = s
            scales[a] = s / shape[a]
        policy = cx.attr("keep_aspect_ratio_policy", "stretch")
        if policy not in ("stretch", "not_larger", "not_smaller"):
            raise cx.fail(f"attribute 'keep_aspect_ratio_policy' = {policy!r}")
        if policy != "stretch":
            pick = min if policy == "not_larger" else max
            s = pick(scales[a] for a in axes)
            scales = [s if d in axes else 1.0 for d in range(rank)]
            sizes = [int(s * shape[d] + 0.5) if d in axes else shape[d] for d in range(rank)]
        what = f"sizes {given}"
    elif cx.has(2):
        given_scales = cx.floats(2, "scales", most=rank)
        if len(given_scales) != len(axes):
            raise cx.invalid(f"scales {given_scales} for axes {axes}")
        if not all(math.isfinite(s) and s > 0 for s in given_scales):
            raise cx.invalid(f"scales {given_scales} must be finite and positive")
        for a, s in zip(axes, given_scales):
            scales[a] = s
            sizes[a] = int(s * shape[a])
        what = f"scales {given_scales}"
    else:
        raise cx.invalid("neither scales nor sizes is given")
    if any(s <= 0 for s in sizes):
        raise cx.fail(f"output size {sizes}: zero-size tensors are not supported")
    cx.elements(sizes, f"the result of {what}")
    a = cx.attr("cubic_coeff_a", -0.75)
    excl = bool(cx.attr("exclude_outside", 0))
    v6 = _resize_op(cx, x, mode, ctm, nearest, excl, scales, sizes)
    if v6 is not None:
        return [v6]
    out = x
    for d in axes:
        if math.isclose(scales[d], 1.0) and sizes[d] == shape[d]:
            continue
        rows = axis_taps(shape[d], sizes[d], scales[d], mode, ctm, nearest, a, excl)
        if mode == "nearest":
            idx = cx.g.tensor([max(r, key=r.get) for r in rows], dtype="int32")
            out = out.index_select(d, idx)
            continue
        cx.elements([shape[d], sizes[d]], f"the weights of resized axis {d}")
        weights = [r.get(i, 0.0) for i in range(shape[d]) for r in rows]  # [in, out]
        w = cx.g.tensor(weights, shape=[shape[d], sizes[d]])
        out = _along(out, d, lambda t, w=w: t @ w)
        cx.macs += out.size * shape[d]
    return [out]


V6_MODES = ("half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel")


def _resize_op(
    cx: NodeCtx,
    x: Tensor,
    mode: str,
    ctm: str,
    nearest: str,
    excl: bool,
    scales: list[float],
    sizes: list[int],
) -> Tensor | None:
    """The protocol's resize op (v6: 4-D, the last two axes, as ONNX with sizes) where it says
    exactly this Resize: nearest/linear, its coordinate modes, and each scale exactly
    out / in (the op maps coordinates by out / in; ONNX by the given scale)."""
    shape = list(x.shape)
    if x.ndim != 4 or mode == "cubic" or excl or ctm not in V6_MODES:
        return None
    if sizes[:2] != shape[:2] or any(scales[d] != sizes[d] / shape[d] for d in (2, 3)):
        return None
    try:
        y = cx.g.op(
            "resize",
            a=x,
            size=[sizes[2], sizes[3]],
            mode=mode,
            coordinate_transformation_mode=ctm,
            nearest_mode=nearest,
        )
    except GpuLabError:
        return None
    return y if list(y.shape) == sizes else None


def _upsample(cx: NodeCtx) -> list[Value]:
    """Upsample (opsets 7-9, deprecated in 10): nearest with whole-number scales repeats each
    element `scale` times along its axis (onnx.reference's np.repeat), an exact index_select
    of i // scale; linear and fractional scales are refused."""
    x = cx.t(0)
    mode = cx.attr("mode", "nearest")
    if mode != "nearest":
        raise cx.fail(f"attribute 'mode' = {mode!r} is not supported (nearest)")
    if cx.opset < 9:
        scales = [float(s) for s in cx.attr("scales")]
    elif cx.has_attr("scales"):
        raise cx.invalid("attribute 'scales' is an input from opset 9 on")
    else:
        scales = cx.floats(1, "scales", most=x.ndim)
    if len(scales) != x.ndim:
        raise cx.invalid(f"{len(scales)} scales for an input of rank {x.ndim}")
    if any(not s >= 1 or not float(s).is_integer() for s in scales):
        raise cx.fail(f"scales {scales}: only whole numbers >= 1 are supported")
    whole = [int(s) for s in scales]
    cx.elements([n * s for n, s in zip(x.shape, whole)], f"the result of scales {scales}")
    out = x
    for d, s in enumerate(whole):
        if s != 1:  # each index of the axis s times over
            idx = array.array("i")
            for i in range(x.shape[d]):
                idx.extend(array.array("i", [i]) * s)
            out = out.index_select(d, cx.g.tensor(idx, dtype="int32"))
    return [out]


RESIZE_OPS: dict[str, Op] = {
    "Upsample": Op(_upsample, frozenset({"mode", "scales"}), (1,)),
    "Resize": Op(
        _resize,
        frozenset(
            {
                "mode",
                "coordinate_transformation_mode",
                "antialias",
                "nearest_mode",
                "axes",
                "keep_aspect_ratio_policy",
                "cubic_coeff_a",
                "exclude_outside",
                "extrapolation_value",
            }
        ),
        (1, 2, 3),
    ),
}
