"""Shape rules of the protocol, keyed by the op table's `shape_rule` (twin of shapes.mjs).

Each rule takes the operand shapes (op-table order) and the type-checked attrs, and returns the
result shape with the attrs normalized (axis non-negative or None, reshape's -1 resolved). A rule
raises ShapeError with a message naming the shapes; the caller adds the node's name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import optable
from .shapes_conv import CONV_RULES, ConvShapeError
from .shapes_select import SELECT_RULES, SelectShapeError

Shape = tuple[int, ...]
Attrs = dict[str, Any]
Rule = Callable[[list[Shape], Attrs], tuple[Shape, Attrs]]


class ShapeError(ValueError):
    """A shape rule refused its operands; the message names the shapes."""


def element_count(shape: Shape) -> int:
    count = 1
    for d in shape:
        count *= d
    return count


def _show(shape: Shape) -> str:
    return str(list(shape))


def _from_attr(shapes: list[Shape], attrs: Attrs) -> tuple[Shape, Attrs]:
    return tuple(attrs["shape"]), attrs


def _same(shapes: list[Shape], attrs: Attrs) -> tuple[Shape, Attrs]:
    return shapes[0], attrs


def _require_equal(shapes: list[Shape], names: str) -> None:
    if any(s != shapes[0] for s in shapes[1:]):
        shown = " and ".join(_show(s) for s in shapes)
        raise ShapeError(f"operands {names} must have equal shapes, got {shown}")


def _same_ab(shapes: list[Shape], attrs: Attrs) -> tuple[Shape, Attrs]:
    _require_equal(shapes, "a, b")
    return shapes[0], attrs


def _same_ab_rank2(shapes: list[Shape], attrs: Attrs) -> tuple[Shape, Attrs]:
    _require_equal(shapes, "a, b")
    if len(shapes[0]) != 2:
        raise ShapeError(f"operands must have rank 2 ([N, C]), got {_show(shapes[0])}")
    return shapes[0], attrs


def broadcast_shapes(a: Shape, b: Shape) -> Shape | None:
    """NumPy broadcasting of two shapes, or None when they do not broadcast."""
    rank = max(len(a), len(b))
    pa = (1,) * (rank - len(a)) + a
    pb = (1,) * (rank - len(b)) + b
    out = []
    for x, y in zip(pa, pb):
        if x != y and x != 1 and y != 1:
            return None
        out.append(y if x == 1 else x)  # (an axis of 0 against 1 is 0, as NumPy)
    return tuple(out)


def _broadcast(shapes: list[Shape], attrs: Attrs) -> tuple[Shape, Attrs]:
    out = broadcast_shapes(shapes[0], shapes[1])
    if out is None:
        raise ShapeError(
            f"operand shapes {_show(shapes[0])} and {_show(shapes[1])} do not broadcast"
        )
    return out, attrs


def _broadcast3(shapes: list[Shape], attrs: Attrs) -> tuple[Shape, Attrs]:
    # where(cond, a, b): the three operands broadcast together
    ab = broadcast_shapes(shapes[1], shapes[2])
    out = None if ab is None else broadcast_shapes(shapes[0], ab)
    if out is None:
        raise ShapeError(
            f"operand shapes cond {_show(shapes[0])}, a {_show(shapes[1])} and "
            f"b {_show(shapes[2])} do not broadcast"
        )
    return out, attrs


def _require_counter(counter: Shape) -> None:
    if len(counter) > 1 or element_count(counter) != 1:
        raise ShapeError(
            f"operand counter must hold one element with rank <= 1, got {_show(counter)}"
        )


def _counter_shape(shapes: list[Shape], attrs: Attrs) -> tuple[Shape, Attrs]:
    # hash_uniform: the shape attribute; the counter holds one element
    _require_counter(shapes[0])
    return tuple(attrs["shape"]), attrs


def _same_counter(shapes: list[Shape], attrs: Attrs) -> tuple[Shape, Attrs]:
    # dropout(a, counter): shape of a; the counter holds one element
    _require_counter(shapes[1])
    return shapes[0], attrs


def _transpose(shapes: list[Shape], attrs: Attrs) -> tuple[Shape, Attrs]:
    a = shapes[0]
    if len(a) < 2:
        raise ShapeError(f"transpose needs rank >= 2, got {_show(a)}")
    return a[:-2] + (a[-1], a[-2]), attrs


def _permute(shapes: list[Shape], attrs: Attrs) -> tuple[Shape, Attrs]:
    a, dims = shapes[0], tuple(attrs["dims"])
    if sorted(dims) != list(range(len(a))):
        raise ShapeError(
            f"dims {list(dims)} is not a permutation of 0..{len(a) - 1} for shape {_show(a)}"
        )
    return tuple(a[d] for d in dims), {**attrs, "dims": dims}


def _reshape(shapes: list[Shape], attrs: Attrs) -> tuple[Shape, Attrs]:
    a, target = shapes[0], tuple(attrs["shape"])
    count = element_count(a)
    known = element_count(tuple(d for d in target if d != -1))
    if -1 in target and known == 0:
        # PyTorch's rule: with a 0 beside it, -1 could be any size
        raise ShapeError(
            f"cannot reshape {_show(a)} to {list(target)}: with a 0 among the sizes, -1 could "
            "be any size"
        )
    if -1 in target:
        if count % known:
            raise ShapeError(f"cannot reshape {_show(a)} ({count} elements) to {list(target)}")
        target = tuple(count // known if d == -1 else d for d in target)
    if element_count(target) != count:
        raise ShapeError(
            f"cannot reshape {_show(a)} ({count} elements) to {list(target)} "
            f"({element_count(target)} elements)"
        )
    return target, {**attrs, "shape": target}


def _matmul(shapes: list[Shape], attrs: Attrs) -> tuple[Shape, Attrs]:
    a, b = shapes
    if len(a) < 2 or len(b) < 2:
        raise ShapeError(f"matmul operands need rank >= 2, got {_show(a)} and {_show(b)}")
    if a[-1] != b[-2]:
        raise ShapeError(
            f"matmul inner dimensions differ: {_show(a)} @ {_show(b)} ({a[-1]} != {b[-2]})"
        )
    batch = broadcast_shapes(a[:-2], b[:-2])
    if batch is None:
        raise ShapeError(f"matmul batch axes of {_show(a)} and {_show(b)} do not broadcast")
    return batch + (a[-2], b[-1]), attrs


def _matmul_q(shapes: list[Shape], attrs: Attrs) -> tuple[Shape, Attrs]:
    """a @ b.T with b a block-quantized [N, K] (its input node checked the rank and K)."""
    a, b = shapes
    if len(a) < 2:
        raise ShapeError(f"matmul_q operand a needs rank >= 2, got {_show(a)} and {_show(b)}")
    if len(b) != 2:  # a b of another dtype reaches this rule before the dtype check (fuzz)
        raise ShapeError(f"matmul_q operand b must be [N, K], got {_show(a)} and {_show(b)}")
    if a[-1] != b[1]:
        raise ShapeError(
            f"matmul_q inner dimensions differ (a @ b.T): {_show(a)} and {_show(b)} "
            f"({a[-1]} != {b[1]})"
        )
    return a[:-1] + (b[0],), attrs


def normalize_axis(axis: int, rank: int, shape: Shape) -> int:
    """A non-negative axis; a rank-0 tensor takes 0 or -1 (as PyTorch: its one element is one
    axis of length 1)."""
    r = max(rank, 1)
    if not -r <= axis < r:
        raise ShapeError(f"axis {axis} is out of range for shape {_show(shape)} (rank {rank})")
    return axis % r


def reduce_shape(op: str, a: Shape, attrs: Attrs) -> tuple[Shape, Attrs]:
    """The reduce rule of `op`: its result and normalized attrs (a rank-0 a takes axis 0). An
    op whose `over_empty` is "refused" (max, min, argmax, argmin) refuses a non-empty result
    over no element."""
    keep = bool(attrs.get("keepdim", False))
    axis = attrs.get("axis")
    if axis is not None:
        axis = normalize_axis(axis, len(a), a)
    if axis is None or len(a) == 0:
        out: Shape = (1,) * len(a) if keep else ()
    else:
        out = a[:axis] + ((1,) if keep else ()) + a[axis + 1 :]
    # a rank-0 tensor's one axis is the whole tensor
    reduced = element_count(a) if axis is None or len(a) == 0 else a[axis]
    if reduced == 0 and element_count(out) > 0 and optable.ops()[op].get("over_empty") == "refused":
        where = (
            f"a {_show(a)} is empty" if axis is None else f"axis {axis} of a {_show(a)} is empty"
        )
        raise ShapeError(f"{op} over no element is undefined: {where}")
    return out, {**attrs, "axis": axis, "keepdim": keep}


def _reduce(shapes: list[Shape], attrs: Attrs) -> tuple[Shape, Attrs]:
    # the rule of sum and mean (validation runs reduce_shape with the op: infer_node)
    return reduce_shape("sum", shapes[0], attrs)


def _same_axis(shapes: list[Shape], attrs: Attrs) -> tuple[Shape, Attrs]:
    a = shapes[0]
    axis = attrs.get("axis")
    axis = -1 if axis is None else axis
    return a, {**attrs, "axis": normalize_axis(axis, len(a), a)}


def _cross_entropy(shapes: list[Shape], attrs: Attrs) -> tuple[Shape, Attrs]:
    _same_ab_rank2(shapes, attrs)
    return (), attrs


def _adam_update(shapes: list[Shape], attrs: Attrs) -> tuple[Shape, Attrs]:
    _require_equal(shapes[:3], "a, b, c")
    t = shapes[3]
    if len(t) > 1 or element_count(t) != 1:
        raise ShapeError(f"operand t must hold one element with rank <= 1, got {_show(t)}")
    return shapes[0], attrs


def _life(shapes: list[Shape], attrs: Attrs) -> tuple[Shape, Attrs]:
    if len(shapes[0]) != 2:
        raise ShapeError(f"life needs a rank-2 grid [H, W], got {_show(shapes[0])}")
    return shapes[0], attrs


SHAPE_RULES: dict[str, Rule] = {
    "from_attr": _from_attr,
    "same": _same,
    "same_ab": _same_ab,
    "same_ab_rank2": _same_ab_rank2,
    "broadcast": _broadcast,
    "broadcast3": _broadcast3,
    "counter_shape": _counter_shape,
    "same_counter": _same_counter,
    "transpose": _transpose,
    "permute": _permute,
    "reshape": _reshape,
    "matmul": _matmul,
    "matmul_q": _matmul_q,
    "reduce": _reduce,
    "same_axis": _same_axis,
    "cross_entropy": _cross_entropy,
    "adam_update": _adam_update,
    "life": _life,
}


def _select_rule(rule: Callable[[list[Shape], Attrs], tuple[Shape, Attrs]]) -> Rule:
    # the v4 selection rules (shapes_select.py) normalize a copy of the attrs
    def run(shapes: list[Shape], attrs: Attrs) -> tuple[Shape, Attrs]:
        try:
            return rule(shapes, dict(attrs))
        except SelectShapeError as err:
            raise ShapeError(str(err)) from None

    return run


SHAPE_RULES.update({name: _select_rule(rule) for name, rule in SELECT_RULES.items()})


def _conv_rule(rule: Callable[[list[Shape], Attrs], tuple[Shape, Attrs]]) -> Rule:
    # the v6 window rules (shapes_conv.py); their ConvLimitError passes through (LIMIT)
    def run(shapes: list[Shape], attrs: Attrs) -> tuple[Shape, Attrs]:
        try:
            return rule(shapes, attrs)
        except ConvShapeError as err:
            raise ShapeError(str(err)) from None

    return run


SHAPE_RULES.update({name: _conv_rule(rule) for name, rule in CONV_RULES.items()})
