"""NodeCtx: what an operator's lowering sees of its node (inputs, attributes, refusals), and Op,
one entry of the operator table."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ..errors import GpuLabError
from ..graph import Graph, Tensor
from .attrs import COMMON, WIDENS, Spec
from .limits import LIMITS
from .proto import ATTR_TYPES, DATA_TYPES, Attribute, Node
from .values import NARROW_INTS, Const, Value, dtype_of, materialize, tensor_const

# Ops whose integer results can leave an 8/16-bit range (held as int32 they would not wrap).
WRAPPING_OPS = frozenset(
    {
        "Add",
        "Sub",
        "Mul",
        "Neg",
        "Abs",
        "Sum",
        "Mean",
        "Pow",
        "CumSum",
        "ReduceSum",
        "ReduceSumSquare",
        "ReduceProd",
        "ReduceL1",
        "ReduceL2",
        "Div",
        "Mod",
        "Sign",
        "Gemm",
        "MatMul",
    }
)

_MISSING = object()


@dataclass
class Op:
    """An operator's lowering: `fn(cx) -> [values]`, the attributes it reads (any other one is
    refused at load naming it), which inputs must be known at load, the opsets it has these
    semantics in (`since` .. `until`, None = to the latest), and the specs of its attributes
    whose type or range differs from the name's usual one (attrs.COMMON)."""

    fn: Callable[[NodeCtx], list[Value]]
    attrs: frozenset[str] = field(default_factory=frozenset)
    const_inputs: tuple[int, ...] = ()
    since: int = 1
    until: int | None = None
    types: Mapping[str, Spec] = field(default_factory=dict, kw_only=True)
    specs: dict[str, Spec] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        unread = sorted(set(self.types) - set(self.attrs))
        if unread:
            raise ValueError(f"specs for attributes the op does not read: {unread}")
        # every attribute an op reads has a spec: a name missing from COMMON fails at import
        self.specs = {name: self.types.get(name) or COMMON[name] for name in self.attrs}

    def __call__(self, cx: NodeCtx) -> list[Value]:
        if cx.opset < self.since:
            raise cx.invalid(
                f"{cx.node.op_type} exists from opset {self.since}; the model imports opset "
                f"{cx.opset}"
            )
        if self.until is not None and cx.opset > self.until:
            raise cx.fail(
                f"{cx.node.op_type} of opset {cx.opset} (supported: {self.since}-{self.until})"
            )
        cx.specs = self.specs
        for name in cx.node.attrs:
            if name not in self.attrs:
                raise cx.fail(f"attribute {name!r} is not supported")
        if cx.node.op_type in WRAPPING_OPS:
            narrow = [n for n in cx.node.inputs if cx.types.get(n) in NARROW_INTS]
            if narrow:
                kind = DATA_TYPES[cx.types[narrow[0]]]
                raise cx.fail(
                    f"input {narrow[0]!r} is {kind}: held as int32 (hold_32bit), "
                    f"its arithmetic would not wrap as {kind} does"
                )
        return self.fn(cx)


class NodeCtx:
    def __init__(
        self,
        g: Graph,
        node: Node,
        index: int,
        opset: int,
        env: Mapping[str, Value],
        hold: bool = False,
        types: Mapping[str, int] | None = None,
    ) -> None:
        self.g, self.node, self.opset, self.env = g, node, opset, env
        self.hold = hold  # load(hold_32bit=True)
        self.types = types or {}  # ONNX element types of the values, where known
        named = f" {node.name!r}" if node.name else ""
        self.label = f"node {index}{named} ({node.op_type})"
        self.macs = 0
        self.specs: Mapping[str, Spec] = {}  # the op's attribute specs (set by Op.__call__)

    # -- refusals --------------------------------------------------------------------------

    def fail(self, message: str) -> GpuLabError:
        return GpuLabError("UNSUPPORTED", f"onnx: {self.label}: {message}")

    def invalid(self, message: str) -> GpuLabError:
        return GpuLabError("VALIDATION", f"onnx: {self.label}: {message}")

    # -- inputs ----------------------------------------------------------------------------

    @property
    def n_inputs(self) -> int:
        return len(self.node.inputs)

    def has(self, i: int) -> bool:
        return i < len(self.node.inputs) and self.node.inputs[i] != ""

    def v(self, i: int) -> Value:
        if not self.has(i):
            raise self.invalid(f"input {i} is missing")
        name = self.node.inputs[i]
        if name not in self.env:
            raise self.invalid(
                f"input {name!r} is computed by no earlier node (the graph "
                f"must be in topological order)"
            )
        return self.env[name]

    def t(self, i: int) -> Tensor:
        return materialize(self.g, self.v(i))

    def dtype(self, i: int) -> str:
        return dtype_of(self.v(i))

    def c(self, i: int, what: str = "") -> Const:
        v = self.v(i)
        if not isinstance(v, Const):
            name = self.node.inputs[i]
            raise self.fail(
                f"input {i} ({what or name!r}) must be known at load: an "
                f"initializer, a Constant or an input given in "
                f"load(constants={{{name!r}: ...}})"
            )
        return v

    def ints(self, i: int, what: str = "", most: int | None = None) -> list[int]:
        """A known-at-load integer input's values; `most` bounds how many (a shape, axes or
        pads: the rank limit), checked before they are read."""
        c = self.c(i, what)
        if c.dtype not in ("int32", "int64"):
            raise self.fail(f"input {i} ({what}) must hold integers, holds {c.dtype}")
        if most is not None:
            self.at_most(c.size, most, f"input {i} ({what})")
        return c.ints()

    def floats(self, i: int, what: str = "", most: int | None = None) -> list[float]:
        c = self.c(i, what)
        if most is not None:
            self.at_most(c.size, most, f"input {i} ({what})")
        return [float(x) for x in c.data]

    def one(self, i: int, what: str, integer: bool = False) -> int | float:
        """The one value of a known-at-load input (a count, a bound, a depth)."""
        c = self.c(i, what)
        if integer and c.dtype not in ("int32", "int64"):
            raise self.fail(f"input {i} ({what}) must hold integers, holds {c.dtype}")
        if c.size != 1:
            raise self.invalid(f"input {i} ({what}) must hold one value, holds {c.size}")
        return c.data[0]

    def at_most(self, count: int, most: int, what: str) -> None:
        """LIMIT when `what` holds more than `most` values (a shape, axes, pads: the rank
        limit), before they are read."""
        if count > most:
            raise self.limit(f"{what} holds {count} values, more than {most}")

    # -- sizes, checked before anything of that size is made --------------------------------

    def limit(self, message: str) -> GpuLabError:
        return GpuLabError("LIMIT", f"onnx: {self.label}: {message}")

    def elements(self, shape: list[int] | tuple[int, ...], what: str) -> int:
        """The element count of `shape` (rank first, then the product), or LIMIT naming the
        node and what would have that shape (max_rank, max_elements)."""
        if len(shape) > LIMITS["max_rank"]:
            raise self.limit(f"{what} would have rank {len(shape)} > {LIMITS['max_rank']}")
        n = 1
        for d in shape:
            n *= max(int(d), 0)
        if n > LIMITS["max_elements"]:
            raise self.limit(
                f"{what} would have shape {list(shape)}: {n} elements > max_elements "
                f"{LIMITS['max_elements']}"
            )
        return n

    # -- attributes ------------------------------------------------------------------------

    def has_attr(self, name: str) -> bool:
        return name in self.node.attrs

    def attr(self, name: str, default=_MISSING):
        """The attribute's value, of the type its spec says and within its range (else
        VALIDATION naming the node and the attribute), or `default` when it is absent."""
        a = self.node.attrs.get(name)
        if a is None:
            if default is _MISSING:
                raise self.invalid(f"attribute {name!r} is required")
            return default
        spec = self.specs.get(name)
        if spec is None:
            return self._attr_value(a)
        kind = ATTR_TYPES.get(a.type, f"type {a.type}")
        if a.has_graph or kind in ("GRAPH", "GRAPHS"):
            raise self.fail(f"attribute {a.name!r} is a subgraph (not supported)")
        if kind != spec.kind and (spec.kind, kind) not in WIDENS:
            raise self.invalid(f"attribute {name!r} must be of type {spec.kind}, is {kind}")
        value = self._attr_value(a)
        if spec.kind == "FLOAT":
            value = float(value)
        elif spec.kind == "FLOATS":
            value = [float(v) for v in value]
        why = spec.problem(value)
        if why is not None:
            raise self.invalid(f"attribute {name!r} {why}")
        return value

    def _attr_value(self, a: Attribute):
        kind = ATTR_TYPES.get(a.type, "UNDEFINED")
        if a.has_graph or kind in ("GRAPH", "GRAPHS"):
            raise self.fail(f"attribute {a.name!r} is a subgraph (not supported)")
        if kind == "FLOAT":
            return float(a.f)
        if kind == "INT":
            return int(a.i)
        if kind == "STRING":
            try:
                return a.s.decode("utf-8")
            except UnicodeDecodeError:
                raise self.invalid(f"attribute {a.name!r} is not UTF-8") from None
        if kind == "TENSOR" and a.t is not None:
            return tensor_const(a.t, f"{self.label} attribute {a.name!r}", self.hold)
        if kind == "FLOATS":
            return list(a.floats)
        if kind == "INTS":
            return list(a.ints)
        if kind == "STRINGS":
            return [s.decode("utf-8", "replace") for s in a.strings]
        raise self.fail(f"attribute {a.name!r} of type {kind} is not supported")

    def output_type(self) -> int:
        """The ONNX element type of this node's outputs as far as refusals need it: Cast's
        `to`, else the first input's."""
        if self.node.op_type == "Cast" and "to" in self.node.attrs:
            return int(self.node.attrs["to"].i)
        if self.node.op_type in ("Shape", "Size", "ArgMax", "ArgMin"):
            return 7
        return self.types.get(self.node.inputs[0], 0) if self.node.inputs else 0

    def outputs_wanted(self) -> int:
        """How many outputs the node names (trailing empty names not counted)."""
        names = list(self.node.outputs)
        while names and not names[-1]:
            names.pop()
        return len(names)

    def only_first_output(self) -> None:
        if self.outputs_wanted() > 1:
            raise self.fail(f"output {self.node.outputs[1]!r} (the second output) is not supported")
