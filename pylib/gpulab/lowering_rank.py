"""Rank 5 to 8 on kernels of rank 4 (docs/protocol.md "Rank 5 to 8"): before an executor
prepares a graph, every node with a tensor of rank > 4 is rewritten, where its op allows, to the
same op over *coalesced* views of its tensors (adjacent axes that every operand reads alike
merged into one, axes of size 1 dropped, as ORT and TF.js do), with reshapes between views. The
elements and their order are the same (row-major), so every kernel runs as it does at rank <= 4
and gives the same bits.

What coalesces: elementwise ops (broadcast axes that broadcast alike), reductions and softmax
([before, axis, after]), transpose and matmul batch axes, permute (axes that stay adjacent),
slice and slice_scatter (an axis of step 1 followed by whole axes), pad (axes without padding
join the one before), index_select / index_add / concat ([before, axis, after]), gather /
scatter_add (axes where idx spans a), inputs, full, hash_uniform and reshape (flat). A node
whose views stay past rank 4 (a permute of five scattered axes, say) is kept at its rank: a
backend whose kernel has no such rank refuses it by name (UNSUPPORTED), the CPU ones run it.

Twin of backends-js/src/lowering-rank.mjs (a test compares them on the corpus).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any

from . import optable
from .protocol import CheckedGraph, CheckedNode
from .shapes_select import slice_indices

Shape = tuple[int, ...]
# the rank every kernel handles (protocol versions 1 to 7); support.DEFAULT_MAX_RANK
KERNEL_RANK = 4
# a node rewritten: its operands' views (None: as the operand is), its attrs and its result's view
Plan = tuple[list[Shape | None], dict[str, Any], Shape]
# what a plan reads of a node: the node, its operands' shapes and whether a reshape takes each
Planner = Callable[[CheckedNode, list[Shape], list[bool]], Plan | None]
# the dtypes every lane's reshape takes (a view or a copy of 32-bit words)
RESHAPE_DTYPES = ("float32", "int32")


def _numel(shape: Sequence[int]) -> int:
    return math.prod(shape)


def _trim(shape: Sequence[int]) -> Shape:
    """Leading 1s dropped: the same operand under right-aligned broadcasting."""
    k = 0
    while k < len(shape) and shape[k] == 1:
        k += 1
    return tuple(shape[k:])


def coalesce_broadcast(
    out: Shape, shapes: Sequence[Shape], fixed: Sequence[bool] = ()
) -> tuple[Shape, list[Shape]]:
    """Out and operand shapes (broadcasting to out) with adjacent axes merged where every
    operand either spans both or broadcasts both, and axes of size 1 dropped; operands
    right-aligned with their leading 1s dropped. A `fixed` operand (one no reshape takes)
    keeps the axes it spans apart."""
    aligned = [(1,) * (len(out) - len(s)) + tuple(s) for s in shapes]
    keep_apart = list(fixed) + [False] * (len(shapes) - len(fixed))
    merged_out: list[int] = []
    merged: list[list[int]] = [[] for _ in shapes]
    last_kind: tuple[object, ...] | None = None
    for d, n in enumerate(out):
        if n == 1:
            continue
        spans = [s[d] == n for s in aligned]
        # an axis joins the one before where every operand reads both alike
        kind = tuple(("own", d) if a and f else a for a, f in zip(spans, keep_apart))
        if kind == last_kind:
            merged_out[-1] *= n
            for m, a in zip(merged, spans):
                m[-1] *= n if a else 1
        else:
            merged_out.append(n)
            for m, a in zip(merged, spans):
                m.append(n if a else 1)
            last_kind = kind
    return tuple(merged_out), [_trim(m) for m in merged]


def _around(shape: Shape, axis: int) -> Shape:
    """[before, axis, after]: the axes before and after `axis` merged."""
    return (_numel(shape[:axis]), shape[axis], _numel(shape[axis + 1 :]))


def _flat(shape: Shape) -> Shape:
    return (_numel(shape),)


def _elementwise(node: CheckedNode, shapes: list[Shape], movable: list[bool]) -> Plan | None:
    """Operands of the result's shape read flat alike; the others (a counter, adam's t) as
    they are; broadcasting ops coalesced."""
    rule = optable.ops()[node.op]["shape_rule"]
    if rule in ("broadcast", "broadcast3"):
        out, views = coalesce_broadcast(node.shape, shapes, [not m for m in movable])
        return views, node.attrs, out
    flat = _flat(node.shape)
    return [flat if s == node.shape else s for s in shapes], node.attrs, flat


def _from_attr(node: CheckedNode, shapes: list[Shape], movable: list[bool]) -> Plan | None:
    flat = _flat(node.shape)
    return shapes, {**node.attrs, "shape": flat}, flat


def _reshape(node: CheckedNode, shapes: list[Shape], movable: list[bool]) -> Plan | None:
    out = node.shape if len(node.shape) <= KERNEL_RANK else _flat(node.shape)
    return [None], {**node.attrs, "shape": out}, out


def _reduce(node: CheckedNode, shapes: list[Shape], movable: list[bool]) -> Plan | None:
    a = shapes[0]
    axis = node.attrs.get("axis")
    if axis is None:
        attrs = {**node.attrs, "keepdim": False}
        return [_flat(a)], attrs, ()
    view = _around(a, axis)
    return [view], {**node.attrs, "axis": 1, "keepdim": False}, (view[0], view[2])


def _same_axis(node: CheckedNode, shapes: list[Shape], movable: list[bool]) -> Plan | None:
    view = _around(shapes[0], node.attrs["axis"])
    return [view], {**node.attrs, "axis": 1}, view


def _transpose(node: CheckedNode, shapes: list[Shape], movable: list[bool]) -> Plan | None:
    *batch, m, n = shapes[0]
    return [(_numel(batch), m, n)], node.attrs, (_numel(batch), n, m)


def _matmul(node: CheckedNode, shapes: list[Shape], movable: list[bool]) -> Plan | None:
    a, b = shapes
    out_batch, (va, vb) = coalesce_broadcast(node.shape[:-2], [a[:-2], b[:-2]])
    if len(out_batch) + 2 > KERNEL_RANK:
        return None
    return (
        [va + a[-2:], vb + b[-2:]],
        node.attrs,
        out_batch + node.shape[-2:],
    )


def _matmul_q(node: CheckedNode, shapes: list[Shape], movable: list[bool]) -> Plan | None:
    a, b = shapes
    batch = _numel(a[:-2])
    return [(batch, *a[-2:]), b], node.attrs, (batch, *node.shape[-2:])


def _groups(axes: Sequence[int], joins: Callable[[int, list[int]], bool]) -> list[list[int]]:
    """Axes in runs: axis d joins the run before it when joins(d, run)."""
    runs: list[list[int]] = []
    for d in axes:
        if runs and joins(d, runs[-1]):
            runs[-1].append(d)
        else:
            runs.append([d])
    return runs


def _permute(node: CheckedNode, shapes: list[Shape], movable: list[bool]) -> Plan | None:
    a = shapes[0]
    # axes of size 1 go anywhere: dropped, the others numbered anew
    kept = [d for d in range(len(a)) if a[d] != 1]
    dims = [kept.index(d) for d in node.attrs["dims"] if a[d] != 1]
    runs = _groups(range(len(dims)), lambda k, _: dims[k] == dims[k - 1] + 1)
    # the runs in input order make the view; the permutation is their order in dims
    starts = sorted(runs, key=lambda r: dims[r[0]])
    view = tuple(_numel([a[kept[dims[k]]] for k in run]) for run in starts) or (1,)
    perm = [starts.index(run) for run in runs] or [0]
    if len(view) > KERNEL_RANK:
        return None
    return [view], {**node.attrs, "dims": perm}, tuple(view[p] for p in perm)


def _slice_runs(a: Shape, slices: list[list[Any]]) -> tuple[Shape, list[list[Any]], Shape]:
    """The view of a, its slices and the result's view: an axis of size 1 joins the run before
    it, a whole axis joins a run whose first axis has step 1 (the elements stay contiguous)."""
    entries = []
    for n, entry in zip(a, slices):
        start, _, step, count = slice_indices(entry, n)
        entries.append((n, start, count, step))
    whole = [n == 1 or (s == 0 and c == n and t == 1) for n, s, c, t in entries]
    runs = _groups(
        range(len(a)), lambda d, run: a[d] == 1 or (whole[d] and entries[run[0]][3] == 1)
    )
    view, out, normal = [], [], []
    for run in runs:
        n, start, count, step = entries[run[0]]
        inner = _numel([a[d] for d in run[1:]])
        view.append(n * inner)
        out.append(count * inner)
        # past its first axis a run holds whole axes: with a step of 1, one contiguous block
        merged = [start * inner, (start + count) * inner, 1]
        normal.append(list(slices[run[0]]) if inner == 1 else merged)
    return tuple(view), normal, tuple(out)


def _slice(node: CheckedNode, shapes: list[Shape], movable: list[bool]) -> Plan | None:
    view, slices, out = _slice_runs(shapes[0], node.attrs["slices"])
    if len(view) > KERNEL_RANK:
        return None
    return [view], {**node.attrs, "slices": slices}, out


def _slice_scatter(node: CheckedNode, shapes: list[Shape], movable: list[bool]) -> Plan | None:
    view, slices, src = _slice_runs(shapes[0], node.attrs["slices"])
    if len(view) > KERNEL_RANK:
        return None
    return [view, src], {**node.attrs, "slices": slices}, view


def _pad(node: CheckedNode, shapes: list[Shape], movable: list[bool]) -> Plan | None:
    a, widths = shapes[0], node.attrs["widths"]
    runs = _groups(range(len(a)), lambda d, _: tuple(widths[d]) == (0, 0))
    view, out, merged = [], [], []
    for run in runs:
        inner = _numel([a[d] for d in run[1:]])
        before, after = widths[run[0]]
        view.append(a[run[0]] * inner)
        merged.append([before * inner, after * inner])
        out.append((a[run[0]] + before + after) * inner)
    if len(view) > KERNEL_RANK:
        return None
    return [tuple(view)], {**node.attrs, "widths": merged}, tuple(out)


def _index_list(node: CheckedNode, shapes: list[Shape], movable: list[bool]) -> Plan | None:
    """index_select, index_add: a as [before, axis, after], idx as it is, src alike."""
    axis = node.attrs["axis"]
    view = _around(shapes[0], axis)
    views = [view, shapes[1]]
    if len(shapes) > 2:
        views.append(_around(shapes[2], axis))
    return views, {**node.attrs, "axis": 1}, _around(node.shape, axis)


def _concat(node: CheckedNode, shapes: list[Shape], movable: list[bool]) -> Plan | None:
    axis = node.attrs["axis"]
    return [_around(s, axis) for s in shapes], {**node.attrs, "axis": 1}, _around(node.shape, axis)


def _index_elements(node: CheckedNode, shapes: list[Shape], movable: list[bool]) -> Plan | None:
    """gather, scatter_add: an axis joins the one before it (on the same side of `axis`)
    where idx spans a along it; axes of size 1 in a dropped."""
    a, idx = shapes[0], shapes[1]
    axis = node.attrs["axis"]
    kept = [d for d in range(len(a)) if d == axis or a[d] != 1]
    runs = _groups(
        range(len(kept)),
        lambda k, _: kept[k] != axis and kept[k - 1] != axis and idx[kept[k]] == a[kept[k]],
    )
    va = tuple(_numel([a[kept[k]] for k in run]) for run in runs)
    vi = tuple(_numel([idx[kept[k]] for k in run]) for run in runs)
    if len(va) > KERNEL_RANK:
        return None
    new_axis = next(i for i, run in enumerate(runs) if kept[run[0]] == axis)
    views = [va, vi] + ([vi] if len(shapes) > 2 else [])
    out = va if node.op == "scatter_add" else vi
    return views, {**node.attrs, "axis": new_axis}, out


PLANS: dict[str, Planner] = {
    "from_attr": _from_attr,
    "counter_shape": _from_attr,
    "same": _elementwise,
    "same_ab": _elementwise,
    "same_counter": _elementwise,
    "adam_update": _elementwise,
    "broadcast": _elementwise,
    "broadcast3": _elementwise,
    "reshape": _reshape,
    "reduce": _reduce,
    "same_axis": _same_axis,
    "transpose": _transpose,
    "matmul": _matmul,
    "matmul_q": _matmul_q,
    "permute": _permute,
    "slice": _slice,
    "slice_scatter": _slice_scatter,
    "pad": _pad,
    "index_select": _index_list,
    "index_add": _index_list,
    "concat": _concat,
    "gather": _index_elements,
    "scatter_add": _index_elements,
}


def _rank(node: CheckedNode, by_id: dict[int, CheckedNode]) -> int:
    return max([len(node.shape)] + [len(by_id[i].shape) for i in node.operands])


def lower_rank(checked: CheckedGraph) -> CheckedGraph | None:
    """The graph with every node of rank > 4 on coalesced views where its op allows, or None
    when no tensor has rank > 4."""
    by_id = checked.by_id
    if not any(len(n.shape) > KERNEL_RANK for n in checked.nodes):
        return None
    counter = [max(n.id for n in checked.nodes) + 1]
    view: dict[int, Shape] = {}  # the shape each lowered node produces
    made: dict[tuple[int, Shape], CheckedNode] = {}  # reshapes made: (source, shape) -> node
    out_nodes: dict[int, list[CheckedNode]] = {}

    def as_view(ref: int, shape: Shape | None, into: list[CheckedNode]) -> int:
        if shape is None or view.get(ref, by_id[ref].shape) == shape:
            return ref
        key = (ref, shape)
        if key not in made:
            dtype = by_id[ref].dtype
            made[key] = CheckedNode(
                counter[0], "reshape", (ref,), {"shape": shape}, shape, dtype=dtype
            )
            counter[0] += 1
            into.append(made[key])
        return made[key].id

    def fits(node: CheckedNode, plan: Plan) -> bool:
        """No tensor of a dtype that no reshape takes needs a view other than its own."""
        views, _, shape = plan
        if any(len(v) > KERNEL_RANK for v in [shape, *views] if v is not None):
            return False  # no better than the node as it is
        if node.dtype not in RESHAPE_DTYPES and shape != node.shape:
            return False
        return all(
            v is None or by_id[ref].dtype in RESHAPE_DTYPES or v == view.get(ref, by_id[ref].shape)
            for ref, v in zip(node.operands, views)
        )

    for node_id in checked.order:
        node = by_id[node_id]
        shapes = [by_id[i].shape for i in node.operands]
        plan = None
        if _rank(node, by_id) > KERNEL_RANK:
            rule = optable.ops()[node.op]["shape_rule"]
            movable = [by_id[i].dtype in RESHAPE_DTYPES for i in node.operands]
            plan = PLANS[rule](node, shapes, movable) if rule in PLANS else None
            if plan is not None and not fits(node, plan):
                plan = None
        if plan is None:  # as it is: operands in their own shapes
            plan = (shapes, node.attrs, node.shape)
        views, attrs, shape = plan
        before: list[CheckedNode] = []
        operands = tuple(as_view(ref, v, before) for ref, v in zip(node.operands, views))
        view[node.id] = shape
        if operands == node.operands and attrs is node.attrs and shape == node.shape:
            continue
        out_nodes[node.id] = before + [
            dataclasses.replace(node, operands=operands, attrs=attrs, shape=shape)
        ]

    if not out_nodes:
        return None
    nodes = [m for n in checked.nodes for m in out_nodes.get(n.id, [n])]
    order = [m.id for i in checked.order for m in out_nodes.get(i, [by_id[i]])]
    # its own memo (plan cache key): the lowered structure follows from the checked one
    memo = checked.memo.setdefault("rank_lowered_memo", {})
    lowered = {n.id: n for n in nodes}
    return dataclasses.replace(checked, nodes=nodes, order=order, by_id=lowered, memo=memo)
