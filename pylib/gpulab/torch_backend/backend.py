"""The dynamo backend: `torch.compile(model, backend="gpulab")`.

Dynamo hands over an FX graph of torch calls; `aot_autograd` (with `table.DECOMPOSITIONS`, the
core-aten set) turns it into aten graphs: one inference graph under no_grad, or a forward and a
backward graph when something needs gradients. Each goes to `compile_graph`, which scans it:
every op in the table -> a `CompiledGraph` running it as a prepared gpulab session. Unmapped
ops -> the graph is split around them (partition.py): the lowerable partitions run on gpulab,
the unmapped ops in eager PyTorch between them, with a printed summary naming the ops
(`partition=False`: the whole aten graph eager; `strict=True`: UNSUPPORTED naming them). A
lowering that refuses (e.g. a dtype the protocol lacks) leaves its graph or partition eager.
Forward and backward are decided separately.
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
from .partition import compile_parts
from .region import MixedRegion, make_partition
from .runner import RECORDS, CompiledGraph, Options, Record, SymbolicGraph
from .table import DECOMPOSITIONS, LOWERING_ERRORS

_COUNT = {"graphs": 0}


def compile_graph(
    gm: torch.fx.GraphModule, example_inputs: list[Any], kind: str, options: Options
) -> Any:
    """aot_autograd's fw/bw/inference compiler: a CompiledGraph; with unmapped ops, the graph
    split around them (partition.py) or, options.partition False, the graph itself (eager)."""
    _COUNT["graphs"] += 1
    label = f"{kind}#{_COUNT['graphs']}"
    found = scan(gm)
    ops = sum(found.ops.values())
    static = _static_inputs() if kind == "inference" else []
    if found.symbolic and not found.unmapped:
        return SymbolicGraph(gm, label, options, static, kind)  # specialized per call's shapes
    if found.symbolic:
        return _eager(gm, label, ops, f"symbolic shapes and {_unmapped(found)}", kind, options)
    if found.unmapped:
        reason = _unmapped(found)
        if options.strict or not options.partition:
            return _eager(gm, label, ops, reason, kind, options)
        return _partitioned(gm, label, ops, reason, static, options)
    try:
        compiled = CompiledGraph(gm, label, options, static)
    except LOWERING_ERRORS as err:  # a lowering's refusal: this graph runs eagerly
        return _eager(gm, label, ops, f"lowering refused: {_why(err)}", kind, options)
    compiled.record.ops = ops
    return compiled


def _why(err: Exception) -> str:
    return err.message if isinstance(err, GpuLabError) else repr(err)


def _unmapped(found: Any) -> str:
    ops = ", ".join(f"{op} x{n}" for op, n in sorted(found.unmapped.items()))
    return f"unmapped aten ops: {ops}"


def _eager(
    gm: torch.fx.GraphModule, label: str, ops: int, reason: str, kind: str, options: Options
) -> Any:
    """The whole aten graph in eager PyTorch (strict: UNSUPPORTED naming why)."""
    if options.strict:
        raise GpuLabError(
            "UNSUPPORTED",
            f"gpulab backend (strict): the {kind} graph cannot run on gpulab: {reason}",
        )
    RECORDS.append(Record(label, ops=ops, reason=reason))
    _say(options, f"{label} ({ops} aten ops) runs in eager PyTorch: {reason}")
    return make_boxed_func(gm.forward)


def _partitioned(
    gm: torch.fx.GraphModule, label: str, ops: int, reason: str, static: list[int], options: Options
) -> Any:
    """Only the unmapped ops (and partitions that refuse) in eager PyTorch."""

    def make(sub: torch.fx.GraphModule, name: str, sub_static: list[int]) -> CompiledGraph:
        compiled = CompiledGraph(sub, f"{label}.{name}", options, sub_static)
        compiled.record.ops = sum(scan(sub).ops.values())
        return compiled

    outer, done, refused = compile_parts(gm, static, make)
    record = Record(label, ops=ops, reason=reason)
    record.extra = {"partitions": done, "eager_partitions": refused}
    RECORDS.append(record)
    parts = f"{len(done)} gpulab partition(s) ({', '.join(done) or 'none'})"
    left = f"; left eager: {'; '.join(refused)}" if refused else ""
    _say(
        options,
        f"{label} ({ops} aten ops) breaks into {parts}, eager PyTorch between: {reason}{left}",
    )
    return make_boxed_func(outer.forward)


def _say(options: Options, message: str) -> None:
    if options.verbose:
        print(f"gpulab torch backend: {message}", file=sys.stderr)


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
    try:
        return aot_autograd(
            fw_compiler=partial(compile_graph, kind="forward", options=opts),
            bw_compiler=partial(compile_graph, kind="backward", options=opts),
            inference_compiler=partial(compile_graph, kind="inference", options=opts),
            decompositions=DECOMPOSITIONS,
            partition_fn=make_partition(opts.partition),
        )(gm, example_inputs)
    except MixedRegion as err:  # region.py: the whole region in eager PyTorch, or refused
        return _eager_region(gm, err.reason, opts)


def _eager_region(gm: torch.fx.GraphModule, reason: str, options: Options) -> Any:
    """dynamo's graph as it is: forward and backward by eager PyTorch's own autograd."""
    _COUNT["graphs"] += 1
    label = f"region#{_COUNT['graphs']}"
    ops = sum(1 for n in gm.graph.nodes if n.op in ("call_function", "call_method"))
    if options.strict:
        raise GpuLabError(
            "UNSUPPORTED", f"gpulab backend (strict): the region cannot run on gpulab: {reason}"
        )
    record = Record(label, ops=ops, reason=reason)
    RECORDS.append(record)
    _say(options, f"{label} (forward and backward) runs in eager PyTorch: {reason}")

    def run(*args: Any) -> Any:
        record.calls += 1
        return gm.forward(*args)

    return run


def register() -> None:
    """Register "gpulab" with dynamo (idempotent)."""
    from torch._dynamo.backends.registry import _BACKENDS, register_backend

    if "gpulab" not in _BACKENDS:
        register_backend(backend, name="gpulab")
