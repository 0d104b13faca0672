"""Students' own WGSL kernels on the native wgpu executor, twin of
backends-js/src/backends/webgpu/student.mjs.

A plan step of kernel "wgsl" compiles its node's source. naga's errors become BACKEND errors
with the line, column and message (naga writes them as `┌─ wgsl:LINE:COL`), the offending line
and a caret: the form the page gives, so the notebook highlights both alike. The bind group
layout follows the convention: storage buffers at 0..n-1 (inputs read-only, results
read-write), the params uniform at n (an explicit layout: "auto" would drop a binding the
shader does not use and the bind group would not match).
"""

from __future__ import annotations

import re
from collections import OrderedDict
from typing import Any

from .. import optable
from ..errors import GpuLabError
from ..wgsl_budget import Insertion, budget_loops, original_column
from ..wgsl_check import source_line

# Compiled kernels kept per executor, least recently used dropped first: each holds naga's
# module and a pipeline (about 1 MB natively), and a notebook (or a hostile client of the server)
# can send any number of distinct sources. Programs that hold a dropped pipeline keep it alive.
MAX_STUDENT_KERNELS = 32

LOCATION = re.compile(r"┌─ [^\n:]*:(\d+):(\d+)")
REASON = re.compile(r"Shader '[^']*' (?:parsing|validation) error: ([^\n]*)")


def naga_error(
    node_id: int, source: str, text: str, insertions: list[Insertion] | None = None
) -> GpuLabError:
    """The protocol error for naga's message text, located where naga says in the budgeted
    source and mapped back to the student's (wgsl_budget.original_column)."""
    reason = REASON.search(text)
    message = reason.group(1).strip() if reason else text.strip().splitlines()[-1]
    where = LOCATION.search(text)
    if not where:
        return GpuLabError(
            "BACKEND", f"node {node_id} (wgsl): WGSL compile error: {message}", node_id
        )
    line, column = int(where.group(1)), int(where.group(2))
    column = original_column(source, insertions or [], line, column)
    caret = f"{'':4} | {' ' * max(0, column - 1)}^"
    return GpuLabError(
        "BACKEND",
        f"node {node_id} (wgsl): WGSL compile error at line {line}, column {column}: "
        f"{message}\n{source_line(source, line)}\n{caret}",
        node_id,
    )


def budget_message(node_id: int) -> str:
    """The run's error when a loop of the kernel passed the loop budget (the same words as the
    page's student.mjs)."""
    budget = int(optable.limits()["max_loop_iterations"])
    return (
        f"node {node_id} (wgsl): the kernel passed its loop budget of {budget} loop "
        "iterations per invocation (max_loop_iterations: every entry and iteration of a loop "
        "counts); a loop past it is stopped and the results are not returned: the session is "
        "poisoned, the runtime works on"
    )


def student_pipeline(executor: Any, node: Any) -> tuple[Any, Any, int, int, int | None]:
    """(pipeline, bind group layout, first storage binding, uniform binding, loop-budget flag
    binding or None when the source has no loop) for a wgsl node, created once per executor
    and source. The source compiled is the budgeted one (wgsl_budget.py)."""
    import wgpu

    inputs = len(node.operands)
    storage = inputs + len(node.attrs["results"])
    uniform = bool(node.attrs["params"])
    cache: OrderedDict = executor.__dict__.setdefault("_student", OrderedDict())
    key = (storage, inputs, uniform, node.attrs["source"])
    if key in cache:
        cache.move_to_end(key)
        return cache[key]
    device = executor.device
    source = node.attrs["source"]
    flag_at = storage + (1 if uniform else 0)
    budgeted = budget_loops(source, int(optable.limits()["max_loop_iterations"]), flag_at)
    try:
        module = device.create_shader_module(code=budgeted.source, label=f"wgsl {node.id}")
    except Exception as err:  # noqa: BLE001 - wgpu raises GPUValidationError with naga text
        raise naga_error(node.id, source, str(err), budgeted.insertions) from None
    vis = wgpu.ShaderStage.COMPUTE
    entries = [
        {
            "binding": b,
            "visibility": vis,
            "buffer": {"type": "read-only-storage" if b < inputs else "storage"},
        }
        for b in range(storage)
    ]
    if uniform:
        entries.append({"binding": storage, "visibility": vis, "buffer": {"type": "uniform"}})
    if budgeted.loops:
        entries.append({"binding": flag_at, "visibility": vis, "buffer": {"type": "storage"}})
    try:
        layout = device.create_bind_group_layout(entries=entries)
        pipeline = device.create_compute_pipeline(
            layout=device.create_pipeline_layout(bind_group_layouts=[layout]),
            compute={"module": module, "entry_point": "main"},
        )
    except Exception as err:  # noqa: BLE001 - any pipeline failure is reported as BACKEND
        located = naga_error(node.id, source, str(err), budgeted.insertions)
        if "at line" in located.message:
            raise located from None
        raise GpuLabError(
            "BACKEND",
            f"node {node.id} (wgsl): the WGSL kernel does not make a pipeline: {str(err).strip()}",
            node.id,
        ) from None
    executor.counters["pipelines"] += 1
    made = cache[key] = (pipeline, layout, 0, storage, flag_at if budgeted.loops else None)
    limit = int(getattr(executor, "hooks", {}).get("max_student_kernels", MAX_STUDENT_KERNELS))
    while len(cache) > limit:
        cache.popitem(last=False)
    return made
