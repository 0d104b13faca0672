"""The planner's rules for the student ops, twin of backends-js/src/planner-student.mjs.

A `wgsl` node is one dispatch of kernel "wgsl" (the program compiles the node's own source)
with the binding convention's order: inputs, then one buffer per result; its params are the
step's uniform words in the params struct's member order. Its value is its first result;
`wgsl_output` is a view (alias) of result `index`, no dispatch.
"""

from __future__ import annotations

import math
from typing import Any

from .. import optable
from ..wgsl_check import param_words


def _params(node: Any) -> list[tuple[str, float | int]]:
    """i32 values as their u32 bits (the packer writes u32 and f32)."""
    return [
        ("f32", v) if t == "f32" else ("u32", int(v) & 0xFFFFFFFF)
        for t, v in param_words(node.attrs["source"], node.attrs["params"])
    ]


def plan_wgsl(ctx: Any, node: Any) -> None:
    results = node.attrs["results"]
    buffers = [
        ctx.allocate(
            node,
            math.prod(r["shape"]),
            "output" if i == 0 and node.id in ctx.output_ids else "temp",
        )
        for i, r in enumerate(results)
    ]
    ctx.bind(node, buffers[0], False)
    inputs = [ctx.operand(node, i) for i in range(len(node.operands))]
    step: dict[str, Any] = {
        "node": node.id,
        "kernel": "wgsl",
        "entry": "main",
        "overrides": {},
        "params": _params(node),
        "bindings": [*inputs, *buffers],
        "dispatch": list(node.attrs["workgroups"]),
    }
    if len(results) != 1:
        step["writes"] = len(results)
    ctx.steps.append(step)


def plan_wgsl_output(ctx: Any, node: Any) -> None:
    of = ctx.node(node.operands[0])
    step = next(s for s in ctx.steps if s["node"] == of.id and s["kernel"] == "wgsl")
    first = len(step["bindings"]) - len(of.attrs["results"])
    ctx.bind(node, step["bindings"][first + node.attrs["index"]], True)


STUDENT_RULES = {"wgsl": plan_wgsl, "wgsl_output": plan_wgsl_output}
STUDENT_DTYPES = {op: tuple(optable.load()["dtypes"]) for op in STUDENT_RULES}
