"""Elementwise functions that are not one protocol op, written with care for float32: log1p and
expm1 keep their relative accuracy near 0, where log(1 + x) and exp(x) - 1 lose every digit
to rounding (1 + 1e-9 is 1 in float32).

Both are a short series near 0 and the plain formula elsewhere, picked by `where`. Each branch
is evaluated at a clamped argument, so the branch `where` does not pick stays finite and its
gradient (autograd multiplies it by 0) never turns into 0 * inf = NaN.
"""

from __future__ import annotations

from ..graph import Tensor
from .library import declare

# log1p's series interval: 1 + x in (1/sqrt 2, sqrt 2), where z = x / (2 + x) has |z| < 0.1716
# and 2 atanh(z) = 2 (z + z^3/3 + ... + z^11/11) is within 2e-9 relative; outside it, log(1 + x)
# is within 3 float32 ulps (1 + x rounds by at most 2^-24 and |log(1 + x)| > 0.34)
_LOG1P_LO, _LOG1P_HI = -0.29289321881345254, 0.41421356237309515
_LOG1P_MID = (_LOG1P_LO + _LOG1P_HI) / 2
_LOG1P_HALF = (_LOG1P_HI - _LOG1P_LO) / 2

# expm1's series interval |x| < 1/2: the Taylor series to x^9/9! is within 5e-9 relative;
# outside it, exp(x) - 1 loses at most 2.5x exp's relative error to the subtraction
_EXPM1_NEAR = 0.5
_EXPM1_TERMS = 9


@declare(torch="log1p", method="log1p", aten="log1p.default")
def log1p(x: Tensor) -> Tensor:
    """log(1 + x), accurate to a few float32 ulps relative for every x > -1 (small x too)."""
    g = x.graph
    near = (x - _LOG1P_MID).abs() < _LOG1P_HALF
    xs = x.clamp(_LOG1P_LO, _LOG1P_HI)
    z = xs / (xs + 2.0)
    z2 = z * z
    poly = z2 * (1.0 / 11.0) + (1.0 / 9.0)
    for k in (7, 5, 3, 1):
        poly = poly * z2 + (1.0 / k)
    return g.where(near, z * poly * 2.0, (x + 1.0).log())


@declare(torch="expm1", method="expm1", aten="expm1.default")
def expm1(x: Tensor) -> Tensor:
    """exp(x) - 1, accurate to a few float32 ulps relative for every x (small x too)."""
    g = x.graph
    near = x.abs() < _EXPM1_NEAR
    xs = x.clamp(-_EXPM1_NEAR, _EXPM1_NEAR)
    series = xs * (1.0 / _EXPM1_TERMS) + 1.0  # Horner: x (1 + x/2 (1 + x/3 (... (1 + x/9))))
    for n in range(_EXPM1_TERMS - 1, 0, -1):
        series = series * xs * (1.0 / n) + 1.0 if n > 1 else series * xs
    return g.where(near, series, x.exp() - 1.0)
