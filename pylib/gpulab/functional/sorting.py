"""Stable sorting by ranks: the order that sorts float32 values along an axis, as torch's
stable sort gives it (NaN after every number ascending, before every number descending; equal
values keep their order).

The protocol has no sort op: each element's rank is the count of elements that go before it
(a smaller value, or an equal one at a lower index), from an [n, n] comparison matrix per row,
and output position r takes the index whose rank is r (a one-hot [n, n] matrix times the
indices). Counts and indices are float32 sums of 0/1 terms and integers below 2^24: exact.
The matrices hold rows * n * n elements, so `sort_elements` tells a frontend the size before
it builds one (gpulab.torch refuses past `SORT_LIMIT`).
"""

from __future__ import annotations

import array
import math

from ..graph import Tensor

SORT_LIMIT = 2**24  # comparison-matrix elements a sort may build (rows * n * n)


def sort_elements(shape: list[int], axis: int) -> int:
    """The elements of one comparison matrix for sorting `shape` along `axis`."""
    n = shape[axis]
    return math.prod(shape) * n


def _before(g: object, n: int) -> Tensor:
    """[n, n] float32: 1 in row i, column j where j < i (index order breaks ties)."""
    rows = array.array("f")
    for i in range(n):
        rows.extend([1.0] * i + [0.0] * (n - i))
    return g.tensor(rows, shape=[n, n])  # type: ignore[attr-defined]


def _flag(t: Tensor) -> Tensor:
    return t.cast("float32")


def stable_order(x: Tensor, axis: int, descending: bool = False) -> Tensor:
    """int32 indices along axis (0 <= axis < x.ndim) that sort float32 x stably."""
    g = x.graph
    nd = x.ndim
    perm = [d for d in range(nd) if d != axis] + [axis]
    back = [perm.index(d) for d in range(nd)]
    xp = x.permute(perm) if axis != nd - 1 else x
    lead, n = list(xp.shape[:-1]), xp.shape[-1]
    a = xp.reshape(lead + [n, 1])  # element i: rows
    b = xp.reshape(lead + [1, n])  # element j: columns
    nan_a, nan_b = _flag(a.ne(a)), _flag(b.ne(b))
    if descending:  # j before i: a larger value, or j a number and i NaN... NaN goes first
        by_value = _flag(b > a) + nan_b * (1.0 - nan_a)
    else:  # a smaller value, or j a number where i is NaN (NaN goes last)
        by_value = _flag(b < a) + (1.0 - nan_b) * nan_a
    tie = _flag(b.eq(a)) + nan_a * nan_b
    rank = (by_value + tie * _before(g, n)).sum(axis=-1)  # [..., n]: element i's position
    iota = g.tensor(array.array("f", range(n)), shape=[n])  # type: ignore[attr-defined]
    # output r holds the i whose rank is r: sum over i of i * (rank_i == r)
    hit = _flag(rank.reshape(lead + [n, 1]).eq(iota.reshape([1, n])))
    order = (hit * iota.reshape([n, 1])).sum(axis=-2)
    return (order.permute(back) if axis != nd - 1 else order).cast("int32")
