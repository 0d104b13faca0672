"""Rounding to integers, exact for every float32 and with torch's gradient (0 everywhere).

Below 2^23 a float32 is rounded through the protocol's float32 -> int32 cast, which truncates
toward zero exactly; from 2^23 on every float32 is already an integer, and NaN and infinities
stay what they are. The value kept there is `_copy_without_gradient(x)`: x rebuilt from an
int32 mantissa and a power of two, so no float path leads from x to the result and the one
autograd gives 0 (torch's floor/ceil/trunc/round backward is zeros), not 1 for large |x|. The
sign of a zero result is torch's (trunc(-0.3) and ceil(-0.3) are -0): `x * 0` there.
"""

from __future__ import annotations

import math

from ..graph import Tensor
from .library import declare, onnx

EXACT = 2.0**23  # from here on every float32 is an integer
_HALVINGS = (64, 32, 16, 8, 4, 2, 1)  # 2^(23 + 127) > float32's largest: 7 steps reach < 2^24


def _copy_without_gradient(x: Tensor) -> Tensor:
    """x's value for |x| >= 2^23 (and +-inf, NaN) with no float path from x: |x| is scaled by
    powers of two (exact) until below 2^24, where it is an integer the int32 cast keeps; the
    scale is a product of constants picked by comparisons. Below 2^23 the value is trunc(x)."""
    g = x.graph
    s, scale = x, None
    for k in _HALVINGS:
        big = s.abs() >= 2.0 ** (23 + k)
        s = g.where(big, s * 2.0**-k, s)
        step = g.where(big, 2.0**k, 1.0)
        scale = step if scale is None else scale * step
    mantissa = s.cast("int32").cast("float32")  # |s| < 2^24: exact; the gradient path ends
    value = mantissa * scale  # x itself: representable, so the product is exact
    inf = g.where(x > 0.0, math.inf, -math.inf)
    return g.where(x.ne(x), math.nan, g.where(x.abs().eq(math.inf), inf, value))


def _signed_zero(x: Tensor, r: Tensor) -> Tensor:
    """r, with a zero result carrying x's sign (torch: trunc(-0.3) is -0.0)."""
    return x.graph.where(r.eq(0.0), x * 0.0, r)


def _small(x: Tensor) -> Tensor:
    return x.abs() < EXACT


def _trunc_small(x: Tensor) -> Tensor:
    """trunc(x) for |x| < 2^23 (any value elsewhere), through the int32 cast: no gradient."""
    return x.clamp(-EXACT, EXACT).cast("int32").cast("float32")


@declare(torch="trunc", method="trunc", aten="trunc.default")
def trunc(x: Tensor) -> Tensor:
    """Round toward zero, exact for every float32 (NaN and infinities unchanged); gradient 0."""
    r = x.graph.where(_small(x), _trunc_small(x), _copy_without_gradient(x))
    return _signed_zero(x, r)


def _floor_small(x: Tensor) -> Tensor:
    t = _trunc_small(x)
    return t - (x < t).cast("float32")


@declare(torch="floor", method="floor", aten="floor.default", onnx=onnx("Floor"))
def floor(x: Tensor) -> Tensor:
    """The largest integer <= x, exact for every float32; gradient 0."""
    r = x.graph.where(_small(x), _floor_small(x), _copy_without_gradient(x))
    return _signed_zero(x, r)


@declare(torch="ceil", method="ceil", aten="ceil.default", onnx=onnx("Ceil"))
def ceil(x: Tensor) -> Tensor:
    """The smallest integer >= x, exact for every float32; gradient 0."""
    t = _trunc_small(x)
    r = x.graph.where(_small(x), t + (x > t).cast("float32"), _copy_without_gradient(x))
    return _signed_zero(x, r)


# torch.round takes decimals=, which this does not: ONNX's Round only
@declare(onnx=onnx("Round", since=11))
def round_half_even(x: Tensor) -> Tensor:
    """Round to the nearest integer, ties to even (ONNX Round, torch.round), exact for every
    float32; gradient 0."""
    g = x.graph
    fl = _floor_small(x)
    frac = x - fl  # exact: |x| < 2^23 and fl within 1 of it
    up = fl + 1.0
    odd = (fl - _floor_small(fl * 0.5) * 2.0).eq(1.0)
    r = g.where(frac > 0.5, up, g.where(frac < 0.5, fl, g.where(odd, up, fl)))
    return _signed_zero(x, g.where(_small(x), r, _copy_without_gradient(x)))
