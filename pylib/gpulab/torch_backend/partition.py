"""The graph break of an unmapped op: only the ops around it run in eager PyTorch.

torch.fx's `CapabilityBasedPartitioner` (what PyTorch's own partial backends use) groups the
aten nodes `ATEN_TABLE` lowers into maximal connected partitions; each becomes a submodule
(`fused_N`) of the outer graph, compiled into its own `CompiledGraph` (its own prepared
session), and everything else (the unmapped ops and any partition whose lowering refuses) stays
an eager aten call between them. Tensors cross a boundary through the caller's device.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.fx
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase
from torch.fx.passes.utils.fuser_utils import fuse_as_graphmodule, topo_sort

from ..errors import GpuLabError
from .table import LOWERING_ERRORS, refusal


class _Lowerable(OperatorSupportBase):
    def is_node_supported(self, submodules: Any, node: torch.fx.Node) -> bool:
        return node.op == "call_function" and not refusal(node)


def _partitioner(gm: torch.fx.GraphModule) -> CapabilityBasedPartitioner:
    return CapabilityBasedPartitioner(gm, _Lowerable(), allows_single_node_partition=False)


def split(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """gm with its lowerable parts as submodules (call_module nodes named fused_N)."""
    partitioner = _partitioner(gm)
    return partitioner.fuse_partitions(partitioner.propose_partitions())


def partitions(gm: torch.fx.GraphModule) -> list[tuple[list[torch.fx.Node], torch.fx.GraphModule]]:
    """The partitions `split` would make, each (gm's nodes in it, its submodule), leaving gm
    as it is."""
    found = []
    for i, part in enumerate(_partitioner(gm).propose_partitions()):
        nodes = topo_sort(list(part.nodes))
        sub, _, _ = fuse_as_graphmodule(gm, nodes, f"fused_{i}", part.nodes)
        found.append((nodes, sub))
    return found


class _Part(torch.nn.Module):
    """A partition as the module the outer graph calls: its CompiledGraph's outputs, unpacked
    as the submodule returned them (one value or a tuple)."""

    def __init__(self, compiled: Callable[..., list[Any]], single: bool) -> None:
        super().__init__()
        self.compiled, self.single = compiled, single

    def forward(self, *args: Any) -> Any:
        out = self.compiled(list(args))
        return out[0] if self.single else tuple(out)


def compile_parts(
    gm: torch.fx.GraphModule,
    static: Sequence[int],
    make: Callable[[torch.fx.GraphModule, str, list[int]], Any],
) -> tuple[torch.fx.GraphModule, list[str], list[str]]:
    """Split gm and compile each partition with `make(sub, name, static_indices)`; returns
    (the outer module, names on gpulab, "name: why" of partitions left eager)."""
    fused = split(gm)
    placeholders = [n for n in fused.graph.nodes if n.op == "placeholder"]
    static_nodes = {placeholders[i] for i in static if i < len(placeholders)}
    done, refused = [], []
    for node in fused.graph.nodes:
        if node.op != "call_module":
            continue
        sub = getattr(fused, str(node.target))
        sub_static = [i for i, a in enumerate(node.args) if a in static_nodes]
        try:
            compiled = make(sub, str(node.target), sub_static)
        except LOWERING_ERRORS as err:  # a lowering's refusal: this partition eager
            message = err.message if isinstance(err, GpuLabError) else repr(err)
            refused.append(f"{node.target}: {message}")
            continue
        out = next(n for n in sub.graph.nodes if n.op == "output")
        single = not isinstance(out.args[0], (tuple, list))
        setattr(fused, str(node.target), _Part(compiled, single))
        done.append(str(node.target))
    fused.recompile()
    return fused, done, refused
