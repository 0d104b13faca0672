"""An independent float64 evaluator of the graph protocol, with an error scale per element.

Deliberately shares no code with gpulab (whose evaluator is one of the things under test): it
reads the op table only for attribute defaults. Every tensor is stored as float32 (inputs,
attribute floats and every node's result are float32 values) and every op is computed in
float64 from those float32 values, which is what "the float64 reference" means in
docs/protocol.md "Tolerances".

Besides the value, the reduction / matmul / optimizer / softmax-family ops return `scale`, the
magnitude that float32 rounding inside the op is proportional to (the tolerance allows
`scale_eps * eps32 * scale` on top of `ulps * ulp32(ref)`):

- sum: sum of |x| over the reduced elements times max(1, c / 8), c = ceil(n / 64) + 6 the
  longest chain of additions of the 64-lane order (with scale_eps 4 the bound is then never
  below the worst case c * eps32 / 2 * sum |x|); mean: that divided by the count.
- matmul: |A| @ |B| times max(1, K / 8) (K sequential additions, the same argument).
- softmax: out * (|z| + L), z = a - max, L = ceil(n / 64) + 6 the longest addition chain of the
  protocol's 64-lane sum (vendor exp error grows with |z|, the sum's rounding with L).
- log_softmax: |z| + |log S| + L (an absolute error: z and log S are subtracted).
- cross_entropy: mean over rows of sum_c |b| * (|log_softmax| + its scale), times the chain
  factor of the sum over the N rows.
- cross_entropy_grad: (softmax scale + |b|) / N.
- sgd/momentum: the sum of |terms| of the update formula.
- adam_m/adam_v: the sum of |terms| plus beta * (|a| + |b|) (resp. |b|^2): the protocol does not
  say whether float attributes are used as float32 or float64, and 1 - beta cancels.
- adam_update: |a| + |u| * (4 + t * (b1^t / (1 - b1^t) + b2^t / (1 - b2^t))), u the step: the
  bias corrections 1 - beta^t cancel, which multiplies the rounding of beta^t by that ratio.
- exp, sigmoid, tanh, gelu, gelu_grad (transcendental): the result's change for a relative
  error of |x| * eps in their inner exp(x): exp |y a|, sigmoid |y (1 - y) a|, tanh
  |(1 - y^2) a|, gelu |a| Phi(-|a|) a^2 / 2, gelu_grad |b| (Phi(-|a|) + |a| phi(a)) a^2 / 2
  (WGSL's exp is only 3 + 2|x| ULP accurate: x * log2(e) is rounded before exp2). The
  transcendental class has scale_eps 0 in ops.json today (our WGSL computes its own exp to
  < 1 ulp), so this scale only matters if that class is loosened for vendor exp.
Other ops have scale 0 (their classes have scale_eps 0).

Protocol-v3 ops (abs, square, clamp, reduce_max, reduce_min, argmax, argmin), for T in
{float32, int32}, all `exact`:

- int32 arithmetic wraps (two's complement): abs(-2^31) = -2^31, square wraps modulo 2^32.
- float abs clears the sign bit (abs(-0) = +0); square is x * x rounded once.
- clamp(x) = min(max(x, lo), hi) written as comparisons: y = x < lo ? lo : x; then
  y > hi ? hi : y. So NaN stays NaN, a value equal to a bound is kept (clamp(-0, min=0) = -0)
  and lo > hi gives hi everywhere (as torch). A null bound is no bound. For int32 the bounds
  (float32 values) become ceil(min) and floor(max), saturated to the int32 range.
- reduce_max / reduce_min are IEEE 754-2019 maximum / minimum: any NaN gives NaN, and -0 < +0
  (the max of {-0, +0} is +0, the min is -0), a total order, so every reduction order gives the
  same bits.
- argmax / argmin (int32 result): the first NaN if there is one (as numpy), else the first index
  whose value equals the max / min (-0 and +0 are equal: a tie, the first wins). axis null
  indexes the flattened tensor.

Game of Life: the 8 neighbour offsets are taken modulo the grid size, so on a grid with fewer
than 3 rows or columns a cell is counted once per offset that reaches it (itself included).
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from .layout import OPS_JSON  # backends-js/src/ops.json, in the tree or the wheel

OP_TABLE: dict = json.loads(OPS_JSON.read_text())
REDUCE_LANES: int = OP_TABLE["reduce_lanes"]
NONFINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


@dataclass
class NodeRef:
    """The reference of one node: float64 value and the per-element error scale."""

    value: np.ndarray
    scale: np.ndarray
    bits: np.ndarray | None = None  # float32 result every backend must give bit for bit (sum)
    dtype: str = "float32"  # the node's result dtype; int32 values are held exactly in float64


INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
_WIRE = {"float32": "<f4", "int32": "<i4", "uint32": "<u4", "bool": "u1"}


def decode_values(
    data: Sequence[float | str] | np.ndarray | Mapping, dtype: str = "float32"
) -> np.ndarray:
    """Protocol data (numbers or "nan"/"inf"/"-inf", or {"base64": little-endian bytes}):
    float32 values held in float64, integer dtypes as int64 (both exact)."""
    if isinstance(data, Mapping):
        raw = np.frombuffer(base64.b64decode(data["base64"]), dtype=_WIRE[dtype])
        return raw.astype(np.float64 if dtype == "float32" else np.int64)
    if dtype != "float32":
        return np.asarray(data, dtype=np.int64)
    if isinstance(data, np.ndarray):
        return data.astype(np.float32).astype(np.float64)
    flat = [NONFINITE[v] if isinstance(v, str) else v for v in data]
    return np.asarray(flat, dtype=np.float64).astype(np.float32).astype(np.float64)


def wrap32(x: np.ndarray) -> np.ndarray:
    """Integers (int64) wrapped to int32 as two's complement does."""
    as_int = np.asarray(x).astype(np.int64)
    return (as_int - INT32_MIN) % 2**32 + INT32_MIN


def result_dtype(node: Mapping, operand_dtypes: list[str]) -> str:
    """The node's dtype by the op table's result_type (a type variable, a dtype, attr:dtype)."""
    spec = OP_TABLE["ops"][node["op"]]
    rule = spec["result_type"]
    if rule.startswith("attr:"):
        return str(node.get(rule[5:], spec["attrs"][rule[5:]].get("default")))
    if rule in spec.get("types", {}):
        if spec.get("variadic") and spec["operand_types"].get(spec["variadic"]) == rule:
            return operand_dtypes[0]  # the variadic list comes first, bound to the variable
        for name, dtype in zip(spec["operands"], operand_dtypes, strict=True):
            if spec["operand_types"].get(name) == rule:
                return dtype
    return rule


def f32(x: float | np.ndarray) -> np.ndarray:
    """Round to float32 storage, keep computing in float64 (overflow gives inf, as in float32)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(x, dtype=np.float64).astype(np.float32).astype(np.float64)


def _attr(node: Mapping, name: str) -> object:
    spec = OP_TABLE["ops"][node["op"]]["attrs"][name]
    return node.get(name, spec.get("default"))


def _float_attr(node: Mapping, name: str) -> float:
    value = _attr(node, name)
    if isinstance(value, str):
        value = NONFINITE[value]
    return float(f32(float(value)))  # type: ignore[arg-type]


def _dims(values: Sequence[float]) -> list[int]:
    """Integer fields may be written as floats with no fraction (docs/protocol.md)."""
    return [int(v) for v in values]


def _zeros(x: np.ndarray) -> np.ndarray:
    return np.zeros(np.shape(x))


def _norm_axis(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


def _lane_chain(n: int) -> int:
    """Longest chain of float additions in the protocol's 64-lane reduction of n values."""
    return math.ceil(n / REDUCE_LANES) + int(math.log2(REDUCE_LANES))


def _chain_factor(additions: int) -> float:
    """max(1, c / 8): with scale_eps 4, 4 * eps32 * c / 8 = c * eps32 / 2 is the classical
    worst-case error of c chained float32 additions, per unit of sum |terms|."""
    return max(1.0, additions / 8)


Kernel = Callable[[Mapping, list[np.ndarray]], tuple[np.ndarray, np.ndarray]]
KERNELS: dict[str, Kernel] = {}


def kernel(*names: str) -> Callable[[Kernel], Kernel]:
    """Register a reference kernel under one or more op names."""

    def register(fn: Kernel) -> Kernel:
        for name in names:
            KERNELS[name] = fn
        return fn

    return register


# ---- sources --------------------------------------------------------------------------------


@kernel("input")
def _input(node: Mapping, _: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    if "data" not in node:
        raise ValueError(f"node {node['id']} (input) has no data: the reference needs values")
    dtype = str(node.get("dtype", "float32"))
    if dtype in BLOCK_BYTES:  # its decoded values [N, K] (exact float32 values)
        n, k = _dims(node["shape"])
        raw = np.frombuffer(base64.b64decode(node["data"]["base64"]), dtype=np.uint8)
        blocks = raw.astype(np.int64).reshape(n, k // BLOCK_VALUES[dtype], BLOCK_BYTES[dtype])
        value = decode_blocks(blocks, dtype)
        return value, _zeros(value)
    value = decode_values(node["data"], dtype)
    value = value.reshape(_dims(node["shape"]))
    return value, _zeros(value)


@kernel("full")
def _full(node: Mapping, _: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    value = np.full(_dims(node["shape"]), _float_attr(node, "value"), dtype=np.float64)
    return value, _zeros(value)


# ---- elementwise ----------------------------------------------------------------------------

_BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
}


@kernel(*_BINARY)
def _binary(node: Mapping, ops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    value = _BINARY[node["op"]](ops[0], ops[1])
    return value, _zeros(value)


def _erfc(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erfc, otypes=[np.float64])(x)


def _gelu(a: np.ndarray) -> np.ndarray:
    # erfc keeps the relative accuracy for very negative a, where 1 + erf(a) cancels.
    # gelu(-inf) = -0, the limit of a Phi(a) (docs/protocol.md "Numerics"), not -inf * 0.
    return np.where(a == -math.inf, -0.0, 0.5 * a * _erfc(-a / math.sqrt(2.0)))


def _gelu_deriv(a: np.ndarray) -> np.ndarray:
    # gelu'(+-inf) = 1 / +0, the limits: a phi(a) is 0 there, not inf * 0.
    return 0.5 * _erfc(-a / math.sqrt(2.0)) + np.where(np.isinf(a), 0.0, a * _pdf(a))


_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "relu": lambda a: np.where(a > 0, a, 0.0),
    "positive": lambda a: np.where(a > 0, 1.0, 0.0),
    "neg": np.negative,
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "tanh": np.tanh,
    "sigmoid": lambda a: 1.0 / (1.0 + np.exp(-a)),
    "gelu": _gelu,
}


def _tail(a: np.ndarray) -> np.ndarray:
    """Phi(-|a|), the part of the normal CDF an erf/exp implementation computes from exp."""
    return 0.5 * _erfc(np.abs(a) / math.sqrt(2.0))


def _pdf(a: np.ndarray) -> np.ndarray:
    return np.exp(-0.5 * a * a) / math.sqrt(2.0 * math.pi)


# Scale of the exp-based ops: the result's sensitivity to a relative error |x| * eps in an
# inner exp(x) (WGSL allows exp 3 + 2|x| ULP: x * log2(e) is rounded before exp2).
_EXP_SCALE: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "exp": lambda a, y: np.abs(y * a),
    "sigmoid": lambda a, y: np.abs(y * (1 - y) * a),
    "tanh": lambda a, y: np.abs((1 - y * y) * a),
    "gelu": lambda a, y: np.abs(a) * _tail(a) * 0.5 * a * a,
}


@kernel(*_UNARY)
def _unary(node: Mapping, ops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    value = np.asarray(_UNARY[node["op"]](ops[0]), dtype=np.float64)
    scale = _EXP_SCALE.get(node["op"])
    return value, (scale(ops[0], value) if scale else _zeros(value))


@kernel("gelu_grad")
def _gelu_grad(_: Mapping, ops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    a, b = ops
    value = b * _gelu_deriv(a)
    return value, np.abs(b) * (_tail(a) + np.abs(a) * _pdf(a)) * 0.5 * a * a


# ---- layout ---------------------------------------------------------------------------------


@kernel("transpose")
def _transpose(_: Mapping, ops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    value = np.swapaxes(ops[0], -1, -2)
    return value, _zeros(value)


@kernel("permute")
def _permute(node: Mapping, ops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    value = np.transpose(ops[0], _dims(node["dims"]))
    return value, _zeros(value)


@kernel("reshape")
def _reshape(node: Mapping, ops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    value = ops[0].reshape(_dims(node["shape"]))
    return value, _zeros(value)


# ---- reductions -----------------------------------------------------------------------------


def _reduce_args(node: Mapping, a: np.ndarray) -> tuple[int | None, bool, int]:
    axis = _attr(node, "axis")
    keepdim = bool(_attr(node, "keepdim"))
    if axis is None or a.ndim == 0:  # a rank-0 a's axis 0 (or -1) is the whole tensor
        return None, keepdim, a.size
    axis = _norm_axis(int(axis), a.ndim)  # type: ignore[arg-type]
    return axis, keepdim, a.shape[axis]


def protocol_sum32(a: np.ndarray, axis: int | None, keepdim: bool) -> np.ndarray:
    """The float32 sum in the protocol's fixed order (docs/protocol.md "Numerics"): lane j adds
    elements j, j+64, ... from +0.0, then the lanes combine as a tree (s = 32, 16, ..., 1)."""
    x = a.astype(np.float32)
    moved = x.reshape(-1) if axis is None else np.moveaxis(x, axis, -1)
    n = moved.shape[-1]
    if moved.size == 0:  # a sum over no element is +0.0 (docs/protocol.md "Zero-size tensors")
        return np.sum(x, axis=axis, keepdims=keepdim, dtype=np.float32)
    rows = moved.reshape(-1, n)
    chunks = -(-n // REDUCE_LANES)
    # chunk 0 is the lanes' starting +0.0; padding with +0.0 is neutral (a lane that starts at
    # +0.0 never holds -0.0). add.accumulate adds sequentially, in float32.
    padded = np.zeros((rows.shape[0], (chunks + 1) * REDUCE_LANES), dtype=np.float32)
    padded[:, REDUCE_LANES : REDUCE_LANES + n] = rows
    with np.errstate(all="ignore"):
        per_chunk = padded.reshape(rows.shape[0], chunks + 1, REDUCE_LANES)
        lanes = np.add.accumulate(per_chunk, axis=1, dtype=np.float32)[:, -1, :]
        s = REDUCE_LANES // 2
        while s >= 1:
            lanes = np.concatenate([lanes[:, :s] + lanes[:, s : 2 * s], lanes[:, 2 * s :]], 1)
            s //= 2
    out_shape = () if axis is None else moved.shape[:-1]
    result = lanes[:, 0].reshape(out_shape)
    if keepdim:
        result = np.expand_dims(result, tuple(range(a.ndim)) if axis is None else axis)
    return result


@kernel("sum", "mean")
def _sum_mean(node: Mapping, ops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    a = ops[0]
    axis, keepdim, count = _reduce_args(node, a)
    value = np.sum(a, axis=axis, keepdims=keepdim)
    scale = np.sum(np.abs(a), axis=axis, keepdims=keepdim) * _chain_factor(_lane_chain(count))
    if node["op"] == "mean":
        value, scale = value / count, scale / count
    return np.asarray(value), np.asarray(scale)


def _order_bits(node: Mapping, operands: list[np.ndarray]) -> np.ndarray | None:
    """The bits a sum must have on every backend (mean divides, and GPU division may round
    differently, so only sum is bit-checked)."""
    if node["op"] != "sum":
        return None
    axis, keepdim, _ = _reduce_args(node, operands[0])
    return protocol_sum32(operands[0], axis, keepdim)


def _softmax_axis(node: Mapping, a: np.ndarray) -> int:
    axis = _attr(node, "axis")
    return _norm_axis(-1 if axis is None else int(axis), a.ndim)  # type: ignore[arg-type]


def _softmax_parts(a: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray, int]:
    """z = a - max and S = sum(exp(z)) along axis (kept), and the lane chain length."""
    m = np.max(a, axis=axis, keepdims=True, initial=-np.inf)  # (an empty axis: no row)
    z = a - m
    s = np.sum(np.exp(z), axis=axis, keepdims=True)
    return z, s, _lane_chain(a.shape[axis])


def _times_chain(sm: np.ndarray, z: np.ndarray, chain: int) -> np.ndarray:
    """|softmax| * (|z| + chain), 0 where softmax is 0 (z = -inf would give 0 * inf)."""
    return np.where(sm == 0, 0.0, np.abs(sm) * (np.abs(z) + chain))


def _rank0_as_vector(fn: Kernel) -> Kernel:
    """A rank-0 operand a (axis 0 or -1, as PyTorch's dim of a scalar) is the vector [a]."""

    def run(node: Mapping, ops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        if ops[0].ndim > 0:
            return fn(node, ops)
        value, scale = fn({**node, "axis": 0}, [np.reshape(o, (-1,)) for o in ops])
        return value.reshape(()), np.reshape(scale, ())

    return run


@kernel("softmax")
@_rank0_as_vector
def _softmax(node: Mapping, ops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    a = ops[0]
    z, s, chain = _softmax_parts(a, _softmax_axis(node, a))
    value = np.exp(z) / s
    return value, _times_chain(value, z, chain)


@kernel("log_softmax")
@_rank0_as_vector
def _log_softmax(node: Mapping, ops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    a = ops[0]
    z, s, chain = _softmax_parts(a, _softmax_axis(node, a))
    log_s = np.log(s)
    return z - log_s, np.abs(z) + np.abs(log_s) + chain


@kernel("cross_entropy")
def _cross_entropy(_: Mapping, ops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    a, b = ops
    if a.size == 0:  # the mean over no row, or over rows of no class: NaN, as PyTorch
        return np.asarray(np.nan), np.asarray(0.0)
    z, s, chain = _softmax_parts(a, 1)
    log_s = np.log(s)
    ls = z - log_s
    ls_scale = np.abs(z) + np.abs(log_s) + chain
    rows = -np.sum(b * ls, axis=1)
    value = np.asarray(np.mean(rows))
    per_row = np.sum(np.abs(b) * (np.abs(ls) + ls_scale), axis=1)
    scale = np.mean(per_row) * _chain_factor(_lane_chain(a.shape[0]))  # then summed over rows
    return value, np.asarray(scale)


@kernel("cross_entropy_grad")
def _cross_entropy_grad(_: Mapping, ops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    a, b = ops
    n = a.shape[0]
    z, s, chain = _softmax_parts(a, 1)
    sm = np.exp(z) / s
    value = (sm - b) / n
    return value, (_times_chain(sm, z, chain) + np.abs(b)) / n


# ---- matmul ---------------------------------------------------------------------------------


@kernel("matmul")
def _matmul(_: Mapping, ops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    a, b = ops
    with np.errstate(invalid="ignore", over="ignore"):
        value = np.matmul(a, b)
        scale = np.matmul(np.abs(a), np.abs(b)) * _chain_factor(a.shape[-1])
        # Where the protocol's float32 order overflows (or meets inf - inf), its non-finite
        # result is the answer, whatever the float64 sum says (docs/protocol.md "Numerics").
        ordered = _matmul_in_k_order32(a, b)
    return np.where(np.isfinite(ordered), value, ordered), scale


def _matmul_in_k_order32(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The protocol's float32 dot products: ascending k from 0.0, each product and sum
    rounded to float32 (no fma: the corpus's overflow cases have exact products)."""
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    acc = np.zeros(
        np.broadcast_shapes(a.shape[:-1] + (1,), b.shape[:-2] + (1, b.shape[-1])), dtype=np.float32
    )
    for k in range(a.shape[-1]):
        acc = acc + a32[..., :, k : k + 1] * b32[..., k : k + 1, :]
    return acc.astype(np.float64)


# ---- q4_k / q6_k weights, matmul_fixed ----------------------------------------------------
# An independent float64 decode of ggml's formulas (not gpulab.quant, the code under test):
# every product is exact, so y = d * sc * q - dmin * m in float64 rounded once to float32 is
# what float32 gives. A quantized input's reference holds its decoded values [N, K] (held as
# float32 values by evaluate, like a float32 node's).

BLOCK_BYTES = {"q4_k": 144, "q6_k": 210, "q8_0": 34, "q4_0": 18}
BLOCK_VALUES = {"q4_k": 256, "q6_k": 256, "q8_0": 32, "q4_0": 32}


def _f16(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Little-endian binary16 bytes as float64, from the bit fields (subnormals, -0 kept)."""
    h = lo + 256 * hi
    sign = np.where(h & 0x8000, -1.0, 1.0)
    e, m = (h >> 10) & 31, h & 1023
    with np.errstate(invalid="ignore", over="ignore"):
        normal = sign * (1024 + m) * np.exp2(e - 25.0)
        special = np.where(m == 0, sign * np.inf, np.nan)
    return np.where(e == 0, sign * m * 2.0**-24, np.where(e == 31, special, normal))


def _decode_q4k(blocks: np.ndarray) -> np.ndarray:
    """[..., 144] int64 bytes -> [..., 256] float64 (rounded to float32 values)."""
    d = _f16(blocks[..., 0], blocks[..., 1])[..., None]
    dmin = _f16(blocks[..., 2], blocks[..., 3])[..., None]
    q = blocks[..., 4:16]
    sc = np.concatenate([q[..., 0:4] & 63, (q[..., 8:12] & 15) | ((q[..., 0:4] >> 6) << 4)], -1)
    mn = np.concatenate([q[..., 4:8] & 63, (q[..., 8:12] >> 4) | ((q[..., 4:8] >> 6) << 4)], -1)
    value = np.empty(blocks.shape[:-1] + (256,))
    for j in range(8):
        byte = blocks[..., 16 + (j // 2) * 32 : 16 + (j // 2) * 32 + 32]
        quant = (byte >> 4) if j % 2 else (byte & 15)
        value[..., j * 32 : (j + 1) * 32] = (
            d * sc[..., j : j + 1] * quant - dmin * mn[..., j : j + 1]
        )
    return f32(value)


def _decode_q6k(blocks: np.ndarray) -> np.ndarray:
    """[..., 210] int64 bytes -> [..., 256] float64: d * int8 scale * (q - 32)."""
    d = _f16(blocks[..., 208], blocks[..., 209])[..., None]
    value = np.empty(blocks.shape[:-1] + (256,))
    for i in range(256):
        h, t, l = i // 128, (i // 32) % 4, i % 32
        ql = blocks[..., h * 64 + l + (t % 2) * 32]
        low = (ql >> 4) if t >= 2 else (ql & 15)
        q = (low | (((blocks[..., 128 + h * 32 + l] >> (2 * t)) & 3) << 4)) - 32
        sc = blocks[..., 192 + h * 8 + l // 16 + 2 * t]
        value[..., i] = d[..., 0] * np.where(sc > 127, sc - 256, sc) * q
    return f32(value)


def _decode_q8_0(blocks: np.ndarray) -> np.ndarray:
    """[..., 34] int64 bytes -> [..., 32] float64: d * int8 q."""
    d = _f16(blocks[..., 0], blocks[..., 1])[..., None]
    q = blocks[..., 2:34]
    return f32(d * np.where(q > 127, q - 256, q))


def _decode_q4_0(blocks: np.ndarray) -> np.ndarray:
    """[..., 18] int64 bytes -> [..., 32] float64: d * (nibble - 8), byte j holding values j
    (low nibble) and j + 16 (high nibble)."""
    d = _f16(blocks[..., 0], blocks[..., 1])[..., None]
    q = blocks[..., 2:18]
    return f32(d * (np.concatenate([q & 15, q >> 4], axis=-1) - 8))


DECODE = {"q4_k": _decode_q4k, "q6_k": _decode_q6k, "q8_0": _decode_q8_0, "q4_0": _decode_q4_0}


def decode_blocks(value: np.ndarray, dtype: str) -> np.ndarray:
    """A block-quantized input's reference ([N, K / block, bytes]) as its float values [N, K]."""
    decoded = DECODE[dtype](value)  # [N, blocks, elements]: N may be 0
    return decoded.reshape(decoded.shape[0], decoded.shape[1] * decoded.shape[2])


@kernel("dequantize")
def _dequantize(_: Mapping, ops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    return ops[0], _zeros(ops[0])


@kernel("dequantize_rows")
def _dequantize_rows(_: Mapping, ops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    out = np.take(ops[0], ops[1].astype(np.int64), axis=0)
    return out, _zeros(out)


@kernel("matmul_q")
def _matmul_q(_: Mapping, ops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    return _matmul({}, [ops[0], np.swapaxes(ops[1], -1, -2)])


def _fixed(x: np.ndarray, frac: int) -> np.ndarray:
    """round-half-even(x * 2^frac) saturated to int32, NaN -> 0, as int64."""
    scaled = np.nan_to_num(x * 2.0**frac, nan=0.0, posinf=2.0**40, neginf=-(2.0**40))
    return np.clip(np.rint(scaled), INT32_MIN, INT32_MAX).astype(np.int64)


def _int_to_f32(total: np.ndarray) -> np.ndarray:
    """int64 values rounded once to float32 (24 bits, half to even) by integer steps: a cast
    through float64 would round twice."""
    u = np.abs(total.astype(np.int64)).astype(np.uint64)  # |-2^63| is 2^63 as uint64
    top = np.zeros(u.shape, np.int64)
    for bit in range(64):
        top = np.where(u >> np.uint64(bit) != 0, bit, top)
    drop = np.maximum(top - 23, 0).astype(np.uint64)
    q = u >> drop
    rem = u - (q << drop)
    half = np.where(drop > 0, np.uint64(1) << np.maximum(drop, 1) - np.uint64(1), np.uint64(0))
    up = (drop > 0) & ((rem > half) | ((rem == half) & (q % np.uint64(2) == 1)))
    mag = (q + up.astype(np.uint64)).astype(np.float64) * np.exp2(drop.astype(np.float64))
    return np.where(total < 0, -mag, mag)


@kernel("matmul_fixed")
def _matmul_fixed(node: Mapping, ops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    frac = int(_attr(node, "frac_bits"))  # type: ignore[call-overload]
    with np.errstate(over="ignore"):  # int64 sums wrap modulo 2^64, as the protocol says
        total = np.matmul(_fixed(ops[0], frac), _fixed(ops[1], frac))
    value = _int_to_f32(total) * 2.0 ** (-2 * frac)
    return value, _zeros(value)


# ---- optimizers -----------------------------------------------------------------------------


@kernel("sgd_update")
def _sgd(node: Mapping, ops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    a, b = ops
    lr = _float_attr(node, "lr")
    return a - lr * b, np.abs(a) + np.abs(lr * b)


@kernel("momentum_update")
def _momentum(node: Mapping, ops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    a, b = ops
    mu = _float_attr(node, "momentum")
    return mu * a + b, np.abs(mu * a) + np.abs(b)


def _attr_sensitivity(beta: float, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """beta * (|a| + |b|): how much beta * a + (1 - beta) * b moves per unit relative change of
    beta. The protocol does not say whether float attributes are used as float32 (a GPU
    uniform) or float64 (the CPU backends), which changes 1 - beta by up to 2^-24 / (1 - beta)
    relative; this term lets both pass."""
    return abs(beta) * (np.abs(a) + np.abs(b))


@kernel("adam_m")
def _adam_m(node: Mapping, ops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    a, b = ops
    beta1 = _float_attr(node, "beta1")
    terms = np.abs(beta1 * a) + np.abs((1 - beta1) * b)
    return beta1 * a + (1 - beta1) * b, terms + _attr_sensitivity(beta1, a, b)


@kernel("adam_v")
def _adam_v(node: Mapping, ops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    a, b = ops
    beta2 = _float_attr(node, "beta2")
    terms = np.abs(beta2 * a) + (1 - beta2) * b * b
    return beta2 * a + (1 - beta2) * b * b, terms + _attr_sensitivity(beta2, a, b * b)


@kernel("adam_update")
def _adam_update(node: Mapping, ops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    a, m, v, t = ops
    lr, eps = _float_attr(node, "lr"), _float_attr(node, "eps")
    beta1, beta2 = _float_attr(node, "beta1"), _float_attr(node, "beta2")
    step = float(t.reshape(-1)[0])
    p1, p2 = beta1**step, beta2**step
    bc1, bc2 = 1 - p1, 1 - p2
    u = (lr / bc1) * m / (np.sqrt(v) / math.sqrt(bc2) + eps)
    # beta^t rounded (or beta itself, see _attr_sensitivity) moves 1 - beta^t by t * beta^t
    # times the relative rounding: divided by 1 - beta^t, that is the conditioning of u.
    conditioning = 4 + step * (p1 / bc1 + p2 / bc2)
    return a - u, np.abs(a) + np.abs(u) * conditioning


# ---- life -----------------------------------------------------------------------------------


@kernel("life")
def _life(_: Mapping, ops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    alive = ops[0] > 0.5
    count = np.zeros(alive.shape, dtype=np.int64)
    for di in (-1, 0, 1):
        for dj in (-1, 0, 1):
            if di or dj:
                count += np.roll(alive, (di, dj), axis=(0, 1))
    born = ~alive & (count == 3)
    survives = alive & ((count == 2) | (count == 3))
    value = np.where(born | survives, 1.0, 0.0)
    return value, _zeros(value)


# ---- protocol-v3 ops: abs, square, clamp, reduce_max/min, argmax/argmin (int32 too) ------


def _is_int(a: np.ndarray) -> bool:
    """int32 operands are held as int64 arrays (exact), float32 ones as float64."""
    return a.dtype.kind in "iu"


@kernel("abs")
def _abs(_: Mapping, ops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    value = wrap32(np.abs(ops[0])) if _is_int(ops[0]) else np.abs(ops[0])  # abs(-2^31) wraps
    return value, _zeros(value)


@kernel("square")
def _square(_: Mapping, ops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    if _is_int(ops[0]):
        a = ops[0].astype(np.int64)
        value = wrap32(a * a)  # |a| <= 2^31: a * a fits in int64 exactly
    else:
        value = ops[0] * ops[0]  # exact in float64, rounded once to float32 when stored
    return value, _zeros(value)


def _opt_float(node: Mapping, name: str) -> float | None:
    value = node.get(name)
    return None if value is None else float(f32(float(value)))


def _int_bounds(lo: float | None, hi: float | None) -> tuple[int, int]:
    """int32 bounds: ceil(min), floor(max), saturated to the int32 range (null: none)."""
    lo_i = INT32_MIN if lo is None else min(max(math.ceil(lo), INT32_MIN), INT32_MAX)
    hi_i = INT32_MAX if hi is None else min(max(math.floor(hi), INT32_MIN), INT32_MAX)
    return lo_i, hi_i


@kernel("clamp")
def _clamp(node: Mapping, ops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    lo, hi = _opt_float(node, "min"), _opt_float(node, "max")
    if _is_int(ops[0]):
        lo, hi = _int_bounds(lo, hi)
    y = ops[0]
    if lo is not None:
        y = np.where(y < lo, lo, y)  # NaN < lo is false: NaN stays
    if hi is not None:
        y = np.where(y > hi, hi, y)
    return y, _zeros(y)


def _rows(node: Mapping, a: np.ndarray) -> tuple[np.ndarray, tuple[int, ...]]:
    """The reduced elements as rows [lines, n] and the result shape (keepdim applied)."""
    axis, keepdim, _ = _reduce_args(node, a)
    if axis is None:
        shape = (1,) * a.ndim if keepdim else ()
        return a.reshape(1, -1), shape
    moved = np.moveaxis(a, axis, -1)
    shape = (
        tuple(1 if i == axis else d for i, d in enumerate(a.shape)) if keepdim else moved.shape[:-1]
    )
    return moved.reshape(-1, a.shape[axis]), shape


@kernel("reduce_max", "reduce_min")
def _reduce_extreme(node: Mapping, ops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    rows, shape = _rows(node, ops[0])
    is_max = node["op"] == "reduce_max"
    value = rows.max(axis=1) if is_max else rows.min(axis=1)  # NaN propagates
    if _is_int(rows):
        return value.reshape(shape), np.zeros(shape)
    # -0 < +0: a zero result is +0 for max when any +0 is there, -0 for min when any -0 is
    positive_zero = ((rows == 0) & ~np.signbit(rows)).any(axis=1)
    negative_zero = ((rows == 0) & np.signbit(rows)).any(axis=1)
    zero = 0.0 if is_max else -0.0
    pick = positive_zero if is_max else negative_zero
    value = np.where((value == 0) & pick, zero, value)
    value = np.where((value == 0) & ~pick, -zero, value)
    return value.reshape(shape), np.zeros(shape)


@kernel("argmax", "argmin")
def _arg_extreme(node: Mapping, ops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    rows, shape = _rows(node, ops[0])
    nan = np.isnan(rows)
    best = (
        np.where(nan, -np.inf, rows).max(axis=1)
        if node["op"] == "argmax"
        else np.where(nan, np.inf, rows).min(axis=1)
    )
    # the first NaN wins; else the first element equal to the extreme (-0 == +0: a tie)
    hit = np.where(nan.any(axis=1, keepdims=True), nan, rows == best[:, None])
    value = np.argmax(hit, axis=1)  # argmax of booleans: the first True
    return value.reshape(shape), np.zeros(shape)


# ---- protocol-v3 select ops: maximum, minimum, comparisons, where, cast, hash_uniform, dropout -
# Written on the float32 bit patterns (an order on the words), not with the comparisons the
# executors use, so the reference does not share their mistakes.


def _words(a: np.ndarray) -> np.ndarray:
    """float32 values (held in float64) as their uint32 bit patterns (int64)."""
    return f32(a).astype(np.float32).view(np.uint32).astype(np.int64)


def _ordered(a: np.ndarray) -> np.ndarray:
    """A total order of float32 values as integers: -0 < +0 (NaN is handled by the callers)."""
    w = _words(a)
    return np.where(w >= 2**31, 2**31 - 1 - (w - 2**31), w + 2**31)


def _key(a: np.ndarray) -> np.ndarray:
    return a if _is_int(a) else _ordered(a)


@kernel("maximum", "minimum")
def _max_min(node: Mapping, ops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.broadcast_arrays(*ops)
    ka, kb = _key(a), _key(b)
    pick_a = ka >= kb if node["op"] == "maximum" else ka <= kb
    value = np.where(pick_a, a, b)
    if not _is_int(a):  # NaN: a's when a is NaN, else b's
        value = np.where(np.isnan(b), b, value)
        value = np.where(np.isnan(a), a, value)
    return value, _zeros(value)


_ORDER = {
    "lt": lambda x, y: x < y,
    "le": lambda x, y: x <= y,
    "gt": lambda x, y: x > y,
    "ge": lambda x, y: x >= y,
    "eq": lambda x, y: x == y,
    "ne": lambda x, y: x != y,
}


@kernel(*_ORDER)
def _compare(node: Mapping, ops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.broadcast_arrays(*ops)
    ka, kb = _key(a), _key(b)
    if not _is_int(a):  # -0 == +0: both zeros compare as +0
        ka = np.where(a == 0, _ordered(np.zeros(())), ka)
        kb = np.where(b == 0, _ordered(np.zeros(())), kb)
    value = _ORDER[node["op"]](ka, kb)
    if not _is_int(a):  # NaN is unordered: only ne holds
        value = np.where(np.isnan(a) | np.isnan(b), node["op"] == "ne", value)
    value = value.astype(np.int64)
    return value, _zeros(value)


@kernel("where")
def _where(_: Mapping, ops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    cond, a, b = np.broadcast_arrays(*ops)
    value = np.where(cond != 0, a, b)
    return value, _zeros(value)


_INT_LIMITS = {"int32": (INT32_MIN, INT32_MAX), "uint32": (0, 2**32 - 1)}


@kernel("cast")
def _cast(node: Mapping, ops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    a, to = ops[0], str(node["dtype"])
    if to == "bool":
        value = (a != 0).astype(np.int64)  # NaN is nonzero, -0 is zero
    elif to == "float32":
        value = a.astype(np.float64)  # int64 -> float64 exact; the float32 store rounds to even
    elif _is_int(a):  # int32 <-> uint32, bool: the low 32 bits, read as the target
        lo, _ = _INT_LIMITS[to]
        value = (a - lo) % 2**32 + lo
    else:
        lo, hi = _INT_LIMITS[to]
        flat = [
            0
            if math.isnan(x)
            else min(max(math.trunc(x), lo), hi)
            if math.isfinite(x)
            else (hi if x > 0 else lo)
            for x in a.reshape(-1).tolist()
        ]
        value = np.asarray(flat, dtype=np.int64).reshape(a.shape)
    return value, _zeros(value)


_M32 = 2**32 - 1


def _lowbias32(x: np.ndarray) -> np.ndarray:
    """lowbias32 on uint64 arrays masked to 32 bits (the executors use uint32 wrapping)."""
    x = x & _M32
    x ^= x >> 16
    x = (x * 0x7FEB352D) & _M32
    x ^= x >> 15
    x = (x * 0x846CA68B) & _M32
    return x ^ (x >> 16)


def hash_words(seed: int, counter: int, count: int) -> np.ndarray:
    """h_i = lowbias32(lowbias32(lowbias32(seed) ^ counter) ^ lowbias32(i)), i < count."""
    key = _lowbias32(_lowbias32(np.array([seed], dtype=np.uint64)) ^ np.uint64(counter))
    return _lowbias32(key ^ _lowbias32(np.arange(count, dtype=np.uint64)))


def _counter(node: Mapping, counter: np.ndarray) -> np.ndarray:
    seed = int(node.get("seed", 0))
    return np.array([seed, int(counter.reshape(-1)[0])], dtype=np.int64)


@kernel("hash_uniform")
def _hash_uniform(node: Mapping, ops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    shape = _dims(node["shape"])
    seed, counter = _counter(node, ops[0])
    h = hash_words(int(seed), int(counter), math.prod(shape))
    value = ((h >> 8).astype(np.float64) / 2**24).reshape(shape)
    return value, _zeros(value)


@kernel("dropout")
def _dropout(node: Mapping, ops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    a = ops[0]
    seed, counter = _counter(node, ops[1])
    p = _float_attr(node, "p")
    u = (hash_words(int(seed), int(counter), a.size) >> 8).astype(np.float64) / 2**24
    scale = float(f32(1.0 / (1.0 - p)))
    flat = a.reshape(-1)
    # kept: a * scale exactly in float64, rounded once to float32 when stored; dropped: a * 0
    value = np.where(u >= p, flat * scale, flat * 0.0).reshape(a.shape)
    return value, _zeros(value)


# ---- protocol v4: selection (exact: values are moved, index_add/scatter_add add in order) ----
# Written from the protocol text, not from gpulab: slices are Python slice objects of the raw
# attrs (numpy applies Python's clamping), index_add/scatter_add are explicit loops that add
# one source at a time in ascending position of idx and round (float32) or wrap (int32) each
# sum, the sequential order docs/protocol.md fixes.


def _stored_as(x: np.ndarray, like: np.ndarray) -> np.ndarray:
    return wrap32(x) if _is_int(like) else f32(x)


def _slices(node: Mapping) -> tuple[slice, ...]:
    return tuple(slice(*entry) for entry in node["slices"])


def _v4_axis(node: Mapping, rank: int) -> int:
    return _norm_axis(int(node["axis"]), rank)


@kernel("slice")
def _slice(node: Mapping, ops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    out = ops[0][_slices(node)]
    return out, np.zeros(out.shape)


@kernel("slice_scatter")
def _slice_scatter(node: Mapping, ops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    out = ops[0].copy()
    out[_slices(node)] = ops[1]
    return out, np.zeros(out.shape)


@kernel("index_select")
@_rank0_as_vector
def _index_select(node: Mapping, ops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    a, idx = ops
    out = np.take(a, idx.astype(np.int64), axis=_v4_axis(node, a.ndim))
    return out, np.zeros(out.shape)


@kernel("gather")
@_rank0_as_vector
def _gather(node: Mapping, ops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    a, idx = ops
    axis = _v4_axis(node, a.ndim)
    out = np.zeros(idx.shape, dtype=a.dtype)
    for p in np.ndindex(*idx.shape):
        q = list(p)
        q[axis] = int(idx[p])
        out[p] = a[tuple(q)]
    return out, np.zeros(out.shape)


@kernel("index_add")
@_rank0_as_vector
def _index_add(node: Mapping, ops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    a, idx, src = ops
    axis = _v4_axis(node, a.ndim)
    out = a.copy()
    for j, t in enumerate(idx.astype(np.int64)):  # ascending position in idx
        at = [slice(None)] * a.ndim
        at[axis] = int(t)
        take = [slice(None)] * a.ndim
        take[axis] = j
        out[tuple(at)] = _stored_as(out[tuple(at)] + src[tuple(take)], a)
    return out, np.zeros(out.shape)


@kernel("scatter_add")
@_rank0_as_vector
def _scatter_add(node: Mapping, ops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    a, idx, src = ops
    axis = _v4_axis(node, a.ndim)
    out = a.copy()
    for p in np.ndindex(*idx.shape):  # row-major: ascending along axis per output element
        q = list(p)
        q[axis] = int(idx[p])
        out[tuple(q)] = _stored_as(out[tuple(q)] + src[p], a)
    return out, np.zeros(out.shape)


@kernel("concat")
def _concat(node: Mapping, ops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    out = np.concatenate(ops, axis=_v4_axis(node, ops[0].ndim))
    return out, np.zeros(out.shape)


@kernel("pad")
def _pad(node: Mapping, ops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    a = ops[0]
    value = _attr(node, "value")
    value = NONFINITE[value] if isinstance(value, str) else value
    fill = int(value) if _is_int(a) else float(f32(float(value)))  # type: ignore[arg-type]
    widths = [(int(b), int(e)) for b, e in node["widths"]]  # type: ignore[union-attr]
    out = np.pad(a, widths, mode="constant", constant_values=fill) if a.ndim else a.copy()
    return out, np.zeros(out.shape)


# ---- protocol v6: the window ops (conv2d, max_pool2d, avg_pool2d, resize) ---------------
# An independent float64 statement of docs/protocol.md "The v6 window ops": each window tap
# by its input position, taps outside the input taken out by a mask; resize's coordinates as
# exact Fractions of the ONNX formulas.


def _window_taps(n: int, k: int, s: int, d: int, before: int, out: int) -> np.ndarray:
    """[out, k] input positions of every window's taps along one axis."""
    return np.array([[o * s - before + j * d for j in range(k)] for o in range(out)], dtype=int)


def _windows(
    a: np.ndarray, node: Mapping, kernel: Sequence[int], out_hw: Sequence[int]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """a's taps as [N, C, oH, oW, kH, kW] (0 outside a), the inside mask, and the positions."""
    strides, dilations = _attr(node, "strides"), _attr(node, "dilations")
    pads = _attr(node, "padding")
    ty = _window_taps(a.shape[2], kernel[0], strides[0], dilations[0], pads[0], out_hw[0])
    tx = _window_taps(a.shape[3], kernel[1], strides[1], dilations[1], pads[1], out_hw[1])
    iny = (ty >= 0) & (ty < a.shape[2])
    inx = (tx >= 0) & (tx < a.shape[3])
    yc, xc = np.clip(ty, 0, a.shape[2] - 1), np.clip(tx, 0, a.shape[3] - 1)
    taps = a[:, :, yc[:, None, :, None], xc[None, :, None, :]]  # [N, C, oH, oW, kH, kW]
    mask = iny[:, None, :, None] & inx[None, :, None, :]
    return np.where(mask, taps, 0.0), mask, ty, tx


def _window_out(n: int, k: int, s: int, d: int, before: int, after: int, ceil: bool) -> int:
    span = n + before + after - d * (k - 1) - 1
    out = (math.ceil(span / s) if ceil else span // s) + 1
    return out - 1 if ceil and (out - 1) * s >= n + before else out


@kernel("conv2d")
def _conv2d(node: Mapping, ops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    bias, a, w = (ops[0], ops[1], ops[2]) if len(ops) == 3 else (None, ops[0], ops[1])
    groups = int(_attr(node, "groups"))  # type: ignore[arg-type]
    m, cg, kh, kw = w.shape
    s, d, p = _attr(node, "strides"), _attr(node, "dilations"), _attr(node, "padding")
    out_hw = [
        _window_out(a.shape[2 + i], w.shape[2 + i], s[i], d[i], p[i], p[2 + i], False)
        for i in range(2)
    ]
    value = np.zeros((a.shape[0], m, *out_hw))
    scale = np.zeros_like(value)
    for g in range(groups):
        taps, _, _, _ = _windows(a[:, g * cg : (g + 1) * cg], node, (kh, kw), out_hw)
        wg = w[g * (m // groups) : (g + 1) * (m // groups)]  # [Mg, Cg, kH, kW]
        value[:, g * (m // groups) : (g + 1) * (m // groups)] = np.einsum(
            "ncyxij,mcij->nmyx", taps, wg
        )
        scale[:, g * (m // groups) : (g + 1) * (m // groups)] = np.einsum(
            "ncyxij,mcij->nmyx", np.abs(taps), np.abs(wg)
        )
    scale = scale * _chain_factor(cg * kh * kw)
    if bias is not None:
        value = value + bias[None, :, None, None]
        scale = scale + np.abs(bias)[None, :, None, None]
    return value, scale


def _pool_out(node: Mapping, a: np.ndarray) -> list[int]:
    k, s, d = _attr(node, "kernel"), _attr(node, "strides"), _attr(node, "dilations")
    p = _attr(node, "padding")
    return [
        _window_out(
            a.shape[2 + i], k[i], s[i], d[i], p[i], p[2 + i], bool(_attr(node, "ceil_mode"))
        )
        for i in range(2)
    ]


@kernel("max_pool2d")
def _max_pool2d(node: Mapping, ops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    a = ops[0]
    taps, mask, _, _ = _windows(a, node, _attr(node, "kernel"), _pool_out(node, a))
    best = np.where(mask, taps, -np.inf).max(axis=(-2, -1))
    # IEEE maximum: NaN propagates, and max(-0, +0) = +0 (a +0 tap wins a tie with -0)
    has_pos_zero = (mask & (taps == 0) & ~np.signbit(taps)).any(axis=(-2, -1))
    best = np.where((best == 0) & has_pos_zero, 0.0, best)
    return best, np.zeros(best.shape)


@kernel("avg_pool2d")
def _avg_pool2d(node: Mapping, ops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    a = ops[0]
    kernel_hw = _attr(node, "kernel")
    taps, mask, ty, tx = _windows(a, node, kernel_hw, _pool_out(node, a))
    p = _attr(node, "padding")
    if _attr(node, "count_include_pad"):
        cy = ((ty >= -p[0]) & (ty < a.shape[2] + p[2])).sum(axis=1)
        cx = ((tx >= -p[1]) & (tx < a.shape[3] + p[3])).sum(axis=1)
    else:
        cy = ((ty >= 0) & (ty < a.shape[2])).sum(axis=1)
        cx = ((tx >= 0) & (tx < a.shape[3])).sum(axis=1)
    count = (cy[:, None] * cx[None, :]).astype(float)
    total = taps.sum(axis=(-2, -1))
    scale = np.abs(taps).sum(axis=(-2, -1)) / count * _chain_factor(mask.sum(axis=(-2, -1)).max())
    return total / count, scale


def _source(mode: str, x: int, n_in: int, n_out: int) -> Fraction:
    """ONNX Resize's coordinate_transformation_mode, exactly (scale = n_out / n_in)."""
    if mode == "asymmetric":
        return Fraction(x * n_in, n_out)
    if mode == "align_corners":
        return Fraction(0) if n_out == 1 else Fraction(x * (n_in - 1), n_out - 1)
    if mode == "pytorch_half_pixel" and n_out == 1:
        return Fraction(0)
    return (x + Fraction(1, 2)) * n_in / n_out - Fraction(1, 2)


def _nearest(v: Fraction, rounding: str, n_in: int) -> int:
    frac = v - math.floor(v)
    if rounding == "floor":
        i = math.floor(v)
    elif rounding == "ceil":
        i = math.ceil(v)
    elif frac == Fraction(1, 2):
        i = math.floor(v) if rounding == "round_prefer_floor" else math.ceil(v)
    else:
        i = round(v)
    return min(max(i, 0), n_in - 1)


def _resize_axis(node: Mapping, n_in: int, n_out: int) -> list[list[tuple[int, float]]]:
    """Per output index: its (source index, weight) terms."""
    mode = str(_attr(node, "coordinate_transformation_mode"))
    terms = []
    for x in range(n_out):
        v = _source(mode, x, n_in, n_out)
        if _attr(node, "mode") == "nearest":
            terms.append([(_nearest(v, str(_attr(node, "nearest_mode")), n_in), 1.0)])
            continue
        i0 = math.floor(v)
        w1 = float(v - i0)
        terms.append([(min(max(i0, 0), n_in - 1), 1.0 - w1), (min(max(i0 + 1, 0), n_in - 1), w1)])
    return terms


@kernel("resize")
def _resize(node: Mapping, ops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    a = ops[0]
    oh, ow = _attr(node, "size")  # type: ignore[misc]

    def matrix(n_in: int, n_out: int) -> np.ndarray:  # [out, in]: each output's weights
        m = np.zeros((n_out, n_in))
        for x, terms in enumerate(_resize_axis(node, n_in, n_out)):
            for i, wgt in terms:
                m[x, i] += wgt
        return m

    my, mx = matrix(a.shape[2], oh), matrix(a.shape[3], ow)
    value = my @ a @ mx.T  # [oH, H] @ [N, C, H, W] @ [W, oW], float64
    # float32 weights from one division (GPUs: 2.5 ulp): twice the terms' magnitudes
    scale = 2 * (np.abs(my) @ np.abs(a) @ np.abs(mx).T)
    if _attr(node, "mode") == "nearest":  # one element's bits: exact
        scale = np.zeros_like(value)
    return value, scale


# ---- graphs ---------------------------------------------------------------------------------


def operand_ids(node: Mapping) -> list[int]:
    """The node's operand ids in op-table order."""
    row = OP_TABLE["ops"][node["op"]]
    variadic = list(node.get(row["variadic"], [])) if "variadic" in row else []
    return variadic + [node[name] for name in row["operands"]]


def needed_order(graph: Mapping) -> list[Mapping]:
    """Nodes the outputs depend on, operands first (depth-first; any topological order works)."""
    by_id = {node["id"]: node for node in graph["nodes"]}
    order: list[Mapping] = []
    seen: set[int] = set()

    def visit(node_id: int) -> None:
        stack = [(node_id, False)]
        while stack:
            nid, expanded = stack.pop()
            if expanded:
                order.append(by_id[nid])
                continue
            if nid in seen:
                continue
            seen.add(nid)
            stack.append((nid, True))
            stack.extend((op, False) for op in reversed(operand_ids(by_id[nid])) if op not in seen)

    for out in graph["outputs"]:
        visit(out["id"])
    return order


def _stored(ref: NodeRef, override: np.ndarray | None) -> np.ndarray:
    """A node's value as its consumers see it: the backend's own (override), else the float32
    every backend must hold (a sum's fixed-order bits, else the rounded reference); integer
    dtypes are held exactly."""
    if ref.dtype not in ("float32", *BLOCK_BYTES):  # block dtypes: their decoded values
        held = ref.value if override is None else np.asarray(override).astype(np.int64)
        return held.reshape(ref.value.shape)
    if override is not None:
        return f32(override).reshape(ref.value.shape)
    return f32(ref.bits) if ref.bits is not None else f32(ref.value)


def evaluate(
    graph: Mapping, overrides: Mapping[int, np.ndarray] | None = None
) -> dict[int, NodeRef]:
    """Reference value and scale of every node the outputs need.

    `overrides` replaces a node's value *as an operand* (a backend's own result for an output),
    so a chain can be checked node by node: each node's reference is then computed from the
    values the backend actually fed it. A node's own reference is never overridden.
    """
    overrides = overrides or {}
    refs: dict[int, NodeRef] = {}
    for node in needed_order(graph):
        operands = [_stored(refs[i], overrides.get(i)) for i in operand_ids(node)]
        dtypes = [refs[i].dtype for i in operand_ids(node)]
        with np.errstate(all="ignore"):
            value, scale = KERNELS[node["op"]](node, operands)
        dtype = result_dtype(node, dtypes)
        floats = dtype == "float32" or dtype in BLOCK_BYTES
        value = np.asarray(value, dtype=np.float64 if floats else np.int64)
        # 0 * inf in a scale formula (exp(-inf), tanh(inf)) is a zero sensitivity; a scale
        # must never widen the tolerance to everything for a finite reference
        scale = np.where(np.isfinite(scale), scale, 0.0)
        refs[node["id"]] = NodeRef(
            value, np.broadcast_to(scale, value.shape), _order_bits(node, operands), dtype
        )
    return refs
