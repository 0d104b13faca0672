"""An aten FX graph (aot_autograd's forward/backward/inference graph, or make_fx's) -> one
protocol `Graph`, node by node through `table.ATEN_TABLE`.

`scan` lists the graph's aten ops and which have no lowering (no Graph is built: what `explain`
and the fallback decision read). `lower` builds the Graph: each placeholder becomes what
`make_input` returns (a fed `g.input`, or a constant holding a parameter's data), each call
through its table entry; the outputs are described by `OutSpec`s so a run can hand back torch
tensors (or pass an input through, or None) in the graph's order.
"""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx
from torch._subclasses.fake_tensor import FakeTensor, unset_fake_temporarily

from ..errors import GpuLabError
from ..graph import Graph, Tensor
from .packing import Slot, pack
from .table import ATEN_TABLE, Ctx, name, protocol_dtype, refusal


@dataclass
class Scan:
    """The aten ops of one FX graph, counted, and the unmapped ones among them."""

    ops: Counter = field(default_factory=Counter)
    unmapped: Counter = field(default_factory=Counter)
    symbolic: bool = False  # shapes with symbols (dynamic=True): the backend needs them static


def scan(gm: torch.fx.GraphModule) -> Scan:
    found = Scan()
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            val = node.meta.get("val")
            shape = getattr(val, "shape", ())
            found.symbolic |= any(not isinstance(n, int) for n in shape)
        if node.op != "call_function" or node.target is operator.getitem:
            continue
        if not isinstance(node.meta.get("val"), (torch.Tensor, tuple, list)):
            continue  # size arithmetic of a symbolic graph (sym_size, mul): baked when specialized
        op = name(node.target)
        found.ops[op] += 1
        if refusal(node):
            found.unmapped[op] += 1
    return found


@dataclass
class OutSpec:
    """One output of the FX graph: a protocol output (`name`), input `index` passed
    through, or a Python value (None for a gradient nobody wants)."""

    kind: str  # "tensor", "input", "value"
    name: str = ""
    index: int = -1
    value: Any = None
    dtype: torch.dtype | None = None


@dataclass
class Lowered:
    graph: Graph
    inputs: list[Tensor | None]  # per placeholder: its Tensor (None: not used)
    fed: list[int]  # placeholder indices fed every call
    outputs: dict[str, Tensor]  # protocol outputs by name (packed past max_outputs)
    specs: list[OutSpec]
    slots: dict[str, Slot] = field(default_factory=dict)  # a spec's name -> its packed place


MakeInput = Callable[[Graph, int, torch.fx.Node], Tensor]


def fed_input(g: Graph, index: int, node: torch.fx.Node) -> Tensor:
    """A placeholder as an input fed every call (shape and dtype from its example value)."""
    val = node.meta["val"]
    return g.input([int(n) for n in val.shape], dtype=protocol_dtype(val.dtype))


def lower(gm: torch.fx.GraphModule, make_input: MakeInput = fed_input) -> Lowered:
    """The whole graph as protocol nodes; UNSUPPORTED naming the first aten op without a
    lowering, and any builder error re-raised naming the aten node that made it."""
    g = Graph()
    env: dict[torch.fx.Node, Any] = {}
    inputs: list[Tensor | None] = []
    input_ids: dict[int, int] = {}
    for node in gm.graph.nodes:
        if node.op == "placeholder" and not isinstance(node.meta.get("val"), torch.Tensor):
            inputs.append(None)  # a size (symbolic graphs): baked into the specialization
            env[node] = node.meta.get("val")
        elif node.op == "placeholder":
            t = make_input(g, len(inputs), node)
            input_ids[t.id] = len(inputs)
            inputs.append(t)
            env[node] = t
        elif node.op == "get_attr":
            env[node] = _constant(g, getattr(gm, str(node.target)))
        elif node.op == "call_function":
            env[node] = _call(g, node, env)
        elif node.op == "output":
            outputs, specs = _outputs(node.args[0], env, input_ids)
            outputs, slots = pack(outputs)
    fed = [
        i
        for i, t in enumerate(inputs)
        if t is not None and t.op == "input" and g._nodes[t.id].get("data") is None
    ]
    return Lowered(g, inputs, fed, outputs, specs, slots)


def _constant(g: Graph, value: Any) -> Tensor:
    """A tensor constant of the graph (get_attr: `torch.tensor(...)` in the model's code) as
    data of the protocol graph. aot_autograd compiles under its FakeTensorMode, so the real
    tensor is read with that mode set aside."""
    if not isinstance(value, torch.Tensor) or isinstance(value, FakeTensor):
        raise GpuLabError("UNSUPPORTED", f"a graph attribute of type {type(value).__name__}")
    kind = protocol_dtype(value.dtype)
    with unset_fake_temporarily():
        data = value.detach().cpu().contiguous()
        data = data.to(torch.int32 if kind == "int32" else data.dtype).numpy().copy()
    return g.tensor(data, dtype=kind)


def _call(g: Graph, node: torch.fx.Node, env: dict[torch.fx.Node, Any]) -> Any:
    args = torch.fx.node.map_arg(node.args, lambda n: env[n])
    kwargs = dict(torch.fx.node.map_arg(node.kwargs, lambda n: env[n]))
    if node.target is operator.getitem:
        return args[0][args[1]]
    fn = ATEN_TABLE.get(node.target)
    if fn is None or refusal(node):
        raise GpuLabError(
            "UNSUPPORTED", f"aten op {name(node.target)} (node {node.name}): {refusal(node)}"
        )
    for key in ("device", "layout", "pin_memory", "memory_format", "non_blocking"):
        kwargs.pop(key, None)
    try:
        return fn(Ctx(g, node.meta.get("val"), node), *args, **kwargs)
    except GpuLabError as err:
        raise GpuLabError(
            err.code, f"{name(node.target)} (node {node.name}): {err.message}", err.node
        ) from err


def _leaves(results: Any) -> list[Any]:
    """The output node's values flattened (make_fx keeps the function's nesting)."""
    if isinstance(results, (list, tuple)):
        return [leaf for item in results for leaf in _leaves(item)]
    return [results]


def _outputs(
    results: Any, env: dict[torch.fx.Node, Any], input_ids: dict[int, int]
) -> tuple[dict[str, Tensor], list[OutSpec]]:
    outputs: dict[str, Tensor] = {}
    by_id: dict[int, str] = {}
    specs = []
    for item in _leaves(results):
        if not isinstance(item, torch.fx.Node):
            specs.append(OutSpec("value", value=item))
            continue
        t = env[item]
        if not isinstance(t, Tensor):
            specs.append(OutSpec("value", value=t))
        elif t.id in input_ids and t.op == "input":
            specs.append(OutSpec("input", index=input_ids[t.id]))
        else:
            out_name = by_id.setdefault(t.id, f"out{len(by_id)}")
            outputs[out_name] = t
            specs.append(OutSpec("tensor", name=out_name, dtype=item.meta["val"].dtype))
    return outputs, specs
