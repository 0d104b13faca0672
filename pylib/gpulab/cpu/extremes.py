"""reduce_max / reduce_min / argmax / argmin (protocol v3) at float32 and int32 (family
custom, as extremes.wgsl): IEEE 754-2019 maximum / minimum (NaN propagates, -0 < +0) and the
first index of the extreme (the first NaN wins; -0 and +0 tie), int32 indices.
"""

from __future__ import annotations

import numpy as np

from ..protocol import CheckedNode
from .kernels import F32, register

V3 = ("float32", "int32")


def _moved_rows(x: np.ndarray, axis: int | None) -> np.ndarray:
    """The reduced elements as rows: [lines, n] (axis None: one row, the flattened tensor)."""
    if axis is None:
        return x.reshape(1, -1)
    return np.moveaxis(x, axis, -1).reshape(-1, x.shape[axis])


def _ordered_keys(x: np.ndarray) -> np.ndarray:
    """float32 bits mapped to int32 keys in the order -inf < ... < -0 < +0 < ... < inf."""
    bits = x.view(np.int32)
    return bits ^ ((bits >> 31) & np.int32(0x7FFFFFFF))


def _extreme(node: CheckedNode, args: list[np.ndarray], largest: bool) -> np.ndarray:
    rows = _moved_rows(np.ascontiguousarray(args[0]), node.attrs["axis"])
    if rows.dtype.kind != "f":
        best = rows.max(axis=1) if largest else rows.min(axis=1)
        return best.reshape(node.shape)
    # IEEE 754-2019 maximum/minimum: -0 < +0 (a total order on the keys), NaN propagates
    keys = _ordered_keys(rows)
    best_keys = keys.max(axis=1) if largest else keys.min(axis=1)
    best = (best_keys ^ ((best_keys >> 31) & np.int32(0x7FFFFFFF))).view(F32)
    best = np.where(np.isnan(rows).any(axis=1), F32(np.nan), best)
    return best.astype(F32).reshape(node.shape)


@register("reduce_max", dtypes=V3)
def _reduce_max(node: CheckedNode, args: list[np.ndarray]) -> np.ndarray:
    return _extreme(node, args, largest=True)


@register("reduce_min", dtypes=V3)
def _reduce_min(node: CheckedNode, args: list[np.ndarray]) -> np.ndarray:
    return _extreme(node, args, largest=False)


# np.argmax / np.argmin: the first index on ties (-0 == +0), the first NaN wins: the protocol's
# rule exactly (documented numpy behaviour, checked by the conformance corpus).


@register("argmax", dtypes=V3)
def _argmax(node: CheckedNode, args: list[np.ndarray]) -> np.ndarray:
    rows = _moved_rows(np.ascontiguousarray(args[0]), node.attrs["axis"])
    return np.argmax(rows, axis=1).astype(np.int32).reshape(node.shape)


@register("argmin", dtypes=V3)
def _argmin(node: CheckedNode, args: list[np.ndarray]) -> np.ndarray:
    rows = _moved_rows(np.ascontiguousarray(args[0]), node.attrs["axis"])
    return np.argmin(rows, axis=1).astype(np.int32).reshape(node.shape)
