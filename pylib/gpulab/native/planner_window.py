"""The planner's rules for the protocol-v6 window ops (conv2d, max_pool2d,
avg_pool2d, resize), twin of backends-js/src/planner-window.mjs (e2e/test_plans_equal.py
compares the plans). Each op is one dispatch of kernels/wgsl/window.wgsl, one invocation per
output element (OP: 0 conv2d, 1 max_pool2d, 2 avg_pool2d, 3 resize nearest, 4 resize linear)
with the bindings [a, w, bias, out]; an op without a weight or a bias binds a there."""

from __future__ import annotations

import math
from typing import Any

WINDOW_WG = 64
QNAN = 0x7FC00000
COORD_MODES = ("half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
OP_CODE = {"conv2d": 0, "max_pool2d": 1, "avg_pool2d": 2}


# window.wgsl's Params, words 1..19 in order (both passes write them; planner-window.mjs lists
# the same order)
# fmt: off
WINDOW_WORDS = ("n", "c", "h", "w", "m", "oh", "ow", "kh", "kw", "sh", "sw", "dh", "dw",
                "pt", "pl", "pb", "pr", "cg", "mg")
# fmt: on


def window_params(node: Any, shapes: list[list[int]]) -> dict[str, int]:
    """A window op's integers (twin of conv-geometry.mjs windowParams)."""
    if node.op == "resize":
        n, c, h, w = shapes[0]
        return {
            "n": n,
            "c": c,
            "h": h,
            "w": w,
            "m": c,
            "oh": node.shape[2],
            "ow": node.shape[3],
            "kh": 1,
            "kw": 1,
            "sh": 1,
            "sw": 1,
            "dh": 1,
            "dw": 1,
            "pt": 0,
            "pl": 0,
            "pb": 0,
            "pr": 0,
            "cg": 1,
            "mg": 1,
            "bias": 0,
        }
    conv = node.op == "conv2d"
    a = shapes[-2] if conv else shapes[0]
    wshape = shapes[-1] if conv else None
    attrs = node.attrs
    kernel = [wshape[2], wshape[3]] if wshape else attrs["kernel"]
    groups = attrs["groups"] if conv else 1
    s, d, pad = attrs["strides"], attrs["dilations"], attrs["padding"]
    return {
        "n": a[0],
        "c": a[1],
        "h": a[2],
        "w": a[3],
        "m": wshape[0] if wshape else a[1],
        "oh": node.shape[2],
        "ow": node.shape[3],
        "kh": kernel[0],
        "kw": kernel[1],
        "sh": s[0],
        "sw": s[1],
        "dh": d[0],
        "dw": d[1],
        "pt": pad[0],
        "pl": pad[1],
        "pb": pad[2],
        "pr": pad[3],
        "cg": wshape[1] if wshape else 1,
        "mg": wshape[0] // groups if wshape else 1,
        "bias": int(conv and len(shapes) == 3),
    }


def conv_gemm(node: Any, shapes: list[list[int]]) -> dict[str, Any]:
    """conv2d as a batched matmul (planner.py decides when; twin of convGemm): groups, output
    channels per group, K = cg * kh * kw, P = oh * ow, the column count, and whether a is its
    own column matrix (a 1x1 kernel, strides 1, no padding)."""
    p = window_params(node, shapes)
    groups = p["c"] // p["cg"]
    k = p["cg"] * p["kh"] * p["kw"]
    pix = p["oh"] * p["ow"]
    pointwise = (p["kh"], p["kw"], p["sh"], p["sw"]) == (1, 1, 1, 1) and not any(
        p[q] for q in ("pt", "pl", "pb", "pr")
    )
    return {
        "n": p["n"],
        "groups": groups,
        "mg": p["mg"],
        "k": k,
        "pix": pix,
        "cols": p["n"] * groups * k * pix,
        "pointwise": pointwise,
        "bias": p["bias"],
    }


def plan_conv_pass(ctx: Any, node: Any, op: int, target: int, count: int) -> None:
    """One window.wgsl pass of conv2d's matmul form: OP 5 the columns into target, OP 6 the
    bias added into target (twin of planConvPass)."""
    shapes = [ctx.operand_shape(node, k) for k in range(len(node.operands))]
    p = window_params(node, shapes)
    ops = [ctx.operand(node, k) for k in range(len(node.operands))]
    a, w, bias = (ops[1], ops[2], ops[0]) if len(ops) == 3 else (ops[0], ops[1], ops[0])
    words = [
        count,
        *(p[k] for k in WINDOW_WORDS),
        0,
        0,
        0,
        QNAN,
    ]
    reads = [bias, bias, bias] if op == 6 else [a, w, a]
    ctx.dispatch(
        node,
        "window",
        {"WG": WINDOW_WG, "OP": op, "HAS_BIAS": 0},
        [["u32", v] for v in words],
        [*reads, target],
        -(-count // WINDOW_WG),
    )


def plan_window(ctx: Any, node: Any) -> None:
    shapes = [ctx.operand_shape(node, k) for k in range(len(node.operands))]
    p = window_params(node, shapes)
    attrs = node.attrs
    n = math.prod(node.shape)
    resize = node.op == "resize"
    op = OP_CODE.get(node.op, 4 if attrs.get("mode") == "linear" else 3)
    words = [
        n,
        *(p[k] for k in WINDOW_WORDS),
        1 if attrs.get("count_include_pad") else 0,
        COORD_MODES.index(attrs["coordinate_transformation_mode"]) if resize else 0,
        NEAREST_MODES.index(attrs["nearest_mode"]) if resize else 0,
        QNAN,
    ]
    ops = [ctx.operand(node, k) for k in range(len(node.operands))]
    if node.op != "conv2d":
        a = w = bias = ops[0]
    elif len(ops) == 3:
        bias, a, w = ops
    else:
        a, w = ops
        bias = a
    overrides = {"WG": WINDOW_WG, "OP": op, "HAS_BIAS": p["bias"]}
    ctx.dispatch(
        node,
        "window",
        overrides,
        [["u32", v] for v in words],
        [a, w, bias, ctx.output(node)],
        -(-n // WINDOW_WG),
    )


WINDOW_RULES = {op: plan_window for op in ("conv2d", "max_pool2d", "avg_pool2d", "resize")}
