"""The planner's rules for the protocol-v4 selection ops, twin of
backends-js/src/planner-index.mjs (e2e/test_plans_equal.py compares the plans).

Every op is one or more passes of kernels/wgsl/index.wgsl (OP override: 0 read, 1 write,
2 fill, 3 gather, 4 add) with the bindings [a, idx, src, out, err]; a pass without an index or
a source binds a there. `err` is the plan's check buffer (kind "check", one word per index op:
the smallest position of an index out of range, 0xffffffff none); the plan lists
`checks: [{node, word}]` and the program resets the words before a run and reads them after.
"""

from __future__ import annotations

import math
import struct
from typing import Any

INDEX_WG = 64
PASS = {"read": 0, "write": 1, "fill": 2, "gather": 3, "add": 4}
INDEX_OPS = ("index_select", "gather", "index_add", "scatter_add")
V4_OPS = ("slice", "slice_scatter", "concat", "pad", *INDEX_OPS)
CHECKED_OPS = (*INDEX_OPS, "dequantize_rows")  # ops with a check word (quant.wgsl's too)


def _strides(shape: list[int]) -> list[int]:
    out = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        out[i] = out[i + 1] * shape[i + 1]
    return out


def _pad4(values: list[int], fill: int) -> list[int]:
    return [fill] * (4 - len(values)) + list(values)


def _word(v: int) -> list[Any]:
    """A u32 word of an integer (negative values as their two's complement bits)."""
    return ["u32", int(v) & 0xFFFFFFFF]


def check_buffer(ctx: Any, node: Any) -> tuple[int, int]:
    """The check buffer (allocated at the first node that binds it) and, for an index op or
    dequantize_rows, its word."""
    if ctx.check_buffer is None:
        slots = sum(1 for i in ctx.checked.order if ctx.node(i).op in CHECKED_OPS)
        ctx.check_buffer = ctx.allocate(node, max(4, slots), "check")
    slot = 0
    if node.op in CHECKED_OPS:
        slot = len(ctx.checks)
        ctx.checks.append({"node": node.id, "word": slot})
    return ctx.check_buffer, slot


def _pass(ctx: Any, node: Any, name: str, domain: list[int], a: int, out: int, **o: Any) -> None:
    """One pass of index.wgsl over `domain` (its element count is the dispatch size)."""
    rank = len(domain)
    buffer, slot = check_buffer(ctx, node)
    n = math.prod(domain)

    def vec(v: list[int] | None) -> list[list[Any]]:
        return [_word(x) for x in _pad4(v if v is not None else [0] * rank, 0)]

    params = [
        _word(n),
        _word(o.get("base", 0)),
        _word(o.get("axis", 0) + 4 - rank),
        _word(o.get("size", 0)),
        *(_word(d) for d in _pad4(domain, 1)),
        *vec(o.get("s")),
        *vec(o.get("t")),
        *vec(o.get("u")),
        *(_word(d) for d in _pad4(o.get("lim", domain), 1)),
        _word(o.get("value", 0)),
        _word(o.get("tbase", 0)),
        _word(slot),
        _word(o.get("m", 0)),
    ]
    overrides = {"WG": INDEX_WG, "OP": PASS[name], "FLOAT": 1 if node.dtype == "float32" else 0}
    ctx.dispatch(
        node,
        "index",
        overrides,
        params,
        [a, o.get("idx", a), o.get("src", a), out, buffer],
        -(-n // INDEX_WG),
        writes=2,
    )


def _slice_walk(shape: list[int], slices: list[list[Any]]) -> tuple[int, list[int]]:
    """The start offset and per-axis strides of a normalized slice of a tensor `shape`."""
    st = _strides(shape)
    base = sum(entry[0] * st[k] for k, entry in enumerate(slices))
    return base, [entry[2] * st[k] for k, entry in enumerate(slices)]


def _pad_word(node: Any) -> int:
    """The bits a pad writes: float32 as f32, int32 as its two's complement word."""
    value = node.attrs["value"]
    if node.dtype != "float32":
        return int(value) & 0xFFFFFFFF
    return int(struct.unpack("<I", struct.pack("<f", value))[0])


def plan_slice(ctx: Any, node: Any) -> None:
    base, steps = _slice_walk(ctx.operand_shape(node, 0), node.attrs["slices"])
    _pass(
        ctx,
        node,
        "read",
        list(node.shape),
        ctx.operand(node, 0),
        ctx.output(node),
        base=base,
        s=steps,
    )


def plan_slice_scatter(ctx: Any, node: Any) -> None:
    a, src = ctx.operand(node, 0), ctx.operand(node, 1)
    out = ctx.output(node)
    shape = list(node.shape)
    _pass(ctx, node, "read", shape, a, out, s=_strides(shape))
    base, steps = _slice_walk(shape, node.attrs["slices"])
    _pass(ctx, node, "write", ctx.operand_shape(node, 1), src, out, tbase=base, t=steps)


def plan_concat(ctx: Any, node: Any) -> None:
    out = ctx.output(node)
    st = _strides(list(node.shape))
    axis = node.attrs["axis"]
    start = 0
    for k in range(len(node.operands)):
        shape = ctx.operand_shape(node, k)
        _pass(ctx, node, "write", shape, ctx.operand(node, k), out, tbase=start * st[axis], t=st)
        start += shape[axis]


def plan_pad(ctx: Any, node: Any) -> None:
    a = ctx.operand(node, 0)
    out = ctx.output(node)
    shape = list(node.shape)
    st = _strides(shape)
    _pass(ctx, node, "fill", shape, a, out, value=_pad_word(node))
    tbase = sum(w[0] * st[k] for k, w in enumerate(node.attrs["widths"]))
    _pass(ctx, node, "write", ctx.operand_shape(node, 0), a, out, tbase=tbase, t=st)


def plan_gather(ctx: Any, node: Any) -> None:
    """index_select (idx read at c[axis]) and gather (idx read at c)."""
    shape = ctx.operand_shape(node, 0)
    out_shape = list(node.shape)
    axis = node.attrs["axis"]
    t = (
        _strides(out_shape)
        if node.op == "gather"
        else [1 if k == axis else 0 for k in range(len(out_shape))]
    )
    _pass(
        ctx,
        node,
        "gather",
        out_shape,
        ctx.operand(node, 0),
        ctx.output(node),
        idx=ctx.operand(node, 1),
        axis=axis,
        size=shape[axis],
        s=_strides(shape),
        t=t,
    )


def plan_accumulate(ctx: Any, node: Any) -> None:
    """index_add and scatter_add: one invocation per output element."""
    axis = node.attrs["axis"]
    shape = list(node.shape)
    idx_shape = ctx.operand_shape(node, 1)
    src_shape = ctx.operand_shape(node, 2)
    flat = node.op == "index_add"
    t = [1 if k == axis else 0 for k in range(len(shape))] if flat else _strides(idx_shape)
    lim = [idx_shape[0] if k == axis else d for k, d in enumerate(shape)] if flat else idx_shape
    _pass(
        ctx,
        node,
        "add",
        shape,
        ctx.operand(node, 0),
        ctx.output(node),
        idx=ctx.operand(node, 1),
        src=ctx.operand(node, 2),
        axis=axis,
        size=shape[axis],
        t=t,
        u=_strides(src_shape),
        lim=lim,
        m=idx_shape[0] if flat else idx_shape[axis],
    )


INDEX_RULES = {
    "slice": plan_slice,
    "slice_scatter": plan_slice_scatter,
    "concat": plan_concat,
    "pad": plan_pad,
    "index_select": plan_gather,
    "gather": plan_gather,
    "index_add": plan_accumulate,
    "scatter_add": plan_accumulate,
}
# reshape (a view, or a copy of words) at int32 too: basic indexing t[..., 0] reshapes
INDEX_DTYPES = {op: ("float32", "int32") for op in (*V4_OPS, "reshape")}
