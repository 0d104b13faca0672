"""The dynamo backend: `torch.compile(model, backend="gpulab")`.

Dynamo hands over an FX graph of torch calls; `aot_autograd` (with `table.DECOMPOSITIONS`, the
core-aten set) turns it into aten graphs: one inference graph under no_grad, or a forward and a
backward graph when something needs gradients. Each goes to `compile_graph`, which scans it:
every op in the table -> a `CompiledGraph` running it as a prepared gpulab session; an unmapped
op (or a lowering that refuses, e.g. a dtype the protocol lacks) -> that whole aten graph runs in
eager PyTorch, with a printed summary naming the ops (strict: UNSUPPORTED naming them instead).
Forward and backward are decided separately, so a backward-only gap keeps the forward on gpulab.
"""

from __future__ import annotations

import sys
from functools import partial
from typing import Any

import torch
import torch.fx
from functorch.compile import make_boxed_func
from torch._dynamo.backends.common import aot_autograd

from ..errors import GpuLabError
from .lower import scan
from .runner import RECORDS, CompiledGraph, Options, Record
from .table import DECOMPOSITIONS

_COUNT = {"graphs": 0}


def compile_graph(
    gm: torch.fx.GraphModule, example_inputs: list[Any], kind: str, options: Options
) -> Any:
    """aot_autograd's fw/bw/inference compiler: a CompiledGraph, or the graph itself (eager)."""
    _COUNT["graphs"] += 1
    label = f"{kind}#{_COUNT['graphs']}"
    found = scan(gm)
    reason = ""
    if found.symbolic:
        reason = "symbolic (dynamic) shapes: compile with dynamic=False"
    elif found.unmapped:
        ops = ", ".join(f"{op} x{n}" for op, n in sorted(found.unmapped.items()))
        reason = f"unmapped aten ops: {ops}"
    if not reason:
        try:
            static = _static_inputs() if kind == "inference" else []
            compiled = CompiledGraph(gm, label, options, static)
            compiled.record.ops = sum(found.ops.values())
            return compiled
        except GpuLabError as err:
            reason = f"lowering refused: {err.message}"
    if options.strict:
        raise GpuLabError(
            "UNSUPPORTED",
            f"gpulab backend (strict): the {kind} graph cannot run on gpulab: {reason}",
        )
    RECORDS.append(Record(label, ops=sum(found.ops.values()), reason=reason))
    if options.verbose:
        print(
            f"gpulab torch backend: {label} ({sum(found.ops.values())} aten ops) runs in "
            f"eager PyTorch: {reason}",
            file=sys.stderr,
        )
    return make_boxed_func(gm.forward)


def _static_inputs() -> list[int]:
    """The parameter/buffer inputs of the graph being compiled (aot_autograd knows them)."""
    ctx = torch._guards.TracingContext.try_get()
    meta = getattr(ctx, "fw_metadata", None) if ctx is not None else None
    return list(getattr(meta, "static_input_indices", None) or [])


def make_backend(**options: Any) -> Any:
    """A dynamo backend with these options (see runner.Options: backend, strict, verbose)."""
    return partial(backend, options=options)


def backend(
    gm: torch.fx.GraphModule, example_inputs: list[Any], options: dict[str, Any] | None = None
) -> Any:
    """The dynamo backend registered as "gpulab" (torch.compile's `options` arrive here)."""
    opts = Options.parse(options)
    return aot_autograd(
        fw_compiler=partial(compile_graph, kind="forward", options=opts),
        bw_compiler=partial(compile_graph, kind="backward", options=opts),
        inference_compiler=partial(compile_graph, kind="inference", options=opts),
        decompositions=DECOMPOSITIONS,
    )(gm, example_inputs)


def register() -> None:
    """Register "gpulab" with dynamo (idempotent)."""
    from torch._dynamo.backends.registry import _BACKENDS, register_backend

    if "gpulab" not in _BACKENDS:
        register_backend(backend, name="gpulab")
