"""`Graph` and `Tensor`: record protocol nodes with NumPy/PyTorch-like Python code.

Every operation appends a node and infers its shape at once with the protocol's own rules, so a
mistake raises GpuLabError(VALIDATION) at the line that made it. Pure Python: numpy arrays are
accepted as data but numpy is never imported here (Pyodide may not have it).

    g = Graph()
    a = g.tensor([-2, 3, 4]); b = g.tensor([10, 20, 30])
    g.submit(show, values=(a * b).relu())
"""

from __future__ import annotations

import array
import inspect
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import SimpleNamespace
from typing import Any

from . import host, optable
from .dtypes import DTYPES, encode_base64, result_dtype
from .errors import GpuLabError
from .host import SessionLike
from .indexing import basic_index
from .protocol import check_attrs, infer_node, label, node_version, to_float32_array
from .session import Session
from .shapes import Shape, element_count
from .shapes_select import slice_indices
from .values import check_node_values
from .wgsl_check import NODE_DTYPE_RULES, NODE_SHAPE_RULES

__all__ = ["Graph", "Session", "SessionLike", "Tensor"]

Number = (int, float)


def _is_scalar(x: Any) -> bool:
    """A Python or numpy scalar number (booleans are not numbers here)."""
    if isinstance(x, bool):
        return False
    if isinstance(x, Number):
        return True
    return (
        getattr(getattr(x, "dtype", None), "kind", None) in ("i", "u", "f")
        and getattr(x, "shape", None) == ()
    )


# the block-quantized dtypes (the op table's rows with `block`): q4_k, q6_k
QUANTIZED_DTYPES = tuple(name for name, row in DTYPES.items() if "block" in row)


class QuantizedTranspose:
    """`w.T` of a q4_k / q6_k weight: not a tensor of its own (the bytes are never
    transposed), only the right operand of `x @ w.T`, which is matmul_q."""

    __slots__ = ("weight",)

    def __init__(self, weight: Tensor) -> None:
        self.weight = weight

    def __repr__(self) -> str:
        return f"{self.weight!r}.T"


class Tensor:
    """A node of a Graph. Arithmetic and methods append nodes; `shape` is a tuple."""

    __slots__ = ("dtype", "graph", "id", "op", "shape")
    __array_ufunc__ = None  # numpy defers to our reflected operators: ndarray + Tensor works

    def __init__(
        self, graph: Graph, node_id: int, op: str, shape: Shape, dtype: str = "float32"
    ) -> None:
        self.graph = graph
        self.id = node_id
        self.op = op
        self.shape = shape
        self.dtype = dtype

    def __repr__(self) -> str:
        dtype = "" if self.dtype == "float32" else f", dtype={self.dtype!r}"
        return f"Tensor(id={self.id}, op={self.op!r}, shape={self.shape}{dtype})"

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return element_count(self.shape)

    # -- arithmetic (NumPy broadcasting; Python scalars on either side) ------------------

    def _binary(self, op: str, other: Any, reflected: bool = False) -> Tensor:
        other_t = self.graph._operand(other)
        a, b = (other_t, self) if reflected else (self, other_t)
        return self.graph.op(op, a=a, b=b)

    def __add__(self, other: Any) -> Tensor:
        return self._binary("add", other)

    def __radd__(self, other: Any) -> Tensor:
        return self._binary("add", other, reflected=True)

    def __sub__(self, other: Any) -> Tensor:
        return self._binary("sub", other)

    def __rsub__(self, other: Any) -> Tensor:
        return self._binary("sub", other, reflected=True)

    def __mul__(self, other: Any) -> Tensor:
        return self._binary("mul", other)

    def __rmul__(self, other: Any) -> Tensor:
        return self._binary("mul", other, reflected=True)

    def __truediv__(self, other: Any) -> Tensor:
        return self._binary("div", other)

    def __rtruediv__(self, other: Any) -> Tensor:
        return self._binary("div", other, reflected=True)

    def __matmul__(self, other: Any) -> Tensor:
        if isinstance(other, QuantizedTranspose):  # x @ w.T with w q4_k / q6_k: matmul_q
            return self.graph.op("matmul_q", a=self, b=other.weight)
        return self._binary("matmul", other)

    def __rmatmul__(self, other: Any) -> Tensor:
        return self._binary("matmul", other, reflected=True)

    def __neg__(self) -> Tensor:
        return self.graph.op("neg", a=self)

    def __pos__(self) -> Tensor:
        return self

    def __bool__(self) -> bool:
        raise TypeError("a Tensor has no truth value until the graph runs")

    # -- ops with a hand-written signature (the simple families are added below, from the
    # op table: see _install_table_methods) ------------------------------------------------

    def gelu_grad(self, dy: Any) -> Tensor:
        """dy * gelu'(self): the gradient through gelu, self being gelu's input."""
        return self.graph.op("gelu_grad", a=self, b=self.graph._operand(dy))

    def life(self) -> Tensor:
        """One toroidal Game of Life step of a rank-2 grid (alive: > 0.5)."""
        return self.graph.op("life", a=self)

    # abs, square, clamp, max, min, argmax, argmin are made from the op table (TABLE_METHODS)

    def __abs__(self) -> Tensor:
        return self.graph.op("abs", a=self)

    # -- protocol-v3 select ops: maximum/minimum, comparison masks (bool), cast, dropout ----
    # A Python scalar on the other side takes this tensor's dtype (an int32 tensor compares
    # with int32 constants). `==` stays Python's identity: use t.eq(o) / t.ne(o).

    def _select(self, op: str, other: Any, reflected: bool = False) -> Tensor:
        other_t = self.graph._operand_like(other, self.dtype)
        a, b = (other_t, self) if reflected else (self, other_t)
        return self.graph.op(op, a=a, b=b)

    def maximum(self, other: Any) -> Tensor:
        """Elementwise IEEE 754-2019 maximum (NaN propagates, -0 < +0), broadcasting."""
        return self._select("maximum", other)

    def minimum(self, other: Any) -> Tensor:
        """Elementwise IEEE 754-2019 minimum (NaN propagates, -0 < +0), broadcasting."""
        return self._select("minimum", other)

    def eq(self, other: Any) -> Tensor:
        """self == other as a bool mask (NaN never equal, -0 == +0), broadcasting."""
        return self._select("eq", other)

    def ne(self, other: Any) -> Tensor:
        """self != other as a bool mask (true where either is NaN), broadcasting."""
        return self._select("ne", other)

    def __lt__(self, other: Any) -> Tensor:
        return self._select("lt", other)

    def __le__(self, other: Any) -> Tensor:
        return self._select("le", other)

    def __gt__(self, other: Any) -> Tensor:
        return self._select("gt", other)

    def __ge__(self, other: Any) -> Tensor:
        return self._select("ge", other)

    __hash__ = object.__hash__  # identity, as `==` (defining comparisons keeps it so)

    def cast(self, dtype: str) -> Tensor:
        """Convert to "float32", "int32", "uint32" or "bool" (docs/protocol.md: float -> int
        truncates toward zero, NaN -> 0, saturating; -> bool is nonzero)."""
        return self.graph.op("cast", a=self, dtype=dtype)

    def dropout(self, p: float, seed: int = 0, counter: Any = 0) -> Tensor:
        """self * mask / (1 - p), the mask kept where hash_uniform(seed, counter) >= p;
        `counter` an int or a one-element uint32 Tensor (feed a new one each session step)."""
        return self.graph.op(
            "dropout", a=self, counter=self.graph._counter(counter), p=p, seed=seed
        )

    # -- layout ---------------------------------------------------------------------------

    def permute(self, *dims: Any) -> Tensor:
        """Reorder axes: permute(1, 0) or permute([1, 0])."""
        return self.graph.op("permute", a=self, dims=_one_sequence(dims))

    def reshape(self, *shape: Any) -> Tensor:
        """reshape(2, -1) or reshape((2, -1)); at most one -1."""
        return self.graph.op("reshape", a=self, shape=_one_sequence(shape))

    def transpose(self) -> Tensor:
        """Swap the last two axes."""
        return self.graph.op("transpose", a=self)

    @property
    def T(self) -> Any:
        """The transpose; of a block-quantized weight, a view only `x @ w.T` (matmul_q) takes."""
        if self.dtype in QUANTIZED_DTYPES:
            return QuantizedTranspose(self)
        return self.transpose()

    def dequantize(self) -> Tensor:
        """The float32 values of a block-quantized tensor [N, K] (ggml's decode, exact)."""
        return self.graph.op("dequantize", a=self)

    def dequantize_rows(self, idx: Any) -> Tensor:
        """Rows idx (int32 [M], a Tensor or a list) of a block-quantized tensor [N, K] as
        float32 [M, K]: an embedding lookup that decodes only those rows (exact)."""
        rows = idx if isinstance(idx, Tensor) else self.graph.tensor(list(idx), dtype="int32")
        return self.graph.op("dequantize_rows", a=self, idx=rows)

    def matmul_fixed(self, other: Any, frac_bits: int = 16) -> Tensor:
        """self @ other in fixed point (docs/protocol.md "matmul_fixed"): each operand
        round-half-even(x * 2^frac_bits) saturated to int32, 64-bit integer sums, one rounding
        to float32: the same bits on every backend."""
        return self.graph.op(
            "matmul_fixed", a=self, b=self.graph._operand(other), frac_bits=frac_bits
        )

    # -- selection (protocol version 4) ------------------------------------------------------

    def __getitem__(self, key: Any) -> Tensor:
        """Basic indexing as NumPy: integers, slices (negative steps too), `...`, `None`:
        a `slice` node, then a `reshape` when an integer drops an axis or None inserts one."""
        index = basic_index(key, self.shape)
        out = self if index.trivial else self.graph.op("slice", a=self, slices=index.slices)
        if index.layout is None:
            return out
        return out.reshape(*index.result_shape(out.shape))

    def slice_scatter(self, src: Any, slices: Any) -> Tensor:
        """A copy of self with `self[slices]` replaced by src (slices: a basic-indexing key
        without None, e.g. `(slice(1, 3), 0)` or `np.s_[1:3, 0]`); an integer axis of the key
        is one element long in src or absent from it."""
        index = basic_index(slices, self.shape, allow_none=False)
        src_t = self.graph._operand(src, "slice_scatter operand 'src'")
        if index.dropped:
            want = tuple(slice_indices(e, n)[3] for e, n in zip(index.slices, self.shape))
            if src_t.shape != want and src_t.size == element_count(want):
                src_t = src_t.reshape(*want)
        return self.graph.op("slice_scatter", a=self, src=src_t, slices=index.slices)

    def index_select(self, axis: int, idx: Any) -> Tensor:
        """torch.index_select: the entries idx (int32, rank 1) along axis."""
        return self.graph.op("index_select", a=self, idx=self.graph._index(idx), axis=axis)

    def gather(self, axis: int, idx: Any) -> Tensor:
        """torch.gather: out[p] = self[p with axis replaced by idx[p]] (idx int32)."""
        return self.graph.op("gather", a=self, idx=self.graph._index(idx), axis=axis)

    def index_add(self, axis: int, idx: Any, src: Any) -> Tensor:
        """torch.index_add: self with src[.., j, ..] added at idx[j] along axis, for j in
        ascending order (the protocol's fixed order: bit-identical on every backend)."""
        return self.graph.op(
            "index_add", a=self, idx=self.graph._index(idx), src=self.graph._operand(src), axis=axis
        )

    def scatter_add(self, axis: int, idx: Any, src: Any) -> Tensor:
        """torch.scatter_add: self with src[p] added at p with axis replaced by idx[p], in
        row-major order of idx (the protocol's fixed order)."""
        return self.graph.op(
            "scatter_add",
            a=self,
            idx=self.graph._index(idx),
            src=self.graph._operand(src),
            axis=axis,
        )

    def pad(self, widths: Any, value: float = 0) -> Tensor:
        """Constant padding: widths one (before, after) per axis."""
        return self.graph.op(
            "pad",
            a=self,
            widths=[list(w) for w in widths] if isinstance(widths, (list, tuple)) else widths,
            value=value,
        )

    # -- the v6 window ops (NCHW; torch's argument names, the protocol's attributes) --------

    def conv2d(
        self,
        weight: Any,
        bias: Any = None,
        stride: Any = 1,
        padding: Any = 0,
        dilation: Any = 1,
        groups: int = 1,
    ) -> Tensor:
        """2-D convolution as torch.nn.functional.conv2d: self [N, C, H, W], weight
        [M, C / groups, kH, kW], bias [M] or None; stride / dilation an int or (h, w); padding
        an int, (h, w) or ONNX's (top, left, bottom, right)."""
        g = self.graph
        biases = [] if bias is None else [g._operand(bias, "conv2d operand 'bias'")]
        return g.op(
            "conv2d",
            a=self,
            w=weight,
            bias=biases,
            strides=_pair(stride),
            padding=_pads4(padding),
            dilations=_pair(dilation),
            groups=groups,
        )

    def max_pool2d(
        self,
        kernel_size: Any,
        stride: Any = None,
        padding: Any = 0,
        dilation: Any = 1,
        ceil_mode: bool = False,
    ) -> Tensor:
        """2-D max pooling as torch's max_pool2d (stride defaults to the kernel); padding never
        wins the max."""
        kernel = _pair(kernel_size)
        return self.graph.op(
            "max_pool2d",
            a=self,
            kernel=kernel,
            strides=kernel if stride is None else _pair(stride),
            padding=_pads4(padding),
            dilations=_pair(dilation),
            ceil_mode=ceil_mode,
        )

    def avg_pool2d(
        self,
        kernel_size: Any,
        stride: Any = None,
        padding: Any = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        dilation: Any = 1,
    ) -> Tensor:
        """2-D average pooling as torch's avg_pool2d (count_include_pad defaults to True as
        there; the protocol's default is False, as ONNX's)."""
        kernel = _pair(kernel_size)
        return self.graph.op(
            "avg_pool2d",
            a=self,
            kernel=kernel,
            strides=kernel if stride is None else _pair(stride),
            padding=_pads4(padding),
            dilations=_pair(dilation),
            ceil_mode=ceil_mode,
            count_include_pad=count_include_pad,
        )

    def resize(
        self,
        size: Any,
        mode: str = "nearest",
        coordinate_transformation_mode: str = "half_pixel",
        nearest_mode: str = "round_prefer_floor",
    ) -> Tensor:
        """Resize the spatial axes of [N, C, H, W] to size (h, w), as ONNX Resize with sizes
        (mode nearest or linear; torch's interpolate modes: functional.interpolate)."""
        return self.graph.op(
            "resize",
            a=self,
            size=_pair(size),
            mode=mode,
            coordinate_transformation_mode=coordinate_transformation_mode,
            nearest_mode=nearest_mode,
        )

    # -- losses ---------------------------------------------------------------------------

    def cross_entropy(self, target: Any) -> Tensor:
        """Mean over rows of -sum(target * log_softmax(self)); self: logits [N, C]."""
        return self.graph.op("cross_entropy", a=self, b=self.graph._operand(target))

    def cross_entropy_grad(self, target: Any) -> Tensor:
        """(softmax(self) - target) / N: the gradient of cross_entropy w.r.t. the logits."""
        return self.graph.op("cross_entropy_grad", a=self, b=self.graph._operand(target))


# ---------------------------------------------------------------------------------------------
# Tensor methods of the simple families, made from the op table: a new map1/map2/reduce/rows
# op gets `t.<op>(...)` with the table's operands and attrs (defaults included) and its doc.

TABLE_FAMILIES = ("map1", "map2", "map3", "reduce", "rows")
# ops of other families whose Tensor method is still just their operands and attrs (made once
# their row is in the table)
TABLE_METHODS = ("abs", "square", "clamp", "reduce_max", "reduce_min", "argmax", "argmin")
METHOD_NAMES = {"reduce_max": "max", "reduce_min": "min"}  # op -> Tensor method (torch names)
GRAPH_LEVEL = {"sgd_update", "momentum_update", "adam_m", "adam_v"}  # g.sgd/momentum/adam
_NO_DIM = object()


def _table_method(op: str, row: dict[str, Any]) -> Callable[..., Tensor]:
    """`t.<op>(other operands..., attrs...)`: extra operands positional (Tensors or scalars),
    attrs positional or by keyword in table order, `dim=` as an alias of `axis=`."""
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    others = row["operands"][1:]
    names = ["other"] if len(others) == 1 else list(others)
    params += [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names]
    for attr, spec in row["attrs"].items():
        default = inspect.Parameter.empty if spec.get("required") else spec.get("default")
        params.append(
            inspect.Parameter(attr, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default)
        )
    has_axis = "axis" in row["attrs"]
    if has_axis:
        params.append(inspect.Parameter("dim", inspect.Parameter.KEYWORD_ONLY, default=None))
    signature = inspect.Signature(params)
    axis_default = row["attrs"].get("axis", {}).get("default")

    def method(*args: Any, **kwargs: Any) -> Tensor:
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as err:
            raise TypeError(f"{op}(): {err}") from None
        bound.apply_defaults()
        values = dict(bound.arguments)
        self: Tensor = values.pop("self")
        if has_axis:
            values["axis"] = _pick_axis(values["axis"], values.pop("dim"), axis_default)
        fields = {
            k: self.graph._operand(values.pop(n), f"{op} operand '{k}'")
            for k, n in zip(others, names, strict=True)
        }
        return self.graph.op(op, a=self, **fields, **values)

    method.__name__ = method.__qualname__ = METHOD_NAMES.get(op, op)
    method.__signature__ = signature  # type: ignore[attr-defined]
    axis_note = (
        " Negative axes count from the end; `dim=` is an alias of `axis=`." if has_axis else ""
    )
    method.__doc__ = f"{row['doc']} (op `{op}`).{axis_note}"
    return method


def _install_table_methods(cls: type) -> None:
    """Add a method per simple-family op; hand-written methods of the same name win."""
    for op, row in optable.ops().items():
        name = METHOD_NAMES.get(op, op)
        made = row["family"] in TABLE_FAMILIES or op in TABLE_METHODS
        if not made or op in GRAPH_LEVEL or name in cls.__dict__:
            continue
        setattr(cls, name, _table_method(op, row))


_install_table_methods(Tensor)


def _pick_axis(axis: Any, dim: Any, default: Any = None) -> Any:
    if dim is not None:
        if axis is not None and axis != default:
            raise GpuLabError(
                "VALIDATION", f"give axis= or dim=, not both (axis={axis}, dim={dim})"
            )
        return dim
    return axis


def _one_sequence(args: tuple) -> list:
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        return list(args[0])
    return list(args)


class Graph:
    """Records protocol nodes; runs them via gpulab.host (Pyodide bridge, wgpu or cpu-python)."""

    def __init__(self) -> None:
        self._nodes: list[dict[str, Any]] = []  # protocol nodes (data as array('f'))
        self._tensors: dict[int, Tensor] = {}
        self._versions: dict[int, int] = {}
        self._input_names: dict[str, int] = {}

    def __repr__(self) -> str:
        return f"Graph({len(self._nodes)} nodes)"

    # -- sources --------------------------------------------------------------------------

    def tensor(
        self, data: Any, shape: Sequence[int] | None = None, dtype: str = "float32"
    ) -> Tensor:
        """A constant: a number, (nested) list, array.array, memoryview, bytes or numpy array,
        of `dtype` (float32, int32, uint32, bool: the op table's dtypes). Buffers and numpy
        arrays are taken as they are (converted at C speed), never element by element."""
        inferred, values = _flatten(data, dtype)
        target = tuple(shape) if shape is not None else inferred
        return self._source("input", _with_dtype({"shape": list(target), "data": values}, dtype))

    def quantized(self, raw: Any, kind: str = "q4_k", shape: Sequence[int] = ()) -> Tensor:
        """A block-quantized weight: `raw` the bytes of ggml q4_k / q6_k / q8_0 / q4_0 blocks
        (bytes, bytearray, memoryview, a uint8 numpy array, e.g. a GGUF tensor's `data`)
        holding a float [N, K] (K a multiple of the kind's block: 256, or 32 for q8_0 / q4_0),
        row-major. Use it as `x @ w.T` (decoded inside the kernel), `w.dequantize()` or
        `w.dequantize_rows(idx)` (an embedding lookup)."""
        if kind not in QUANTIZED_DTYPES:
            raise GpuLabError(
                "VALIDATION",
                f"quantized: kind must be one of {', '.join(QUANTIZED_DTYPES)}, got {kind!r}",
            )
        if hasattr(raw, "__array_interface__"):  # numpy: its bytes, whatever its dtype
            raw = memoryview(raw.tobytes() if not raw.flags.c_contiguous else raw).cast("B")
        return self._source("input", {"shape": _shape_arg(shape), "dtype": kind, "data": raw})

    def input(
        self, shape: Sequence[int], name: str | None = None, dtype: str = "float32"
    ) -> Tensor:
        """An input without data, fed every step of a prepared session."""
        t = self._source("input", _with_dtype({"shape": _shape_arg(shape)}, dtype))
        if name is not None:
            if name in self._input_names:
                raise GpuLabError("VALIDATION", f"an input is already named {name!r}")
            self._input_names[name] = t.id
        return t

    def full(self, shape: Sequence[int], value: float) -> Tensor:
        """A tensor filled with one value."""
        return self._source("full", {"shape": _shape_arg(shape), "value": value})

    def rand(self, shape: Sequence[int], seed: int = 0, counter: Any = 0) -> Tensor:
        """Counter-hash uniforms in [0, 1) (op hash_uniform: the same bits on every backend);
        `counter` an int or a one-element uint32 Tensor (feed a new one each session step)."""
        return self.op(
            "hash_uniform", counter=self._counter(counter), shape=_shape_arg(shape), seed=seed
        )

    def where(self, cond: Any, a: Any, b: Any) -> Tensor:
        """cond ? a : b elementwise (cond a bool Tensor; the three broadcast together). A
        Python scalar takes the other value's dtype (float32 when both are scalars)."""
        dtype = next((t.dtype for t in (a, b) if isinstance(t, Tensor)), "float32")
        return self.op(
            "where",
            cond=self._own(cond, "where cond")
            if isinstance(cond, Tensor)
            else self.tensor(cond, dtype="bool"),
            a=self._operand_like(a, dtype),
            b=self._operand_like(b, dtype),
        )

    # -- optimizer steps ------------------------------------------------------------------

    def sgd(self, param: Tensor, grad: Any, lr: float) -> Tensor:
        """param - lr * grad."""
        return self.op("sgd_update", a=param, b=self._operand(grad), lr=lr)

    def momentum(
        self, param: Tensor, velocity: Any, grad: Any, lr: float, momentum: float = 0.9
    ) -> tuple[Tensor, Tensor]:
        """PyTorch SGD with momentum (dampening 0): returns (new_param, new_velocity)."""
        new_velocity = self.op(
            "momentum_update", a=self._operand(velocity), b=self._operand(grad), momentum=momentum
        )
        return self.sgd(param, new_velocity, lr), new_velocity

    def adam(
        self,
        param: Tensor,
        m: Any,
        v: Any,
        grad: Any,
        step: Any,
        lr: float = 1e-3,
        beta1: float = 0.9,
        beta2: float = 0.999,
        eps: float = 1e-8,
    ) -> tuple[Tensor, Tensor, Tensor]:
        """One Adam step; `step` (>= 1) is a number or a 1-element tensor (carry it in a
        session). Returns (new_param, new_m, new_v)."""
        grad_t = self._operand(grad)
        new_m = self.op("adam_m", a=self._operand(m), b=grad_t, beta1=beta1)
        new_v = self.op("adam_v", a=self._operand(v), b=grad_t, beta2=beta2)
        new_param = self.op(
            "adam_update",
            a=param,
            b=new_m,
            c=new_v,
            t=self._operand(step),
            lr=lr,
            beta1=beta1,
            beta2=beta2,
            eps=eps,
        )
        return new_param, new_m, new_v

    # -- gradients ------------------------------------------------------------------------

    def grad(
        self,
        output: Tensor,
        inputs: Sequence[Tensor],
        grad_output: Any = None,
        create_graph: bool = False,
    ) -> list[Tensor]:
        """d(output)/d(inputs) as new nodes of this graph (gpulab.autograd.grad: reverse mode,
        one rule per op from the op table; an input the output ignores gets zeros)."""
        from .autograd import grad

        return grad(self._own(output, "grad output"), inputs, grad_output, create_graph)

    # -- running --------------------------------------------------------------------------

    def wgsl(
        self,
        source: str,
        inputs: Sequence[Tensor] = (),
        outputs: Mapping[str, tuple[Sequence[int], str]] | None = None,
        workgroups: Sequence[int] | int = (1,),
        params: Mapping[str, float] | None = None,
    ) -> Any:
        """Your own WGSL compute shader as a node (protocol version 5; docs/playground.md):
        `inputs` bind at @group(0) @binding(0..), then one read_write buffer per entry of
        `outputs` ({name: (shape, dtype)}, in order), then a uniform struct of `params` when
        given; dispatched once with `workgroups` (x, y, z). The bindings are checked against
        the source now. Returns the output Tensor, or a tuple of them (in `outputs` order)
        when there are several; they work everywhere Tensors do, sessions included."""
        if not outputs:
            raise GpuLabError("VALIDATION", "g.wgsl(): give outputs={name: (shape, dtype)}")
        results = [
            {
                "name": k,
                "shape": _shape_arg(v[0]) if isinstance(v, (list, tuple)) and v else v,
                "dtype": v[1] if isinstance(v, (list, tuple)) and len(v) > 1 else "float32",
            }
            for k, v in outputs.items()
        ]
        groups = [workgroups] if isinstance(workgroups, int) else _shape_arg(workgroups)
        ins = [self._operand(t, f"wgsl input {i}") for i, t in enumerate(inputs)]
        raw = {
            "source": source,
            "results": results,
            "workgroups": groups,
            "params": dict(params or {}),
        }
        node_id = len(self._nodes)
        attrs, _ = check_attrs(node_id, "wgsl", raw)
        view = SimpleNamespace(id=node_id, op="wgsl", attrs=attrs)
        shape = NODE_SHAPE_RULES["wgsl"](view, ins)
        dtype = NODE_DTYPE_RULES["wgsl"](view, ins)  # the binding convention, checked now
        self._nodes.append(
            {
                "id": node_id,
                "op": "wgsl",
                "inputs": [t.id for t in ins],
                **_emitted_attrs("wgsl", attrs),
            }
        )
        self._versions[node_id] = node_version("wgsl", [t.shape for t in ins], attrs, dtype, shape)
        made = [Tensor(self, node_id, "wgsl", shape, dtype)]
        self._tensors[node_id] = made[0]
        for i, r in enumerate(attrs["results"][1:], start=1):
            out_id = len(self._nodes)
            self._nodes.append({"id": out_id, "op": "wgsl_output", "a": node_id, "index": i})
            self._versions[out_id] = node_version(
                "wgsl_output", [shape], {}, r["dtype"], tuple(r["shape"])
            )
            made.append(Tensor(self, out_id, "wgsl_output", tuple(r["shape"]), r["dtype"]))
            self._tensors[out_id] = made[-1]
        return made[0] if len(made) == 1 else tuple(made)

    def to_dict(self, **outputs: Tensor) -> dict[str, Any]:
        """The protocol graph of the named outputs, labelled with the lowest version it needs
        (plain data: floats, non-finite values as "nan"/"inf"/"-inf")."""
        return self._graph_dict(outputs, plain=True)

    def run(self, backend: str | None = None, **outputs: Tensor) -> dict[str, Any]:
        """Run once and return {backend, outputs: {name: {shape, dtype, data, array}}, stats}
        (`array`, a numpy array, natively only)."""
        return host.execute(self._graph_dict(outputs), backend=backend)

    async def run_async(self, backend: str | None = None, **outputs: Tensor) -> dict[str, Any]:
        """Awaitable `run`: in the page it awaits the GPU without blocking Python (works in
        every browser, JSPI or not); natively it is `run`."""
        return await host.execute_async(self._graph_dict(outputs), backend=backend)

    def submit(
        self,
        callback: Callable[[dict], Any],
        on_error: Callable[[Exception], Any] | None = None,
        **outputs: Tensor,
    ) -> None:
        """Run and call back with the result (natively before returning). Errors go to
        on_error, or raise when there is none."""
        try:
            graph = self._graph_dict(outputs)
        except GpuLabError as err:
            if on_error is None:
                raise
            on_error(err)
            return
        host.submit(graph, callback, on_error)

    def prepare(
        self,
        feeds: Iterable[Tensor] = (),
        carry: Mapping[Tensor, Any] | None = None,
        resident: Iterable[Any] = (),
        backend: str | None = None,
        **outputs: Tensor,
    ) -> SessionLike:
        """A prepared Session: `feeds` are inputs given every step, `carry` maps an input (with
        data: its initial value) to the output (Tensor or name) that replaces it after each
        step, `resident` outputs stay for `download`, `outputs` are read back every run."""
        graph, options = self._session_request(feeds, carry, resident, outputs)
        return _owned(host.prepare(graph, backend=backend, **options), self)

    async def prepare_async(
        self,
        feeds: Iterable[Tensor] = (),
        carry: Mapping[Tensor, Any] | None = None,
        resident: Iterable[Any] = (),
        backend: str | None = None,
        **outputs: Tensor,
    ) -> SessionLike:
        """Awaitable `prepare` (in the page: every browser, JSPI or not)."""
        graph, options = self._session_request(feeds, carry, resident, outputs)
        return _owned(await host.prepare_async(graph, backend=backend, **options), self)

    def _session_request(
        self,
        feeds: Iterable[Tensor],
        carry: Mapping[Tensor, Any] | None,
        resident: Iterable[Any],
        outputs: dict[str, Tensor],
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        named = dict(outputs)
        carry_names = {
            self._own(i, "carry").id: self._name_for(o, named, "_carry")
            for i, o in (carry or {}).items()
        }
        resident_names = [self._name_for(r, named, "_resident") for r in resident]
        feed_ids = [self._own(f, "feeds").id for f in feeds]
        graph = self._graph_dict(named, extra=feed_ids + list(carry_names))
        return graph, {
            "feeds": feed_ids,
            "carry": carry_names,
            "resident": resident_names,
            "outputs": list(outputs),
            "input_names": dict(self._input_names),
        }

    # -- internals ------------------------------------------------------------------------

    def _name_for(self, target: Any, named: dict[str, Tensor], prefix: str) -> str:
        """The output name of a carry/resident target, adding a hidden output for a Tensor."""
        if isinstance(target, str):
            if target not in named:
                raise GpuLabError(
                    "VALIDATION", f"{target!r} is not one of the named outputs {sorted(named)}"
                )
            return target
        t = self._own(target, prefix.strip("_"))
        for name, tensor in named.items():
            if tensor is t:
                return name
        name = f"{prefix}{t.id}"
        while name in named:  # the user's own output of that name is another tensor: keep it
            name += "_"
        named[name] = t
        return name

    def _own(self, t: Any, what: str) -> Tensor:
        if not isinstance(t, Tensor):
            raise GpuLabError(
                "VALIDATION", f"{what}: expected a Tensor of this graph, got {type(t).__name__}"
            )
        if t.graph is not self:
            raise GpuLabError("VALIDATION", f"{what}: tensor {t.id} belongs to another graph", t.id)
        return t

    def _operand(self, x: Any, what: str = "operand") -> Tensor:
        """A Tensor of this graph; Python scalars become `full` nodes of shape []."""
        if isinstance(x, Tensor):
            return self._own(x, what)
        if _is_scalar(x):
            return self.full([], float(x))
        return self.tensor(x)

    def _operand_like(self, x: Any, dtype: str, what: str = "operand") -> Tensor:
        """As `_operand`, but a Python scalar becomes a constant of `dtype` (int32 constants
        must be integers: the validator refuses 2.5 as an int32, naming the node)."""
        if _is_scalar(x) and dtype != "float32":
            return self.tensor(x, dtype=dtype)
        return self._operand(x, what)

    def _counter(self, counter: Any) -> Tensor:
        """hash_uniform's / dropout's counter: a Tensor as it is, an int as a uint32 [] constant."""
        if isinstance(counter, Tensor):
            return self._own(counter, "counter")
        return self.tensor(counter, dtype="uint32")

    def _operands(self, values: Any, count: dict[str, int] | None, what: str) -> list[Tensor]:
        """A variadic operand (concat's tensors): a list of Tensors or scalars, as many as the
        row's `variadic_count` allows."""
        low, high = (count["min"], count["max"]) if count else (0, optable.limits()["max_nodes"])
        if not isinstance(values, (list, tuple)) or not low <= len(values) <= high:
            raise GpuLabError(
                "VALIDATION", f"{what}: give a list of {low} to {high} tensors, got {values!r}"
            )
        return [self._operand(v, f"{what}[{i}]") for i, v in enumerate(values)]

    def _index(self, idx: Any) -> Tensor:
        """An index operand: a Tensor of this graph, or data made an int32 constant."""
        if isinstance(idx, Tensor):
            return self._own(idx, "index")
        return self.tensor(idx, dtype="int32")

    def concat(self, tensors: Sequence[Any], axis: int = 0) -> Tensor:
        """Join 2..8 tensors along axis (the op `concat`; its operand is the list)."""
        return self.op(
            "concat",
            tensors=list(tensors) if isinstance(tensors, (list, tuple)) else tensors,
            axis=axis,
        )

    def _source(self, op: str, attrs: dict[str, Any]) -> Tensor:
        return self._append(op, {}, attrs)

    def op(self, name: str, /, **operands_and_attrs: Any) -> Tensor:
        """Append one node of op `name` (any op of the op table): operands by their table names
        (`a`, `b`, ...; Tensors of this graph, or Python scalars, which become `full` nodes),
        attributes by name. The generic builder the methods and frontends use:
        `g.op("softmax", a=t, axis=0)` is `t.softmax(axis=0)`."""
        row = optable.ops().get(name)
        if row is None:
            raise GpuLabError(
                "VALIDATION", f"unknown op {name!r} (the op table has {len(optable.ops())} ops)"
            )
        fields = dict(operands_and_attrs)
        operands: dict[str, Tensor | list[Tensor]] = {}
        variadic = row.get("variadic")  # a list field first (docs/protocol.md), e.g. tensors
        for k in ([variadic] if variadic else []) + list(row["operands"]):
            if k not in fields:
                raise GpuLabError(
                    "VALIDATION",
                    f"{name}: missing operand '{k}' (operands: {row['operands'] or [variadic]})",
                )
            value = fields.pop(k)
            if k == variadic:
                operands[k] = self._operands(
                    value, row.get("variadic_count"), f"{name} operand '{k}'"
                )
            else:
                operands[k] = self._operand(value, f"{name} operand '{k}'")
        unknown = sorted(set(fields) - set(row["attrs"]))
        if unknown:
            raise GpuLabError(
                "VALIDATION",
                f"{name}: unknown attribute(s) {unknown} (attrs: {sorted(row['attrs'])})",
            )
        return self._append(name, operands, fields)

    def _append(
        self, op: str, operands: Mapping[str, Tensor | list[Tensor]], raw: dict[str, Any]
    ) -> Tensor:
        node_id = len(self._nodes)
        attrs, data = check_attrs(node_id, op, raw)
        flat = [t for v in operands.values() for t in (v if isinstance(v, list) else [v])]
        shapes = [t.shape for t in flat]
        shape, attrs = infer_node(node_id, op, attrs, shapes)
        dtype = result_dtype(
            label(node_id, op), node_id, optable.ops()[op], [t.dtype for t in flat], attrs
        )
        check_node_values(
            SimpleNamespace(id=node_id, op=op, attrs=attrs, dtype=dtype),
            [
                SimpleNamespace(op=t.op, shape=t.shape, data=self._nodes[t.id].get("data"))
                for t in flat
            ],
        )
        limit = optable.limits()["max_elements"]
        if element_count(shape) > limit:
            raise GpuLabError(
                "LIMIT",
                f"{label(node_id, op)}: result shape {list(shape)} has "
                f"{element_count(shape)} elements > {limit}",
                node_id,
            )
        node: dict[str, Any] = {"id": node_id, "op": op}
        node.update(
            {k: [t.id for t in v] if isinstance(v, list) else v.id for k, v in operands.items()}
        )
        node.update(_emitted_attrs(op, attrs))
        if data is not None:
            node["data"] = data
        self._nodes.append(node)
        self._versions[node_id] = node_version(op, shapes, attrs, dtype, shape)
        t = Tensor(self, node_id, op, shape, dtype)
        self._tensors[node_id] = t
        return t

    def _graph_dict(
        self, outputs: Mapping[str, Any], plain: bool = False, extra: Iterable[int] = ()
    ) -> dict[str, Any]:
        """The protocol dict of the outputs' nodes: data stays array.array (the hosts take
        buffers: numpy natively, typed arrays in the page) unless `plain` (JSON data)."""
        if not outputs:
            raise GpuLabError("VALIDATION", "name at least one output, e.g. g.run(values=t)")
        for name, t in outputs.items():
            self._own(t, f"output {name!r}")
        needed = self._needed([t.id for t in outputs.values()] + list(extra))
        nodes = [_plain_node(n) if plain else dict(n) for n in self._nodes if n["id"] in needed]
        return {
            "version": max(self._versions[i] for i in needed),
            "nodes": nodes,
            "outputs": [{"name": name, "id": t.id} for name, t in outputs.items()],
        }

    def _needed(self, roots: list[int]) -> set[int]:
        needed: set[int] = set()
        todo = list(roots)
        while todo:
            node_id = todo.pop()
            if node_id in needed:
                continue
            needed.add(node_id)
            node = self._nodes[node_id]
            row = optable.ops()[node["op"]]
            todo.extend(node.get(row["variadic"], []) if "variadic" in row else [])
            todo.extend(node[k] for k in row["operands"])
        return needed


def _pair(v: Any) -> Any:
    """An int or an (h, w) pair as the protocol's [h, w] (anything else: the validator says)."""
    if isinstance(v, (list, tuple)):
        return list(v)
    return [v, v] if isinstance(v, int) and not isinstance(v, bool) else v


def _pads4(v: Any) -> Any:
    """An int, (h, w) or (top, left, bottom, right) as the protocol's padding."""
    if isinstance(v, (list, tuple)) and len(v) == 2:
        return [v[0], v[1], v[0], v[1]]
    if isinstance(v, (list, tuple)):
        return list(v)
    return [v] * 4 if isinstance(v, int) and not isinstance(v, bool) else v


def _emitted_attrs(op: str, attrs: dict[str, Any]) -> dict[str, Any]:
    """Normalized attrs as protocol fields: shapes as lists, defaults left out."""
    out = {}
    for name, spec in optable.ops()[op]["attrs"].items():
        if name not in attrs:
            continue
        value = attrs[name]
        if not spec.get("required") and "default" in spec and value == spec["default"]:
            continue
        out[name] = list(value) if isinstance(value, tuple) else value
    return out


def _json_float(x: float) -> float | str:
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def _plain_node(node: dict[str, Any]) -> dict[str, Any]:
    out = dict(node)
    if out.get("dtype") in QUANTIZED_DTYPES:  # block bytes: base64, not a list of bytes
        out["data"] = {"base64": encode_base64(out["data"])}
    elif "data" in out:
        out["data"] = [_json_float(v) for v in out["data"]]
    if "value" in out:
        out["value"] = _json_float(float(out["value"]))
    return out


# ---------------------------------------------------------------------------------------------
# Turning user data into (shape, float32 values)


def _shape_arg(shape: Any) -> Any:
    """A shape argument as a list; anything but a sequence is left to the validator, which
    refuses it with VALIDATION (list(5) raised a TypeError)."""
    return list(shape) if isinstance(shape, (list, tuple, range)) else shape


def _owned(session: Any, graph: Graph) -> Any:
    """Tag a session with the Graph that prepared it: its Tensors, and only they, are keys."""
    if hasattr(session, "owner"):
        session.owner = graph
    return session


def _with_dtype(attrs: dict[str, Any], dtype: str) -> dict[str, Any]:
    """The input's attrs, with `dtype` only where it is not the default (float32 graphs stay
    version 1)."""
    if dtype != "float32":
        attrs["dtype"] = dtype
    return attrs


def _flatten(data: Any, dtype: str = "float32") -> tuple[Shape, Any]:
    """(shape, flat data). float32 data becomes array('f') here; other dtypes keep their
    container (flat list, numpy array, buffer) for the protocol's checker of that dtype."""
    if isinstance(data, Tensor):
        raise GpuLabError("VALIDATION", "g.tensor() takes data, not a Tensor")
    shape, flat = _shape_and_flat(data, dtype)
    if dtype == "float32":
        flat = to_float32_array(flat, "g.tensor()")
    return shape, flat


def _shape_and_flat(data: Any, dtype: str) -> tuple[Shape, Any]:
    if _is_scalar(data):
        return (), [data.item() if hasattr(data, "item") else data]
    if hasattr(data, "__array_interface__") and hasattr(data, "shape"):
        return tuple(int(d) for d in data.shape), data.reshape(-1)
    if isinstance(data, memoryview) and data.ndim > 1:
        return tuple(data.shape), data.cast("B").cast(data.format)
    if isinstance(data, (array.array, memoryview)):
        return (len(data),), data
    if isinstance(data, (bytes, bytearray)):  # raw little-endian values of the dtype
        size = optable.load()["dtypes"].get(dtype, {}).get("bytes", 4)
        return (len(data) // size,), data
    if isinstance(data, (list, tuple)):
        shape = _nested_shape(data)
        flat: list[Any] = []
        _collect(data, shape, 0, flat)
        return shape, flat
    raise GpuLabError(
        "VALIDATION",
        f"g.tensor() cannot take {type(data).__name__}: give a "
        "number, a (nested) list, an array.array, a memoryview or a "
        "numpy array",
    )


# Deeper nesting than any rank the protocol allows, by far: past it a list is refused here
# (flattening it recursively hit Python's recursion limit at about 1000)
MAX_NESTING = 64


def _nested_shape(data: Any) -> Shape:
    shape = []
    level = data
    while isinstance(level, (list, tuple)):
        if len(shape) == MAX_NESTING:
            raise GpuLabError(
                "VALIDATION",
                f"g.tensor(): a list nested more than {MAX_NESTING} deep is not a tensor "
                f"(a tensor's rank is at most {optable.limits()['max_rank']})",
            )
        shape.append(len(level))
        if not level:
            break
        level = level[0]
    return tuple(shape)


def _collect(data: Any, shape: Shape, depth: int, flat: list) -> None:
    """Flatten, refusing ragged lists with the path where the shape breaks."""
    if depth == len(shape):
        if isinstance(data, (list, tuple)):
            raise GpuLabError(
                "VALIDATION",
                f"ragged nested list: expected a number at depth "
                f"{depth}, found a list (shape so far {list(shape)})",
            )
        flat.append(data)
        return
    if not isinstance(data, (list, tuple)) or len(data) != shape[depth]:
        found = f"length {len(data)}" if isinstance(data, (list, tuple)) else repr(data)
        raise GpuLabError(
            "VALIDATION",
            f"ragged nested list: expected length {shape[depth]} at "
            f"depth {depth}, found {found} (shape {list(shape)})",
        )
    if depth == len(shape) - 1 and not any(isinstance(v, (list, tuple)) for v in data):
        flat.extend(data)
        return
    for item in data:
        _collect(item, shape, depth + 1, flat)
