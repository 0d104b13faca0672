"""The protocol's fixed reduction order, vectorized with numpy.

A reduction of n values uses 64 lanes: lane j adds elements j, j+64, j+128, ... in ascending
order starting from 0.0, then the lanes combine as a tree (s = 32, 16, ..., 1:
lane[i] += lane[i+s]). Every backend uses this order, so sums agree bit for bit.

Vectorized form: pad the reduced axis to a multiple of 64 (with 0, or -inf for max), view it as
(k, 64, rest) C-contiguous and reduce over axis 0. numpy reduces the outer axis of a contiguous
array row by row (sequential float32 adds, no pairwise summation); test_cpu.py checks this
against an explicit loop so a numpy change cannot slip by.
"""

from __future__ import annotations

import numpy as np

LANES = 64


def _lanes_first(
    x: np.ndarray, axis: int | None, pad: float, dtype: type | np.dtype = np.float32
) -> np.ndarray:
    """x with the reduced axis first, padded to k*64 and split into (k, 64, *rest)."""
    moved = x.reshape(-1) if axis is None else np.moveaxis(x, axis, 0)
    n = moved.shape[0]
    k = max(1, -(-n // LANES))
    rest = moved.shape[1:]
    padded = np.full((k * LANES, *rest), pad, dtype=dtype)
    padded[:n] = moved
    return padded.reshape(k, LANES, *rest)


def _tree(lanes: np.ndarray, combine: np.ufunc) -> np.ndarray:
    s = LANES // 2
    with np.errstate(all="ignore"):  # inf + -inf is NaN, as the order says: no warning
        while s >= 1:
            lanes = combine(lanes[:s], lanes[s : 2 * s])
            s //= 2
    return lanes[0]


def _restore(result: np.ndarray, x: np.ndarray, axis: int | None, keepdim: bool) -> np.ndarray:
    if not keepdim:
        return result
    if axis is None:
        return result.reshape((1,) * x.ndim)
    return np.expand_dims(result, axis)


def fixed_sum(x: np.ndarray, axis: int | None = None, keepdim: bool = False) -> np.ndarray:
    """Sum in the protocol order (float32 adds); axis None reduces everything."""
    blocks = _lanes_first(np.asarray(x, dtype=np.float32), axis, 0.0)
    # lanes start from +0.0: adding +0.0 turns a lane of only -0.0 into +0.0, as the order says
    with np.errstate(all="ignore"):
        lanes = np.add.reduce(blocks, axis=0) + np.float32(0.0)
    return _restore(_tree(lanes, np.add), x, axis, keepdim)


def fixed_reduce(
    x: np.ndarray, axis: int | None, keepdim: bool, combine: np.ufunc, identity: float
) -> np.ndarray:
    """A reduction in the protocol order at x's dtype (cpu/maps.py, from the kernel table):
    lane j combines elements j, j + 64, ... into `identity`, then the tree. For np.add at
    float32 the same bits as fixed_sum."""
    dtype = np.asarray(x).dtype
    blocks = _lanes_first(np.asarray(x), axis, identity, dtype)
    with np.errstate(all="ignore"):  # the identity first, as every lane starts from it
        lanes = combine(combine.reduce(blocks, axis=0), dtype.type(identity))
    return _restore(_tree(lanes, combine), x, axis, keepdim)


def fixed_max(x: np.ndarray, axis: int | None = None, keepdim: bool = False) -> np.ndarray:
    """Max in the same order (NaN propagates)."""
    blocks = _lanes_first(np.asarray(x, dtype=np.float32), axis, -np.inf)
    lanes = np.maximum.reduce(blocks, axis=0)
    return _restore(_tree(lanes, np.maximum), x, axis, keepdim)


def reduced_count(shape: tuple[int, ...], axis: int | None) -> int:
    if axis is None:
        return int(np.prod(shape, dtype=np.int64))
    return shape[axis]
