"""The protocol-v4 selection ops in numpy (slice, slice_scatter, index_select, gather,
index_add, scatter_add, concat, pad), at float32 and int32: bits are copied, never converted.
index_add / scatter_add add in the protocol's fixed order, ascending position in idx, one
float32 rounding (or int32 wrap) per addition: numpy's `np.add.at` is unbuffered and applies
the indices in order, which is exactly that sequential accumulation. Indices are checked first:
out of range is BACKEND naming the position (the same words as the JS backends)."""

from __future__ import annotations

import numpy as np

from ..protocol import CheckedNode
from ..values import index_error
from .kernels import register

DTYPES = ("float32", "int32")


def check_indices(node: CheckedNode, idx: np.ndarray, a_shape: tuple[int, ...]) -> None:
    """Refuse the first index outside 0..n-1 with BACKEND (before the kernel writes), in the
    words every backend uses (values.index_error)."""
    n = a_shape[node.attrs["axis"]]
    flat = idx.reshape(-1)
    bad = np.flatnonzero((flat < 0) | (flat >= n))
    if bad.size:
        p = int(bad[0])
        raise index_error("BACKEND", node, a_shape, p, int(flat[p]))


def _index(slices: list) -> tuple[slice, ...]:
    """numpy's slice of a normalized protocol slice (stop None: to index 0 backwards)."""
    return tuple(slice(start, stop, step) for start, stop, step in slices)


@register("slice", dtypes=DTYPES)
def _slice(node: CheckedNode, args: list[np.ndarray]) -> np.ndarray:
    return np.ascontiguousarray(args[0][_index(node.attrs["slices"])])


@register("slice_scatter", dtypes=DTYPES)
def _slice_scatter(node: CheckedNode, args: list[np.ndarray]) -> np.ndarray:
    out = args[0].copy()
    out[_index(node.attrs["slices"])] = args[1]
    return out


@register("index_select", dtypes=DTYPES)
def _index_select(node: CheckedNode, args: list[np.ndarray]) -> np.ndarray:
    a, idx = args
    check_indices(node, idx, a.shape)
    return np.ascontiguousarray(np.take(a, idx, axis=node.attrs["axis"]))


@register("gather", dtypes=DTYPES)
def _gather(node: CheckedNode, args: list[np.ndarray]) -> np.ndarray:
    a, idx = args
    check_indices(node, idx, a.shape)
    axis = node.attrs["axis"]
    # torch.gather: idx may be smaller than a on the other axes; take that corner of a
    corner = tuple(slice(None) if d == axis else slice(0, n) for d, n in enumerate(idx.shape))
    return np.ascontiguousarray(np.take_along_axis(a[corner], idx.astype(np.intp), axis=axis))


@register("index_add", dtypes=DTYPES)
def _index_add(node: CheckedNode, args: list[np.ndarray]) -> np.ndarray:
    a, idx, src = args
    check_indices(node, idx, a.shape)
    axis = node.attrs["axis"]
    out = np.moveaxis(a.copy(), axis, 0)
    with np.errstate(all="ignore"):  # int32 wraps
        np.add.at(out, idx.astype(np.intp), np.moveaxis(src, axis, 0))
    return np.ascontiguousarray(np.moveaxis(out, 0, axis))


@register("scatter_add", dtypes=DTYPES)
def _scatter_add(node: CheckedNode, args: list[np.ndarray]) -> np.ndarray:
    a, idx, src = args
    check_indices(node, idx, a.shape)
    axis = node.attrs["axis"]
    coords = list(np.indices(idx.shape, dtype=np.intp))
    coords[axis] = idx.astype(np.intp)
    out = a.copy()
    with np.errstate(all="ignore"):
        # the index arrays in row-major order of idx: the protocol's order per output element
        np.add.at(out, tuple(c.reshape(-1) for c in coords), src.reshape(-1))
    return out


@register("concat", dtypes=DTYPES)
def _concat(node: CheckedNode, args: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(args, axis=node.attrs["axis"])


@register("pad", dtypes=DTYPES)
def _pad(node: CheckedNode, args: list[np.ndarray]) -> np.ndarray:
    a = args[0]
    value = node.attrs["value"]
    with np.errstate(all="ignore"):
        fill = (
            np.array(value, dtype=np.float64).astype(a.dtype)
            if a.dtype.kind == "f"
            else np.array(int(value), dtype=a.dtype)
        )
    out = np.full(tuple(node.shape), fill, dtype=a.dtype)
    out[tuple(slice(w[0], w[0] + n) for w, n in zip(node.attrs["widths"], a.shape))] = a
    return out
