"""Multi-node dispatches, twin of backends-js/src/planner-multi.mjs
(e2e/test_plans_equal.py compares the plans; docs/plan.md "Fusion"):

- multi-tensor Adam: the adam_step-fused parameter updates (planner.py `adam_fused`) that
  share a step counter t and do not depend on each other are grouped, in graph order, into ONE
  `adam_multiK` dispatch (pylib/gpulab/codegen/adam_multi.py) of at most MULTI_ADAM_MAX parameters and
  as many as the device's storage-buffer limit allows (7 per parameter + t; WebGPU's default 8
  allows one: no grouping). The group runs where its last member is planned; a parameter
  joins only while no node planned between the group's first member and it reads a member's
  results, so nothing reads a value before the group's dispatch writes it.
- the cross-entropy pair: a cross_entropy and a cross_entropy_grad of the same logits and
  targets are one `cross_entropy_pair` dispatch (the per-row values and the gradient), planned
  where the later of the two is, then cross_entropy's mean as before; paired only while no
  node between the two reads the earlier one's value.

Both compute every element with the expressions, and every row statistic in the 64-lane
order, of the separate dispatches: the bits do not change (pylib/tests/test_multi_fusion.py).
"""

from __future__ import annotations

import math
from typing import Any

MULTI_ADAM_MAX = 8  # pylib/gpulab/codegen/adam_multi.py SIZES ends here
ADAM_STORAGE = 7  # storage bindings per parameter: m, v, g, w read; m', v', w' written
ELEMENTWISE_WG = 64
# what the planners group (bench/archive/unfused.py empties it: the A/B arm of the benchmarks)
MULTI_FUSIONS = {"adam_multi", "cross_entropy_pair"}


def find_multi(ctx: Any) -> None:
    """Set ctx.adam_groups (last member id -> the member updates, in order), ctx.adam_grouped
    (every member id), ctx.ce_pairs (node id -> its partner, both ways) and ctx.ce_last."""
    ctx.adam_groups = {}
    ctx.adam_grouped = set()
    ctx.ce_pairs = {}
    ctx.ce_last = set()  # the later node of each pair: it dispatches
    ctx.ce_scratch = {}  # a paired cross_entropy -> its per-row scratch buffer
    position = {node_id: i for i, node_id in enumerate(ctx.checked.order)}
    if "adam_multi" in MULTI_FUSIONS:
        for group in _adam_groups(ctx, position):
            ctx.adam_groups[group[-1].id] = group
            ctx.adam_grouped.update(u.id for u in group)
    if "cross_entropy_pair" in MULTI_FUSIONS:
        _find_pairs(ctx, position)


def adam_slots(limits: dict[str, int]) -> int:
    """How many parameters one multi-tensor Adam dispatch may take on this device."""
    return min(MULTI_ADAM_MAX, (limits["maxStorageBuffersPerShaderStage"] - 1) // ADAM_STORAGE)


def _adam_groups(ctx: Any, position: dict[int, int]) -> list[list[Any]]:
    slots = adam_slots(ctx.limits)
    groups: list[list[Any]] = []
    current: list[Any] = []
    for node_id in ctx.checked.order:
        if node_id not in ctx.adam_fused:
            continue
        u = ctx.node(node_id)
        if current and (
            len(current) >= slots
            or u.operands[3] != current[0].operands[3]
            or _adam_conflict(ctx, position, current, u)
        ):
            groups.append(current)
            current = []
        current.append(u)
    groups.append(current)
    return [g for g in groups if len(g) > 1]


def _adam_conflict(ctx: Any, position: dict[int, int], group: list[Any], u: Any) -> bool:
    """Whether a node planned up to u (or u's own moments) reads a group member's m', v' or
    w': those would run before the group's dispatch writes them."""
    members = {x.id for g in group for x in (g, *ctx.adam_fused[g.id])}
    m, v = ctx.adam_fused[u.id]
    order = ctx.checked.order
    between = order[position[group[0].id] + 1 : position[u.id] + 1]
    for node_id in [*between, m.id, v.id]:
        if node_id in members:
            continue
        reads = ctx.node(node_id).operands
        if node_id == u.id:
            reads = [r for r in reads if r not in (m.id, v.id)]
        if any(r in members for r in reads):
            return True
    return False


def _find_pairs(ctx: Any, position: dict[int, int]) -> None:
    order = ctx.checked.order
    grads = [ctx.node(i) for i in order if ctx.node(i).op == "cross_entropy_grad"]
    for node_id in order:
        c = ctx.node(node_id)
        if c.op != "cross_entropy":
            continue
        for g in grads:
            if g.id in ctx.ce_pairs or list(g.operands) != list(c.operands):
                continue
            first, last = sorted((c, g), key=lambda n: position[n.id])
            between = order[position[first.id] + 1 : position[last.id]]
            if any(first.id in ctx.node(i).operands for i in between):
                continue
            ctx.ce_pairs[c.id] = g.id
            ctx.ce_pairs[g.id] = c.id
            ctx.ce_last.add(last.id)
            break


def plan_cross_entropy_pair(ctx: Any, node: Any, u32s: Any, reduce_mean: int) -> bool:
    """Plan a paired cross_entropy / cross_entropy_grad (False: not paired). The earlier of
    the two only allocates its buffers; the later one dispatches both, then the mean."""
    if node.id not in ctx.ce_pairs:
        return False
    c = node if node.op == "cross_entropy" else ctx.node(ctx.ce_pairs[node.id])
    g = ctx.node(ctx.ce_pairs[c.id])
    rows, classes = ctx.operand_shape(c, 0)
    if node is c:
        ctx.ce_scratch[c.id] = ctx.allocate(c, rows, "temp")
    ctx.output(node)
    if node.id not in ctx.ce_last:
        return True
    a, b = ctx.operand(c, 0), ctx.operand(c, 1)
    scratch, grad = ctx.ce_scratch[c.id], ctx.buffer_of[g.id]
    ctx.dispatch(
        node,
        "cross_entropy_pair",
        {},
        u32s(classes, 1, rows, 0),
        [a, b, scratch, grad],
        rows,
        writes=2,
    )
    out = ctx.buffer_of[c.id]
    ctx.dispatch(c, "reduce", {"OP": reduce_mean}, u32s(rows, 1, 1, 0), [scratch, out], 1)
    return True


def plan_adam_multi(ctx: Any, node: Any, f32_param: Any) -> bool:
    """Plan a grouped adam_update (False: not grouped): its buffer now; the group's one
    dispatch at its last member."""
    if node.id not in ctx.adam_grouped:
        return False
    ctx.output(node)
    group = ctx.adam_groups.get(node.id)
    if group is None:
        return True
    buf = ctx.buffer_of
    params: list[list[Any]] = []
    reads: list[int] = []
    writes: list[int] = []
    start = 0
    for u in group:
        m, v = ctx.adam_fused[u.id]
        n = math.prod(u.shape)
        at = u.attrs
        params += [["u32", n], ["u32", start]]
        params += [f32_param(at[k]) for k in ("lr", "beta1", "beta2", "eps")]
        params += [f32_param(m.attrs["beta1"]), f32_param(v.attrs["beta2"])]
        reads += [buf[m.operands[0]], buf[v.operands[0]], buf[m.operands[1]], buf[u.operands[0]]]
        writes += [buf[m.id], buf[v.id], buf[u.id]]
        start += -(-n // ELEMENTWISE_WG)
    ctx.dispatch(
        node,
        f"adam_multi{len(group)}",
        {"WG": ELEMENTWISE_WG},
        params,
        [buf[group[0].operands[3]], *reads, *writes],
        start,
        writes=len(writes),
    )
    return True
