"""What an ONNX value is while a model is lowered: a graph Tensor, or a Const known at load.

A Const holds its elements in an `array.array` (float32 'f', int32 'i', bool 'B'): an
initializer's bytes are read at C speed and stay one buffer. Shapes, axes and other operands
an ONNX op needs at load (Reshape's shape, Slice's starts) must be Consts; a Const becomes a
graph constant (`Graph.tensor`) when an op computes with it.
"""

from __future__ import annotations

import array
import math
import struct
from dataclasses import dataclass

from ..errors import GpuLabError
from ..functional.dtypes import onnx_dtypes
from ..graph import Graph, Tensor
from .limits import LIMITS
from .proto import DATA_TYPES, TensorProto

TYPECODE = {"float32": "f", "int32": "i", "bool": "B", "int64": "q"}
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1

# ONNX element type -> the gpulab dtype it is held in (int64 narrowed to int32, range checked);
# HELD_DTYPES: only with load(hold_32bit=True). The frontends' one dtype map says why.
ONNX_DTYPES = onnx_dtypes(hold=False)
HELD_DTYPES = onnx_dtypes(hold=True)
NARROW_INTS = {code for code, dtype in HELD_DTYPES.items() if dtype == "int32"}


@dataclass
class Const:
    """dtype float32, int32, bool or int64 (an ONNX int64 constant keeps its range while it is
    folded at load, e.g. Slice's INT64_MAX ends; it is narrowed to int32, checked, when it
    becomes a graph tensor)."""

    dtype: str
    shape: tuple[int, ...]
    data: array.array
    name: str = "a constant"
    tensor: Tensor | None = None  # its graph constant, once made

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def ints(self) -> list[int]:
        return [int(v) for v in self.data]

    def values(self) -> list:
        return list(self.data)


Value = Tensor | Const


def int_range(start: int, stop: int) -> array.array:
    """int32 start, start + 1, ..., stop - 1 as one buffer (built at C speed: an index tensor
    as long as a model's dimension is no per-element Python list)."""
    return array.array("i", range(start, stop))


def const_of(dtype: str, shape, values) -> Const:
    shape = tuple(int(d) for d in shape)
    data = array.array(TYPECODE[dtype], [bool(v) for v in values] if dtype == "bool" else values)
    if len(data) != math.prod(shape):
        raise GpuLabError("VALIDATION", f"onnx: {len(data)} values for shape {list(shape)}")
    return Const(dtype, shape, data)


def materialize(g: Graph, v: Value) -> Tensor:
    """The value as a graph tensor (a Const becomes one `Graph.tensor` constant, made once)."""
    if isinstance(v, Tensor):
        return v
    if v.tensor is None or v.tensor.graph is not g:
        data, dtype = v.data, v.dtype
        if dtype == "int64":
            if len(data) and (min(data) < INT32_MIN or max(data) > INT32_MAX):
                bad = next(x for x in data if not INT32_MIN <= x <= INT32_MAX)
                raise GpuLabError(
                    "UNSUPPORTED",
                    f"onnx: {v.name} holds the int64 value {bad}, "
                    f"outside int32 (int64 data is held as int32)",
                )
            data, dtype = array.array("i", data), "int32"
        v.tensor = g.tensor(data, shape=v.shape, dtype=dtype)
    return v.tensor


def dtype_of(v: Value) -> str:
    """The dtype the value has on a device (an int64 Const is int32 there)."""
    return "int32" if v.dtype == "int64" else v.dtype


def shape_of(v: Value) -> tuple[int, ...]:
    return tuple(v.shape)


def onnx_dtype(elem_type: int, what: str, hold: bool = False) -> str:
    """The gpulab dtype an ONNX element type is held in, or UNSUPPORTED naming the tensor."""
    dtype = ONNX_DTYPES.get(elem_type) or (HELD_DTYPES.get(elem_type) if hold else None)
    if dtype is None:
        name = DATA_TYPES.get(elem_type, str(elem_type))
        held = (
            " (load(hold_32bit=True) holds DOUBLE and FLOAT16 as float32 and "
            "INT8, UINT8, INT16, UINT16 as int32)"
            if elem_type in HELD_DTYPES and not hold
            else ""
        )
        raise GpuLabError(
            "UNSUPPORTED",
            f"onnx: {what} has element type {name}; supported: FLOAT, INT32, INT64 (held as "
            f"int32), BOOL{held}",
        )
    return dtype


def check_dims(dims, what: str) -> tuple[int, ...]:
    if len(dims) > LIMITS["max_rank"]:
        raise GpuLabError("LIMIT", f"onnx: {what} has rank {len(dims)} > {LIMITS['max_rank']}")
    for d in dims:
        if not isinstance(d, int) or d < 0:
            raise GpuLabError(
                "UNSUPPORTED", f"onnx: {what} has a dimension {d!r} that is not a static size"
            )
    n = math.prod(dims)
    if n > LIMITS["max_elements"]:
        raise GpuLabError("LIMIT", f"onnx: {what} has {n} elements > {LIMITS['max_elements']}")
    return tuple(dims)


_HELD_CODES = {10: "e", 11: "d", 2: "B", 3: "b", 4: "H", 5: "h"}


def _held_values(t: TensorProto, raw: bytes, n: int, what: str) -> array.array:
    """The elements of a held type (hold_32bit) as float32 or int32."""
    kind = t.data_type
    if t.int32_words:  # int32_data: narrow ints as values, FLOAT16 as bit patterns
        words = array.array("i")
        words.frombytes(raw)
        if kind in NARROW_INTS:
            return array.array("i", words)
        raw = array.array("H", [w & 0xFFFF for w in words]).tobytes()
    code = _HELD_CODES[kind]
    width = struct.calcsize(code)
    if len(raw) != width * n:
        raise _length(what, len(raw), width * n)
    values = struct.unpack(f"<{n}{code}", raw)
    return array.array("f" if kind in (10, 11) else "i", values)


def tensor_const(t: TensorProto, what: str, hold: bool = False) -> Const:
    """An initializer or Constant tensor as a Const (int64 kept as int64 until it becomes a
    graph tensor)."""
    if t.external:
        raise GpuLabError(
            "UNSUPPORTED",
            f"onnx: {what} keeps its data in an external file; give a model with the data inside",
        )
    dtype = onnx_dtype(t.data_type, what, hold)
    shape = check_dims(list(t.dims), what)
    n = math.prod(shape)
    raw = t.raw or b""
    kind = DATA_TYPES.get(t.data_type)
    if t.data_type in HELD_DTYPES:
        data = _held_values(t, raw, n, what)
    elif t.int32_words:  # int32_data carrying bools
        words = array.array("i")
        words.frombytes(raw)
        data = array.array(TYPECODE[dtype], words if dtype != "bool" else [w != 0 for w in words])
    elif kind == "INT64":
        if len(raw) != 8 * n:
            raise _length(what, len(raw), 8 * n)
        data = array.array("q")
        data.frombytes(raw)
        dtype = "int64"
    else:
        width = 1 if dtype == "bool" else 4
        if len(raw) != width * n:
            raise _length(what, len(raw), width * n)
        data = array.array(TYPECODE[dtype])
        data.frombytes(raw)
        if dtype == "bool" and any(v > 1 for v in data):
            data = array.array("B", [v != 0 for v in data])
    if len(data) != n:
        raise _length(what, len(data), n)
    return Const(dtype, shape, data, what)


def _length(what: str, got: int, want: int) -> GpuLabError:
    return GpuLabError(
        "VALIDATION", f"onnx: {what} holds {got} bytes of data, its dims need {want}"
    )
