"""One rule for a training region's backward: it is our graph, derived from the same forward
graph, or the whole region (forward and backward) runs in eager PyTorch; never an eager
backward op over values our forward computed.

Why: an eager aten backward op reads what the forward saved for it (attention's output and
logsumexp, a convolution's input, ...) and trusts that they are exactly what the eager forward
op would have saved. A forward that ran as protocol ops (or through one of PyTorch's
decompositions, which may save something else: the CPU attention decomposition saves the
attention weights where the fused backward expects the logsumexp) breaks that trust, and the
gradients come out wrong without an error.

aot_autograd hands its joint forward + backward graph to `partition` (our `partition_fn`),
which splits it as PyTorch's default partitioner does and then checks the split: every
backward op that will run eagerly (unmapped, in a partition whose lowering refuses, or in a
backward graph that runs eagerly as a whole) may read the incoming gradients, the user's
inputs and values eager forward ops made, but no saved value a gpulab forward node made. A
region that breaks the rule raises `MixedRegion` before anything is compiled; the backend then
runs the dynamo graph in eager PyTorch (strict: UNSUPPORTED naming the ops).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.fx
from torch._functorch.partitioners import default_partition

from .lower import lower, scan
from .partition import partitions
from .table import LOWERING_ERRORS, name, refusal


class MixedRegion(Exception):
    """A backward that would run eager PyTorch ops over values a gpulab forward computed."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def make_partition(partition_enabled: bool) -> Callable[..., Any]:
    """aot_autograd's partition_fn: PyTorch's default split, then the rule checked."""

    def partition(joint: torch.fx.GraphModule, joint_inputs: Any, **kwargs: Any) -> Any:
        fw, bw = default_partition(joint, joint_inputs, **kwargs)
        reason = mixed(fw, bw, partition_enabled)
        if reason:
            raise MixedRegion(reason)
        return fw, bw

    return partition


def mixed(fw: torch.fx.GraphModule, bw: torch.fx.GraphModule, partition_enabled: bool) -> str:
    """Why this forward/backward pair breaks the rule ("" when it does not)."""
    ours = gpulab_nodes(fw, partition_enabled)
    reads = context_reads(bw)
    eager = eager_nodes(bw, partition_enabled)
    found = []
    for node in bw.graph.nodes:
        if node.name not in eager:
            continue
        saved = sorted(s for s in reads.get(node.name, ()) if s in ours)
        if saved:
            found.append(f"{name(node.target)} reads {', '.join(saved)}")
    if not found:
        return ""
    return "eager backward ops would read values the gpulab forward computed: " + "; ".join(found)


def gpulab_nodes(fw: torch.fx.GraphModule, partition_enabled: bool) -> set[str]:
    """Names of the forward's nodes that may run as protocol ops (the lowerable ones, unless
    the forward graph runs eagerly as a whole); an over-estimate is safe: it can only send a
    region to eager PyTorch."""
    found = scan(fw)
    if found.unmapped and (not partition_enabled or found.symbolic):
        return set()
    return {n.name for n in fw.graph.nodes if n.op == "call_function" and not refusal(n)}


def eager_nodes(gm: torch.fx.GraphModule, partition_enabled: bool) -> set[str]:
    """Names of the call nodes `compile_graph` leaves to eager PyTorch: the unmapped ones and
    those of every partition (or whole graph) whose lowering refuses, found by lowering a copy
    (no session is prepared). A symbolic graph without unmapped ops is lowered per call's
    shapes; a backward one refuses (runner.SymbolicGraph) rather than run eagerly."""
    calls = {n.name for n in gm.graph.nodes if n.op == "call_function"}
    found = scan(gm)
    if found.symbolic:
        return calls if found.unmapped else set()
    if not found.unmapped:
        return set() if _lowers(gm) else calls
    if not partition_enabled:
        return calls
    eager = {n.name for n in gm.graph.nodes if n.op == "call_function" and refusal(n)}
    for nodes, sub in partitions(gm):
        if not _lowers(sub):
            eager |= {n.name for n in nodes}
    return eager


def _lowers(gm: torch.fx.GraphModule) -> bool:
    try:
        lower(gm)
    except LOWERING_ERRORS:
        return False
    return True


def context_reads(bw: torch.fx.GraphModule) -> dict[str, set[str]]:
    """Per backward call node, the saved forward values (placeholders other than the
    incoming gradients `tangents_*`) its non-gradient arguments are computed from: what the
    op reads as the forward's context, not as the gradient flowing through it."""
    is_grad: dict[torch.fx.Node, bool] = {}
    context: dict[torch.fx.Node, set[str]] = {}
    reads: dict[str, set[str]] = {}
    for node in bw.graph.nodes:
        if node.op == "placeholder":
            is_grad[node] = node.name.startswith("tangents")
            context[node] = set() if is_grad[node] else {node.name}
            continue
        inputs = node.all_input_nodes
        is_grad[node] = any(is_grad[a] for a in inputs)
        ctx = set().union(*(context[a] for a in inputs if not is_grad[a]))
        context[node] = set() if is_grad[node] else ctx
        if node.op == "call_function":
            reads[node.name] = ctx
    return reads
