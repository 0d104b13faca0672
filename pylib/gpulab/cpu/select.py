"""maximum, minimum, the comparison masks, where, cast, hash_uniform and dropout (protocol v3,
family custom; one select kernel per GPU backend, select.wgsl). numpy's comparisons are IEEE
(NaN unordered, -0 == +0); the signed-zero rule of maximum/minimum and the cast rules are
written out. docs/protocol.md "The v3 select ops"; JS twin backends/cpu/select.mjs.
"""

from __future__ import annotations

import numpy as np

from .. import hash_uniform
from ..dtypes import DTYPE_NUMPY
from ..protocol import CheckedNode
from .kernels import register

V3 = ("float32", "int32")
BOOL = np.dtype(DTYPE_NUMPY["bool"])


def _extreme(a: np.ndarray, b: np.ndarray, is_max: bool) -> np.ndarray:
    """IEEE 754-2019 maximum / minimum: NaN propagates (a's first), -0 < +0."""
    a, b = np.broadcast_arrays(a, b)
    if a.dtype.kind != "f":
        return (np.maximum if is_max else np.minimum)(a, b)
    with np.errstate(invalid="ignore"):
        wins = a > b if is_max else a < b
        loses = b > a if is_max else b < a
    # equal values: only the zeros differ, and max wants +0 (min -0)
    tie = np.where(np.signbit(a) == is_max, b, a)
    out = np.where(wins, a, np.where(loses, b, tie))
    out = np.where(np.isnan(b), b, out)
    return np.where(np.isnan(a), a, out)


@register("maximum", dtypes=V3)
def _maximum(node: CheckedNode, args: list[np.ndarray]) -> np.ndarray:
    return _extreme(args[0], args[1], True).reshape(node.shape)


@register("minimum", dtypes=V3)
def _minimum(node: CheckedNode, args: list[np.ndarray]) -> np.ndarray:
    return _extreme(args[0], args[1], False).reshape(node.shape)


COMPARE = {
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
}


def _compare(node: CheckedNode, args: list[np.ndarray]) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        mask = COMPARE[node.op](args[0], args[1])
    return np.asarray(mask, dtype=BOOL).reshape(node.shape)


for _op in COMPARE:
    register(_op, dtypes=(*V3, "bool"))(_compare)


@register("where", dtypes=(*V3, "bool"))
def _where(node: CheckedNode, args: list[np.ndarray]) -> np.ndarray:
    cond, a, b = args
    return np.where(cond != 0, a, b).astype(a.dtype).reshape(node.shape)


_INT_RANGE = {"int32": (-(2**31), 2**31 - 1), "uint32": (0, 2**32 - 1)}


@register("cast", dtypes=("float32", "int32", "uint32", "bool"))
def _cast(node: CheckedNode, args: list[np.ndarray]) -> np.ndarray:
    a, to = args[0], str(node.attrs["dtype"])
    target = np.dtype(DTYPE_NUMPY[to])
    if to == "bool":
        out = a != 0  # NaN != 0: 1; -0 == 0: 0
    elif a.dtype.kind == "f" and to in _INT_RANGE:
        lo, hi = _INT_RANGE[to]
        with np.errstate(invalid="ignore"):
            whole = np.trunc(a.astype(np.float64))  # toward zero
            out = np.clip(np.where(np.isnan(whole), 0.0, whole), lo, hi).astype(np.int64)
    else:  # int32 <-> uint32 keep the bits (numpy's C casts wrap); to float32 rounds to even
        out = a
    return np.asarray(out).astype(target).reshape(node.shape)


def _lowbias32(x: np.ndarray) -> np.ndarray:
    x = x ^ (x >> np.uint32(16))
    x = x * np.uint32(0x7FEB352D)  # uint32 arrays wrap modulo 2^32
    x = x ^ (x >> np.uint32(15))
    x = x * np.uint32(0x846CA68B)
    return x ^ (x >> np.uint32(16))


def _hash_words(node: CheckedNode, counter: np.ndarray, count: int) -> np.ndarray:
    key = np.uint32(hash_uniform.hash_key(int(node.attrs["seed"]), int(counter.reshape(-1)[0])))
    return _lowbias32(key ^ _lowbias32(np.arange(count, dtype=np.uint32)))


@register("hash_uniform", dtypes=("uint32", "float32"))
def _hash_uniform(node: CheckedNode, args: list[np.ndarray]) -> np.ndarray:
    count = int(np.prod(node.shape, dtype=np.int64))
    top = _hash_words(node, args[0], count) >> np.uint32(8)
    return (top.astype(np.float32) * np.float32(2.0**-24)).reshape(node.shape)


@register("dropout", dtypes=("float32", "uint32"))
def _dropout(node: CheckedNode, args: list[np.ndarray]) -> np.ndarray:
    a, counter = args
    threshold, scale, _ = hash_uniform.dropout_words(float(node.attrs["p"]))
    keep = (_hash_words(node, counter, a.size) >> np.uint32(8)) >= threshold
    flat = a.reshape(-1)
    with np.errstate(all="ignore"):  # inf * 0 is NaN, an overflow is inf: both IEEE
        out = np.where(keep, flat * np.float32(scale), flat * np.float32(0.0))
    return out.astype(np.float32).reshape(node.shape)
