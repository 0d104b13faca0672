"""The GPU plan: how a checked graph becomes buffers, uploads and WGSL dispatches.

Twin of backends-js/src/planner.mjs: both must produce the SAME plan (deep-equal JSON) for every
graph, which e2e/test_plans_equal.py checks, so the native wgpu-py executor and the browser
WebGPU backend run identical dispatches of identical WGSL. The format is in docs/plan.md.
Per-op rules live in a registry keyed by op name (RULES below), mirrored one for one from JS.
Pure Python (no numpy): it also runs in Pyodide.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Mapping
from typing import Any

from .. import clamp_bounds, hash_uniform, optable
from ..dtypes import BLOCK_DTYPES, block_of, stored_length
from ..errors import GpuLabError
from ..kernel_table import (
    family_codes,
    family_kernel,
    fusable_map1,
    lang_dtypes,
    scalar_attrs,
)
from ..protocol import CheckedGraph, CheckedNode, label
from .planner_epilogue import conv_bias, find_epilogues, plan_epilogue
from .planner_index import INDEX_DTYPES, INDEX_RULES, check_buffer
from .planner_multi import find_multi, plan_adam_multi, plan_cross_entropy_pair
from .planner_student import STUDENT_DTYPES, STUDENT_RULES
from .planner_window import WINDOW_RULES, conv_gemm, plan_conv_pass

PLAN_FORMAT = 1

# A matmul takes the largest tile (128, then 64) that still gives `minMatmulWorkgroups`
# workgroups (and is at least half filled along M and N), else the 16x16 matmul_small: on a GPU
# few big tiles leave most of it idle, so hardware adapters ask for 128. A software adapter (a
# CPU with a few cores) is busy with any count and runs matmul_small about 3x slower than the
# 64x64 tile, so its executor passes 1. Every matmul kernel fits 16 KiB of workgroup storage.
MATMUL_MIN_WORKGROUPS = 128
MATMUL_MIN_WORKGROUPS_SOFTWARE = 1

# WebGPU's default limits (and the hardware matmul rule): what a plan assumes when not given.
DEFAULT_LIMITS: dict[str, int] = {
    "maxComputeWorkgroupStorageSize": 16384,
    "maxStorageBufferBindingSize": 134217728,
    "maxComputeWorkgroupsPerDimension": 65535,
    "minMatmulWorkgroups": MATMUL_MIN_WORKGROUPS,
    "maxStorageBuffersPerShaderStage": 8,  # planner_multi.py: how many Adam updates group
}

ELEMENTWISE_WG = 64  # workgroup size of elementwise kernels (the WG override)
# tile -> its kernel for each operand alignment (K % 4 == 0, N % 4 == 0): vec4 loads of a need
# K % 4 == 0, vec4 loads of b and stores of out N % 4 == 0; the 128 tile has a kernel for each.
MATMUL_KERNELS: tuple[tuple[int, dict[tuple[bool, bool], str]], ...] = (
    (
        128,
        {
            (True, True): "matmul_rb_v4",
            (True, False): "matmul_rb_a4",
            (False, True): "matmul_rb_b4",
            (False, False): "matmul_rb",
        },
    ),
    (
        64,
        {
            (True, True): "matmul_v4",
            (True, False): "matmul",
            (False, True): "matmul",
            (False, False): "matmul",
        },
    ),
)
# kernel -> (its tile, vec4 a, vec4 b and out)
MATMUL_TILES = {
    "matmul_rb_v4": (128, True, True),
    "matmul_rb_a4": (128, True, False),
    "matmul_rb_b4": (128, False, True),
    "matmul_rb": (128, False, False),
    "matmul_v4": (64, True, True),
    "matmul": (64, False, False),
    "matmul_small": (16, False, False),
}

# OP codes of the family kernels (unary.wgsl, binary.wgsl, reduce.wgsl) and the float attribute a
# binary op reads as its scalar: from the kernel table, as the JS planner reads them.
UNARY_OP = family_codes("map1")
BINARY_OP = family_codes("map2")
FUSABLE_MAP1 = fusable_map1()  # map1 ops folded into a map2 dispatch (binary.wgsl PRE_*, POST)
BINARY_SCALAR = scalar_attrs("map2")
REDUCE_OP = family_codes("reduce")

Param = list  # ["u32" | "f32", number]
Plan = dict[str, Any]


def plan_graph(checked: CheckedGraph, limits: Mapping[str, Any] | None = None) -> Plan:
    """Plan a checked graph for a device with the given limits (missing keys: defaults)."""
    ctx = _PlanContext(checked, _pick_limits(limits or {}))
    for node_id in checked.order:
        ctx.plan_node(ctx.node(node_id))
    return ctx.finish()


def _pick_limits(limits: Mapping[str, Any]) -> dict[str, int]:
    out: dict[str, int] = {}
    for key, fallback in DEFAULT_LIMITS.items():
        v = limits.get(key)
        ok = isinstance(v, int) and not isinstance(v, bool) and v > 0
        out[key] = int(v) if ok else fallback  # type: ignore[arg-type]
    return out


class _PlanContext:
    def __init__(self, checked: CheckedGraph, limits: dict[str, int]) -> None:
        self.checked = checked
        self.check_buffer: int | None = None  # planner_index.py: the v4 ops' check words
        self.checks: list[dict[str, int]] = []
        self.limits = limits
        self.by_id = {n.id: n for n in checked.nodes}
        self.output_ids = {o.id for o in checked.outputs}
        self.buffers: list[dict[str, Any]] = []
        self.values: list[dict[str, Any]] = []
        self.buffer_of: dict[int, int] = {}
        self.uploads: list[dict[str, int]] = []
        self.steps: list[dict[str, Any]] = []
        self.consumers: dict[int, list[CheckedNode]] = {}
        for node_id in checked.order:
            consumer = self.node(node_id)
            for operand in dict.fromkeys(consumer.operands):
                self.consumers.setdefault(operand, []).append(consumer)
        self.transposed: set[int] = set()  # transposes that matmuls read in place
        self.adam_fused: dict[int, tuple[CheckedNode, CheckedNode]] = {}  # update -> (m, v)
        for node_id in checked.order:
            self._find_adam_step(self.node(node_id))
        self.adam_parts = {n.id for pair in self.adam_fused.values() for n in pair}
        # map2 id -> its overrides PRE_A / PRE_B / POST and the nodes they stand for
        self.map_fused: dict[int, dict[str, CheckedNode]] = {}
        self.map_parts: set[int] = set()  # map1 nodes planned inside a map2 dispatch
        for node_id in checked.order:
            self._find_map_fusion(self.node(node_id))
        self.epilogues = find_epilogues(self)  # map2 id -> the matmul it folds in
        self.epilogue_parts = {e.matmul.id for e in self.epilogues.values()}
        find_multi(self)  # multi-tensor Adam, the cross-entropy pair (planner_multi.py)

    def _fusable(self, u: CheckedNode, dtype: str) -> bool:
        return u.op in FUSABLE_MAP1 and _dtype(u) == dtype and u.id not in self.map_parts

    def _find_map_fusion(self, x: CheckedNode) -> None:
        """A map2 node folds in a fusable map1 operand that nothing else reads and is no output
        (PRE_A / PRE_B), and its own map1 consumer when that is its only reader and it is no
        output (POST): the map1 ops only select or change signs, so the bits are those of the
        separate dispatches (docs/plan.md, Fusion). Twin of planner.mjs findMapFusion."""
        if x.op not in BINARY_OP or x.id in self.adam_parts:
            return
        found: dict[str, CheckedNode] = {}
        for key, operand in zip(("PRE_A", "PRE_B"), x.operands, strict=True):
            u = self.node(operand)
            users = [c.id for c in self.consumers.get(u.id, [])]
            if self._fusable(u, _dtype(x)) and users == [x.id] and u.id not in self.output_ids:
                found[key] = u
        users = self.consumers.get(x.id, [])
        if len(users) == 1 and x.id not in self.output_ids and self._fusable(users[0], _dtype(x)):
            found["POST"] = users[0]
        if found:
            self.map_fused[x.id] = found
            self.map_parts.update(u.id for u in found.values())

    def _find_adam_step(self, u: CheckedNode) -> None:
        """An adam_update whose moments are an adam_m and an adam_v of the same gradient that
        nothing else reads (outputs may), all of one shape: one adam_step dispatch does all
        three (docs/plan.md)."""
        if u.op != "adam_update":
            return
        m, v = self.node(u.operands[1]), self.node(u.operands[2])
        if m.op != "adam_m" or v.op != "adam_v" or m.operands[1] != v.operands[1]:
            return
        if any([c.id for c in self.consumers.get(x.id, [])] != [u.id] for x in (m, v)):
            return
        ids = [*m.operands, v.operands[0], u.operands[0]]
        if all(list(self.node(i).shape) == list(u.shape) for i in ids):
            self.adam_fused[u.id] = (m, v)

    def node(self, node_id: int) -> CheckedNode:
        node = self.by_id.get(node_id)
        if node is None:
            raise GpuLabError("VALIDATION", f"plan: node {node_id} is not in the checked graph")
        return node

    def plan_node(self, node: CheckedNode) -> None:
        rule = RULES.get(node.op)
        if rule is None:
            raise GpuLabError(
                "UNSUPPORTED",
                f'{label(node.id, node.op)}: no GPU kernel for op "{node.op}"',
                node.id,
            )
        rule(self, node)

    def allocate(self, node: CheckedNode, elements: int, kind: str) -> int:
        """A new buffer for a node's value (or a scratch buffer owned by it)."""
        size = elements * 4
        limit = self.limits["maxStorageBufferBindingSize"]
        if size > limit:
            raise GpuLabError(
                "LIMIT",
                f"{label(node.id, node.op)}: needs a {size}-byte buffer; the device allows {limit}",
                node.id,
            )
        buffer_id = len(self.buffers)
        self.buffers.append({"id": buffer_id, "elements": elements, "node": node.id, "kind": kind})
        return buffer_id

    def output(self, node: CheckedNode, kind: str | None = None) -> int:
        """The buffer holding a node's value, allocated now."""
        if kind is None:
            kind = "output" if node.id in self.output_ids else "temp"
        buffer_id = self.allocate(node, _count(node.shape), kind)
        self.bind(node, buffer_id, False)
        return buffer_id

    def bind(self, node: CheckedNode, buffer_id: int, alias: bool) -> None:
        self.buffer_of[node.id] = buffer_id
        self.values.append({"node": node.id, "buffer": buffer_id, "alias": alias})
        buf = self.buffers[buffer_id]
        if alias and node.id in self.output_ids and buf["kind"] == "temp":
            buf["kind"] = "output"

    def operand(self, node: CheckedNode, i: int) -> int:
        return self.buffer_of[node.operands[i]]

    def operand_shape(self, node: CheckedNode, i: int) -> list[int]:
        return list(self.node(node.operands[i]).shape)

    def dispatch(
        self,
        node: CheckedNode,
        kernel: str,
        overrides: dict[str, int],
        params: list[Param],
        bindings: list[int],
        workgroups: int,
        writes: int = 1,
    ) -> None:
        """`kernel` is a WGSL module, or `module:entry` for one of several entry points of a
        module (rows:softmax); else the entry point is `main`."""
        dispatch = split_dispatch(node, workgroups, self.limits["maxComputeWorkgroupsPerDimension"])
        module, _, entry = kernel.partition(":")
        step = {
            "node": node.id,
            "kernel": module,
            "entry": entry or "main",
            "overrides": overrides,
            "params": params,
            "bindings": bindings,
            "dispatch": dispatch,
        }
        if writes != 1:
            step["writes"] = writes  # the last `writes` bindings are written
        self.steps.append(step)

    def finish(self) -> Plan:
        outputs = [
            {
                "name": o.name,
                "node": o.id,
                "buffer": self.buffer_of[o.id],
                "shape": list(self.node(o.id).shape),
            }
            for o in self.checked.outputs
        ]
        plan: Plan = {
            "format": PLAN_FORMAT,
            "limits": dict(self.limits),
            "buffers": self.buffers,
            "values": self.values,
            "uploads": self.uploads,
            "steps": self.steps,
            "outputs": outputs,
        }
        if self.checks:  # index ops' check words (planner_index.py): read after every run
            plan["checks"] = self.checks
        return plan


# ---- helpers shared by the rules (mirrored one for one in planner.mjs) ----


def _count(shape: Any) -> int:
    return math.prod(shape)


def _contiguous_strides(shape: list[int]) -> list[int]:
    strides = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        strides[i] = strides[i + 1] * shape[i + 1]
    return strides


def _pad_to4(shape: list[int], strides: list[int]) -> tuple[list[int], list[int]]:
    """Pad a shape (and its strides) on the left to rank 4: new axes size 1, stride 0."""
    pad = 4 - len(shape)
    return [1] * pad + list(shape), [0] * pad + list(strides)


def _broadcast_strides(shape: list[int], rank: int) -> list[int]:
    """Strides of an operand read at a broadcast result's coordinates (rank 4), 0 on size-1."""
    full = [1] * (rank - len(shape)) + list(shape)
    strides = [0 if full[i] == 1 else s for i, s in enumerate(_contiguous_strides(full))]
    return _pad_to4(full, strides)[1]


def split_dispatch(node: CheckedNode, groups: int, max_dim: int) -> list[int]:
    """Workgroup counts: x first, then y, then z, each at most max_dim (docs/plan.md)."""
    if groups <= max_dim:
        return [groups, 1, 1]
    rest = -(-groups // max_dim)
    if rest <= max_dim:
        return [max_dim, rest, 1]
    z = -(-rest // max_dim)
    if z > max_dim:
        raise GpuLabError(
            "LIMIT",
            f"{label(node.id, node.op)}: needs {groups} workgroups; the device allows {max_dim}^3",
            node.id,
        )
    return [max_dim, max_dim, z]


def _u32s(*values: int) -> list[Param]:
    return [["u32", int(v)] for v in values]


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _reduce_extents(shape: list[int], axis: int | None) -> tuple[int, int, int]:
    """(outer, size, inner) of a reduction along axis (None: every element in one row)."""
    if axis is None:
        return 1, _count(shape), 1
    return _count(shape[:axis]), shape[axis], _count(shape[axis + 1 :])


def _f32_param(value: Any) -> Param:
    """A float attribute as a param; JSON-equal to JS's Number(value)."""
    v = float(value)
    return ["f32", int(v) if v.is_integer() else v]


# ---- the per-op rules ----

Rule = Callable[[_PlanContext, CheckedNode], None]


def _plan_input(ctx: _PlanContext, node: CheckedNode) -> None:
    if block_of(_dtype(node)):
        buffer_id = _plan_block_input(ctx, node)
    else:
        buffer_id = ctx.output(node, "input")
    if node.data is not None:
        ctx.uploads.append({"buffer": buffer_id, "node": node.id})


def _plan_full(ctx: _PlanContext, node: CheckedNode) -> None:
    buffer_id = ctx.output(node, "const")
    ctx.uploads.append({"buffer": buffer_id, "node": node.id})


def _dtype(node: CheckedNode) -> str:
    """The node's result dtype (float32 for a checked node of a table without dtypes)."""
    return str(getattr(node, "dtype", None) or "float32")


def _plan_unary(ctx: _PlanContext, node: CheckedNode) -> None:
    if node.id in ctx.map_parts:  # a map2 dispatch computes it (PRE_*, POST)
        return
    n = _count(node.shape)
    a = ctx.operand(node, 0)
    out = ctx.output(node)
    ctx.dispatch(
        node,
        family_kernel("map1", _dtype(node)),
        {"WG": ELEMENTWISE_WG, "OP": UNARY_OP[node.op]},
        _u32s(n),
        [a, out],
        _ceil_div(n, ELEMENTWISE_WG),
    )


def _plan_binary(ctx: _PlanContext, node: CheckedNode) -> None:
    if node.id in ctx.adam_parts:  # its adam_update's adam_step dispatch writes it
        ctx.output(node)
        return
    epilogue = ctx.epilogues.get(node.id)
    if epilogue:  # the matmul's dispatch computes it (planner_epilogue.py)
        plan_epilogue(ctx, node, epilogue, *_matmul_step(ctx, epilogue.matmul))
        return
    shape = list(node.shape)
    n = _count(shape)
    rank = len(shape)
    sa = ctx.operand_shape(node, 0)
    sb = ctx.operand_shape(node, 1)
    same = 1 if sa == shape and sb == shape else 0
    out4 = _pad_to4(shape, _contiguous_strides(shape))[0]
    attr = BINARY_SCALAR.get(node.op)
    scalar = _f32_param(node.attrs[attr]) if attr else ["f32", 0]
    params = [
        *_u32s(n, same),
        scalar,
        *_u32s(0),
        *_u32s(*out4),
        *_u32s(*_broadcast_strides(sa, rank)),
        *_u32s(*_broadcast_strides(sb, rank)),
    ]
    fused = ctx.map_fused.get(node.id, {})
    overrides = {"WG": ELEMENTWISE_WG, "OP": BINARY_OP[node.op]}
    reads = []
    for i, key in enumerate(("PRE_A", "PRE_B")):
        u = fused.get(key)
        reads.append(ctx.buffer_of[u.operands[0]] if u else ctx.operand(node, i))
        if u:
            overrides[key] = 1 + UNARY_OP[u.op]
    post = fused.get("POST")
    if post:
        overrides["POST"] = 1 + UNARY_OP[post.op]
    out = ctx.output(post or node)
    ctx.dispatch(
        node,
        family_kernel("map2", _dtype(node)),
        overrides,
        params,
        [*reads, out],
        _ceil_div(n, ELEMENTWISE_WG),
    )


def _plan_copy(
    ctx: _PlanContext, node: CheckedNode, shape: list[int], src_strides: list[int]
) -> None:
    """A bit-exact strided copy: out[coords] = a[sum coords[i] * src_strides[i]], coords over
    `shape` (the result's shape, or [n] for a flat copy)."""
    n = _count(node.shape)
    shape4, strides4 = _pad_to4(shape, src_strides)
    a = ctx.operand(node, 0)
    out = ctx.output(node)
    ctx.dispatch(
        node,
        "permute",
        {"WG": ELEMENTWISE_WG},
        [*_u32s(n, 0, 0, 0), *_u32s(*shape4), *_u32s(*strides4)],
        [a, out],
        _ceil_div(n, ELEMENTWISE_WG),
    )


def _plan_permute(ctx: _PlanContext, node: CheckedNode) -> None:
    src = _contiguous_strides(ctx.operand_shape(node, 0))
    _plan_copy(ctx, node, list(node.shape), [src[d] for d in node.attrs["dims"]])


def _plan_transpose(ctx: _PlanContext, node: CheckedNode) -> None:
    """A copy, unless only matmul_small products read it: they read the operand in place
    (a view, `alias`, and a flag in their params), one dispatch less and the same bits."""
    if _read_in_place(ctx, node):
        ctx.transposed.add(node.id)
        ctx.bind(node, ctx.operand(node, 0), True)
        return
    rank = len(node.shape)
    src = _contiguous_strides(ctx.operand_shape(node, 0))
    dims = [*range(rank - 2), rank - 1, rank - 2]
    _plan_copy(ctx, node, list(node.shape), [src[d] for d in dims])


def _plan_reshape(ctx: _PlanContext, node: CheckedNode) -> None:
    """A view sharing its operand's buffer, except over an input's buffer (fed and carried
    into, so a value aliasing it would change under a carry): then a copy."""
    a = ctx.operand(node, 0)
    if ctx.buffers[a]["kind"] == "input":
        _plan_copy(ctx, node, [_count(node.shape)], [1])
        return
    ctx.bind(node, a, True)


def _read_in_place(ctx: _PlanContext, node: CheckedNode) -> bool:
    """A transpose that is no output and feeds only matmuls that take matmul_small."""
    users = ctx.consumers.get(node.id, [])
    return (
        node.id not in ctx.output_ids
        and bool(users)
        and all(u.op == "matmul" and _matmul_choice(ctx, u)[1] == "matmul_small" for u in users)
    )


def _matmul_choice(ctx: _PlanContext, node: CheckedNode) -> tuple[int, str]:
    sa = ctx.operand_shape(node, 0)
    sb = ctx.operand_shape(node, 1)
    batch = math.prod(node.shape[:-2])
    return matmul_kernel(sa[-2], sb[-1], sa[-1], batch, ctx.limits["minMatmulWorkgroups"])


def _matrix_batch_strides(shape: list[int], batch_rank: int, matrix: int) -> list[int]:
    """Element strides of an operand's two batch axes (left-padded to 2), 0 where it
    broadcasts."""
    own = shape[:-2]
    full = [1] * (batch_rank - len(own)) + own
    strides = [0 if full[i] == 1 else s * matrix for i, s in enumerate(_contiguous_strides(full))]
    return [0] * (2 - len(full)) + strides


def _plan_matmul(ctx: _PlanContext, node: CheckedNode) -> None:
    if node.id in ctx.epilogue_parts:  # planned by the map2 node folding it in
        return
    kernel, params, reads, groups = _matmul_step(ctx, node)
    out = ctx.output(node)
    # c (the epilogue's operand, never read without one): a again
    ctx.dispatch(node, kernel, {}, params, [*reads, reads[0], out], groups)


def _matmul_step(ctx: _PlanContext, node: CheckedNode) -> tuple[str, list[Param], list[int], int]:
    """(kernel, params, [a, b], workgroups) of a matmul's dispatch."""
    sa = ctx.operand_shape(node, 0)
    sb = ctx.operand_shape(node, 1)
    m, k, n = sa[-2], sa[-1], sb[-1]
    batch_shape = list(node.shape[:-2])
    batch4 = _pad_to4([*batch_shape, 1, 1], [])[0]
    a_strides = _matrix_batch_strides(sa, len(batch_shape), m * k)
    b_strides = _matrix_batch_strides(sb, len(batch_shape), k * n)
    batch = batch4[0] * batch4[1]
    tile, kernel = _matmul_choice(ctx, node)
    tiles_m = _ceil_div(m, tile)
    tiles_n = _ceil_div(n, tile)
    # bit 0: a is a transpose read in place (a[m, k] at k * M + m), bit 1: likewise b
    flags = int(node.operands[0] in ctx.transposed) | 2 * int(node.operands[1] in ctx.transposed)
    params = _u32s(
        m,
        n,
        k,
        tiles_m,
        tiles_n,
        batch,
        batch4[1],
        a_strides[0],
        a_strides[1],
        b_strides[0],
        b_strides[1],
        flags,
    )
    return kernel, params, [ctx.operand(node, 0), ctx.operand(node, 1)], tiles_m * tiles_n * batch


def matmul_kernel(
    m: int, n: int, k: int, batch: int, min_groups: int = MATMUL_MIN_WORKGROUPS
) -> tuple[int, str]:
    """(tile, kernel) for an [M, K] @ [K, N] product over `batch` matrices: shapes and the
    plan's `minMatmulWorkgroups` limit (`min_groups`) only, so both planners agree. A kernel
    reads a as vec4s only if every row of a starts on 16 bytes (K a multiple of 4), b and out
    only if N is a multiple of 4 (MATMUL_KERNELS)."""
    for tile, by_alignment in MATMUL_KERNELS:
        groups = _ceil_div(m, tile) * _ceil_div(n, tile) * batch
        if 2 * m > tile and 2 * n > tile and groups >= min_groups:
            return tile, by_alignment[(k % 4 == 0, n % 4 == 0)]
    return 16, "matmul_small"


def _plan_reduce(ctx: _PlanContext, node: CheckedNode) -> None:
    outer, size, inner = _reduce_extents(ctx.operand_shape(node, 0), node.attrs.get("axis"))
    a = ctx.operand(node, 0)
    out = ctx.output(node)
    ctx.dispatch(
        node,
        family_kernel("reduce", _dtype(node)),
        {"OP": REDUCE_OP[node.op]},
        _u32s(size, inner, outer * inner, 0),
        [a, out],
        outer * inner,
    )


def _plan_softmax(ctx: _PlanContext, node: CheckedNode) -> None:
    outer, size, inner = _reduce_extents(list(node.shape), node.attrs.get("axis"))
    a = ctx.operand(node, 0)
    out = ctx.output(node)
    op = 1 if node.op == "log_softmax" else 0
    ctx.dispatch(
        node,
        "rows:softmax",
        {"OP": op},
        _u32s(size, inner, outer * inner, 0),
        [a, out],
        outer * inner,
    )


def _plan_cross_entropy(ctx: _PlanContext, node: CheckedNode) -> None:
    """One workgroup per row into a scratch [N], then their mean in lane order."""
    if plan_cross_entropy_pair(ctx, node, _u32s, REDUCE_OP["mean"]):
        return
    rows, classes = ctx.operand_shape(node, 0)
    a = ctx.operand(node, 0)
    b = ctx.operand(node, 1)
    scratch = ctx.allocate(node, rows, "temp")
    out = ctx.output(node)
    ctx.dispatch(
        node, "rows:cross_entropy_rows", {}, _u32s(classes, 1, rows, 0), [a, b, scratch], rows
    )
    ctx.dispatch(node, "reduce", {"OP": REDUCE_OP["mean"]}, _u32s(rows, 1, 1, 0), [scratch, out], 1)


def _plan_cross_entropy_grad(ctx: _PlanContext, node: CheckedNode) -> None:
    if plan_cross_entropy_pair(ctx, node, _u32s, REDUCE_OP["mean"]):
        return
    rows, classes = node.shape
    a = ctx.operand(node, 0)
    b = ctx.operand(node, 1)
    out = ctx.output(node)
    ctx.dispatch(node, "rows:cross_entropy_grad", {}, _u32s(classes, 1, rows, 0), [a, b, out], rows)


def _plan_adam_update(ctx: _PlanContext, node: CheckedNode) -> None:
    if plan_adam_multi(ctx, node, _f32_param):
        return
    if node.id in ctx.adam_fused:
        _plan_adam_step(ctx, node, *ctx.adam_fused[node.id])
        return
    n = _count(node.shape)
    at = node.attrs
    params = [
        ["u32", n],
        _f32_param(at["lr"]),
        _f32_param(at["beta1"]),
        _f32_param(at["beta2"]),
        _f32_param(at["eps"]),
        *_u32s(0, 0, 0),
    ]
    bindings = [ctx.operand(node, i) for i in range(4)]
    out = ctx.output(node)
    ctx.dispatch(
        node,
        "adam:adam_update",
        {"WG": ELEMENTWISE_WG},
        params,
        [*bindings, out],
        _ceil_div(n, ELEMENTWISE_WG),
    )


def _plan_adam_step(ctx: _PlanContext, node: CheckedNode, m: CheckedNode, v: CheckedNode) -> None:
    """adam_m, adam_v and adam_update in one dispatch writing all three values."""
    n = _count(node.shape)
    at = node.attrs
    params = [
        ["u32", n],
        _f32_param(at["lr"]),
        _f32_param(at["beta1"]),
        _f32_param(at["beta2"]),
        _f32_param(at["eps"]),
        _f32_param(m.attrs["beta1"]),
        _f32_param(v.attrs["beta2"]),
        ["u32", 0],
    ]
    buf = ctx.buffer_of
    reads = [
        buf[m.operands[0]],
        buf[v.operands[0]],
        buf[m.operands[1]],
        ctx.operand(node, 0),
        ctx.operand(node, 3),
    ]
    out = ctx.output(node)
    ctx.dispatch(
        node,
        "adam:adam_step",
        {"WG": ELEMENTWISE_WG},
        params,
        [*reads, buf[m.id], buf[v.id], out],
        _ceil_div(n, ELEMENTWISE_WG),
        writes=3,
    )


def _plan_life(ctx: _PlanContext, node: CheckedNode) -> None:
    h, w = node.shape
    a = ctx.operand(node, 0)
    out = ctx.output(node)
    ctx.dispatch(
        node,
        "life",
        {"WG": ELEMENTWISE_WG},
        _u32s(h, w, 0, 0),
        [a, out],
        _ceil_div(h * w, ELEMENTWISE_WG),
    )


# ---- protocol-v3 ops on 32-bit words (float32 or int32): map_bits.wgsl, extremes.wgsl ----

MAP_BITS_OP = {"clamp": 2}  # abs (0) and square (1) are map1 ops now
EXTREMES_OP = {"reduce_max": 0, "reduce_min": 1, "argmax": 2, "argmin": 3}
DTYPE_CODE = {"float32": 0, "int32": 1}  # the kernels' p.dt


def _operand_dtype(ctx: _PlanContext, node: CheckedNode) -> str:
    return str(getattr(ctx.node(node.operands[0]), "dtype", None) or "float32")


def _plan_map_bits(ctx: _PlanContext, node: CheckedNode) -> None:
    n = _count(node.shape)
    dtype = _operand_dtype(ctx, node)
    lo, hi = clamp_bounds.words(node.attrs, dtype) if node.op == "clamp" else (0, 0)
    a = ctx.operand(node, 0)
    out = ctx.output(node)
    ctx.dispatch(
        node,
        "map_bits",
        {"WG": ELEMENTWISE_WG, "OP": MAP_BITS_OP[node.op]},
        _u32s(n, DTYPE_CODE[dtype], lo, hi),
        [a, out],
        _ceil_div(n, ELEMENTWISE_WG),
    )


def _plan_extremes(ctx: _PlanContext, node: CheckedNode) -> None:
    outer, size, inner = _reduce_extents(ctx.operand_shape(node, 0), node.attrs.get("axis"))
    dtype = _operand_dtype(ctx, node)
    a = ctx.operand(node, 0)
    out = ctx.output(node)
    ctx.dispatch(
        node,
        "extremes",
        {"OP": EXTREMES_OP[node.op]},
        _u32s(size, inner, outer * inner, DTYPE_CODE[dtype]),
        [a, out],
        outer * inner,
    )


# ---- protocol-v3 select ops on 32-bit words: select.wgsl (one kernel, OP and DT) ----

SELECT_OP = {
    "maximum": 0,
    "minimum": 1,
    "eq": 2,
    "ne": 3,
    "lt": 4,
    "le": 5,
    "gt": 6,
    "ge": 7,
    "where": 8,
    "cast": 9,
    "hash_uniform": 10,
    "dropout": 11,
}
SELECT_DTYPE = {"float32": 0, "int32": 1, "uint32": 2, "bool": 3}  # the kernel's DT, p.to
SELECT_ELEMENTWISE = ("cast", "hash_uniform", "dropout")  # no broadcasting


def _plan_select(ctx: _PlanContext, node: CheckedNode) -> None:
    n = _count(node.shape)
    rank = len(node.shape)
    ids = [ctx.operand(node, i) for i in range(len(node.operands))]
    shapes = [ctx.operand_shape(node, i) for i in range(len(node.operands))]
    flat = node.op in SELECT_ELEMENTWISE
    same = 1 if flat or all(list(s) == list(node.shape) for s in shapes) else 0
    strides = [
        [0, 0, 0, 0] if flat or i >= len(shapes) else _broadcast_strides(shapes[i], rank)
        for i in range(3)
    ]
    # where compares nothing: its DT is its cond's (bool); a cast's is its source's
    dtype = _operand_dtype(ctx, node)
    threshold, scale_bits = 0, 0
    if node.op == "dropout":
        threshold, _, scale_bits = hash_uniform.dropout_words(float(node.attrs["p"]))
    to = SELECT_DTYPE[node.attrs["dtype"]] if node.op == "cast" else 0
    params = [
        *_u32s(n, int(node.attrs.get("seed", 0)), threshold, scale_bits, to, same, 0, 0),
        *_u32s(*_pad_to4(list(node.shape), _contiguous_strides(list(node.shape)))[0]),
        *_u32s(*strides[0], *strides[1], *strides[2]),
    ]
    out = ctx.output(node)
    bindings = [ids[0], ids[1] if len(ids) > 1 else ids[0], ids[2] if len(ids) > 2 else ids[0], out]
    ctx.dispatch(
        node,
        "select",
        {"WG": ELEMENTWISE_WG, "OP": SELECT_OP[node.op], "DT": SELECT_DTYPE[dtype]},
        params,
        bindings,
        _ceil_div(n, ELEMENTWISE_WG),
    )


# ---- block-quantized weights (q4_k / q6_k) and matmul_fixed (quant.wgsl) ----

QUANT_MB = 8  # rows of x one matmul_q workgroup takes (quant.wgsl MB)
QUANT_GROUPS = 8  # its groups of 32 lanes


def quant_split(blocks: int) -> int:
    """quant.wgsl's SPLIT: groups of 32 lanes sharing a weight row (a k-split over its
    blocks), 2 once a row has 2 blocks (measured: twin of planner.mjs quantSplit)."""
    return 2 if blocks >= 2 else 1


# x of at most this many rows takes matmul_q4k_vec / matmul_q6k_vec (a GEMV); measured on the
# H200 (docs/benchmarks.md): q4_k's GEMV wins to 5 rows, ties at 6, loses at 8 to the general
# kernel; q6_k's wins to 8 (the kernel's limit) by 3-5x
QUANT_VEC_ROWS = {"q4_k": 5, "q6_k": 8}
QUANT_VEC_GROUP = 128  # its workgroup's threads (quant.wgsl VG)


def quant_vec(rows: int, blocks: int, kind: str) -> dict[str, int] | None:
    """quant.wgsl matmul_q4k_vec's / matmul_q6k_vec's overrides for x of `rows` rows and weight
    rows of `blocks` blocks, or None for the general kernel (twin of planner.mjs quantVec).
    QL lanes per weight row (8 for a one-block row), UNROLL blocks per lane per loop turn
    (q4_k; q6_k reads one)."""
    if rows > QUANT_VEC_ROWS[kind]:
        return None
    ql = 16 if blocks >= 2 else 8
    return {"QL": ql, "MR": rows, "UNROLL": 2} if kind == "q4_k" else {"QL": ql, "MR": rows}


def _plan_block_input(ctx: _PlanContext, node: CheckedNode) -> int:
    """A q4_k / q6_k input: its bytes packed 4 to a u32 word (the last zero-padded)."""
    nbytes = stored_length(_dtype(node), _count(node.shape))
    buffer_id = ctx.allocate(node, _ceil_div(nbytes, 4), "input")
    ctx.bind(node, buffer_id, False)
    return buffer_id


QUANT_KIND = {"q4_k": 0, "q6_k": 1, "q8_0": 2, "q4_0": 3}  # quant.wgsl's kind codes
KIND32 = {"q8_0": 0, "q4_0": 1}  # matmul_q32's KIND32
QUANT32_ROWS = 8  # rows of x one matmul_q32 workgroup takes (its Rows8)


def quant32(rows: int, blocks: int, kind: str) -> dict[str, int]:
    """quant.wgsl matmul_q32's overrides for x of `rows` rows and weight rows of `blocks`
    32-value blocks (twin of planner.mjs quant32): QL lanes per weight row so that each walks
    about 4 to 8 quarter blocks, MR rows of x per workgroup."""
    quarters = blocks * 4
    ql = 8 if quarters <= 32 else 16 if quarters <= 128 else 32
    return {"QL": ql, "MR": min(rows, QUANT32_ROWS), "KIND32": KIND32[kind]}


def _plan_matmul_q32(ctx: _PlanContext, node: CheckedNode, kind: str) -> None:
    """matmul_q of a q8_0 / q4_0 weight: matmul_q32."""
    n, k = ctx.operand_shape(node, 1)
    rows = _count(node.shape) // n
    o = quant32(rows, k // 32, kind)
    groups = _ceil_div(n, QUANT_VEC_GROUP // o["QL"])
    ctx.dispatch(
        node,
        "quant:matmul_q32",
        o,
        _u32s(rows, n, k, k // 32, groups, *[0] * 7),
        [ctx.operand(node, 0), ctx.operand(node, 1), ctx.output(node)],
        groups * _ceil_div(rows, QUANT32_ROWS),
    )


def _plan_matmul_q(ctx: _PlanContext, node: CheckedNode) -> None:
    kind = _dtype(ctx.node(node.operands[1]))
    if kind in KIND32:
        _plan_matmul_q32(ctx, node, kind)
        return
    n, k = ctx.operand_shape(node, 1)
    rows = _count(node.shape) // n
    a = ctx.operand(node, 0)
    b = ctx.operand(node, 1)
    out = ctx.output(node)
    vec = quant_vec(rows, k // 256, kind)
    if vec is not None:
        per_group = QUANT_VEC_GROUP // vec["QL"]
        vec_entry = "matmul_q6k_vec" if kind == "q6_k" else "matmul_q4k_vec"
        ctx.dispatch(
            node,
            f"quant:{vec_entry}",
            vec,
            _u32s(rows, n, k, k // 256, _ceil_div(n, per_group), *[0] * 7),
            [a, b, out],
            _ceil_div(n, per_group),
        )
        return
    split = quant_split(k // 256)
    groups_n = _ceil_div(n, QUANT_GROUPS // split)
    entry = "matmul_q6k" if kind == "q6_k" else "matmul_q4k"
    ctx.dispatch(
        node,
        f"quant:{entry}",
        {"SPLIT": split},
        _u32s(rows, n, k, k // 256, groups_n, *[0] * 7),
        [a, b, out],
        groups_n * _ceil_div(rows, QUANT_MB),
    )


def _plan_dequantize(ctx: _PlanContext, node: CheckedNode) -> None:
    n = _count(node.shape)
    kind = QUANT_KIND[_dtype(ctx.node(node.operands[0]))]
    a = ctx.operand(node, 0)
    out = ctx.output(node)
    ctx.dispatch(
        node,
        "quant:dequantize",
        {},
        _u32s(n, kind, *[0] * 10),
        [a, out],
        _ceil_div(n, ELEMENTWISE_WG),
    )


def _plan_dequantize_rows(ctx: _PlanContext, node: CheckedNode) -> None:
    """Rows idx of a quantized [N, K]; an index out of range records its position in the
    node's check word (planner_index.check_buffer)."""
    total = _count(node.shape)
    n, k = ctx.operand_shape(node, 0)
    kind = QUANT_KIND[_dtype(ctx.node(node.operands[0]))]
    buffer, slot = check_buffer(ctx, node)
    ctx.dispatch(
        node,
        "quant:dequantize_rows",
        {},
        _u32s(total, kind, k, n, slot, *[0] * 7),
        [ctx.operand(node, 0), ctx.operand(node, 1), ctx.output(node), buffer],
        _ceil_div(total, ELEMENTWISE_WG),
        2,
    )


def _plan_matmul_fixed(ctx: _PlanContext, node: CheckedNode) -> None:
    """matmul's batch params with frac_bits last; one output per thread."""
    sa = ctx.operand_shape(node, 0)
    sb = ctx.operand_shape(node, 1)
    m, k, n = sa[-2], sa[-1], sb[-1]
    batch_shape = list(node.shape[:-2])
    batch4 = _pad_to4([*batch_shape, 1, 1], [])[0]
    a_strides = _matrix_batch_strides(sa, len(batch_shape), m * k)
    b_strides = _matrix_batch_strides(sb, len(batch_shape), k * n)
    batch = batch4[0] * batch4[1]
    params = _u32s(
        m,
        n,
        k,
        0,
        0,
        batch,
        batch4[1],
        a_strides[0],
        a_strides[1],
        b_strides[0],
        b_strides[1],
        int(node.attrs["frac_bits"]),
    )
    a = ctx.operand(node, 0)
    b = ctx.operand(node, 1)
    out = ctx.output(node)
    ctx.dispatch(
        node,
        "quant:matmul_fixed",
        {},
        params,
        [a, b, out],
        _ceil_div(batch * m * n, ELEMENTWISE_WG),
    )


# The kernel registry: op name -> planning rule.
def _plan_conv2d(ctx: _PlanContext, node: CheckedNode) -> None:
    """conv2d: im2col (window.wgsl OP 5) + the tiled matmul kernel, w read as [G, M/G, K]
    against the columns [N, G, K, P] (+ the bias, OP 6), where the product takes a tiled
    kernel with at least 8 output channels per group; else the direct kernel (twin of
    planner.mjs planConv2d; bench/archive/conv2d.py measured both)."""
    shapes = [ctx.operand_shape(node, k) for k in range(len(node.operands))]
    g = conv_gemm(node, shapes)
    batch = g["n"] * g["groups"]
    tile, kernel = matmul_kernel(
        g["mg"], g["pix"], g["k"], batch, ctx.limits["minMatmulWorkgroups"]
    )
    fits = g["pointwise"] or g["cols"] * 4 <= ctx.limits["maxStorageBufferBindingSize"]
    if kernel == "matmul_small" or g["mg"] < 8 or not fits:
        WINDOW_RULES["conv2d"](ctx, node)
        return
    a = ctx.operand(node, len(shapes) - 2)
    cols = a if g["pointwise"] else ctx.allocate(node, g["cols"], "temp")
    if not g["pointwise"]:
        plan_conv_pass(ctx, node, 5, cols, g["cols"])
    out = ctx.output(node)
    w = ctx.operand(node, len(shapes) - 1)
    tiles_m, tiles_n = _ceil_div(g["mg"], tile), _ceil_div(g["pix"], tile)
    params = _u32s(
        g["mg"],
        g["pix"],
        g["k"],
        tiles_m,
        tiles_n,
        batch,
        g["groups"],
        0,
        g["mg"] * g["k"],
        g["groups"] * g["k"] * g["pix"],
        g["k"] * g["pix"],
        0,
    )
    epilogue = conv_bias(bool(g["bias"]))  # the bias added to the finished sums
    c = ctx.operand(node, 0) if epilogue else w  # the bias (operand 0), else w: never read
    ctx.dispatch(node, kernel, epilogue, params, [w, cols, c, out], tiles_m * tiles_n * batch)
    if g["bias"] and not epilogue:
        plan_conv_pass(ctx, node, 6, out, math.prod(node.shape))


RULES: dict[str, Rule] = {
    "input": _plan_input,
    "full": _plan_full,
    **{op: _plan_unary for op in UNARY_OP},
    **{op: _plan_binary for op in BINARY_OP},
    "transpose": _plan_transpose,
    "permute": _plan_permute,
    "reshape": _plan_reshape,
    "matmul": _plan_matmul,
    **{op: _plan_reduce for op in REDUCE_OP},
    "softmax": _plan_softmax,
    "log_softmax": _plan_softmax,
    "cross_entropy": _plan_cross_entropy,
    "cross_entropy_grad": _plan_cross_entropy_grad,
    "adam_update": _plan_adam_update,
    "life": _plan_life,
    **{op: _plan_map_bits for op in MAP_BITS_OP},
    **{op: _plan_extremes for op in EXTREMES_OP},
    **{op: _plan_select for op in SELECT_OP},
    **STUDENT_RULES,  # wgsl, wgsl_output (planner_student.py)
    "matmul_q": _plan_matmul_q,
    "dequantize": _plan_dequantize,
    "dequantize_rows": _plan_dequantize_rows,
    "matmul_fixed": _plan_matmul_fixed,
    **INDEX_RULES,  # the v4 selection ops (planner_index.py)
    **WINDOW_RULES,  # the v6 window ops (planner_window.py)
    "conv2d": _plan_conv2d,  # direct, or im2col + the tiled matmul
}

# The dtypes a rule plans where it handles more than float32 (twin of planner.mjs RULE_DTYPES):
# an input is a buffer of 32-bit words (bool as u32 0/1) the program writes, so any dtype; the
# v3 ops work on 32-bit words (map_bits.wgsl, extremes.wgsl).
RULE_DTYPES: dict[str, tuple[str, ...]] = {
    "input": tuple(optable.load()["dtypes"]),
    **{op: ("float32", "int32") for op in [*MAP_BITS_OP, *EXTREMES_OP]},
    # the select ops work on 32-bit words of every dtype the validator lets them take
    **{op: tuple(optable.load()["dtypes"]) for op in SELECT_OP},
    # a map or reduce op runs at every dtype its family has a generated WGSL kernel for
    **{op: tuple(lang_dtypes(op, "wgsl")) for op in [*UNARY_OP, *BINARY_OP, *REDUCE_OP]},
    **STUDENT_DTYPES,
    # support.check_kernels checks every dtype a node touches: the weight's and the result's
    "matmul_q": ("float32", *BLOCK_DTYPES),
    "dequantize": ("float32", *BLOCK_DTYPES),
    "dequantize_rows": ("float32", "int32", *BLOCK_DTYPES),
    **INDEX_DTYPES,
}


def pack_params(params: list[Param]) -> bytes:
    """A step's uniform bytes: 4-byte little-endian words, zero-padded to a multiple of 16."""
    words = max(4, _ceil_div(len(params), 4) * 4)
    out = bytearray(words * 4)
    for i, (kind, value) in enumerate(params):
        struct.pack_into("<I" if kind == "u32" else "<f", out, i * 4, value)
    return bytes(out)
