"""loss.backward() and torch.autograd.grad on gpulab.autograd.grad (reverse mode appending
the gradient nodes to the same Graph: pure protocol ops, so they run on every backend).

What is refused by name: `create_graph=True` (higher-order gradients), and a second backward
through a graph that a backward without `retain_graph=True` already went through (torch frees
the graph then; we refuse any backward whose history shares a node with it, which is at least
as strict as torch). `retain_graph=True` is supported: the nodes stay usable.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from ._refuse import Unsupported
from .tensor import Tensor, as_tensor_like

__all__ = ["backward", "enable_grad", "grad", "is_grad_enabled", "no_grad", "set_grad_enabled"]

SECOND_BACKWARD = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward."
)


def _refuse_create_graph(create_graph: bool) -> None:
    if create_graph:
        raise Unsupported(
            "gpulab.torch does not implement create_graph=True (higher-order "
            "gradients: gradients of gradients); backward() and "
            "autograd.grad() give first-order gradients only"
        )


def _gradients(
    output: Tensor, leaves: list[Tensor], gradient: Any, retain_graph: bool | None
) -> list[Tensor | None]:
    """d output / d leaf for each leaf (None where output does not depend on it)."""
    from .. import autograd as gpulab_autograd

    if not output.requires_grad:
        raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
    rec = output._rec
    if rec is None or output._node is None:  # a leaf: d leaf / d leaf
        return [_ones_like(output, gradient) if t is output else None for t in leaves]
    if output._hist & rec.freed:
        raise RuntimeError(SECOND_BACKWARD)
    if gradient is None and output.numel() != 1:
        raise RuntimeError("grad can be implicitly created only for scalar outputs")
    keys = output._leaf_keys()
    nodes, where = [], []
    for i, t in enumerate(leaves):
        key = next((k for k in keys if k[0] == id(t)), None)
        entry = rec.leaves.get(key) if key is not None else None
        if entry is not None and entry[0] is t:
            nodes.append(entry[1])
            where.append(i)
        elif not t._leaf and t._rec is rec and t._node is not None and t._node.id in output._hist:
            nodes.append(t._node)  # an intermediate result (autograd.grad, retain_grad)
            where.append(i)
    grad_out = None
    if gradient is not None:
        g = as_tensor_like(gradient)
        with no_grad():
            grad_out = _in_record(g, rec)
    out: list[Tensor | None] = [None] * len(leaves)
    if nodes:
        with no_grad():
            grads = gpulab_autograd.grad(output._node, nodes, grad_out)
            for i, node in zip(where, grads, strict=True):
                out[i] = _wrap_in(node, rec)
    if not retain_graph:
        rec.freed |= output._hist
    return out


def _in_record(t: Tensor, rec: Any) -> Any:
    """t as a node of `rec` (the output's record, which may be older than the current one)."""
    if t._rec is rec and t._node is not None:
        return t._node
    return rec.graph.tensor(t._values(), shape=list(t.shape), dtype=t.dtype.device)


def _wrap_in(node: Any, rec: Any) -> Tensor:
    from ._tape import TAPE

    saved = TAPE.record
    TAPE.record = rec
    try:
        return Tensor._result(node, output_dtype(), op="grad")
    finally:
        TAPE.record = saved


def output_dtype() -> Any:
    from ._dtype import float32

    return float32


def _ones_like(t: Tensor, gradient: Any) -> Tensor:
    from .creation import ones_like

    return as_tensor_like(gradient) if gradient is not None else ones_like(t)


def backward(
    tensor: Tensor,
    gradient: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: Any = None,
) -> None:
    """Accumulate d tensor / d leaf into each leaf's `.grad` (as torch: summed into an
    existing `.grad` until zero_grad)."""
    _refuse_create_graph(create_graph)
    leaves = list(inputs) if inputs is not None else _leaves_of(tensor)
    grads = _gradients(tensor, leaves, gradient, retain_graph)
    with no_grad():
        for leaf, g in zip(leaves, grads, strict=True):
            if g is None:
                continue
            leaf.grad = g if leaf.grad is None else leaf.grad + g


def _leaves_of(tensor: Tensor) -> list[Tensor]:
    """The leaves tensor depends on, and the intermediate results in its history that asked
    for retain_grad()."""
    rec = tensor._rec
    if rec is None:
        return [tensor] if tensor.requires_grad else []
    keys = tensor._leaf_keys()
    leaves = [t for key, (t, _node) in rec.leaves.items() if key in keys]
    retained = [
        t
        for t in rec.retained.all()
        if t._node is not None and t._rec is rec and t._node.id in tensor._hist
    ]
    return leaves + retained


def grad(
    outputs: Any,
    inputs: Any,
    grad_outputs: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    allow_unused: bool | None = None,
    materialize_grads: bool = False,
) -> tuple[Tensor | None, ...]:
    """torch.autograd.grad for one output (a tensor or a one-element sequence)."""
    _refuse_create_graph(create_graph)
    if isinstance(outputs, Sequence) and not isinstance(outputs, Tensor):
        if len(outputs) != 1:
            raise Unsupported(
                "gpulab.torch does not implement autograd.grad of several "
                "outputs; give one output (sum them first)"
            )
        outputs = outputs[0]
        if isinstance(grad_outputs, Sequence) and not isinstance(grad_outputs, Tensor):
            grad_outputs = grad_outputs[0]
    ins = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    grads = _gradients(outputs, ins, grad_outputs, retain_graph)
    if not allow_unused and any(g is None for g in grads):
        raise RuntimeError(
            "One of the differentiated Tensors appears to not have been used "
            "in the graph. Set allow_unused=True if this is the desired "
            "behavior."
        )
    return tuple(grads)


__all__ += ["SECOND_BACKWARD"]
_ = (enable_grad, is_grad_enabled, set_grad_enabled)
