"""The protocol-v6 window ops in numpy (conv2d, max_pool2d, avg_pool2d, resize), float32,
as docs/protocol.md "The v6 window ops" states them.

- conv2d: im2col + numpy's float32 matmul (BLAS) when no order can overflow or meet a
  non-finite value (class `matmul`: within tolerance, as matmul's kernel); otherwise the
  protocol's order itself, a float32 sum over (c, kh, kw) ascending, one numpy pass per tap
  (taps in the padding read zeros: w * 0, NaN for an infinite w, as torch). Then + bias.
- max_pool2d: IEEE maximum on the ordered integer keys of the words (NaN propagates, -0 < +0),
  taps outside the input never taken: exact.
- avg_pool2d: a float32 sum from 0.0 over the window's taps inside the input, ascending
  (kh, kw), then one float32 division by the count.
- resize: the source coordinate as an exact integer fraction N / D (int64 here; the validator
  bounds it to 32 bits on every lane), nearest by integer rounding, linear with float32
  weights f = float32(r) / float32(D).
"""

from __future__ import annotations

import numpy as np

from ..protocol import CheckedNode
from .kernels import F32, SAFE, register

I64 = np.int64


def _split(
    node: CheckedNode, args: list[np.ndarray]
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """conv2d's operands: the variadic bias list comes first (docs/protocol.md)."""
    if len(args) == 3:
        return args[1], args[2], args[0]
    return args[0], args[1], None


def _taps(n: int, k: int, s: int, d: int, before: int, out: int) -> tuple[np.ndarray, np.ndarray]:
    """[k, out] input positions of every tap of every window along one axis, and whether each
    lies inside the input."""
    pos = (np.arange(out, dtype=I64) * s - before)[None, :] + (np.arange(k, dtype=I64) * d)[:, None]
    return pos, (pos >= 0) & (pos < n)


def _geometry(
    node: CheckedNode, a: np.ndarray, kernel: list[int]
) -> list[tuple[np.ndarray, np.ndarray]]:
    attrs = node.attrs
    return [
        _taps(
            a.shape[2 + i],
            kernel[i],
            attrs["strides"][i],
            attrs["dilations"][i],
            attrs["padding"][i],
            node.shape[2 + i],
        )
        for i in range(2)
    ]


def _gather(a: np.ndarray, ys: np.ndarray, xs: np.ndarray) -> np.ndarray:
    """a[..., ys, xs] with positions clamped (the caller masks the outside taps)."""
    yc = np.clip(ys, 0, a.shape[2] - 1)
    xc = np.clip(xs, 0, a.shape[3] - 1)
    return a[:, :, yc[:, None], xc[None, :]]


@register("conv2d")
def _conv2d(node: CheckedNode, args: list[np.ndarray]) -> np.ndarray:
    a, w, bias = _split(node, args)
    m, _, kh, kw = w.shape
    (ys, yin), (xs, xin) = _geometry(node, a, [kh, kw])
    with np.errstate(all="ignore"):
        bound = float(np.abs(a).max(initial=0.0)) * float(
            np.abs(w.astype(np.float64)).reshape(m, -1).sum(axis=1).max(initial=0.0)
        )
        out = (
            _conv_blas(node, a, w, ys, yin, xs, xin)
            if bound < SAFE
            else (_conv_ordered(node, a, w, ys, yin, xs, xin))
        )
        if bias is not None:
            out = (out + bias[None, :, None, None]).astype(F32)
    return out


def _columns(
    a: np.ndarray, ys: np.ndarray, yin: np.ndarray, xs: np.ndarray, xin: np.ndarray
) -> np.ndarray:
    """im2col: [N, C, kH, kW, oH, oW], taps outside the input 0."""
    kh, kw = ys.shape[0], xs.shape[0]
    cols = np.empty(a.shape[:2] + (kh, kw, ys.shape[1], xs.shape[1]), dtype=F32)
    for i in range(kh):
        for j in range(kw):
            mask = yin[i][:, None] & xin[j][None, :]
            cols[:, :, i, j] = np.where(mask, _gather(a, ys[i], xs[j]), F32(0))
    return cols


def _conv_blas(
    node: CheckedNode,
    a: np.ndarray,
    w: np.ndarray,
    ys: np.ndarray,
    yin: np.ndarray,
    xs: np.ndarray,
    xin: np.ndarray,
) -> np.ndarray:
    n, groups = a.shape[0], node.attrs["groups"]
    m, cg, kh, kw = w.shape
    oh, ow = ys.shape[1], xs.shape[1]
    cols = _columns(a, ys, yin, xs, xin).reshape(n, groups, cg * kh * kw, oh * ow)
    wg = w.reshape(groups, m // groups, cg * kh * kw)
    out = np.matmul(wg[None], cols)  # [N, G, M/G, oH*oW]
    return out.reshape(n, m, oh, ow).astype(F32)


def _conv_ordered(
    node: CheckedNode,
    a: np.ndarray,
    w: np.ndarray,
    ys: np.ndarray,
    yin: np.ndarray,
    xs: np.ndarray,
    xin: np.ndarray,
) -> np.ndarray:
    """The protocol's order: acc = 0.0, then acc += w * x for (c, kh, kw) ascending, each step
    rounded to float32, taps in the padding reading zeros."""
    n, groups = a.shape[0], node.attrs["groups"]
    m, cg, kh, kw = w.shape
    oh, ow = ys.shape[1], xs.shape[1]
    xg = a.reshape(n, groups, cg, a.shape[2], a.shape[3])
    wg = w.reshape(groups, m // groups, cg, kh, kw)
    acc = np.zeros((n, groups, m // groups, oh, ow), dtype=F32)
    for c in range(cg):
        for i in range(kh):
            for j in range(kw):
                mask = yin[i][:, None] & xin[j][None, :]
                x = np.where(mask, _gather(xg[:, :, c], ys[i], xs[j]), F32(0))  # [N, G, oH, oW]
                prod = (wg[None, :, :, c, i, j, None, None] * x[:, :, None]).astype(F32)
                acc = (acc + prod).astype(F32)
    return acc.reshape(n, m, oh, ow)


def _ordered_keys(x: np.ndarray) -> np.ndarray:
    bits = x.view(np.int32)
    return bits ^ ((bits >> 31) & np.int32(0x7FFFFFFF))


@register("max_pool2d")
def _max_pool2d(node: CheckedNode, args: list[np.ndarray]) -> np.ndarray:
    a = np.ascontiguousarray(args[0])
    (ys, yin), (xs, xin) = _geometry(node, a, node.attrs["kernel"])
    keys = _ordered_keys(a)
    best = np.full(tuple(node.shape), np.iinfo(np.int32).min, dtype=np.int32)
    nan = np.zeros(tuple(node.shape), dtype=bool)
    for i in range(ys.shape[0]):
        for j in range(xs.shape[0]):
            mask = yin[i][:, None] & xin[j][None, :]
            best = np.where(mask, np.maximum(best, _gather(keys, ys[i], xs[j])), best)
            nan |= mask & np.isnan(_gather(a, ys[i], xs[j]))
    out = (best ^ ((best >> 31) & np.int32(0x7FFFFFFF))).view(F32)
    return np.where(nan, F32(np.nan), out).astype(F32)


def _counts(taps: np.ndarray, n: int, before: int, after: int, include_pad: bool) -> np.ndarray:
    """Per window along one axis: its taps inside the input, or inside the padded input."""
    inside = (taps >= -before) & (taps < n + after) if include_pad else (taps >= 0) & (taps < n)
    return inside.sum(axis=0)


@register("avg_pool2d")
def _avg_pool2d(node: CheckedNode, args: list[np.ndarray]) -> np.ndarray:
    a = args[0]
    attrs = node.attrs
    (ys, yin), (xs, xin) = _geometry(node, a, attrs["kernel"])
    acc = np.zeros(tuple(node.shape), dtype=F32)
    with np.errstate(all="ignore"):
        for i in range(ys.shape[0]):
            for j in range(xs.shape[0]):
                mask = yin[i][:, None] & xin[j][None, :]
                acc = (acc + np.where(mask, _gather(a, ys[i], xs[j]), F32(0))).astype(F32)
        pad, include = attrs["padding"], attrs["count_include_pad"]
        cy = _counts(ys, a.shape[2], pad[0], pad[2], include)
        cx = _counts(xs, a.shape[3], pad[1], pad[3], include)
        count = (cy[:, None] * cx[None, :]).astype(F32)
        return (acc / count).astype(F32)


def source_fraction(mode: str, n_in: int, n_out: int) -> tuple[np.ndarray, np.ndarray]:
    """Per output index along one axis, the source coordinate as an exact fraction num / den
    (docs/protocol.md "resize"): int64 numerators, a common denominator."""
    x = np.arange(n_out, dtype=I64)
    if mode == "asymmetric":
        return x * n_in, np.full_like(x, n_out)
    if mode == "align_corners" or (mode == "pytorch_half_pixel" and n_out == 1):
        if n_out == 1:
            return np.zeros_like(x), np.ones_like(x)
        return x * (n_in - 1), np.full_like(x, n_out - 1)
    return (2 * x + 1) * n_in - n_out, np.full_like(x, 2 * n_out)  # half_pixel


def nearest_index(num: np.ndarray, den: np.ndarray, rounding: str, n_in: int) -> np.ndarray:
    """nearest_mode's integer rounding of num / den, clamped to 0..n_in-1."""
    if rounding == "floor":
        i = num // den
    elif rounding == "ceil":
        i = -((-num) // den)
    elif rounding == "round_prefer_ceil":
        i = (2 * num + den) // (2 * den)
    else:  # round_prefer_floor: ceil(num / den - 1/2)
        i = -((den - 2 * num) // (2 * den))
    return np.clip(i, 0, n_in - 1)


def linear_taps(
    num: np.ndarray, den: np.ndarray, n_in: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(i0, i1, w0, w1): the two source indices (clamped to the edge) and their float32
    weights w1 = float32(r) / float32(den), w0 = 1 - w1."""
    i0 = num // den
    w1 = ((num - i0 * den).astype(F32) / den.astype(F32)).astype(F32)
    w0 = (F32(1) - w1).astype(F32)
    return np.clip(i0, 0, n_in - 1), np.clip(i0 + 1, 0, n_in - 1), w0, w1


@register("resize")
def _resize(node: CheckedNode, args: list[np.ndarray]) -> np.ndarray:
    a = args[0]
    attrs = node.attrs
    h, w = a.shape[2], a.shape[3]
    oh, ow = attrs["size"]
    mode = attrs["coordinate_transformation_mode"]
    fy, fx = source_fraction(mode, h, oh), source_fraction(mode, w, ow)
    if attrs["mode"] == "nearest":
        iy = nearest_index(*fy, attrs["nearest_mode"], h)
        ix = nearest_index(*fx, attrs["nearest_mode"], w)
        return np.ascontiguousarray(a[:, :, iy[:, None], ix[None, :]])
    y0, y1, wy0, wy1 = linear_taps(*fy, h)
    x0, x1, wx0, wx1 = linear_taps(*fx, w)
    with np.errstate(all="ignore"):

        def row(yi: np.ndarray) -> np.ndarray:  # along W first: w0 * v0 + w1 * v1
            left = (a[:, :, yi[:, None], x0[None, :]] * wx0).astype(F32)
            right = (a[:, :, yi[:, None], x1[None, :]] * wx1).astype(F32)
            return (left + right).astype(F32)

        top = (row(y0) * wy0[:, None]).astype(F32)
        bottom = (row(y1) * wy1[:, None]).astype(F32)
        return (top + bottom).astype(F32)
