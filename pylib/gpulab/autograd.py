"""Reverse-mode autograd on protocol graphs: `grad(loss, [w, b])` appends the gradient nodes.

The gradient is built from protocol ops only (through the public Tensor/Graph API and
gpulab.functional), appended to the same Graph, so it runs on every backend and in the page like
any other node. Each op's vector-Jacobian rule lives in gpulab.grad_rules, selected by the
`grad` field of the op's row in the op table (backends-js/src/ops.json); a row without it is
not differentiable and `grad` refuses naming the op and the node (docs/architecture.md
"Autograd").

    g = Graph()
    w = g.tensor([[1.0, 2.0]]); x = g.tensor([[3.0], [4.0]])
    (dw,) = g.grad((w @ x).sum(), [w])      # dw = x.T: run it like any tensor

Choices where torch differs or leaves a choice:
- An input the output does not depend on gets a tensor of zeros of its shape (torch returns
  None with allow_unused=True and raises without it); every returned entry is a Tensor.
- Gradients meeting at a node (fan-out) are added in ascending order of the consumers' node ids
  (for one consumer, in operand order), so the gradient graph, and its bits, are the same
  wherever it is built and run.
- create_graph=True (gradients of gradients) is refused by name: CREATE_GRAPH_REFUSED.
- Only float32 tensors have gradients (as torch: floating point only); integer, bool and block-
  quantized operands (indices, masks, counters, q4_k/q6_k weights) never receive one, and an op
  with a non-float result (argmax, eq/lt/..., cast to int32) ends a gradient path as in torch,
  where such results do not require grad: `(x > 0).cast("float32") * x` differentiates as
  mask * x. An op with a float32 result and no `grad` rule on a path from an input to the
  output (cast to float32, matmul_fixed, life, wgsl, the optimizer updates) is refused by name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .dtypes import block_of
from .errors import GpuLabError
from .grad_rules import NodeView, Tensor, operand_ids, rule_for
from .protocol import label

__all__ = ["CREATE_GRAPH_REFUSED", "NodeView", "grad", "operand_ids"]

Graph = Any  # gpulab.graph.Graph (graph.py imports this module for Graph.grad: no cycle)

CREATE_GRAPH_REFUSED = (
    "create_graph=True (higher-order gradients, a gradient of a gradient) is not supported: "
    "the gradient graph is built once from protocol ops and is not itself differentiated"
)
SOURCES = ("input", "full")  # leaves: nothing flows past them
QUANTIZED_NOTE = (
    " (matmul_q and dequantize are not differentiable w.r.t. a block-quantized weight; "
    "matmul_q is w.r.t. its float32 x)"
)


def grad(
    output: Tensor, inputs: Sequence[Tensor], grad_output: Any = None, create_graph: bool = False
) -> list[Tensor]:
    """d(output)/d(input) for each input, as new Tensors of the output's Graph (vector-Jacobian
    products with `grad_output`, which defaults to 1 for an output of one element; a larger
    output needs grad_output of its shape, as torch.autograd.grad). An input the output does not
    depend on gets zeros of its shape (see the module doc). Refuses, naming what: an op without a
    `grad` rule on a path from an input to the output, a non-float32 input or output,
    create_graph=True."""
    if create_graph:
        raise GpuLabError("VALIDATION", f"grad: {CREATE_GRAPH_REFUSED}")
    g = output.graph
    out_t = g._own(output, "grad output")
    targets = [g._own(t, f"grad inputs[{i}]") for i, t in enumerate(inputs)]
    for i, t in enumerate([out_t, *targets]):
        if t.dtype != "float32":
            what = "the output" if i == 0 else f"inputs[{i - 1}]"
            why = QUANTIZED_NOTE if block_of(t.dtype) else ""
            raise GpuLabError(
                "VALIDATION",
                f"grad: {what} ({label(t.id, t.op)}) is {t.dtype}: "
                f"only float32 tensors have gradients{why}",
                t.id,
            )
    seed = _seed(out_t, grad_output)
    flows = _flows(g, {t.id for t in targets}, out_t.id)
    found = _backward(g, out_t.id, seed, flows, {t.id for t in targets})
    return [found[t.id] if t.id in found else g.full(list(t.shape), 0.0) for t in targets]


def _seed(output: Tensor, grad_output: Any) -> Tensor:
    g = output.graph
    if grad_output is None:
        if output.size != 1:
            raise GpuLabError(
                "VALIDATION",
                f"grad: the output has shape {list(output.shape)}: "
                "a gradient can be implicitly created only for a "
                "scalar output; give grad_output of that shape",
                output.id,
            )
        return g.full(list(output.shape), 1.0)
    seed = g._operand(grad_output, "grad_output")
    if seed.shape != output.shape or seed.dtype != "float32":
        raise GpuLabError(
            "VALIDATION",
            f"grad: grad_output has shape {list(seed.shape)} "
            f"({seed.dtype}), the output {list(output.shape)} "
            "(float32): they must match",
            seed.id,
        )
    return seed


def _flows(g: Graph, targets: set[int], output: int) -> set[int]:
    """Nodes (ids <= output) a gradient can reach: a target, or a float32 result with a float32
    operand that one reaches (node ids are topological). As in torch, a non-float result (a
    comparison mask, argmax, a cast to int) ends the path: it is a constant to the gradient."""
    flows: set[int] = set()
    for node in g._nodes[min(targets, default=output + 1) : output + 1]:
        if node["id"] in targets or (
            g._tensors[node["id"]].dtype == "float32" and any(i in flows for i in operand_ids(node))
        ):
            flows.add(node["id"])
    return flows


def _backward(
    g: Graph, output: int, seed: Tensor, flows: set[int], targets: set[int]
) -> dict[int, Tensor]:
    """Walk the nodes from the output down; each node's gradient is the fixed-order sum of what
    its consumers sent, then its rule sends gradients on to the operands that a target flows
    into. Returns the gradient of each target reached."""
    sent: dict[int, list[tuple[int, int, Tensor]]] = {output: [(output + 1, 0, seed)]}
    found: dict[int, Tensor] = {}
    for node_id in range(output, -1, -1):
        parts = sent.pop(node_id, None)
        if parts is None:
            continue
        total = _accumulate(parts)
        if node_id in targets:
            found[node_id] = total
        node = g._nodes[node_id]
        if node["op"] in SOURCES or not any(i in flows for i in operand_ids(node)):
            continue
        view = NodeView(g, node)
        wanted = {n for n, t in view.operands.items() if t.id in flows}
        grads = rule_for(view)(view, total, wanted)
        for position, (name, operand) in enumerate(view.operands.items()):
            if name in wanted:
                _send(sent, view, name, operand, grads.get(name), position, total)
    return found


def _send(
    sent: dict[int, list[tuple[int, int, Tensor]]],
    view: NodeView,
    name: str,
    operand: Tensor,
    given: Tensor | None,
    position: int,
    dy: Tensor,
) -> None:
    if given is None:
        raise GpuLabError(
            "VALIDATION",
            f"grad: the rule of {label(view.id, view.op)} gives no gradient for operand {name!r}",
            view.id,
        )
    if given.shape != operand.shape:  # a rule bug: say where, never hand back a wrong shape
        raise GpuLabError(
            "VALIDATION",
            f"grad: the rule of {label(view.id, view.op)} gave "
            f"shape {list(given.shape)} for operand {name!r} of "
            f"shape {list(operand.shape)} (dy {list(dy.shape)})",
            view.id,
        )
    sent.setdefault(operand.id, []).append((view.id, position, given))


def _accumulate(parts: list[tuple[int, int, Tensor]]) -> Tensor:
    """Sum in ascending (consumer id, operand position) order: deterministic fan-in."""
    ordered = [t for _, _, t in sorted(parts, key=lambda p: (p[0], p[1]))]
    total = ordered[0]
    for t in ordered[1:]:
        total = total + t
    return total
