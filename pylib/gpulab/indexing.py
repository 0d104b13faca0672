"""Basic indexing for `Tensor.__getitem__` and `Tensor.slice_scatter`: a NumPy key (integers,
slices, `...`, `None`) as the protocol's `slice` entries plus the shape to reshape to.

`t[1:3, ::2, -1]` is `slice(slices=[[1, 3, 1], [None, None, 2], [-1, None, 1]])` (the integer
as the one-element run `[i, i + 1]`, `-1` as `[-1, None]`) followed by a `reshape` that drops
the integer axes and inserts the `None` axes. Pure functions: graph.py makes the nodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import GpuLabError

FULL = [None, None, None]


@dataclass(frozen=True)
class BasicIndex:
    """What a key selects: one [start, stop, step] per axis, the axes an integer removes, and
    the result's axes (each a source axis, or -1 for an inserted 1; None when the result is
    the slice itself, no reshape)."""

    slices: list[list[int | None]]
    dropped: tuple[int, ...]
    layout: tuple[int, ...] | None

    def result_shape(self, sliced: tuple[int, ...]) -> tuple[int, ...]:
        """The final shape from the slice's shape."""
        assert self.layout is not None
        return tuple(1 if a < 0 else sliced[a] for a in self.layout)

    @property
    def trivial(self) -> bool:
        return all(s == FULL for s in self.slices)


def _as_index(k: Any) -> int | None:
    if isinstance(k, bool):
        return None
    if isinstance(k, int):
        return k
    index = getattr(k, "__index__", None)
    return int(index()) if index is not None and getattr(k, "shape", ()) == () else None


def _expand(key: Any, rank: int, allow_none: bool) -> list[Any]:
    items = list(key) if isinstance(key, tuple) else [key]
    if sum(1 for k in items if k is Ellipsis) > 1:
        raise GpuLabError("VALIDATION", "an index can only have a single ellipsis ('...')")
    used = sum(1 for k in items if k is not None and k is not Ellipsis)
    if used > rank:
        raise GpuLabError("VALIDATION", f"too many indices: {used} for a tensor of rank {rank}")
    if not allow_none and any(k is None for k in items):
        raise GpuLabError("VALIDATION", "slice_scatter's slices cannot insert axes (None)")
    if Ellipsis in items:
        at = items.index(Ellipsis)
        items[at : at + 1] = [slice(None)] * (rank - used)
    else:
        items += [slice(None)] * (rank - used)
    return items


def basic_index(key: Any, shape: tuple[int, ...], allow_none: bool = True) -> BasicIndex:
    """The protocol form of a basic-indexing key for a tensor of `shape`; integers out of
    range, steps of 0 and other kinds of key are refused with VALIDATION."""
    items = _expand(key, len(shape), allow_none)
    slices: list[list[int | None]] = []
    dropped: list[int] = []
    kept: list[int | None] = []  # per result axis: the source axis, or None for an inserted 1
    axis = 0
    for k in items:
        if k is None:
            kept.append(None)
            continue
        n = shape[axis]
        i = _as_index(k)
        if i is not None:
            if not -n <= i < n:
                raise GpuLabError(
                    "VALIDATION", f"index {i} is out of range for axis {axis} of size {n}"
                )
            i = i + n if i < 0 else i
            slices.append([i, i + 1, 1])
            dropped.append(axis)
        elif isinstance(k, slice):
            parts = [k.start, k.stop, k.step]
            if any(p is not None and _as_index(p) is None for p in parts):
                raise GpuLabError("VALIDATION", f"slice {k!r} must hold integers or None")
            slices.append([None if p is None else _as_index(p) for p in parts])
            kept.append(axis)
        else:
            raise GpuLabError(
                "VALIDATION",
                f"only basic indexing (integers, slices, ..., None) "
                f"is supported, got {type(k).__name__}: use "
                "index_select or gather for tensor indices",
            )
        axis += 1
    reshaped = bool(dropped) or None in kept
    return BasicIndex(
        slices, tuple(dropped), tuple(-1 if a is None else a for a in kept) if reshaped else None
    )
