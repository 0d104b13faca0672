"""gpulab.onnx.load: an ONNX model checked at load, lowered to one protocol graph per run.

Load reads the bytes (proto.py), refuses what it cannot run (every unsupported operator with
its node count, then each unsupported attribute variant, element type or dynamic shape, naming
the node or tensor) and lowers the whole model once onto a Graph whose inputs are placeholders
(`Graph.input`): that trace is the static shape inference, so every shape is known and every
refusal has happened before any device work. `run` lowers again with the inputs as constants
and runs that graph; `prepare` makes a session whose feeds are the inputs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import GpuLabError
from ..graph import Graph, Tensor
from .ctx import NodeCtx
from .limits import LIMITS
from .ops import OPS, supported_ops
from .proto import ModelProto, read_model
from .values import Const, Value, check_dims, materialize, onnx_dtype, tensor_const

MIN_OPSET = 7


@dataclass
class InputSpec:
    name: str
    shape: tuple[int, ...]
    dtype: str  # the gpulab dtype (int64 inputs are int32)
    elem_type: int  # the ONNX element type


def _refuse_operators(m: ModelProto) -> None:
    counts: dict[str, int] = {}
    for node in m.graph.nodes:
        key = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}:{node.op_type}"
        if key not in OPS:
            counts[key] = counts.get(key, 0) + 1
    if counts:
        listed = ", ".join(f"{k} ({n} node{'s' if n != 1 else ''})" for k, n in counts.items())
        raise GpuLabError(
            "UNSUPPORTED",
            f"onnx: unsupported operators: {listed}; supported: {', '.join(supported_ops())}",
        )


def _opset(m: ModelProto) -> int:
    version = m.opsets.get("ai.onnx")
    if version is None:
        raise GpuLabError("UNSUPPORTED", "onnx: the model imports no default-domain opset")
    if version < MIN_OPSET:
        raise GpuLabError(
            "UNSUPPORTED",
            f"onnx: opset {version} of the default domain; supported: {MIN_OPSET} and later",
        )
    others = sorted(
        d for d in m.opsets if d != "ai.onnx" and any(n.domain == d for n in m.graph.nodes)
    )
    if others:
        raise GpuLabError("UNSUPPORTED", f"onnx: operator domains {others} are not supported")
    return version


def _input_specs(
    m: ModelProto, input_shapes: Mapping[str, Any] | None, initialized: set[str], hold: bool
) -> list[InputSpec]:
    given = dict(input_shapes or {})
    specs = []
    for vi in m.graph.inputs:
        if vi.name in initialized:
            continue
        what = f"input {vi.name!r}"
        if vi.elem_type is None:
            raise GpuLabError("UNSUPPORTED", f"onnx: {what} is not a tensor")
        dtype = onnx_dtype(vi.elem_type, what, hold)
        if vi.name in given:
            shape = [int(d) for d in given.pop(vi.name)]
            if vi.shape is not None and len(vi.shape) != len(shape):
                raise GpuLabError(
                    "VALIDATION",
                    f"onnx: {what}: input_shapes gives rank "
                    f"{len(shape)}, the model declares {vi.shape}",
                )
            for d, declared in zip(shape, vi.shape or shape):
                if isinstance(declared, int) and declared >= 0 and declared != d:
                    raise GpuLabError(
                        "VALIDATION",
                        f"onnx: {what}: input_shapes gives {shape}, the model declares {vi.shape}",
                    )
        elif vi.shape is None:
            raise GpuLabError(
                "UNSUPPORTED", f"onnx: {what} has no declared shape; give it in input_shapes"
            )
        else:
            dynamic = [d for d in vi.shape if not isinstance(d, int) or d < 0]
            if dynamic:
                raise GpuLabError(
                    "UNSUPPORTED",
                    f"onnx: {what} has a dynamic shape "
                    f"{vi.shape} (dimension {dynamic[0]!r}); give "
                    f"its size in input_shapes={{{vi.name!r}: "
                    f"[...]}}",
                )
            shape = list(vi.shape)  # type: ignore[arg-type]
        specs.append(InputSpec(vi.name, check_dims(shape, what), dtype, vi.elem_type))
    if given:
        raise GpuLabError(
            "VALIDATION",
            f"onnx: input_shapes names {sorted(given)}, which are not inputs of the model",
        )
    return specs


class LoweredGraph(Graph):
    """The Graph a model is lowered onto: it refuses a node past the protocol's max_nodes as
    the node is added (LIMIT), so a lowering that makes a node per step of a size the model
    gives (a window's taps, a group, a TopK round) stops there instead of building millions;
    the protocol would refuse such a graph at run anyway."""

    def _append(self, op: str, operands: Any, raw: dict[str, Any]) -> Tensor:
        if len(self._nodes) >= LIMITS["max_nodes"]:
            raise GpuLabError(
                "LIMIT",
                f"the lowered graph would have more than max_nodes {LIMITS['max_nodes']} nodes",
            )
        return super()._append(op, operands, raw)


class Model:
    """A loaded ONNX model: `inputs` (name, shape, dtype), `outputs` (names), `run`,
    `prepare`, `to_dict`."""

    def __init__(
        self,
        proto: ModelProto,
        input_shapes: Mapping[str, Any] | None,
        constants: Mapping[str, Any] | None,
        hold_32bit: bool = False,
    ) -> None:
        self.proto = proto
        self.hold = hold_32bit
        self.opset = _opset(proto)
        _refuse_operators(proto)
        self.initializers: dict[str, Const] = {}
        for i, t in enumerate(proto.graph.initializers):
            what = f"initializer {t.name!r}" if t.name else f"initializer {i}"
            self.initializers[t.name] = tensor_const(t, what, self.hold)
        if proto.graph.sparse_initializers:
            raise GpuLabError("UNSUPPORTED", "onnx: sparse initializers are not supported")
        self.constants: dict[str, Const] = {}
        specs = _input_specs(proto, input_shapes, set(self.initializers), self.hold)
        for name, value in (constants or {}).items():
            spec = next((s for s in specs if s.name == name), None)
            if spec is None:
                raise GpuLabError(
                    "VALIDATION",
                    f"onnx: constants names {name!r}, which is not an input of the model",
                )
            self.constants[name] = _const_input(spec, value)
        self.inputs = [s for s in specs if s.name not in self.constants]
        self.outputs = [o.name for o in proto.graph.outputs]
        self.output_types = {o.name: o.elem_type for o in proto.graph.outputs}
        if not self.outputs:
            raise GpuLabError("VALIDATION", "onnx: the graph has no outputs")
        g = LoweredGraph()
        placeholders = {
            s.name: g.input(list(s.shape), name=s.name, dtype=s.dtype) for s in self.inputs
        }
        self._placeholders = placeholders
        self._traced = self._lower(g, placeholders)
        self.graph = g
        self.shapes = {name: tuple(t.shape) for name, t in self._traced.items()}

    def __repr__(self) -> str:
        ins = ", ".join(f"{s.name}: {s.dtype}{list(s.shape)}" for s in self.inputs)
        return (
            f"gpulab.onnx.Model({len(self.proto.graph.nodes)} nodes; inputs {ins}; "
            f"outputs {self.outputs})"
        )

    # -- lowering -------------------------------------------------------------------------

    def _lower(self, g: Graph, sources: Mapping[str, Tensor]) -> dict[str, Tensor]:
        """Every node onto g; the graph outputs as tensors of g."""
        env: dict[str, Value] = {}
        env.update(self.initializers)
        env.update(self.constants)
        env.update(sources)
        types = {
            vi.name: vi.elem_type for vi in self.proto.graph.inputs if vi.elem_type is not None
        }
        types.update({t.name: t.data_type for t in self.proto.graph.initializers})
        budget = _Budget()
        for index, node in enumerate(self.proto.graph.nodes):
            cx = NodeCtx(g, node, index, self.opset, env, self.hold, types)
            try:
                results = OPS[node.op_type](cx)
            except GpuLabError as err:
                if err.message.startswith("onnx:"):
                    raise
                # the graph builder refused a node the lowering made: say which ONNX node
                raise GpuLabError(err.code, f"onnx: {cx.label}: {err.message}") from None
            if len(results) < len([o for o in node.outputs if o]):
                raise cx.fail(
                    f"has {len(node.outputs)} outputs; only the first {len(results)} are supported"
                )
            for name, value in zip(node.outputs, results):
                if name:
                    budget.add(value, name)
                    env[name] = value
                    types[name] = cx.output_type()
            budget.macs += cx.macs
            if budget.macs > LIMITS["max_macs"]:
                raise GpuLabError(
                    "LIMIT",
                    f"onnx: the model needs more than "
                    f"{LIMITS['max_macs']} multiply-accumulates per "
                    f"inference (at node {cx.label})",
                )
        out = {}
        for name in self.outputs:
            if name not in env:
                raise GpuLabError(
                    "VALIDATION", f"onnx: graph output {name!r} is computed by no node"
                )
            out[name] = materialize(g, env[name])
        return out

    def _trace_with(self, inputs: Mapping[str, Any]) -> tuple[Graph, dict[str, Tensor]]:
        g = LoweredGraph()
        given = dict(inputs)
        sources = {}
        for s in self.inputs:
            if s.name not in given:
                raise GpuLabError(
                    "VALIDATION",
                    f"onnx: missing input {s.name!r} (inputs: {[i.name for i in self.inputs]})",
                )
            sources[s.name] = _input_tensor(g, s, given.pop(s.name))
        if given:
            raise GpuLabError(
                "VALIDATION",
                f"onnx: {sorted(given)} are not inputs of the "
                f"model (inputs: {[i.name for i in self.inputs]})",
            )
        return g, self._lower(g, sources)

    # -- running --------------------------------------------------------------------------

    def to_dict(self, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """The protocol graph (plain JSON data) of one run on these inputs."""
        g, outs = self._trace_with(inputs)
        return g.to_dict(**outs)

    def run(self, inputs: Mapping[str, Any], backend: str | None = None) -> dict[str, Any]:
        """Run once: {output name: {shape, dtype, data, array (natively)}}. int64 outputs
        come back as int32."""
        g, outs = self._trace_with(inputs)
        return g.run(backend=backend, **outs)["outputs"]

    async def run_async(
        self, inputs: Mapping[str, Any], backend: str | None = None
    ) -> dict[str, Any]:
        """Awaitable `run` (in the page it awaits the GPU without blocking Python)."""
        g, outs = self._trace_with(inputs)
        return (await g.run_async(backend=backend, **outs))["outputs"]

    def prepare(self, backend: str | None = None) -> Any:
        """A prepared session: `session.run({input name: data})` returns the outputs; the
        weights stay on the device between runs."""
        feeds = list(self._placeholders.values())
        return self.graph.prepare(feeds=feeds, backend=backend, **self._traced)


class _Budget:
    def __init__(self) -> None:
        self.total = 0
        self.macs = 0

    def add(self, value: Value, name: str) -> None:
        check_dims(list(value.shape), f"value {name!r}")
        self.total += math.prod(value.shape)
        if self.total > LIMITS["max_total_elements"]:
            raise GpuLabError(
                "LIMIT",
                f"onnx: the model's tensors hold more than "
                f"{LIMITS['max_total_elements']} elements (at {name!r})",
            )


def _as_flat(value: Any, dtype: str) -> tuple[tuple[int, ...] | None, Any]:
    """(shape or None, data) of a numpy array, list, array.array or bytes."""
    if hasattr(value, "__array_interface__") and hasattr(value, "shape"):
        shape = tuple(int(d) for d in value.shape)
        if value.dtype.kind not in "iubf" and dtype == "float32":  # bfloat16 (ml_dtypes)
            value = value.astype("float32")
        if value.dtype.kind in "iu" and dtype == "int32":
            if value.size and (value.min() < -(2**31) or value.max() > 2**31 - 1):
                raise GpuLabError("VALIDATION", "onnx: an int64 value outside int32")
            value = value.astype("int32")
        elif value.dtype.kind == "f" and dtype == "float32":
            value = value.astype("float32")
        elif value.dtype.kind == "b" and dtype == "bool":
            value = value.astype("uint8")
        return shape, value.reshape(-1)
    return None, value


def _input_tensor(g: Graph, spec: InputSpec, value: Any) -> Tensor:
    shape, data = _as_flat(value, spec.dtype)
    if shape is not None and shape != spec.shape:
        raise GpuLabError(
            "VALIDATION",
            f"onnx: input {spec.name!r} has shape {list(shape)}, "
            f"the model was loaded for {list(spec.shape)}",
        )
    try:
        return g.tensor(data, shape=list(spec.shape), dtype=spec.dtype)
    except GpuLabError as err:
        raise GpuLabError(err.code, f"onnx: input {spec.name!r}: {err.message}") from None


def _const_input(spec: InputSpec, value: Any) -> Const:
    import array

    shape, data = _as_flat(value, spec.dtype)
    if shape is not None and shape != spec.shape:
        raise GpuLabError(
            "VALIDATION",
            f"onnx: constant {spec.name!r} has shape "
            f"{list(shape)}, the model declares {list(spec.shape)}",
        )
    code = {"float32": "f", "int32": "i", "bool": "B"}[spec.dtype]
    if hasattr(data, "tobytes"):
        arr = array.array(code)
        arr.frombytes(data.tobytes())
    else:
        arr = array.array(code, data)
    if len(arr) != math.prod(spec.shape):
        raise GpuLabError(
            "VALIDATION",
            f"onnx: constant {spec.name!r} holds {len(arr)} "
            f"values, its shape needs {math.prod(spec.shape)}",
        )
    return Const(spec.dtype, spec.shape, arr)


def load(
    model_bytes: bytes | bytearray | memoryview,
    input_shapes: Mapping[str, Any] | None = None,
    constants: Mapping[str, Any] | None = None,
    hold_32bit: bool = False,
) -> Model:
    """Read and check an ONNX model (opset 7+ of the default domain). `input_shapes` gives
    sizes for inputs whose declared shape is dynamic; `constants` fixes some inputs' values at
    load (an input that is a shape, axes or pads must be known at load). `hold_32bit` accepts
    DOUBLE and FLOAT16 tensors computed in float32 and INT8/UINT8/INT16/UINT16 held
    as int32 (their arithmetic refused); without it they are refused. Refusals (GpuLabError:
    UNSUPPORTED, VALIDATION, LIMIT) all happen here, before any device work."""
    return Model(read_model(model_bytes), input_shapes, constants, hold_32bit)


def constant_inputs(model_bytes: bytes | bytearray | memoryview) -> list[str]:
    """The graph inputs whose values some node needs at load (a shape, axes, pads, ...),
    directly or through the nodes that compute such an operand: give them in
    `load(constants=...)`."""
    m = read_model(model_bytes)
    names = {vi.name for vi in m.graph.inputs} - {t.name for t in m.graph.initializers}
    needed: set[str] = set()
    for node in m.graph.nodes:
        entry = OPS.get(node.op_type)
        for i in getattr(entry, "const_inputs", ()):
            if i < len(node.inputs) and node.inputs[i]:
                needed.add(node.inputs[i])
    for node in reversed(m.graph.nodes):  # a node computing a needed value needs its inputs
        if any(o in needed for o in node.outputs):
            needed.update(i for i in node.inputs if i)
    return [vi.name for vi in m.graph.inputs if vi.name in names and vi.name in needed]
