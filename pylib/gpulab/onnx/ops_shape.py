"""Shape and layout ONNX operators: Reshape, Transpose, Concat, Slice, Gather, Pad, Expand, ...

Operands that say a shape (Reshape's shape, Slice's starts, Pad's pads, ...) must be Consts;
Shape and Size are folded from the static shapes; the structural ops fold Const inputs so a
model's shape arithmetic is resolved at load.
"""

from __future__ import annotations

import array
import math

from .. import functional as F
from ..graph import Tensor
from .attrs import FLOAT, INTS
from .ctx import NodeCtx, Op
from .fold import foldable, reshape, strides, take
from .limits import LIMITS
from .values import ONNX_DTYPES, Const, Value, const_of, dtype_of, int_range

RANK = LIMITS["max_rank"]

INT64_MAX = 2**63 - 1


def _axis(cx: NodeCtx, axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise cx.invalid(f"axis {axis} is out of range for rank {rank}")
    return axis % rank


def via_float(t: Tensor, fn) -> Tensor:
    """A float32-only layout op on any dtype: cast there and back (exact for bool, and for
    int32 below 2^24 in magnitude)."""
    if t.dtype == "float32":
        return fn(t)
    return fn(t.cast("float32")).cast(t.dtype)


def via_int(t: Tensor, fn) -> Tensor:
    """A float32/int32 layout op on bool: as int32 and back."""
    if t.dtype != "bool":
        return fn(t)
    return fn(t.cast("int32")).cast("bool")


# -- reshape family ---------------------------------------------------------------------------


def reshape_value(cx: NodeCtx, v: Value, shape: list[int]) -> Value:
    if isinstance(v, Const):
        return reshape(v, shape)
    if list(v.shape) == list(shape):
        return v
    return via_int(v, lambda t: t.reshape(list(shape)))


def _reshape(cx: NodeCtx) -> list[Value]:
    v = cx.v(0)
    if cx.opset < 5:
        target = list(cx.attr("shape"))
        cx.at_most(len(target), RANK, "attribute 'shape'")
    else:
        target = cx.ints(1, "shape", most=RANK)
    allowzero = cx.attr("allowzero", 0)
    shape = list(v.shape)
    out = []
    for i, d in enumerate(target):
        if d == 0 and not allowzero:
            if i >= len(shape):
                raise cx.invalid(f"shape {target}: 0 at position {i} past the input's rank")
            out.append(shape[i])
        else:
            out.append(d)
    if out.count(-1) > 1:
        raise cx.invalid(f"shape {target} has more than one -1")
    if -1 in out:
        known = math.prod(d for d in out if d != -1)
        if known == 0 or math.prod(shape) % known:
            raise cx.invalid(f"cannot reshape {shape} to {target}")
        out[out.index(-1)] = math.prod(shape) // known
    if math.prod(out) != math.prod(shape) or any(d < 0 for d in out):
        raise cx.invalid(f"cannot reshape {shape} to {target}")
    return [reshape_value(cx, v, out)]


def _flatten(cx: NodeCtx) -> list[Value]:
    v = cx.v(0)
    rank = len(v.shape)
    axis = cx.attr("axis", 1)
    if not -rank <= axis <= rank:
        raise cx.invalid(f"axis {axis} is out of range for rank {rank}")
    if axis < 0:
        axis += rank
    lead = math.prod(v.shape[:axis])
    return [reshape_value(cx, v, [lead, math.prod(v.shape[axis:])])]


def _axes_attr_or_input(cx: NodeCtx, since: int, index: int = 1) -> list[int] | None:
    if cx.opset >= since:
        return cx.ints(index, "axes", most=RANK) if cx.has(index) else None
    axes = cx.attr("axes", None)
    if axes is not None:
        cx.at_most(len(axes), RANK, "attribute 'axes'")
    return axes


def _squeeze(cx: NodeCtx) -> list[Value]:
    v = cx.v(0)
    shape = list(v.shape)
    axes = _axes_attr_or_input(cx, 13)
    if axes is None:
        out = [d for d in shape if d != 1]
    else:
        axes = {_axis(cx, a, len(shape)) for a in axes}
        for a in axes:
            if shape[a] != 1:
                raise cx.invalid(f"axis {a} has size {shape[a]}, not 1")
        out = [d for i, d in enumerate(shape) if i not in axes]
    return [reshape_value(cx, v, out)]


def _unsqueeze(cx: NodeCtx) -> list[Value]:
    v = cx.v(0)
    axes = _axes_attr_or_input(cx, 13)
    if axes is None:
        raise cx.invalid("axes are required")
    rank = len(v.shape) + len(axes)
    norm = sorted(_axis(cx, a, rank) for a in axes)
    if len(set(norm)) != len(norm):
        raise cx.invalid(f"axes {axes} repeat an axis")
    out = list(v.shape)
    for a in norm:
        out.insert(a, 1)
    return [reshape_value(cx, v, out)]


def _identity(cx: NodeCtx) -> list[Value]:
    return [cx.v(0)]


def _dropout(cx: NodeCtx) -> list[Value]:
    if cx.opset < 7 and cx.attr("is_test", 0) == 0:
        raise cx.fail("training mode (is_test = 0) is not supported")
    if cx.has(2):
        mode = cx.c(2, "training_mode")
        if any(mode.data):
            raise cx.fail("training mode (training_mode = true) is not supported")
    out: list[Value] = [cx.v(0)]
    if cx.outputs_wanted() > 1:  # the mask: all true
        shape = list(cx.v(0).shape)
        if math.prod(shape) <= LIMITS["max_fold_elements"]:
            out.append(const_of("bool", shape, [1] * math.prod(shape)))
        else:
            out.append(cx.g.full(shape, 1.0) > 0.0)
    return out


# -- permutations -----------------------------------------------------------------------------


def _transpose(cx: NodeCtx) -> list[Value]:
    t = cx.t(0)
    rank = t.ndim
    perm = cx.attr("perm", list(range(rank))[::-1])
    if sorted(perm) != list(range(rank)):
        raise cx.invalid(f"perm {perm} is not a permutation of {rank} axes")
    if perm == list(range(rank)):
        return [t]
    return [via_float(t, lambda x: x.permute(list(perm)))]


# -- joining and splitting --------------------------------------------------------------------


def concat(ts: list[Tensor], axis: int) -> Tensor:
    """Concat of any number of tensors (the op takes 2..8: chained in groups)."""
    if len(ts) == 1:
        return ts[0]
    g = ts[0].graph
    while len(ts) > 1:
        ts = [
            g.concat(ts[i : i + 8], axis) if len(ts[i : i + 8]) > 1 else ts[i]
            for i in range(0, len(ts), 8)
        ]
    return ts[0]


def _concat(cx: NodeCtx) -> list[Value]:
    axis = cx.attr("axis")
    vals = [cx.v(i) for i in range(cx.n_inputs) if cx.has(i)]
    rank = len(vals[0].shape)
    axis = _axis(cx, axis, rank)
    for v in vals:
        if len(v.shape) != rank:
            raise cx.invalid("inputs of different ranks")
    nonempty = [v for v in vals if v.shape[axis] != 0]
    shape = list(vals[0].shape)
    shape[axis] = sum(v.shape[axis] for v in vals)
    small = math.prod(shape) <= LIMITS["max_fold_elements"]
    if small and all(foldable(v) for v in vals) and vals[0].dtype != "float32":
        data: list = []
        outer = math.prod(shape[:axis])
        for o in range(outer):
            for v in vals:
                inner = math.prod(v.shape[axis:])
                data.extend(v.data[o * inner : (o + 1) * inner])
        dtype = "int64" if any(v.dtype == "int64" for v in vals) else vals[0].dtype
        return [const_of(dtype, shape, data)]
    ts = [cx.t(i) for i in range(cx.n_inputs) if cx.has(i) and cx.v(i).shape[axis] != 0]
    if not nonempty:
        raise cx.fail("every input is empty")
    if ts[0].dtype == "bool":
        return [concat([t.cast("int32") for t in ts], axis).cast("bool")]
    return [concat(ts, axis)]


def slice_axis(t: Tensor, axis: int, start: int, stop: int | None, step: int = 1) -> Tensor:
    slices = [[None, None, 1] for _ in t.shape]
    slices[axis] = [start, stop, step]
    return via_int(t, lambda x: x.graph.op("slice", a=x, slices=slices))


def _split(cx: NodeCtx) -> list[Value]:
    t = cx.t(0)
    axis = _axis(cx, cx.attr("axis", 0), t.ndim)
    n = t.shape[axis]
    parts = len(cx.node.outputs)
    if cx.opset >= 13 and cx.has(1):
        sizes = cx.ints(1, "split", most=parts)
    elif cx.opset < 13 and cx.has_attr("split"):
        sizes = list(cx.attr("split"))
    else:
        wanted = cx.attr("num_outputs", parts)
        if wanted != parts:
            raise cx.invalid(f"attribute 'num_outputs' = {wanted}, the node has {parts} outputs")
        chunk = -(-n // parts)
        sizes = [min(chunk, n - i * chunk) for i in range(parts)]
    if sum(sizes) != n or len(sizes) != len(cx.node.outputs):
        raise cx.invalid(
            f"split sizes {sizes} do not cover axis {axis} of size {n} in "
            f"{len(cx.node.outputs)} outputs"
        )
    out: list[Value] = []
    start = 0
    for size in sizes:
        if size <= 0:
            raise cx.fail("an empty split is not supported")
        out.append(t if size == n else slice_axis(t, axis, start, start + size))
        start += size
    return out


def _onnx_slice_bounds(start: int, end: int, step: int, dim: int) -> tuple[int, int | None]:
    """ONNX Slice's clamping, as a Python slice (start, stop) over range(dim)."""
    if start < 0:
        start += dim
    if end < 0:
        end += dim
    if step > 0:
        start = min(max(start, 0), dim)
        end = min(max(end, 0), dim)
        return start, end
    start = min(max(start, -1), dim - 1)
    end = min(max(end, -1), dim - 1)
    return start, (None if end < 0 else end)


def _slice(cx: NodeCtx) -> list[Value]:
    v = cx.v(0)
    shape = list(v.shape)
    if cx.opset < 10:
        starts, ends = list(cx.attr("starts")), list(cx.attr("ends"))
        cx.at_most(len(starts), RANK, "attribute 'starts'")
        axes = list(cx.attr("axes", list(range(len(starts)))))
        steps = [1] * len(starts)
    else:
        starts, ends = cx.ints(1, "starts", most=RANK), cx.ints(2, "ends", most=RANK)
        axes = cx.ints(3, "axes", most=RANK) if cx.has(3) else list(range(len(starts)))
        steps = cx.ints(4, "steps", most=RANK) if cx.has(4) else [1] * len(starts)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise cx.invalid("starts, ends, axes and steps differ in length")
    slices: list[list] = [[0, d, 1] for d in shape]
    for s, e, a, st in zip(starts, ends, axes, steps):
        a = _axis(cx, a, len(shape))
        if st == 0:
            raise cx.invalid("a step of 0")
        lo, hi = _onnx_slice_bounds(s, e, st, shape[a])
        slices[a] = [lo, hi, st]
    out_shape = [
        len(range(*slice(lo, hi, st).indices(d))) for (lo, hi, st), d in zip(slices, shape)
    ]
    if out_shape == shape and all(st == 1 for _, _, st in slices):
        return [v]
    if isinstance(v, Const) and foldable(v):
        ranges = [range(*slice(lo, hi, st).indices(d)) for (lo, hi, st), d in zip(slices, shape)]
        st_ = strides(shape)
        return [
            take(v, out_shape, lambda idx: sum(ranges[d][i] * st_[d] for d, i in enumerate(idx)))
        ]
    t = cx.t(0)
    return [via_int(t, lambda x: x.graph.op("slice", a=x, slices=slices))]


def _gather_indices(cx: NodeCtx, i: int, dim: int) -> Tensor:
    """Indices as int32 in 0..dim-1: constants normalized at load, others by where()."""
    v = cx.v(i)
    if isinstance(v, Const):
        vals = v.ints()
        bad = [x for x in vals if not -dim <= x < dim]
        if bad:
            raise cx.invalid(f"index {bad[0]} is out of range for an axis of size {dim}")
        fixed = const_of("int32", v.shape, [x % dim for x in vals])
        return cx.g.tensor(fixed.data, shape=list(v.shape) or [], dtype="int32")
    idx = cx.t(i)
    wrapped = (idx.cast("float32") + float(dim)).cast("int32")
    return cx.g.where(idx < cx.g.tensor(0, dtype="int32"), wrapped, idx)


def _gather(cx: NodeCtx) -> list[Value]:
    data = cx.v(0)
    axis = _axis(cx, cx.attr("axis", 0), len(data.shape))
    dim = data.shape[axis]
    idx_v = cx.v(1)
    out_shape = list(data.shape[:axis]) + list(idx_v.shape) + list(data.shape[axis + 1 :])
    small = math.prod(out_shape) <= LIMITS["max_fold_elements"]
    if small and foldable(data) and foldable(idx_v):
        vals = idx_v.ints()
        bad = [x for x in vals if not -dim <= x < dim]
        if bad:
            raise cx.invalid(f"index {bad[0]} is out of range for an axis of size {dim}")
        norm = [x % dim for x in vals]
        st = strides(data.shape)
        ia = len(idx_v.shape)

        def src(o: tuple[int, ...]) -> int:
            pos = (
                list(o[:axis])
                + [norm[_flat(o[axis : axis + ia], idx_v.shape)]]
                + list(o[axis + ia :])
            )
            return sum(p * s for p, s in zip(pos, st))

        return [take(data, out_shape, src)]
    t = cx.t(0)
    idx = _gather_indices(cx, 1, dim)
    flat = idx.reshape([max(1, idx.size)]) if idx.ndim != 1 else idx
    picked = via_int(t, lambda x: x.index_select(axis, flat))
    return [reshape_value(cx, picked, out_shape)]


def _flat(index, shape) -> int:
    return sum(i * s for i, s in zip(index, strides(shape)))


def _gather_elements(cx: NodeCtx) -> list[Value]:
    t = cx.t(0)
    axis = _axis(cx, cx.attr("axis", 0), t.ndim)
    idx = _gather_indices(cx, 1, t.shape[axis])
    return [via_int(t, lambda x: x.gather(axis, idx))]


def _pad(cx: NodeCtx) -> list[Value]:
    t = cx.t(0)
    mode = cx.attr("mode", "constant")
    if mode != "constant":
        raise cx.fail(f"attribute 'mode' = {mode!r} is not supported (constant only)")
    rank = t.ndim
    if cx.opset < 11:
        pads = list(cx.attr("pads", cx.attr("paddings", [0] * 2 * rank)))
        cx.at_most(len(pads), 2 * RANK, "attribute 'pads'")
        value = cx.attr("value", 0.0)
        axes = list(range(rank))
    else:
        pads = cx.ints(1, "pads", most=2 * RANK)
        value = 0.0
        if cx.has(2):
            c = cx.c(2, "constant_value")
            value = c.data[0] if c.size else 0.0
        axes = (
            [_axis(cx, a, rank) for a in cx.ints(3, "axes", most=RANK)]
            if cx.has(3)
            else list(range(rank))
        )
    if t.dtype == "int32" and not math.isfinite(value):
        raise cx.invalid(f"the pad value {value} for int32 data")
    if len(pads) != 2 * len(axes):
        raise cx.invalid(f"pads {pads} for {len(axes)} axes")
    widths = [[0, 0] for _ in range(rank)]
    for k, a in enumerate(axes):
        widths[a] = [pads[k], pads[k + len(axes)]]
    out = t
    # negative pads crop: a slice first
    if any(w < 0 for pair in widths for w in pair):
        slices = [[max(0, -b), (d - max(0, -e)), 1] for (b, e), d in zip(widths, t.shape)]
        if any(lo >= hi for lo, hi, _ in slices):
            raise cx.fail("the cropped result is empty")
        out = via_int(out, lambda x: x.graph.op("slice", a=x, slices=slices))
        widths = [[max(0, b), max(0, e)] for b, e in widths]
    if any(w for pair in widths for w in pair):
        if t.dtype == "int32":
            value = int(value)
        out = via_int(out, lambda x: x.pad(widths, value))
    return [out]


def _expand(cx: NodeCtx) -> list[Value]:
    t = cx.t(0)
    target = cx.ints(1, "shape", most=RANK)
    if any(d < 0 for d in target):
        raise cx.invalid(f"shape {target} has a negative dimension")
    rank = max(len(target), t.ndim)
    a = [1] * (rank - t.ndim) + list(t.shape)
    b = [1] * (rank - len(target)) + list(target)
    out = []
    for x, y in zip(a, b):
        if x != y and 1 not in (x, y):
            raise cx.invalid(f"shape {list(t.shape)} does not broadcast to {target}")
        out.append((y if x == 1 else x) if 1 in (x, y) else x)
    cx.elements(out, f"the result of expanding to {target}")
    return [via_int(t, lambda x: F.onnx_expand(x, out))]


def _tile(cx: NodeCtx) -> list[Value]:
    t = cx.t(0)
    reps = cx.ints(1, "repeats", most=RANK)
    if len(reps) != t.ndim:
        raise cx.invalid(f"repeats {reps} for rank {t.ndim}")
    if any(r < 0 for r in reps):
        raise cx.invalid(f"repeats {reps} has a negative count")
    cx.elements([n * r for n, r in zip(t.shape, reps)], f"the result of repeats {reps}")
    out = t
    for axis, r in enumerate(reps):
        if r > 1:  # the axis' indices 0..n-1, r times over
            idx = cx.g.tensor(int_range(0, out.shape[axis]) * r, dtype="int32")
            out = via_int(out, lambda x, a=axis, i=idx: x.index_select(a, i))
    return [out]


def _shape(cx: NodeCtx) -> list[Value]:
    shape = list(cx.v(0).shape)
    start, end = cx.attr("start", 0), cx.attr("end", len(shape))
    picked = shape[slice(start, end)]
    return [const_of("int64", [len(picked)], picked)]


def _size(cx: NodeCtx) -> list[Value]:
    return [const_of("int64", [], [math.prod(cx.v(0).shape)])]


def _constant(cx: NodeCtx) -> list[Value]:
    names = [n for n in cx.node.attrs]
    if len(names) != 1:
        raise cx.invalid(f"a Constant needs exactly one value attribute, has {names}")
    name = names[0]
    value = cx.attr(name)
    if name == "value":
        return [value]
    if name == "value_float":
        return [const_of("float32", [], [value])]
    if name == "value_int":
        return [const_of("int64", [], [value])]
    if name == "value_floats":
        return [const_of("float32", [len(value)], value)]
    if name == "value_ints":
        return [const_of("int64", [len(value)], value)]
    raise cx.fail(f"attribute {name!r} is not supported")


def _constant_of_shape(cx: NodeCtx) -> list[Value]:
    shape = cx.ints(0, "input", most=RANK)
    value = cx.attr("value", None)
    if value is not None and value.size != 1:
        raise cx.invalid(f"attribute 'value' must hold one element, holds {value.size}")
    dtype, x = ("float32", 0.0) if value is None else (value.dtype, value.data[0])
    if any(d < 0 for d in shape):
        raise cx.invalid(f"shape {shape} has a negative dimension")
    n = cx.elements(shape, "the result")
    if n <= LIMITS["max_fold_elements"]:
        return [const_of(dtype, shape, [x] * n)]
    if dtype == "float32":
        return [cx.g.full(shape, float(x))]
    raise cx.fail(f"a {dtype} ConstantOfShape of {n} elements is not supported")


def _range(cx: NodeCtx) -> list[Value]:
    names = ("start", "limit", "delta")
    s, lim, d = (cx.one(i, name) for i, name in enumerate(names))
    dtypes = {cx.c(i).dtype for i in range(3)}
    if len(dtypes) != 1 or dtypes & {"bool"}:
        raise cx.invalid(f"start, limit and delta of types {sorted(dtypes)} (one numeric type)")
    for name, x in zip(names, (s, lim, d)):
        if not math.isfinite(x):
            raise cx.invalid(f"{name} is {x}")
    if d == 0:
        raise cx.invalid("delta is 0")
    n = max(0, math.ceil((lim - s) / d))
    if n == 0:
        raise cx.fail("an empty Range is not supported")
    if n > LIMITS["max_fold_elements"]:
        raise cx.limit(
            f"a Range of {n} elements is more than max_fold_elements "
            f"{LIMITS['max_fold_elements']} (it is computed at load)"
        )
    dtype = cx.c(0).dtype
    if dtype == "float32":
        vals = array.array("f", [s + i * d for i in range(n)])
        return [Const("float32", (n,), vals)]
    return [const_of(dtype, [n], [s + i * d for i in range(n)])]


def _eye_like(cx: NodeCtx) -> list[Value]:
    v = cx.v(0)
    if len(v.shape) != 2:
        raise cx.invalid("EyeLike takes a 2-D input")
    k = cx.attr("k", 0)
    rows, cols = v.shape
    dtype = dtype_of(v)
    if cx.has_attr("dtype"):
        dtype = ONNX_DTYPES.get(cx.attr("dtype"), None)
        if dtype is None:
            raise cx.fail(f"attribute 'dtype' = {cx.attr('dtype')} is not supported")
    if rows * cols <= LIMITS["max_fold_elements"]:
        vals = [1 if c - r == k else 0 for r in range(rows) for c in range(cols)]
        return [const_of(dtype, [rows, cols], vals)]
    hot = F.diagonal_mask(cx.g, rows, cols, k, "eq")
    return [hot if dtype == "bool" else hot.cast(dtype)]


SHAPE_OPS: dict[str, Op] = {
    "Reshape": Op(_reshape, frozenset({"allowzero", "shape"}), (1,)),
    "Flatten": Op(_flatten, frozenset({"axis"})),
    "Squeeze": Op(_squeeze, frozenset({"axes"}), (1,)),
    "Unsqueeze": Op(_unsqueeze, frozenset({"axes"}), (1,)),
    "Identity": Op(_identity),
    "Dropout": Op(_dropout, frozenset({"ratio", "seed", "is_test"}), (1, 2)),
    "Transpose": Op(_transpose, frozenset({"perm"})),
    "Concat": Op(_concat, frozenset({"axis"})),
    "Split": Op(_split, frozenset({"axis", "split", "num_outputs"}), (1,)),
    "Slice": Op(_slice, frozenset({"starts", "ends", "axes"}), (1, 2, 3, 4)),
    "Gather": Op(_gather, frozenset({"axis"})),
    "GatherElements": Op(_gather_elements, frozenset({"axis"})),
    # Pad's pads may crop (negative); its `value` (before opset 11) is a float
    "Pad": Op(
        _pad,
        frozenset({"mode", "pads", "paddings", "value"}),
        (1, 2, 3),
        types={"pads": INTS, "value": FLOAT},
    ),
    "Expand": Op(_expand, frozenset(), (1,)),
    "Tile": Op(_tile, frozenset(), (1,)),
    "Shape": Op(_shape, frozenset({"start", "end"})),
    "Size": Op(_size),
    "Constant": Op(
        _constant,
        frozenset(
            {
                "value",
                "value_float",
                "value_int",
                "value_floats",
                "value_ints",
                "sparse_value",
                "value_string",
                "value_strings",
            }
        ),
    ),
    "ConstantOfShape": Op(_constant_of_shape, frozenset({"value"}), (0,)),
    "Range": Op(_range, frozenset(), (0, 1, 2)),
    "EyeLike": Op(_eye_like, frozenset({"k", "dtype"})),
}
