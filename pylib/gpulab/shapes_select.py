"""Shape rules of the protocol-v4 selection ops (slice, slice_scatter, index_select, gather,
index_add, scatter_add, concat, pad): docs/protocol.md "Shape rules". Twin of
backends-js/src/shapes-select.mjs, message for message; shapes.py adds SELECT_RULES to its
table."""

from __future__ import annotations

import math
from typing import Any

Shape = tuple[int, ...]
Attrs = dict[str, Any]


class SelectShapeError(ValueError):
    """A selection rule refused its operands (shapes.py re-raises it as its ShapeError)."""


def _fmt(shape: Any) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def _js(v: Any) -> str:
    return "null" if v is None else str(v)


def slice_indices(entry: Any, n: int) -> tuple[int, int, int, int]:
    """Python's slice(start, stop, step).indices(n) and the selected count (start, stop, step,
    count): negative start/stop count from the end, out-of-range ones clamp."""
    start, stop, step = entry
    s = 1 if step is None else int(step)
    lo, hi = (-1, n - 1) if s < 0 else (0, n)

    def clamp_end(v: Any, default: int) -> int:
        if v is None:
            return default
        w = v + n if v < 0 else v
        return min(max(w, lo), hi)

    a = clamp_end(start, hi if s < 0 else lo)
    b = clamp_end(stop, lo if s < 0 else hi)
    count = max(0, math.ceil((a - b) / -s)) if s < 0 else max(0, math.ceil((b - a) / s))
    return a, b, s, count


def _slice_shape(shapes: list[Shape], attrs: Attrs) -> Shape:
    """slices checked against a and normalized so a second validation reads them the same:
    start absolute, stop absolute or None (a negative step run to index 0)."""
    a = shapes[0]
    slices = attrs["slices"]
    if len(slices) != len(a):
        raise SelectShapeError(f"slices has {len(slices)} entries, a {_fmt(a)} has rank {len(a)}")
    out: list[int] = []
    normal = []
    for k, entry in enumerate(slices):
        start, stop, step, count = slice_indices(entry, a[k])
        out.append(count)
        normal.append([start, None if stop < 0 else stop, step])
    attrs["slices"] = normal
    return tuple(out)


def _index_axis(shapes: list[Shape], attrs: Attrs) -> int:
    """The axis normalized against a (a rank-0 a takes 0 or -1, as PyTorch)."""
    a = shapes[0]
    rank = max(len(a), 1)
    axis = attrs["axis"]
    if axis < -rank or axis >= rank:
        raise SelectShapeError(
            f"axis {axis} is out of range for a {_fmt(a)} (allowed {-rank}..{rank - 1})"
        )
    attrs["axis"] = axis + rank if axis < 0 else axis
    return int(attrs["axis"])


def _require_rank(name: str, shape: Shape, rank: int) -> None:
    if len(shape) != rank:
        raise SelectShapeError(f"operand {name} must have rank {rank}, got {name} {_fmt(shape)}")


def _require_within(a: Shape, axis: int, idx: Shape) -> None:
    _require_rank("idx", idx, len(a))
    for k, d in enumerate(idx):
        if k != axis and d > a[k]:
            raise SelectShapeError(
                f"operand idx {_fmt(idx)} is larger than a {_fmt(a)} on axis {k}"
            )


def _require_indexable(a: Shape, axis: int, idx: Shape) -> None:
    """An index into an empty axis is never in range: a non-empty idx along an axis of size
    0 is refused here, whatever its values (fed indices included)."""
    extent = 1 if len(a) == 0 else a[axis]
    if extent == 0 and math.prod(idx) > 0:
        raise SelectShapeError(
            f"axis {axis} of a {_fmt(a)} is empty: no index of idx {_fmt(idx)} is in range"
        )


def _require_index_list(a: Shape, idx: Shape) -> None:
    """The idx of index_select / index_add: rank 1, or for a rank-0 a one element of rank <= 1
    (PyTorch: an index to a scalar holds one value)."""
    if len(a) > 0:
        _require_rank("idx", idx, 1)
    elif len(idx) > 1 or math.prod(idx) != 1:
        raise SelectShapeError(
            f"operand idx must hold one index with rank <= 1 for a rank-0 a, got idx {_fmt(idx)}"
        )


def _require_shape(name: str, got: Shape, want: Shape, what: str) -> None:
    if tuple(got) != tuple(want):
        raise SelectShapeError(f"operand {name} {_fmt(got)} must have {what} {_fmt(want)}")


def _slice(shapes: list[Shape], attrs: Attrs) -> tuple[Shape, Attrs]:
    return _slice_shape(shapes, attrs), attrs


def _slice_scatter(shapes: list[Shape], attrs: Attrs) -> tuple[Shape, Attrs]:
    want = _slice_shape(shapes, attrs)
    _require_shape("src", shapes[1], want, "the slice's shape")
    return shapes[0], attrs


def _index_select(shapes: list[Shape], attrs: Attrs) -> tuple[Shape, Attrs]:
    axis = _index_axis(shapes, attrs)
    idx = shapes[1]
    _require_index_list(shapes[0], idx)
    _require_indexable(shapes[0], axis, idx)
    return tuple(idx[0] if k == axis else d for k, d in enumerate(shapes[0])), attrs


def _dequantize_rows(shapes: list[Shape], attrs: Attrs) -> tuple[Shape, Attrs]:
    """Rows idx of a block-quantized [N, K] -> [M, K] (the table's rank is checked here too: the
    dtype check comes after the shape rule, so a float32 vector reaches it)."""
    _require_rank("a", shapes[0], 2)
    _require_rank("idx", shapes[1], 1)
    _require_indexable(shapes[0], 0, shapes[1])
    return (shapes[1][0], shapes[0][1]), attrs


def _gather(shapes: list[Shape], attrs: Attrs) -> tuple[Shape, Attrs]:
    axis = _index_axis(shapes, attrs)
    _require_within(shapes[0], axis, shapes[1])
    _require_indexable(shapes[0], axis, shapes[1])
    return tuple(shapes[1]), attrs


def _index_add(shapes: list[Shape], attrs: Attrs) -> tuple[Shape, Attrs]:
    axis = _index_axis(shapes, attrs)
    a, idx, src = shapes
    _require_index_list(a, idx)
    want = tuple(idx[0] if k == axis else d for k, d in enumerate(a))
    _require_shape("src", src, want, "a's shape with axis replaced by len(idx):")
    _require_indexable(a, axis, idx)
    return a, attrs


def _scatter_add(shapes: list[Shape], attrs: Attrs) -> tuple[Shape, Attrs]:
    axis = _index_axis(shapes, attrs)
    a, idx, src = shapes
    _require_within(a, axis, idx)
    _require_shape("src", src, idx, "idx's shape")
    _require_indexable(a, axis, idx)
    return a, attrs


def _concat(shapes: list[Shape], attrs: Attrs) -> tuple[Shape, Attrs]:
    if len(shapes[0]) == 0:
        raise SelectShapeError(
            f"operand tensors[0] {_fmt(shapes[0])} has rank 0; concat needs rank >= 1"
        )
    axis = _index_axis(shapes, attrs)
    first = shapes[0]
    total = 0
    for i, s in enumerate(shapes):
        same = len(s) == len(first) and all(k == axis or d == first[k] for k, d in enumerate(s))
        if not same:
            raise SelectShapeError(
                f"operand tensors[{i}] {_fmt(s)} does not match tensors[0] "
                f"{_fmt(first)} except along axis {axis}"
            )
        total += s[axis]
    return tuple(total if k == axis else d for k, d in enumerate(first)), attrs


def _pad(shapes: list[Shape], attrs: Attrs) -> tuple[Shape, Attrs]:
    a = shapes[0]
    widths = attrs["widths"]
    if len(widths) != len(a):
        raise SelectShapeError(f"widths has {len(widths)} entries, a {_fmt(a)} has rank {len(a)}")
    return tuple(d + widths[k][0] + widths[k][1] for k, d in enumerate(a)), attrs


SELECT_RULES = {
    "slice": _slice,
    "slice_scatter": _slice_scatter,
    "index_select": _index_select,
    "dequantize_rows": _dequantize_rows,
    "gather": _gather,
    "index_add": _index_add,
    "scatter_add": _scatter_add,
    "concat": _concat,
    "pad": _pad,
}
