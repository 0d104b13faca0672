"""cpu-python kernels, one per op, in a registry keyed by op name (like TensorFlow.js).

A kernel takes the checked node and its operand values (float32 arrays of the operands' shapes)
and returns a float32 array of the node's shape. Numerics follow docs/protocol.md: elementwise
arithmetic in float32 (one IEEE rounding, bit-exact), transcendental functions evaluated in
float64 and rounded once to float32 (the most accurate float32 answer, well inside the
`transcendental` class), reductions in the fixed 64-lane order, matmul with numpy's float32
matmul (class `matmul`: not bit-exact, within tolerance).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .. import quant
from ..protocol import CheckedNode
from ..values import index_error
from .fixed_reduce import fixed_max, fixed_reduce, fixed_sum, reduced_count

Kernel = Callable[[CheckedNode, list[np.ndarray]], np.ndarray]
KERNELS: dict[str, Kernel] = {}
KERNEL_DTYPES: dict[str, tuple[str, ...]] = {}  # op -> the dtypes its kernel handles
F32 = np.float32


def register(*ops: str, dtypes: tuple[str, ...] = ("float32",)) -> Callable[[Kernel], Kernel]:
    """Register one kernel for the given op names (at the given dtypes)."""

    def wrap(fn: Kernel) -> Kernel:
        for op in ops:
            KERNELS[op] = fn
            KERNEL_DTYPES[op] = tuple(dtypes)
        return fn

    return wrap


def map_kernel(fn: Callable[..., object], scalar: str | None = None) -> Kernel:
    """A map op's kernel from its numpy expression (maps.py, generated from kernels/ops.json):
    operands widened to float64 (int64 for integer dtypes), NumPy broadcasting, the float
    attribute `scalar` as a last argument, one cast to the result dtype (a float32 rounding, or
    an int32 wrap). For one + - * / or sqrt of float32 operands that is exactly the float32
    operation (float64 has more than 2*24+2 bits)."""

    def kernel(node: CheckedNode, args: list[np.ndarray]) -> np.ndarray:
        dtype = args[0].dtype
        wide = np.float64 if dtype.kind == "f" else np.int64
        extra = (node.attrs[scalar],) if scalar else ()
        with np.errstate(all="ignore"):  # float64 -> float32 overflow is the IEEE inf
            out = np.asarray(fn(*(a.astype(wide) for a in args), *extra))
            return np.broadcast_to(out, tuple(node.shape)).astype(dtype)

    return kernel


def reduce_kernel(
    combine: np.ufunc, identity: dict[str, float], finish: Callable[[np.ndarray, int], object]
) -> Kernel:
    """A reduction's kernel from its kernel-table row (maps.py): the protocol order of
    fixed_reduce at the operand's dtype, then `finish(total, count)` cast to that dtype."""

    def kernel(node: CheckedNode, args: list[np.ndarray]) -> np.ndarray:
        a, axis = args[0], node.attrs["axis"]
        total = fixed_reduce(a, axis, node.attrs["keepdim"], combine, identity[str(a.dtype)])
        with np.errstate(all="ignore"):
            return np.asarray(finish(total, reduced_count(a.shape, axis))).astype(a.dtype)

    return kernel


def by_dtype(kernels: dict[str, Kernel]) -> Kernel:
    """One kernel per dtype, chosen by the first operand's dtype."""

    def kernel(node: CheckedNode, args: list[np.ndarray]) -> np.ndarray:
        return kernels[str(args[0].dtype)](node, args)

    return kernel


def _f32(x: np.ndarray | float) -> np.ndarray:
    return np.asarray(x, dtype=F32)


@register("full")
def _full(node: CheckedNode, args: list[np.ndarray]) -> np.ndarray:
    return np.full(node.shape, node.attrs["value"], dtype=F32)


# The map ops (neg ... gelu, add ... gelu_grad, the optimizer updates but adam_update) are in
# maps.py, generated from the kernel table's `np` expressions (make gen).


@register("transpose")
def _transpose(node: CheckedNode, args: list[np.ndarray]) -> np.ndarray:
    return np.ascontiguousarray(np.swapaxes(args[0], -1, -2))


@register("permute")
def _permute(node: CheckedNode, args: list[np.ndarray]) -> np.ndarray:
    return np.ascontiguousarray(np.transpose(args[0], node.attrs["dims"]))


@register("reshape", dtypes=("float32", "int32"))
def _reshape(node: CheckedNode, args: list[np.ndarray]) -> np.ndarray:
    return np.ascontiguousarray(args[0]).reshape(node.shape).copy()


@register("matmul")
def _matmul(node: CheckedNode, args: list[np.ndarray]) -> np.ndarray:
    with np.errstate(all="ignore"):
        out = _f32(np.matmul(args[0], args[1]))
        return protocol_order_where_unsafe(args[0], args[1], out)


# BLAS sums in its own order (blocks, SIMD lanes), which may overflow where the protocol's
# ascending k does not (3e38 - 3e38 + 3e38 ...) or not where it does (3e38 + 3e38 - 3e38).
# An output whose terms sum to less than SAFE in magnitude cannot overflow in any order (each
# partial sum is at most sum |a_ik b_kj| times (1 + eps)^K <= e^4 for K <= 2^26), so only the
# others are recomputed in the protocol's order: none for ordinary data.
SAFE = float(np.finfo(np.float32).max) / 64


def protocol_order_where_unsafe(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> np.ndarray:
    """`out` (= a @ b by BLAS) with every output that might reach inf or NaN in some order
    replaced by the protocol's float32 dot product (ascending k from 0.0, docs/protocol.md
    "Numerics"). Bound: sum_k |a_ik b_kj| <= (sum_k |a_ik|) * max_k |b_kj| (NaN fails it)."""
    row_sum = np.abs(a).sum(axis=-1, dtype=np.float64)  # [..., M], no float32 overflow
    col_max = np.abs(b).max(axis=-2, initial=0.0).astype(np.float64)  # [..., N]
    if row_sum.max(initial=0.0) * col_max.max(initial=0.0) < SAFE:
        return out  # the common case, without an [M, N] bound
    bound = row_sum[..., :, None] * col_max[..., None, :]
    unsafe = np.broadcast_to(~(bound < SAFE), out.shape)
    # The rows and columns holding an unsafe output, recomputed as one block.
    rows = np.flatnonzero(unsafe.any(axis=tuple(range(unsafe.ndim - 2)) + (-1,)))
    cols = np.flatnonzero(unsafe.any(axis=tuple(range(unsafe.ndim - 1))))
    block = (..., *np.ix_(rows, cols))
    ordered = in_k_order(a[..., rows, :], b[..., :, cols])
    fixed = out.copy()
    fixed[block] = np.where(unsafe[block], ordered, fixed[block])
    return fixed


ROW_BLOCK = 32  # rows accumulated together: the [32, N] accumulator stays in cache


def in_k_order(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b in the protocol's order: each output from 0.0, adding a_ik * b_kj (each rounded
    to float32) in ascending k. Row blocks keep it near BLAS's speed on this machine (about
    0.25 ns per multiply-add, as the cost model's 0.1 ns per flop)."""
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    m, k_len, n = a.shape[-2], a.shape[-1], b.shape[-1]
    a_all = np.broadcast_to(a, (*batch, m, k_len))
    b_all = np.broadcast_to(b, (*batch, k_len, n))
    out = np.empty((*batch, m, n), dtype=F32)
    tmp = np.empty((ROW_BLOCK, n), dtype=F32)
    for at in np.ndindex(*batch):
        b_mat = np.ascontiguousarray(b_all[at])  # fancy-indexed columns may be strided
        for r0 in range(0, m, ROW_BLOCK):
            a_t = np.ascontiguousarray(a_all[at][r0 : r0 + ROW_BLOCK].T)  # [K, rows]
            acc = np.zeros((a_t.shape[1], n), dtype=F32)
            part = tmp[: a_t.shape[1]]
            for k in range(k_len):
                np.multiply(a_t[k, :, None], b_mat[k], out=part)
                acc += part
            out[at][r0 : r0 + ROW_BLOCK] = acc
    return out


# sum and mean (the reduce family) are in maps.py too, from the kernel table (reduce_kernel).


def _shifted_exp(a: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """(a - max) and exp(a - max) along axis, both float32."""
    with np.errstate(all="ignore"):
        shifted = _f32(a - fixed_max(a, axis, keepdim=True))
        return shifted, _f32(np.exp(shifted.astype(np.float64)))


@register("softmax")
def _softmax(node: CheckedNode, args: list[np.ndarray]) -> np.ndarray:
    axis = node.attrs["axis"]
    _, e = _shifted_exp(args[0], axis)
    with np.errstate(all="ignore"):
        return _f32(e / fixed_sum(e, axis, keepdim=True))


def _log_softmax_values(a: np.ndarray, axis: int) -> np.ndarray:
    shifted, e = _shifted_exp(a, axis)
    total = fixed_sum(e, axis, keepdim=True)
    with np.errstate(all="ignore"):
        return _f32(shifted - _f32(np.log(total.astype(np.float64))))


@register("log_softmax")
def _log_softmax(node: CheckedNode, args: list[np.ndarray]) -> np.ndarray:
    return _log_softmax_values(args[0], node.attrs["axis"])


@register("cross_entropy")
def _cross_entropy(node: CheckedNode, args: list[np.ndarray]) -> np.ndarray:
    logits, target = args
    with np.errstate(all="ignore"):
        terms = _f32(target * _log_softmax_values(logits, 1))
        rows = -fixed_sum(terms, 1)  # each row's value in the fixed order over classes
        return _f32(fixed_sum(rows, 0) / F32(logits.shape[0]))  # then the rows, then / N


@register("cross_entropy_grad")
def _cross_entropy_grad(node: CheckedNode, args: list[np.ndarray]) -> np.ndarray:
    logits, target = args
    _, e = _shifted_exp(logits, 1)
    with np.errstate(all="ignore"):
        probs = _f32(e / fixed_sum(e, 1, keepdim=True))
        return _f32(_f32(probs - target) / F32(logits.shape[0]))


# Optimizer steps: the scalar coefficients come from float64 attrs (1 - 0.999 must not lose
# digits to float32), then each update is evaluated in float64 and rounded once to float32.


@register("adam_update")
def _adam_update(node: CheckedNode, args: list[np.ndarray]) -> np.ndarray:
    param, m, v = (x.astype(np.float64) for x in args[:3])
    step = np.float64(args[3].reshape(-1)[0])
    at = node.attrs
    with np.errstate(all="ignore"):  # numpy scalars: a step of 0 gives inf/NaN, not an exception
        step_size = np.float64(at["lr"]) / (1.0 - np.float64(at["beta1"]) ** step)
        root_correction = np.sqrt(1.0 - np.float64(at["beta2"]) ** step)
        return _f32(param - step_size * m / (np.sqrt(v) / root_correction + at["eps"]))


@register("life")
def _life(node: CheckedNode, args: list[np.ndarray]) -> np.ndarray:
    alive = (args[0] > 0.5).astype(np.int32)
    neighbours = sum(
        np.roll(alive, (dy, dx), axis=(0, 1))
        for dy in (-1, 0, 1)
        for dx in (-1, 0, 1)
        if (dy, dx) != (0, 0)
    )
    born_or_kept = (neighbours == 3) | ((alive == 1) & (neighbours == 2))
    return born_or_kept.astype(F32)


# Block-quantized weights (their bytes arrive as quant.tagged records: the kind is the record's
# field name; [N, K] is the node's) and matmul_fixed.

# (cpu-python's supports() checks every dtype a node touches: the result's and the operands')
QUANT_DTYPES = ("float32", *quant.BLOCK_BYTES)


@register("dequantize", dtypes=QUANT_DTYPES)
def _dequantize(node: CheckedNode, args: list[np.ndarray]) -> np.ndarray:
    n, k = node.shape
    return quant.dequantize(args[0], quant.kind_of(args[0]), (n, k))


@register("dequantize_rows", dtypes=(*QUANT_DTYPES, "int32"))
def _dequantize_rows(node: CheckedNode, args: list[np.ndarray]) -> np.ndarray:
    raw, idx = args
    kind = quant.kind_of(raw)
    k = node.shape[1]
    n = raw.size * quant.BLOCK_VALUES[kind] // k
    bad = np.flatnonzero((idx < 0) | (idx >= n))
    if bad.size:
        p = int(bad[0])
        raise index_error("BACKEND", node, (n, k), p, int(idx[p]))
    return quant.dequantize_rows(raw, kind, (n, k), idx)


@register("matmul_q", dtypes=QUANT_DTYPES)
def _matmul_q(node: CheckedNode, args: list[np.ndarray]) -> np.ndarray:
    # the decoded weight is a numpy temporary of this kernel (cpu-python has no device)
    a, raw = args
    n, k = node.shape[-1], a.shape[-1]
    w = quant.dequantize(raw, quant.kind_of(raw), (n, k))
    with np.errstate(all="ignore"):
        return _f32(np.matmul(a, w.T))


@register("matmul_fixed")
def _matmul_fixed(node: CheckedNode, args: list[np.ndarray]) -> np.ndarray:
    return quant.matmul_fixed(args[0], args[1], int(node.attrs["frac_bits"]))


# the kernels of other modules (they import this one): the generated map ops, the v3 ops
from . import conv_ops, extremes, index_ops, map_bits, maps, select  # noqa: F401
