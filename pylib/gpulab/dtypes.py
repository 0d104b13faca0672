"""Dtypes (docs/protocol.md "Dtypes"): the twin of backends-js/src/dtypes.mjs.

The op table's `dtypes` rows, the typed buffer that holds each one, data in any accepted form
turned into that buffer, base64 both ways, and the generic result-dtype rule (the op table's
`types` / `operand_types` / `result_type`). Messages match the JS twin word for word.

Checked data is an `array.array` of the dtype's typecode (TYPECODE: float32 'f', int32 'i',
uint32 'I', bool 'B', one byte 0/1 per element): pure Python, so the package imports without
numpy (Pyodide), and numpy reads it without a copy (`numpy.frombuffer(data, DTYPE_NUMPY[dt])`).
Buffers are converted without per-element Python loops: `frombytes` for raw bytes and matching
formats, numpy for the rest where it is installed (a plain Python conversion otherwise).
"""

from __future__ import annotations

import array
import base64
import binascii
import json
import math
import re
import sys
from typing import Any

from . import optable
from .errors import GpuLabError

__all__ = [
    "DTYPES",
    "DTYPE_NUMPY",
    "NUMPY_VALUE",
    "TYPECODE",
    "alloc_typed",
    "as_numpy",
    "decode_base64",
    "device_words",
    "encode_base64",
    "from_device_words",
    "or_list",
    "result_dtype",
    "to_base64_data",
    "to_typed",
]

DTYPES: dict[str, dict[str, Any]] = optable.load()["dtypes"]
# the block-quantized dtypes (rows with a `block`): their data are bytes in every map below
BLOCK_DTYPES = tuple(name for name, row in DTYPES.items() if "block" in row)


def _typecode(size: int, signed: bool) -> str:
    """The array typecode of a `size`-byte integer here ('i'/'I' on every platform we know)."""
    for code in ("i", "l") if signed else ("I", "L"):
        if array.array(code).itemsize == size:
            return code
    raise RuntimeError(f"no {size}-byte array typecode on this platform")  # pragma: no cover


TYPECODE = {
    "float32": "f",
    "int32": _typecode(4, True),
    "uint32": _typecode(4, False),
    "bool": "B",
    **{name: "B" for name in BLOCK_DTYPES},
}
DTYPE_NUMPY = {
    "float32": "<f4",
    "int32": "<i4",
    "uint32": "<u4",
    "bool": "u1",
    **{name: "u1" for name in BLOCK_DTYPES},
}

# inclusive ranges of the integer-like dtypes, and what a message calls them
RANGES = {
    "int32": (-2147483648, 2147483647, "an integer in -2147483648..2147483647"),
    "uint32": (0, 4294967295, "an integer in 0..4294967295"),
    "bool": (0, 1, "0, 1, true or false"),
    **{name: (0, 255, "a byte in 0..255") for name in BLOCK_DTYPES},
}
NONFINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")
_BYTE_FORMATS = ("B", "b", "c")


def block_of(dtype: str) -> dict[str, int] | None:
    """A block-quantized dtype's block ({elements, bytes}; its data are the blocks' bytes)."""
    return DTYPES.get(dtype, {}).get("block")


def stored_length(dtype: str, count: int) -> int:
    """How many stored units (buffer items) hold `count` values: a block dtype's byte length."""
    block = block_of(dtype)
    return count // block["elements"] * block["bytes"] if block else count


def unit_bytes(dtype: str) -> int:
    """Bytes per stored unit: the dtype's size, 1 for a block dtype's bytes."""
    return 1 if block_of(dtype) else int(DTYPES[dtype]["bytes"])


def block_shape_problem(dtype: str, shape: tuple[int, ...]) -> str | None:
    """None when a block dtype's shape is [N, K] with K a multiple of its block (or the dtype
    has no blocks), else what is wrong (the JS twin's words)."""
    block = block_of(dtype)
    if not block or (len(shape) == 2 and shape[1] % block["elements"] == 0):
        return None
    return (
        f"a {dtype} tensor has shape [N, K] with K a multiple of {block['elements']}, "
        f"got [{', '.join(str(d) for d in shape)}]"
    )


def alloc_typed(dtype: str, count: int) -> array.array:
    """A zero-filled buffer of `count` elements of `dtype`."""
    return array.array(TYPECODE[dtype], bytes(stored_length(dtype, count) * unit_bytes(dtype)))


def or_list(names: list[str]) -> str:
    """'float32', 'float32 or int32', 'float32, int32 or bool'."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def show(v: Any) -> str:
    """A value as the JS twin prints it in messages (String(number), JSON otherwise)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "Infinity" if v > 0 else "-Infinity"
        return str(int(v)) if v.is_integer() and abs(v) < 1e21 else repr(v)
    try:
        text = json.dumps(v, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError):  # RecursionError: nested a thousand deep
        return type(v).__name__
    return text if len(text) <= 40 else text[:37] + "..."


def _articled(dtype: str) -> str:
    return "an int32" if dtype == "int32" else f"a {dtype}"


def _not_of(where: str, name: str, index: int, value: Any, dtype: str, node: int | None):
    return GpuLabError(
        "VALIDATION",
        f"{where}: {name}[{index}] = {show(value)} is not {_articled(dtype)} ({RANGES[dtype][2]})",
        node,
    )


# ---------------------------------------------------------------------------------------------
# base64


def encode_base64(data: bytes | bytearray | memoryview | array.array) -> str:
    """Standard base64 of the bytes (of an array, its little-endian bytes)."""
    raw = memoryview(data).cast("B") if not isinstance(data, bytes) else data
    return base64.b64encode(raw).decode("ascii")


def decode_base64(text: str) -> bytes | None:
    """Strict base64 (RFC 4648 alphabet, '=' padding, length a multiple of 4), or None."""
    if len(text) % 4 or not _BASE64.fullmatch(text):
        return None
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None


def to_base64_data(data: array.array) -> dict[str, str]:
    """JSON data of a typed buffer: {"base64": little-endian bytes}."""
    if sys.byteorder == "big":  # pragma: no cover - every supported host is little-endian
        data = array.array(data.typecode, data)
        data.byteswap()
    return {"base64": encode_base64(data)}


# ---------------------------------------------------------------------------------------------
# data -> typed buffer


def to_typed(
    value: Any,
    dtype: str,
    where: str,
    node: int | None = None,
    shape: tuple[int, ...] | None = None,
    name: str = "data",
) -> array.array:
    """Data of `dtype` as an array.array of TYPECODE[dtype], or GpuLabError(VALIDATION).

    Accepted: a list/tuple (checked per element), an array.array (kept when its typecode is the
    dtype's), bytes/bytearray/memoryview (bytes: the raw little-endian values; a typed view of
    the dtype's format is copied; others converted), a numpy array, {"base64": "..."}.
    `shape` given: the element count (or byte length) must match it exactly; messages start with
    `where`, name the datum `name` and carry `node`.
    """
    count = None if shape is None else stored_length(dtype, math.prod(shape))
    ctx = _Ctx(dtype, where, node, shape, count, name)
    if isinstance(value, dict):
        return ctx.from_base64(value)
    if isinstance(value, array.array):
        return ctx.from_array(value)
    if isinstance(value, (list, tuple)):
        ctx.check_length(len(value))
        return ctx.from_list(value)
    if hasattr(value, "__array_interface__") and hasattr(value, "dtype"):
        ctx.check_length(int(value.size))
        return ctx.from_numpy(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return ctx.from_buffer(memoryview(value))
    raise GpuLabError(
        "VALIDATION",
        f'{where}: {name} must be a list of numbers, a typed array or {{"base64": "..."}}, '
        f"got {type(value).__name__}",
        node,
    )


class _Ctx:
    """One conversion: the dtype, where to point messages, the expected size."""

    def __init__(
        self,
        dtype: str,
        where: str,
        node: int | None,
        shape: tuple[int, ...] | None,
        count: int | None,
        name: str,
    ) -> None:
        self.dtype, self.where, self.node, self.name = dtype, where, node, name
        self.shape, self.count = shape, count
        self.code = TYPECODE[dtype]

    def fail(self, detail: str) -> GpuLabError:
        return GpuLabError("VALIDATION", f"{self.where}: {self.name}{detail}", self.node)

    def shape_text(self) -> str:
        return "[" + ", ".join(str(d) for d in self.shape or ()) + "]"

    def check_length(self, length: int) -> None:
        if self.count is not None and length != self.count:
            raise self.fail(f" has {length} values, shape {self.shape_text()} needs {self.count}")

    def from_bytes(self, raw: bytes | memoryview, what: str) -> array.array:
        size = unit_bytes(self.dtype)
        nbytes = len(raw) if isinstance(raw, bytes) else raw.nbytes
        need = self.count * size if self.count is not None else nbytes - nbytes % size
        if nbytes != need:
            shown = self.shape_text() if self.shape is not None else "(any)"
            raise self.fail(f"{what} {nbytes} bytes, shape {shown} of {self.dtype} needs {need}")
        out = array.array(self.code)
        out.frombytes(raw)
        if sys.byteorder == "big":  # pragma: no cover
            out.byteswap()
        return self.checked(out)

    def checked(self, out: array.array) -> array.array:
        """bool holds only 0 and 1 (found without a Python loop); other dtypes take any bits."""
        if self.dtype == "bool":
            raw = out.tobytes()
            if raw.translate(None, b"\x00\x01"):
                index = next(i for i, b in enumerate(raw) if b > 1)
                raise _not_of(self.where, self.name, index, raw[index], "bool", self.node)
        return out

    def from_base64(self, value: dict) -> array.array:
        if list(value) != ["base64"] or not isinstance(value["base64"], str):
            raise self.fail(f' object must be {{"base64": "<string>"}}, got {show(value)}')
        raw = decode_base64(value["base64"])
        if raw is None:
            raise self.fail(
                ".base64 is not base64 (A-Z a-z 0-9 + /, = padding, length a multiple of 4)"
            )
        return self.from_bytes(raw, ".base64 holds")

    def from_array(self, value: array.array) -> array.array:
        self.check_length(len(value))
        if value.typecode == self.code:
            return self.checked(value)
        if self.dtype == "float32" and value.typecode != "u":
            return array.array("f", value)
        return self.from_other(value)

    def from_buffer(self, view: memoryview) -> array.array:
        fmt = view.format.lstrip("@=<")
        if fmt in _BYTE_FORMATS and view.ndim <= 1:
            return self.from_bytes(view.cast("B") if view.format != "B" else view, " buffer holds")
        self.check_length(math.prod(view.shape) if view.ndim else 1)
        if fmt == self.code and view.itemsize == unit_bytes(self.dtype):
            return self.from_bytes(view.cast("B"), " buffer holds")
        return self.from_other(view)

    def from_other(self, values: memoryview | array.array) -> array.array:
        """A buffer of another element type: numpy converts it where installed."""
        numpy = _numpy()
        if numpy is not None:
            return self.from_numpy(numpy.asarray(values))
        return self.from_list(values.tolist())

    def from_numpy(self, arr: Any) -> array.array:
        kind = arr.dtype.kind
        numbers = kind in ("f", "i", "u")
        if not (numbers or (kind == "b" and self.dtype == "bool")):
            raise self.fail(f" has dtype {arr.dtype}, not {_articled(self.dtype)} type")
        flat = arr.ravel(order="C")
        if self.dtype != "float32" and numbers:
            self._numpy_range(flat)
        out = array.array(self.code)
        out.frombytes(flat.astype(DTYPE_NUMPY[self.dtype]).tobytes())
        return out

    def _numpy_range(self, flat: Any) -> None:
        numpy = _numpy()
        assert numpy is not None
        lo, hi, _ = RANGES[self.dtype]
        with numpy.errstate(invalid="ignore"):
            ok = (flat >= lo) & (flat <= hi)
            if flat.dtype.kind == "f":
                ok &= numpy.floor(flat) == flat
        if not ok.all():
            index = int(numpy.argmin(ok))
            raise _not_of(self.where, self.name, index, flat[index].item(), self.dtype, self.node)

    def from_list(self, values: list | tuple) -> array.array:
        # Fast path: plain ints (and floats for float32) convert in C; anything else (bools,
        # strings, integral floats, numpy scalars, out of range) takes the checking loop,
        # which also names the first bad element.
        kinds = set(map(type, values))
        if kinds <= ({int, float} if self.dtype == "float32" else {int}):
            try:
                out = array.array(self.code, values)
            except OverflowError:
                pass
            else:
                return out if self.dtype != "bool" else self.checked(out)
        if self.dtype == "float32":
            return array.array("f", [self._float(v, i) for i, v in enumerate(values)])
        return array.array(self.code, [self._integral(v, i) for i, v in enumerate(values)])

    def _float(self, v: Any, index: int) -> float:
        number = as_number(v)
        if number is None:
            if isinstance(v, str) and v in NONFINITE:
                return NONFINITE[v]
            raise self.fail(f'[{index}] must be a number or "nan", "inf", "-inf", got {show(v)}')
        return number

    def _integral(self, v: Any, index: int) -> int:
        if isinstance(v, bool):
            if self.dtype == "bool":
                return int(v)
            raise _not_of(self.where, self.name, index, v, self.dtype, self.node)
        number = as_number(v)
        lo, hi, _ = RANGES[self.dtype]
        if number is None or not (number.is_integer() and lo <= number <= hi):
            raise _not_of(self.where, self.name, index, v, self.dtype, self.node)
        return int(number)


def as_number(value: Any) -> float | None:
    """A float for an int/float (numpy scalars included), or None. Booleans are not numbers."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        try:
            return float(value)
        except OverflowError:
            return math.inf if value > 0 else -math.inf
    kind = getattr(getattr(value, "dtype", None), "kind", None)
    if kind in ("i", "u", "f") and getattr(value, "shape", None) == ():
        return float(value)
    return None


def _numpy() -> Any:
    """numpy when installed (natively, and in Pyodide once loaded), else None."""
    try:
        import numpy
    except ImportError:  # pragma: no cover - numpy is installed in the test environment
        return None
    return numpy


# ---------------------------------------------------------------------------------------------
# result dtype


def result_dtype(
    where: str, node: int, row: dict[str, Any], operand_dtypes: list[str], attrs: dict[str, Any]
) -> str:
    """The dtype of a node's result by its op-table row (see the JS twin `resultDtype`)."""
    bound: dict[str, tuple[str, str]] = {}
    names = optable.operand_names(row, len(operand_dtypes))
    for operand, got in zip(names, operand_dtypes):
        variable = row["operand_types"][optable.operand_field(operand)]
        allowed = [variable] if variable in DTYPES else row["types"][variable]
        if got not in allowed:
            raise GpuLabError(
                "VALIDATION",
                f"{where}: operand {operand} must be {or_list(allowed)}, got {got}",
                node,
            )
        first = bound.get(variable)
        if first is not None and first[0] != got:
            raise GpuLabError(
                "VALIDATION",
                f"{where}: operand {operand} must be {first[0]} like operand {first[1]}, got {got}",
                node,
            )
        bound.setdefault(variable, (got, operand))
    rule = row["result_type"]
    if rule == "attr:dtype":
        return str(attrs["dtype"])
    if rule in DTYPES:
        return str(rule)
    return bound[rule][0]


# ---------------------------------------------------------------------------------------------
# numpy values and device words (executors; numpy is there wherever an executor runs)

# the numpy dtype an executor computes with: bool as numpy bool (one byte, 0/1, as the wire)
NUMPY_VALUE = {
    "float32": "float32",
    "int32": "int32",
    "uint32": "uint32",
    "bool": "bool",
    **{name: "uint8" for name in BLOCK_DTYPES},
}


def as_numpy(data: Any, dtype: str, shape: tuple[int, ...]) -> Any:
    """A typed buffer (or any array-like of the dtype's values) as a numpy array of
    NUMPY_VALUE[dtype] and `shape`; a buffer of the dtype's typecode is viewed, not copied."""
    import numpy as np

    if block_of(dtype):  # the blocks' bytes, flat (the kernels know [N, K])
        return np.frombuffer(memoryview(data).cast("B"), dtype=np.uint8)
    if isinstance(data, array.array) and data.typecode == TYPECODE[dtype]:
        return np.frombuffer(data, dtype=NUMPY_VALUE[dtype]).reshape(shape)
    return np.asarray(data).astype(NUMPY_VALUE[dtype], copy=False).reshape(shape)


def device_words(data: Any, dtype: str) -> Any:
    """The values as GPU storage: 32-bit little-endian words (bool widened to u32 0/1, as
    WGSL has no 8-bit storage); a contiguous 4-byte array is passed through without a copy."""
    import numpy as np

    if dtype == "bool":
        return np.ascontiguousarray(np.asarray(data, dtype=np.uint8), dtype="<u4")
    if block_of(dtype):  # the blocks' bytes packed 4 to a word, the last one zero-padded
        raw = np.frombuffer(memoryview(data).cast("B"), dtype=np.uint8)
        padded = np.zeros((raw.size + 3) // 4 * 4, dtype=np.uint8)
        padded[: raw.size] = raw
        return padded.view("<u4")
    if isinstance(data, array.array):
        return memoryview(data).cast("B")
    return np.ascontiguousarray(data, dtype=DTYPE_NUMPY[dtype])


def from_device_words(raw: Any, dtype: str, count: int, offset: int = 0) -> Any:
    """`count` 32-bit device words at byte `offset` of `raw` as a numpy array (a copy) of
    NUMPY_VALUE[dtype], bit for bit (bool: any non-zero word is true)."""
    import numpy as np

    if dtype == "bool":
        return np.frombuffer(raw, dtype="<u4", count=count, offset=offset) != 0
    return np.frombuffer(raw, dtype=DTYPE_NUMPY[dtype], count=count, offset=offset).astype(
        NUMPY_VALUE[dtype]
    )
