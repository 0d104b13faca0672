"""`explain(model, *inputs)`: every aten op the backend would meet, mapped or not, per graph.

An aten graph with unmapped ops is shown with the gpulab partitions the backend would split it
into (partition.py). It compiles the model with a recording backend (the same aot_autograd and decompositions as
the real one, the graphs then run eagerly), runs it once, and runs a backward when an output
needs gradients (the parameters' `.grad` are put back as they were). Nothing runs on gpulab.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import torch
from torch._dynamo.backends.common import aot_autograd

from ..errors import GpuLabError
from .lower import lower, scan
from .partition import split
from .table import DECOMPOSITIONS


@dataclass
class GraphOps:
    kind: str  # inference, forward, backward
    ops: Counter
    unmapped: Counter
    refused: str = ""  # every op mapped but a lowering refused (e.g. a dtype): why
    partitions: int = 0  # with unmapped ops: the gpulab partitions between them

    @property
    def runs_on(self) -> str:
        if self.refused:
            return "eager PyTorch"
        if self.unmapped:
            return f"{self.partitions} gpulab partition(s), the unmapped ops in eager PyTorch"
        return "gpulab"


@dataclass
class Explanation:
    graphs: list[GraphOps] = field(default_factory=list)
    dynamo_graphs: int = 0  # graphs dynamo made (1 + its own graph breaks)

    @property
    def mapped(self) -> Counter:
        total: Counter = Counter()
        for g in self.graphs:
            total.update({op: n for op, n in g.ops.items() if op not in g.unmapped})
        return total

    @property
    def unmapped(self) -> Counter:
        total: Counter = Counter()
        for g in self.graphs:
            total.update(g.unmapped)
        return total

    def __str__(self) -> str:
        lines = [
            (
                f"gpulab explain: {self.dynamo_graphs} dynamo graph(s), "
                f"{len(self.graphs)} aten graph(s)"
            )
        ]
        for i, g in enumerate(self.graphs):
            lines.append(
                f"  [{i}] {g.kind}: {sum(g.ops.values())} aten ops -> runs on "
                f"{g.runs_on}" + (f" ({g.refused})" if g.refused else "")
            )
            for op, n in sorted(g.ops.items()):
                mark = "UNMAPPED" if op in g.unmapped else "mapped"
                lines.append(f"      {mark:8} {op} x{n}")
        unmapped = ", ".join(f"{op} x{n}" for op, n in sorted(self.unmapped.items()))
        lines.append(f"  unmapped: {unmapped or 'none'}")
        return "\n".join(lines)


def explain(
    model: Any, *inputs: Any, backward: bool | None = None, show: bool = True
) -> Explanation:
    """Print (show) and return every aten op of `model(*inputs)`'s graphs, with counts.
    `backward` None: run one when an output requires grad."""
    found = Explanation()

    def record(kind: str) -> Any:
        def compiler(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
            s = scan(gm)
            refused, parts = "", 0
            if s.unmapped:
                parts = sum(n.op == "call_module" for n in split(gm).graph.nodes)
            else:
                try:
                    lower(gm)
                except GpuLabError as err:
                    refused = err.message
            found.graphs.append(GraphOps(kind, s.ops, s.unmapped, refused, parts))
            from functorch.compile import make_boxed_func

            return make_boxed_func(gm.forward)

        return compiler

    def recorder(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
        found.dynamo_graphs += 1
        return aot_autograd(
            fw_compiler=record("forward"),
            bw_compiler=record("backward"),
            inference_compiler=record("inference"),
            decompositions=DECOMPOSITIONS,
        )(gm, example_inputs)

    out = torch.compile(model, backend=recorder, dynamic=False)(*inputs)
    tensors = [
        t
        for t in (out if isinstance(out, (tuple, list)) else [out])
        if isinstance(t, torch.Tensor) and t.requires_grad
    ]
    if tensors and backward is not False:
        _backward_keeping_grads(model, tensors)
    if show:
        print(found)
    return found


def _backward_keeping_grads(model: Any, outputs: list[torch.Tensor]) -> None:
    params = list(model.parameters()) if isinstance(model, torch.nn.Module) else []
    saved = [p.grad for p in params]
    sum(t.float().sum() for t in outputs).backward()
    for p, grad in zip(params, saved, strict=True):
        p.grad = grad
