"""Constant folding at load for the small integer tensors of shape computations.

Exported models compute shapes in the graph (Shape -> Gather -> Concat -> Reshape); those
values must be known at load for static shapes, so the structural ops and integer arithmetic
fold when every input is a Const. Pure Python over lists, bounded by max_fold_elements.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence

from ..errors import GpuLabError
from ..shapes import broadcast_shapes
from .limits import LIMITS
from .values import Const, const_of


def strides(shape: Sequence[int]) -> list[int]:
    out, acc = [], 1
    for d in reversed(shape):
        out.append(acc)
        acc *= d
    return out[::-1]


def foldable(*values: object) -> bool:
    """Every value a Const, none too large to fold, nor their broadcast together (two
    [65536, 1] x [1, 65536] constants would fold to 2^32 elements)."""
    most = LIMITS["max_fold_elements"]
    if not all(isinstance(v, Const) and v.size <= most for v in values):
        return False
    shape: tuple[int, ...] | None = ()
    for v in values:
        shape = broadcast_shapes(shape, v.shape) if shape is not None else None  # type: ignore[union-attr]
    return shape is None or math.prod(shape) <= most


def _check_fold_size(shape: Sequence[int]) -> None:
    """A folded result's size, before its values are made (callers check with foldable; this
    is the backstop)."""
    n = math.prod(shape)
    if n > LIMITS["max_fold_elements"]:
        raise GpuLabError(
            "LIMIT",
            f"onnx: a constant of shape {list(shape)} ({n} elements) would be folded at load, "
            f"more than max_fold_elements {LIMITS['max_fold_elements']}",
        )


def _at(c: Const, index: Sequence[int], shape: Sequence[int]) -> object:
    """c's element at a broadcast index of `shape`."""
    off = len(shape) - len(c.shape)
    flat = 0
    for d, (n, s) in enumerate(zip(c.shape, strides(c.shape))):
        flat += (index[d + off] if n != 1 else 0) * s
    return c.data[flat]


def elementwise(consts: Sequence[Const], fn: Callable[..., object], dtype: str) -> Const:
    shape: tuple[int, ...] | None = ()
    for c in consts:
        shape = broadcast_shapes(shape, c.shape) if shape is not None else None
    if shape is None:
        raise GpuLabError(
            "VALIDATION", f"onnx: shapes {[list(c.shape) for c in consts]} do not broadcast"
        )
    _check_fold_size(shape)
    values = [
        fn(*(_at(c, idx, shape) for c in consts))
        for idx in itertools.product(*(range(n) for n in shape))
    ]
    return const_of(dtype, shape, values)


def take(c: Const, shape: Sequence[int], source: Callable[[tuple[int, ...]], int]) -> Const:
    """A Const of `shape` whose element at index i is c.data[source(i)] (a flat index)."""
    _check_fold_size(shape)
    values = [c.data[source(idx)] for idx in itertools.product(*(range(n) for n in shape))]
    return const_of(c.dtype, shape, values)


def reshape(c: Const, shape: Sequence[int]) -> Const:
    if math.prod(shape) != c.size:
        raise GpuLabError("VALIDATION", f"onnx: cannot reshape {list(c.shape)} to {list(shape)}")
    return Const(c.dtype, tuple(shape), c.data, c.name)
