"""Elementwise ONNX operators: arithmetic, activations, comparisons, logic, Cast, Clip, Where.

Integers: the protocol's add/sub/mul/div are float32 ops, so int32 arithmetic is computed in
float32 and cast back (exact while every operand and result is below 2^24 in magnitude;
docs/onnx.md). Integer constants fold at load (fold.py) with Python's exact integers.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ..graph import Tensor
from .ctx import NodeCtx, Op
from .fold import elementwise, foldable
from .values import HELD_DTYPES, ONNX_DTYPES, Const, Value, dtype_of


def f32(t: Tensor) -> Tensor:
    return t if t.dtype == "float32" else t.cast("float32")


def as_dtype(t: Tensor, dtype: str) -> Tensor:
    return t if t.dtype == dtype else t.cast(dtype)


def same_dtypes(cx: NodeCtx, n: int) -> str:
    dtypes = {cx.dtype(i) for i in range(n) if cx.has(i)}
    if len(dtypes) > 1:
        raise cx.invalid(f"inputs of different types {sorted(dtypes)}")
    return dtypes.pop()


# -- binary arithmetic ------------------------------------------------------------------------


def _int_div(a: int, b: int) -> int:
    if b == 0:
        return 0
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


_PY = {
    "Add": lambda a, b: a + b,
    "Sub": lambda a, b: a - b,
    "Mul": lambda a, b: a * b,
    "Div": _int_div,
}


def _float_div(a: float, b: float) -> float:
    if b == 0:
        if a == 0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


# float32 constants fold in float64 and round once: for + - * / of float32 operands that is
# the correctly rounded float32 result (53 >= 2 * 24 + 2 bits), the device's bits
_PY_FLOAT = {**_PY, "Div": _float_div}


def _binary(op: str, fn: Callable[[Tensor, Tensor], Tensor]) -> Op:
    def lower(cx: NodeCtx) -> list[Value]:
        if cx.opset < 7 and (cx.has_attr("broadcast") or cx.has_attr("axis")):
            raise cx.fail("legacy broadcast attributes are not supported")
        dtype = same_dtypes(cx, 2)
        a, b = cx.v(0), cx.v(1)
        if dtype == "float32" and foldable(a, b):
            return [elementwise([a, b], _PY_FLOAT[op], "float32")]
        if dtype != "float32" and foldable(a, b) and dtype != "bool":
            return [elementwise([a, b], _PY[op], a.dtype if a.dtype == b.dtype else "int32")]
        if dtype == "bool":
            raise cx.fail("bool arithmetic is not supported")
        ta, tb = cx.t(0), cx.t(1)
        if dtype == "float32":
            return [fn(ta, tb)]
        return [fn(f32(ta), f32(tb)).cast("int32")]

    return Op(lower)


def _variadic(op: str) -> Op:
    """Sum, Mean, Max, Min over 1..n broadcast inputs."""

    def lower(cx: NodeCtx) -> list[Value]:
        dtype = same_dtypes(cx, cx.n_inputs)
        vals = [cx.v(i) for i in range(cx.n_inputs) if cx.has(i)]
        if op in ("Max", "Min") and dtype != "float32" and foldable(*vals):
            pick = max if op == "Max" else min
            kind = "int64" if any(v.dtype == "int64" for v in vals) else vals[0].dtype
            return [elementwise(vals, lambda *xs: pick(xs), kind)]
        ts = [cx.t(i) for i in range(cx.n_inputs) if cx.has(i)]
        if op in ("Max", "Min"):
            name = "maximum" if op == "Max" else "minimum"
            out = ts[0]
            for t in ts[1:]:
                out = cx.g.op(name, a=out, b=t)
            return [out]
        fs = [f32(t) for t in ts]
        out = fs[0]
        for t in fs[1:]:
            out = out + t
        if op == "Mean":
            out = out / float(len(fs))
        if len(fs) == 1 and op == "Sum":
            out = out * 1.0
        return [out if dtype == "float32" else out.cast(dtype)]

    return Op(lower)


# -- unary ------------------------------------------------------------------------------------


def _unary(
    fn: Callable[[Tensor, NodeCtx], Tensor], attrs: tuple[str, ...] = (), ints: bool = False
) -> Op:
    def lower(cx: NodeCtx) -> list[Value]:
        v = cx.v(0)
        if ints and v.dtype in ("int32", "int64") and foldable(v) and fn in _INT_FOLDS:
            return [elementwise([v], _INT_FOLDS[fn], v.dtype)]
        t = cx.t(0)
        if t.dtype != "float32" and not ints:
            raise cx.fail(f"input of type {t.dtype} is not supported (float only)")
        return [fn(t, cx)]

    return Op(lower, frozenset(attrs))


def _abs(t: Tensor, cx: NodeCtx) -> Tensor:
    return abs(t)


def _neg(t: Tensor, cx: NodeCtx) -> Tensor:
    return -t if t.dtype == "float32" else (-f32(t)).cast(t.dtype)


_INT_FOLDS: dict = {_abs: abs, _neg: lambda x: -x}


def _sign(t: Tensor, cx: NodeCtx) -> Tensor:
    g = t.graph
    x = f32(t)
    out = g.where(x > 0.0, 1.0, g.where(x < 0.0, -1.0, x * 0.0))
    return out if t.dtype == "float32" else out.cast(t.dtype)


def _reciprocal(t: Tensor, cx: NodeCtx) -> Tensor:
    return 1.0 / t


def _not(cx: NodeCtx) -> list[Value]:
    t = cx.t(0)
    if t.dtype != "bool":
        raise cx.fail(f"input of type {t.dtype} (Not takes bool)")
    return [t.cast("int32").eq(cx.g.tensor(0, dtype="int32"))]


def _logic(op: str) -> Op:
    def lower(cx: NodeCtx) -> list[Value]:
        a, b = cx.t(0).cast("int32"), cx.t(1).cast("int32")
        if op == "And":
            return [cx.g.op("minimum", a=a, b=b).cast("bool")]
        if op == "Or":
            return [cx.g.op("maximum", a=a, b=b).cast("bool")]
        return [a.ne(b)]

    return Op(lower)


def _compare(name: str, fold_fn: Callable[[object, object], bool]) -> Op:
    def lower(cx: NodeCtx) -> list[Value]:
        dtype = same_dtypes(cx, 2)
        a, b = cx.v(0), cx.v(1)
        if dtype != "float32" and foldable(a, b):
            return [elementwise([a, b], fold_fn, "bool")]
        ta, tb = cx.t(0), cx.t(1)
        if dtype == "bool":
            ta, tb = ta.cast("int32"), tb.cast("int32")
        return [cx.g.op(name, a=ta, b=tb)]

    return Op(lower)


def _where(cx: NodeCtx) -> list[Value]:
    dtype = cx.dtype(1)
    if cx.dtype(2) != dtype:
        raise cx.invalid(f"X and Y of different types {dtype} and {cx.dtype(2)}")
    vals = [cx.v(i) for i in range(3)]
    if foldable(*vals):  # a shape computed over constants (Where(Equal(s, -1), 1, s)) folds
        same = vals[1].dtype == vals[2].dtype  # int64 stays int64 while folded (as Add's fold)
        out_dtype = vals[1].dtype if same else dtype
        return [elementwise(vals, lambda c, x, y: x if c else y, out_dtype)]
    cond, a, b = cx.t(0), cx.t(1), cx.t(2)
    if dtype == "bool":
        return [cx.g.where(cond, a.cast("int32"), b.cast("int32")).cast("bool")]
    return [cx.g.where(cond, a, b)]


def _cast_to(cx: NodeCtx, to: int) -> list[Value]:
    dtype = ONNX_DTYPES.get(to) or (HELD_DTYPES.get(to) if cx.hold else None)
    if dtype is None:
        from .proto import DATA_TYPES

        raise cx.fail(
            f"attribute 'to' = {DATA_TYPES.get(to, to)} is not supported "
            f"(FLOAT, INT32, INT64, BOOL)"
        )
    v = cx.v(0)
    if isinstance(v, Const) and foldable(v):
        return [elementwise([v], _caster(dtype, v.dtype), "int64" if to == 7 else dtype)]
    t = cx.t(0)
    return [t if t.dtype == dtype else t.cast(dtype)]


def _caster(dtype: str, source: str) -> Callable[[object], object]:
    """A folded Cast's conversion, as the cast op does it: float -> int truncates, saturating,
    NaN -> 0; to bool: nonzero."""
    if dtype == "bool":
        return lambda x: x != 0
    if dtype == "float32":
        return float
    if source != "float32":
        return int

    def to_int(x: float) -> int:
        if math.isnan(x):
            return 0
        if math.isinf(x):
            return 2**31 - 1 if x > 0 else -(2**31)
        return max(-(2**31), min(2**31 - 1, int(x)))

    return to_int


def _cast(cx: NodeCtx) -> list[Value]:
    if cx.attr("saturate", 1) != 1:
        raise cx.fail("attribute 'saturate' = 0 is not supported")
    return _cast_to(cx, cx.attr("to"))


def _cast_like(cx: NodeCtx) -> list[Value]:
    if cx.attr("saturate", 1) != 1:
        raise cx.fail("attribute 'saturate' = 0 is not supported")
    target = dtype_of(cx.v(1))
    t = cx.t(0)
    return [t if t.dtype == target else t.cast(target)]


def _clip(cx: NodeCtx) -> list[Value]:
    t = cx.t(0)
    if cx.opset < 11:
        lo, hi = cx.attr("min", -3.4028234663852886e38), cx.attr("max", 3.4028234663852886e38)
        return [t.clamp(lo, hi)]
    bounds: list[float | None] = [None, None]
    out = t
    for k, i in enumerate((1, 2)):
        if not cx.has(i):
            continue
        v = cx.v(i)
        if isinstance(v, Const):
            if v.size != 1:
                raise cx.invalid(f"input {i} must hold one value")
            bounds[k] = float(v.data[0])
        else:
            out = cx.g.op("maximum" if k == 0 else "minimum", a=out, b=cx.t(i).reshape([]))
    if bounds != [None, None]:
        out = out.clamp(bounds[0], bounds[1])
    if out is t:
        out = t.clamp(None, None)
    return [out]


def _prelu(cx: NodeCtx) -> list[Value]:
    x, slope = cx.t(0), cx.t(1)
    if cx.opset < 7:
        raise cx.fail("opset < 7 PRelu")
    return [cx.g.where(x < 0.0, x * slope, x)]


def _isnan(cx: NodeCtx) -> list[Value]:
    t = cx.t(0)
    return [t.ne(t)]


def _isinf(cx: NodeCtx) -> list[Value]:
    t = cx.t(0)
    pos, neg = cx.attr("detect_positive", 1), cx.attr("detect_negative", 1)
    if pos and neg:
        return [abs(t).eq(math.inf)]
    if pos:
        return [t.eq(math.inf)]
    if neg:
        return [t.eq(-math.inf)]
    return [t.eq(cx.g.full([], math.nan))]  # nothing is detected: NaN equals nothing


def _binary_float(fn: Callable[[Tensor, Tensor], Tensor]) -> Op:
    def lower(cx: NodeCtx) -> list[Value]:
        a, b = cx.t(0), cx.t(1)
        if a.dtype != "float32" or b.dtype != "float32":
            raise cx.fail("float inputs only")
        return [fn(a, b)]

    return Op(lower)


def _trunc(x: Tensor) -> Tensor:
    """Round toward zero (float32, |x| < 2^31: through an int32 cast)."""
    return x.cast("int32").cast("float32")


def _floor(x: Tensor) -> Tensor:
    t = _trunc(x)
    return t - (x < t).cast("float32")


def _py_mod(fmod: int):
    def fn(a, b):
        if b == 0:
            return 0
        return int(math.fmod(a, b)) if fmod else a % b

    return fn


def _mod(cx: NodeCtx) -> list[Value]:
    fmod = cx.attr("fmod", 0)
    dtype = same_dtypes(cx, 2)
    a, b = cx.v(0), cx.v(1)
    if dtype == "float32" and not fmod:
        raise cx.invalid("fmod = 0 with float inputs (ONNX requires fmod = 1)")
    if dtype == "int32" and foldable(a, b):
        return [elementwise([a, b], _py_mod(fmod), a.dtype if a.dtype == b.dtype else "int32")]
    if dtype == "bool":
        raise cx.fail("bool inputs")
    x, y = f32(cx.t(0)), f32(cx.t(1))
    q = x / y
    r = x - (_trunc(q) if fmod else _floor(q)) * y
    return [r if dtype == "float32" else r.cast("int32")]


MATH_OPS: dict[str, Op] = {
    "Add": _binary("Add", lambda a, b: a + b),
    "Sub": _binary("Sub", lambda a, b: a - b),
    "Mul": _binary("Mul", lambda a, b: a * b),
    "Div": _binary("Div", lambda a, b: a / b),
    "Sum": _variadic("Sum"),
    "Mean": _variadic("Mean"),
    "Max": _variadic("Max"),
    "Min": _variadic("Min"),
    "Abs": _unary(_abs, ints=True),
    "Neg": _unary(_neg, ints=True),
    "Sign": _unary(_sign, ints=True),
    "Exp": _unary(lambda t, cx: t.exp()),
    "Log": _unary(lambda t, cx: t.log()),
    "Sqrt": _unary(lambda t, cx: t.sqrt()),
    "Reciprocal": _unary(_reciprocal),
    "PRelu": Op(_prelu),
    "Not": Op(_not),
    "And": _logic("And"),
    "Or": _logic("Or"),
    "Xor": _logic("Xor"),
    "Equal": _compare("eq", lambda a, b: a == b),
    "Less": _compare("lt", lambda a, b: a < b),
    "Greater": _compare("gt", lambda a, b: a > b),
    "LessOrEqual": _compare("le", lambda a, b: a <= b),
    "GreaterOrEqual": _compare("ge", lambda a, b: a >= b),
    "Where": Op(_where),
    "Mod": Op(_mod, frozenset({"fmod"})),
    "Cast": Op(_cast, frozenset({"to", "saturate"})),
    "CastLike": Op(_cast_like, frozenset({"saturate"})),
    "Clip": Op(_clip, frozenset({"min", "max"})),
    "IsNaN": Op(_isnan),
    "IsInf": Op(_isinf, frozenset({"detect_positive", "detect_negative"})),
}


# -- rounding, powers and trigonometry as composites ------------------------------------------


def _rounded(t: Tensor, kind: str) -> Tensor:
    """floor / ceil / round-half-even of float32 t: the op library's (exact for every value)."""
    from .. import functional as F

    return {"floor": F.floor, "ceil": F.ceil, "round": F.round_half_even}[kind](t)


def _floor_exact(t: Tensor) -> Tensor:
    tr = _trunc(t)
    return tr - (t < tr).cast("float32")


def _pow(cx: NodeCtx) -> list[Value]:
    g = cx.g
    base, expo = cx.t(0), cx.t(1)
    out_dtype = base.dtype
    if out_dtype == "bool" or expo.dtype == "bool":
        raise cx.fail("bool inputs")
    x, y = f32(base), f32(expo)
    v = cx.v(1)
    if isinstance(v, Const) and v.size == 1 and float(v.data[0]) in (1.0, 2.0, 3.0, 0.5):
        k = float(v.data[0])
        r = {1.0: x * 1.0, 2.0: x * x, 3.0: x * x * x}.get(k) if k != 0.5 else x.sqrt()
    else:
        mag = (y * abs(x).log()).exp()
        integral = _floor_exact(y).eq(y)
        odd = (y - _floor_exact(y * 0.5) * 2.0).eq(1.0)
        signed = g.where(odd, -mag, mag)
        neg = g.where(integral, signed, g.full([], math.nan))
        r = g.where(x < 0.0, neg, mag)
        r = g.where(y.eq(0.0), 1.0, r)
    return [r if out_dtype == "float32" else r.cast(out_dtype)]


def _sin_reduced(x: Tensor) -> Tensor:
    """sin(x): x reduced by multiples of 2 pi to [-pi, pi], folded to [-pi/2, pi/2], then the
    Taylor series to x^15 (error below 1e-11 there)."""
    g = x.graph
    two_pi = 2.0 * math.pi
    k = _floor_exact(x * (1.0 / two_pi) + 0.5)
    r = x - k * two_pi
    r = g.where(r > math.pi / 2, math.pi - r, g.where(r < -math.pi / 2, -math.pi - r, r))
    r2 = r * r
    term, total = r, r
    for n in range(1, 8):
        term = term * r2 * (-1.0 / ((2 * n) * (2 * n + 1)))
        total = total + term
    return total


def _trig(kind: str) -> Op:
    def lower(cx: NodeCtx) -> list[Value]:
        x = cx.t(0)
        if x.dtype != "float32":
            raise cx.fail(f"input of type {x.dtype} (float only)")
        if kind == "sin":
            return [_sin_reduced(x)]
        cos = _sin_reduced(x + math.pi / 2)
        if kind == "cos":
            return [cos]
        return [_sin_reduced(x) / cos]

    return Op(lower)


_TAN_PI_8 = math.sqrt(2.0) - 1.0


def _atan_unit(r: Tensor) -> Tensor:
    """atan(r) for r in [0, 1]: past tan(pi/8), pi/4 + atan((r - 1) / (r + 1)) brings the
    argument to [-tan(pi/8), tan(pi/8)], where the Taylor series to u^15 is within 5e-8
    relative (u^2 <= 0.172)."""
    g = r.graph
    big = r > _TAN_PI_8
    u = g.where(big, (r - 1.0) / (r + 1.0), r)
    u2 = u * u
    poly = u2 * (-1.0 / 15.0) + (1.0 / 13.0)
    for n in range(5, -1, -1):
        poly = poly * u2 + ((-1.0) ** n / (2 * n + 1))
    return poly * u + g.where(big, math.pi / 4, 0.0)


def _atan2_first(y: Tensor, x: Tensor | float) -> Tensor:
    """atan2(y, x) for y, x >= 0 (not both 0), in [0, pi/2]: the smaller over the larger, so
    no division by zero and no infinity (x = 0 gives pi/2)."""
    g = y.graph
    swap = y > x
    hi, lo = g.where(swap, y, x), g.where(swap, x, y)
    theta = _atan_unit(lo / hi)
    return g.where(swap, math.pi / 2 - theta, theta)


def _inverse_trig(kind: str) -> Op:
    """Atan, Asin, Acos through atan2 of the first quadrant: asin(x) = atan2(x, sqrt(1 - x^2))
    and acos(x) = atan2(sqrt(1 - x^2), x), with 1 - x^2 as (1 - x)(1 + x) for accuracy
    near |x| = 1; |x| > 1 gives NaN as ONNX does."""

    def lower(cx: NodeCtx) -> list[Value]:
        x = cx.t(0)
        if x.dtype != "float32":
            raise cx.fail(f"input of type {x.dtype} (float only)")
        g, a = cx.g, abs(x)
        if kind == "atan":
            theta = _atan2_first(a, 1.0)
            return [g.where(x < 0.0, -theta, theta)]
        c = ((1.0 - a) * (1.0 + a)).maximum(0.0).sqrt()
        if kind == "asin":
            theta = _atan2_first(a, c)
            out = g.where(x < 0.0, -theta, theta)
        else:
            theta = _atan2_first(c, a)
            out = g.where(x < 0.0, math.pi - theta, theta)
        return [g.where(a > 1.0, g.full([], math.nan), out)]

    return Op(lower)


def _erf(cx: NodeCtx) -> list[Value]:
    from .. import functional as F

    x = cx.t(0)
    if x.dtype != "float32":
        raise cx.fail(f"input of type {x.dtype} (float only)")
    return [F.erf(x)]


MATH_OPS.update(
    {
        "Pow": Op(_pow),
        "Sin": _trig("sin"),
        "Cos": _trig("cos"),
        "Tan": _trig("tan"),
        "Atan": _inverse_trig("atan"),
        "Asin": _inverse_trig("asin"),
        "Acos": _inverse_trig("acos"),
        "Erf": Op(_erf),
    }
)
