"""Selection along the last axis: the k largest (or smallest) values and their indices, in
the order of `sorting.stable_order` (a topk over an axis too long for the sort's n x n
comparison matrices: a language model's vocabulary), from the protocol's exact ops
(reduce_max/min, eq, where, argmax, gather): k rounds, each picks the first not-yet-taken
position holding the round's extreme.

Ordering (torch's): NaN counts as larger than every number (first for largest, last for
smallest); equal values (and -0 / +0) come lowest index first. Each round is ~10 nodes, so k is
bounded (`MAX_K`); the values are gathered from the input, so they carry its gradient."""

from __future__ import annotations

import array
from typing import Any

from ..graph import Tensor

MAX_K = 256


def _first_hit(hit: Tensor, axis: int) -> Tensor:
    """Index [.., 1] of the first 1 of the int32 0/1 mask along axis."""
    return hit.graph.op("argmax", a=hit, axis=axis, keepdim=True)


def _int(g: Any, v: int) -> Tensor:
    return g.tensor(array.array("i", [v]), shape=[1], dtype="int32")


def _ones(mask: Tensor) -> Tensor:
    """The bool mask as int32 0/1."""
    return mask.cast("int32")


def _either(a: Tensor, b: Tensor) -> Tensor:
    """a or b (bool masks; the op table has no logical ops: max of 0/1)."""
    g = a.graph
    return g.op("gt", a=g.op("maximum", a=_ones(a), b=_ones(b)), b=_int(g, 0))


def _round(x: Tensor, taken: Tensor | None, nan: Tensor, largest: bool, axis: int) -> Tensor:
    g = x.graph
    zero = _int(g, 0)
    if largest:
        fill = -float("inf") if x.dtype == "float32" else -(2**31)
        masked = x if taken is None else g.where(taken, fill, x)
        m = g.op("reduce_max", a=masked, axis=axis, keepdim=True)  # NaN propagates: NaN first
        equal = g.op("eq", a=x, b=m).cast("int32")
        hit = g.where(g.op("ne", a=m, b=m), _ones(nan), equal)
    else:
        skip = nan if taken is None else _either(nan, taken)
        fill = float("inf") if x.dtype == "float32" else 2**31 - 1
        m = g.op("reduce_min", a=g.where(skip, fill, x), axis=axis, keepdim=True)
        hit = g.where(skip, zero, _ones(g.op("eq", a=x, b=m)))
        # only NaN left (the round's minimum found no number): the first NaN not taken
        nan_left = _ones(nan) if taken is None else g.where(taken, zero, _ones(nan))
        any_hit = g.op("reduce_max", a=hit, axis=axis, keepdim=True)
        hit = g.where(g.op("gt", a=any_hit, b=zero), hit, nan_left)
    if taken is not None:
        hit = g.where(taken, zero, hit)
    return _first_hit(hit, axis)


def top_k(x: Tensor, k: int, largest: bool = True) -> tuple[Tensor, Tensor]:
    """(values, int32 indices) of the k largest (smallest) along the last axis, in order."""
    n, axis = x.shape[-1], x.ndim - 1
    if not 0 < k <= n:
        raise ValueError(f"top_k: k = {k} is outside 1..{n} (the last axis' size)")
    if k > MAX_K:
        raise ValueError(f"top_k: k = {k} is more than {MAX_K} (one graph round per value)")
    g = x.graph
    col = g.tensor(array.array("i", range(n)), shape=[1] * axis + [n], dtype="int32")
    nan = g.op("ne", a=x, b=x)
    taken: Tensor | None = None
    picks: list[Tensor] = []
    for _ in range(k):
        i = _round(x, taken, nan, largest, axis)
        picks.append(i)
        now = g.op("eq", a=col, b=i)
        taken = now if taken is None else _either(taken, now)
    indices = _concat(picks, axis)
    return x.gather(axis, indices), indices


def _concat(parts: list[Tensor], axis: int) -> Tensor:
    """concat in groups of 8 (the op's operand bound), as a tree."""
    while len(parts) > 1:
        parts = [
            parts[0].graph.concat(parts[i : i + 8], axis=axis)
            if len(parts[i : i + 8]) > 1
            else parts[i]
            for i in range(0, len(parts), 8)
        ]
    return parts[0]
