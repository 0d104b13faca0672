"""Matmul epilogue fusion (docs/plan.md "Fusion"): a map2 node folded into the
dispatch of the matmul whose product it reads.

A map2 node whose op the kernel table marks `epilogue` (add, sub, mul: one rounding, no helper)
folds into the matmul dispatch when one operand is a matmul that nothing else reads and that is
no output, of the node's shape, and the other operand has the node's shape, or is one row [N]
(or [1, N], ...: a bias) broadcast down the rows, one value, or one column [M, 1]. The map1 ops
map fusion already folded into that node (its other operand's PRE, its POST) come along. The
matmul kernels apply the op to the finished ascending-k sum (pylib/gpulab/codegen/epilogue.py), so the
bits are those of the two dispatches. The matmul node then has no buffer. Twin of
backends-js/src/planner-epilogue.mjs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..kernel_table import epilogue_map2, family_codes
from ..protocol import CheckedNode

if TYPE_CHECKING:
    from .planner import _PlanContext

# op -> binary.wgsl OP code; the fusion A/B (bench/archive/unfused.py) empties it
EPILOGUE_MAP2 = epilogue_map2()
UNARY_OP = family_codes("map1")


@dataclass(frozen=True)
class Epilogue:
    matmul: CheckedNode  # the product folded in (planned inside the map2's dispatch)
    side: int  # 0: the product is the map2's operand a, 1: its operand b
    bcast: int  # the other operand: 0 the result's shape, 1 one row [N], 2 one value, 3 [M, 1]


def find_epilogues(ctx: _PlanContext) -> dict[int, Epilogue]:
    """map2 node id -> its Epilogue, over the graph's order (after map fusion)."""
    found: dict[int, Epilogue] = {}
    for node_id in ctx.checked.order:
        x = ctx.node(node_id)
        if x.op in EPILOGUE_MAP2 and x.id not in ctx.adam_parts and _dtype(x) == "float32":
            e = _epilogue_of(ctx, x)
            if e is not None:
                found[x.id] = e
    return found


def _epilogue_of(ctx: _PlanContext, x: CheckedNode) -> Epilogue | None:
    for side in (0, 1):
        mm = ctx.node(x.operands[side])
        other = x.operands[1 - side]
        users = [c.id for c in ctx.consumers.get(mm.id, [])]
        if (
            mm.op != "matmul"
            or other == mm.id
            or users != [x.id]
            or mm.id in ctx.output_ids
            or list(mm.shape) != list(x.shape)
        ):
            continue
        bcast = _bcast(list(ctx.node(other).shape), list(x.shape))
        if bcast is not None:
            return Epilogue(mm, side, bcast)
    return None


def _bcast(shape: list[int], result: list[int]) -> int | None:
    """How the other operand is read (kernels' EPI_BCAST): 0 the result's shape; after
    leading 1s, 1 a row [N] read at every row, 2 one value, 3 a column [M, 1]; else None."""
    if shape == result:
        return 0
    if len(shape) > len(result):
        return None
    full = [1] * (len(result) - len(shape)) + shape
    ones = all(d == 1 for d in full[:-2])
    if ones and full[-2] == 1 and full[-1] == result[-1]:
        return 1
    if ones and full[-2] == 1 and full[-1] == 1:
        return 2
    if ones and full[-2] == result[-2] and full[-1] == 1:
        return 3
    return None


def plan_epilogue(
    ctx: _PlanContext,
    x: CheckedNode,
    e: Epilogue,
    kernel: str,
    params: list[Any],
    reads: list[int],
    groups: int,
) -> None:
    """The matmul's dispatch (kernel, params, its a and b, workgroups: planner._matmul_step)
    with x's op, its other operand c (or the operand of its folded PRE) and its POST."""
    fused = ctx.map_fused.get(x.id, {})
    pre = fused.get("PRE_B" if e.side == 0 else "PRE_A")
    post = fused.get("POST")
    c = ctx.buffer_of[pre.operands[0]] if pre else ctx.operand(x, 1 - e.side)
    overrides = {"EPI_OP": 1 + EPILOGUE_MAP2[x.op], "EPI_SIDE": e.side, "EPI_BCAST": e.bcast}
    if pre:
        overrides["EPI_PRE"] = 1 + UNARY_OP[pre.op]
    if post:
        overrides["EPI_POST"] = 1 + UNARY_OP[post.op]
    out = ctx.output(post or x)
    ctx.dispatch(x, kernel, overrides, params, [*reads, c, out], groups)


def conv_bias(has_bias: bool) -> dict[str, int]:
    """The epilogue of conv2d's matmul (planner._plan_conv2d) that adds its bias per output
    channel (`EPI_BCAST` 4: row r of batch matrix bi reads bias[(bi % groups) * M/G + r]), in
    place of window.wgsl's OP 6 pass over the result: the same float32 add of the finished sum.
    {} when there is no bias, or the add is not an epilogue op (bench/archive/unfused.py)."""
    if not has_bias or "add" not in EPILOGUE_MAP2:
        return {}
    return {"EPI_OP": 1 + EPILOGUE_MAP2["add"], "EPI_SIDE": 0, "EPI_BCAST": 4}


def _dtype(node: CheckedNode) -> str:
    return str(getattr(node, "dtype", None) or "float32")
