"""Elementwise functions that are not one protocol op, written with care for float32: log1p and
expm1 keep their relative accuracy near 0, where log(1 + x) and exp(x) - 1 lose every digit
to rounding (1 + 1e-9 is 1 in float32); the hyperbolic functions are built on them, so they
keep it too (sinh(1e-8) is 1e-8, not 0; asinh(-x) is -asinh(x), not a cancellation).

Both are a short series near 0 and the plain formula elsewhere, picked by `where`. Each branch
is evaluated at a clamped argument, so the branch `where` does not pick stays finite and its
gradient (autograd multiplies it by 0) never turns into 0 * inf = NaN.
"""

from __future__ import annotations

import math

from ..graph import Tensor
from .library import declare, onnx

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


@declare(torch="sinh", method="sinh", aten="sinh.default", onnx=onnx("Sinh", since=9))
def sinh(x: Tensor) -> Tensor:
    """(e^x - e^-x) / 2, as (expm1(x) - expm1(-x)) / 2 (relative accuracy near 0 too)."""
    return (expm1(x) - expm1(-x)) * 0.5


@declare(torch="cosh", method="cosh", aten="cosh.default", onnx=onnx("Cosh", since=9))
def cosh(x: Tensor) -> Tensor:
    """(e^x + e^-x) / 2."""
    return (x.exp() + (-x).exp()) * 0.5


# past 2^62, t^2 would overflow float32: asinh(t) and acosh(t) are log(t) + log 2 there
_HUGE = 2.0**62
_LN2 = math.log(2.0)


def _log_2t(t: Tensor) -> Tensor:
    return t.maximum(_HUGE).log() + _LN2


def _asinh_nonnegative(t: Tensor) -> Tensor:
    """asinh(t) for t >= 0: log1p(t + t^2 / (1 + sqrt(1 + t^2))) (= log(t + sqrt(t^2 + 1)),
    without its cancellation near 0)."""
    tc = t.clamp(None, _HUGE)
    near = log1p(tc + tc * tc / ((tc * tc + 1.0).sqrt() + 1.0))
    return t.graph.where(t > _HUGE, _log_2t(t), near)


@declare(torch="asinh", method="asinh", aten="asinh.default", onnx=onnx("Asinh", since=9))
def asinh(x: Tensor) -> Tensor:
    """The inverse hyperbolic sine: odd by construction (each sign's branch at its own clamped
    argument), accurate to float32 ulps relative everywhere."""
    positive = _asinh_nonnegative(x.clamp(0.0, None))
    negative = _asinh_nonnegative((-x).clamp(0.0, None))
    return x.graph.where(x < 0.0, -negative, positive)


@declare(torch="acosh", method="acosh", aten="acosh.default", onnx=onnx("Acosh", since=9))
def acosh(x: Tensor) -> Tensor:
    """The inverse hyperbolic cosine (x >= 1; NaN below): log1p(t + sqrt(t (t + 2))), t = x - 1,
    accurate near 1 where log(x + sqrt(x^2 - 1)) is not."""
    t = x.clamp(None, _HUGE) - 1.0
    near = log1p(t + (t * (t + 2.0)).sqrt())
    return x.graph.where(x > _HUGE, _log_2t(x), near)


# ONNX only for now: aten's atanh backward traces to empty_permuted, which the compile table
# does not lower, so torch.compile (strict) could not take torch.atanh's gradient
@declare(onnx=onnx("Atanh", since=9))
def atanh(x: Tensor) -> Tensor:
    """The inverse hyperbolic tangent (|x| < 1; +-inf at +-1): log1p(2x / (1 - x)) / 2."""
    return log1p(x * 2.0 / (1.0 - x)) * 0.5
