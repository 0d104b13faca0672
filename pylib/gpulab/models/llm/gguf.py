"""A bounded reader of GGUF files (llama.cpp's model format), pure Python: it runs in Pyodide.

The format (ggml's docs/gguf.md, versions 2 and 3; version 1's 32-bit counts are refused):

    "GGUF" magic, u32 version, u64 tensor count, u64 metadata count,
    metadata: (string key, u32 value type, value) ...,
    tensor infos: (string name, u32 n_dims, u64 dims[n_dims], u32 ggml type, u64 offset) ...,
    padding to `general.alignment` (default 32), then the tensor data (offsets relative to it).

A string is a u64 byte length and UTF-8 bytes; an array a u32 item type, a u64 count and the
items. Everything is little-endian. `dims[0]` is the fastest-varying axis (a row's length), so
a weight [N, K] in row-major order has dims (K, N); `TensorInfo.shape` is the row-major one.

Nothing is allocated before it is checked: every count, length and size is compared with the
bytes left in the file (and with the limits below) before a list, string or slice is made, every
tensor's byte size is derived from its type and dims and must lie inside the data section,
aligned and overlapping no other tensor. A bad file is refused with GpuLabError naming the key or
tensor: VALIDATION for a malformed or lying file, LIMIT past a limit below. Tensor types that
ggml knows but gpulab does not compute with (Q5_K, IQ2_XS, ...) are read and listed;
`gpulab.models.llm` refuses them by name when it builds a model.
"""

from __future__ import annotations

import array
import itertools
import math
import struct
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpulab.errors import GpuLabError

MAGIC = b"GGUF"
VERSIONS = (2, 3)
DEFAULT_ALIGNMENT = 32
MAX_TENSORS = 1 << 16
MAX_METADATA = 1 << 16
MAX_ARRAY_ITEMS = 1 << 24  # the largest vocabularies and merge lists are ~10^6
MAX_STRING_BYTES = 1 << 26  # a chat template or an embedded tokenizer.json: well under this
MAX_KEY_BYTES = 1 << 16
MAX_DIMS = 4  # GGML_MAX_DIMS
MAX_ALIGNMENT = 1 << 16
BIG_ENDIAN = sys.byteorder == "big"

# GGUF metadata value types: name, struct code (None: string / array), item bytes
VALUE_TYPES: dict[int, tuple[str, str | None, int]] = {
    0: ("uint8", "B", 1),
    1: ("int8", "b", 1),
    2: ("uint16", "H", 2),
    3: ("int16", "h", 2),
    4: ("uint32", "I", 4),
    5: ("int32", "i", 4),
    6: ("float32", "f", 4),
    7: ("bool", "?", 1),
    8: ("string", None, 8),  # at least its u64 length
    9: ("array", None, 12),  # at least its item type and count
    10: ("uint64", "Q", 8),
    11: ("int64", "q", 8),
    12: ("float64", "d", 8),
}
STRING, ARRAY = 8, 9
INTEGER_TYPES = ("uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64")

# ggml tensor types (ggml.h `enum ggml_type`): id -> (name, values per block, bytes per block)
GGML_TYPES: dict[int, tuple[str, int, int]] = {
    0: ("F32", 1, 4),
    1: ("F16", 1, 2),
    2: ("Q4_0", 32, 18),
    3: ("Q4_1", 32, 20),
    6: ("Q5_0", 32, 22),
    7: ("Q5_1", 32, 24),
    8: ("Q8_0", 32, 34),
    9: ("Q8_1", 32, 40),
    10: ("Q2_K", 256, 84),
    11: ("Q3_K", 256, 110),
    12: ("Q4_K", 256, 144),
    13: ("Q5_K", 256, 176),
    14: ("Q6_K", 256, 210),
    15: ("Q8_K", 256, 292),
    16: ("IQ2_XXS", 256, 66),
    17: ("IQ2_XS", 256, 74),
    18: ("IQ3_XXS", 256, 98),
    19: ("IQ1_S", 256, 50),
    20: ("IQ4_NL", 32, 18),
    21: ("IQ3_S", 256, 110),
    22: ("IQ2_S", 256, 82),
    23: ("IQ4_XS", 256, 136),
    24: ("I8", 1, 1),
    25: ("I16", 1, 2),
    26: ("I32", 1, 4),
    27: ("I64", 1, 8),
    28: ("F64", 1, 8),
    29: ("IQ1_M", 256, 56),
    30: ("BF16", 1, 2),
    34: ("TQ1_0", 256, 54),
    35: ("TQ2_0", 256, 66),
    39: ("MXFP4", 32, 17),
}
TYPE_IDS = {name: tid for tid, (name, _, _) in GGML_TYPES.items()}

__all__ = ["GGML_TYPES", "GGUFFile", "TensorInfo", "open_gguf", "read"]


def _bad(message: str, code: str = "VALIDATION") -> GpuLabError:
    return GpuLabError(code, f"gguf: {message}")


@dataclass(frozen=True)
class TensorInfo:
    """One tensor, checked: `start`/`end` are absolute byte offsets into the file."""

    name: str
    type_id: int
    dims: tuple[int, ...]  # GGUF order: dims[0] is a row's length
    start: int
    end: int

    @property
    def type_name(self) -> str:
        return GGML_TYPES[self.type_id][0]

    @property
    def shape(self) -> tuple[int, ...]:
        """Row-major shape ([N, K] for a matrix of N rows of K values)."""
        return tuple(reversed(self.dims))

    @property
    def size(self) -> int:
        return math.prod(self.dims)

    @property
    def nbytes(self) -> int:
        return self.end - self.start


@dataclass(frozen=True)
class Value:
    """A metadata value with its GGUF type ("array" values also name their item type)."""

    type: str
    value: Any
    item_type: str | None = None


class _Cursor:
    """Reads little-endian fields from a byte view, refusing any read past its end."""

    def __init__(self, view: memoryview) -> None:
        self.view = view
        self.pos = 0

    def left(self) -> int:
        return len(self.view) - self.pos

    def need(self, n: int, what: str) -> None:
        if n > self.left():
            raise _bad(
                f"{what} needs {n} bytes at offset {self.pos} but the file has {self.left()}"
            )

    def scalar(self, code: str, size: int, what: str) -> Any:
        self.need(size, what)
        (v,) = struct.unpack_from("<" + code, self.view, self.pos)
        self.pos += size
        return v

    def u32(self, what: str) -> int:
        return int(self.scalar("I", 4, what))

    def u64(self, what: str) -> int:
        return int(self.scalar("Q", 8, what))

    def string(self, what: str, limit: int = MAX_STRING_BYTES) -> str:
        n = self.u64(f"{what}'s length")
        if n > limit:
            raise _bad(f"{what} is {n} bytes long, past the limit of {limit}", "LIMIT")
        self.need(n, what)
        raw = bytes(self.view[self.pos : self.pos + n])
        self.pos += n
        # surrogateescape keeps a vocabulary's non-UTF-8 tokens recoverable as their bytes
        return raw.decode("utf-8", "surrogateescape")

    def numbers(self, code: str, size: int, count: int) -> array.array:
        raw = self.view[self.pos : self.pos + count * size]
        self.pos += count * size
        values = array.array("b" if code == "?" else code)
        values.frombytes(raw)
        if BIG_ENDIAN and size > 1:  # pragma: no cover - no big-endian host here
            values.byteswap()
        if code == "?":
            return array.array("B", (1 if v else 0 for v in values))
        return values


def _value(cur: _Cursor, vtype: int, key: str, depth: int = 0) -> Value:
    if vtype not in VALUE_TYPES:
        raise _bad(f"key {key!r}: unknown value type {vtype}")
    name, code, size = VALUE_TYPES[vtype]
    if vtype == STRING:
        return Value(name, cur.string(f"key {key!r}"))
    if vtype != ARRAY:
        v = cur.scalar(code or "", size, f"key {key!r}")
        return Value(name, bool(v) if name == "bool" else v)
    item = cur.u32(f"key {key!r}'s array item type")
    count = cur.u64(f"key {key!r}'s array count")
    if item not in VALUE_TYPES:
        raise _bad(f"key {key!r}: unknown array item type {item}")
    if item == ARRAY:
        raise _bad(f"key {key!r}: arrays of arrays are not read (llama.cpp refuses them too)")
    item_name, item_code, item_size = VALUE_TYPES[item]
    if count > MAX_ARRAY_ITEMS:
        raise _bad(
            f"key {key!r}: an array of {count} items, past the limit of {MAX_ARRAY_ITEMS}", "LIMIT"
        )
    # every item takes at least item_size bytes: a lying count is refused before any list
    cur.need(count * item_size, f"key {key!r}'s {count} items")
    if item == STRING:
        values: Any = [cur.string(f"key {key!r} item {i}") for i in range(count)]
    else:
        values = cur.numbers(item_code or "", item_size, count)
        if item_name == "bool":
            values = [bool(v) for v in values]
    return Value("array", values, item_name)


def _tensor_info(cur: _Cursor, index: int) -> tuple[str, int, tuple[int, ...], int]:
    name = cur.string(f"tensor {index}'s name", MAX_KEY_BYTES)
    where = f"tensor {name!r}"
    n_dims = cur.u32(f"{where}'s dimension count")
    if not 1 <= n_dims <= MAX_DIMS:
        raise _bad(f"{where} has {n_dims} dimensions (1 to {MAX_DIMS})")
    cur.need(8 * n_dims + 12, f"{where}'s dims, type and offset")
    dims = tuple(cur.u64(f"{where}'s dims") for _ in range(n_dims))
    type_id = cur.u32(f"{where}'s type")
    offset = cur.u64(f"{where}'s offset")
    if any(d < 1 for d in dims):
        raise _bad(f"{where} has dims {list(dims)}: every dimension must be at least 1")
    if type_id not in GGML_TYPES:
        raise _bad(f"{where} has unknown ggml type {type_id}")
    return name, type_id, dims, offset


def _tensor_bytes(name: str, type_id: int, dims: tuple[int, ...]) -> int:
    type_name, per_block, block_bytes = GGML_TYPES[type_id]
    if dims[0] % per_block:
        raise _bad(
            f"tensor {name!r} ({type_name}) has rows of {dims[0]} values, not a multiple "
            f"of its {per_block}-value blocks"
        )
    return math.prod(dims) // per_block * block_bytes


class GGUFFile:
    """The metadata and tensor table of one GGUF file held in memory (bytes, bytearray,
    memoryview or an mmap); tensor bytes are handed out as slices of it, never copied."""

    def __init__(self, data: Any) -> None:
        view = memoryview(data)
        self._data = view.cast("B") if view.format != "B" or view.ndim != 1 else view
        cur = _Cursor(self._data)
        cur.need(4, "the magic")
        if bytes(self._data[:4]) != MAGIC:
            raise _bad(f"not a GGUF file (magic {bytes(self._data[:4])!r}, expected {MAGIC!r})")
        cur.pos = 4
        self.version = cur.u32("the version")
        if self.version not in VERSIONS:
            raise _bad(
                f"version {self.version} is not read (versions {', '.join(map(str, VERSIONS))})"
            )
        n_tensors = cur.u64("the tensor count")
        n_kv = cur.u64("the metadata count")
        if n_tensors > MAX_TENSORS:
            raise _bad(f"the tensor count {n_tensors} is past the limit of {MAX_TENSORS}", "LIMIT")
        if n_kv > MAX_METADATA:
            raise _bad(f"the metadata count {n_kv} is past the limit of {MAX_METADATA}", "LIMIT")
        # each entry takes at least 8 + 4 (+ 1) bytes; each tensor info 8 + 4 + 8 + 4 + 8
        cur.need(n_kv * 13 + n_tensors * 32, f"{n_kv} metadata entries and {n_tensors} tensors")
        self.fields: dict[str, Value] = {}
        for i in range(n_kv):
            key = cur.string(f"metadata key {i}", MAX_KEY_BYTES)
            if key in self.fields:
                raise _bad(f"key {key!r} appears twice")
            self.fields[key] = _value(cur, cur.u32(f"key {key!r}'s type"), key)
        self.alignment = self._alignment()
        raw_infos = [_tensor_info(cur, i) for i in range(n_tensors)]
        self.data_start = cur.pos + (-cur.pos % self.alignment)
        self.tensors: dict[str, TensorInfo] = {}
        for name, type_id, dims, offset in raw_infos:
            self._add_tensor(name, type_id, dims, offset)
        self._check_overlap()

    # -- metadata ------------------------------------------------------------------------

    def _alignment(self) -> int:
        field = self.fields.get("general.alignment")
        if field is None:
            return DEFAULT_ALIGNMENT
        if field.type not in INTEGER_TYPES or not (
            0 < field.value <= MAX_ALIGNMENT and field.value & (field.value - 1) == 0
        ):
            raise _bad(
                f"key 'general.alignment' is {field.value!r} ({field.type}): it must be a "
                f"power of two up to {MAX_ALIGNMENT}"
            )
        return int(field.value)

    @property
    def metadata(self) -> dict[str, Any]:
        """Every key's plain value (arrays as lists or array.arrays)."""
        return {k: v.value for k, v in self.fields.items()}

    def __contains__(self, key: object) -> bool:
        return key in self.fields

    def get(self, key: str, default: Any = None) -> Any:
        field = self.fields.get(key)
        return default if field is None else field.value

    def integer(self, key: str, default: int | None = None) -> int:
        """An integer key (any integer type), or default when it is absent; a key of another
        type is refused naming it."""
        field = self.fields.get(key)
        if field is None:
            if default is None:
                raise _bad(f"key {key!r} is missing")
            return default
        if field.type not in INTEGER_TYPES:
            raise _bad(f"key {key!r} is a {field.type}, expected an integer")
        return int(field.value)

    def number(self, key: str, default: float | None = None) -> float:
        """A float or integer key as a float."""
        field = self.fields.get(key)
        if field is None:
            if default is None:
                raise _bad(f"key {key!r} is missing")
            return default
        if field.type not in ("float32", "float64") + INTEGER_TYPES:
            raise _bad(f"key {key!r} is a {field.type}, expected a number")
        return float(field.value)

    def string(self, key: str, default: str | None = None) -> str:
        field = self.fields.get(key)
        if field is None:
            if default is None:
                raise _bad(f"key {key!r} is missing")
            return default
        if field.type != "string":
            raise _bad(f"key {key!r} is a {field.type}, expected a string")
        return str(field.value)

    def array(self, key: str, item_types: tuple[str, ...]) -> Any:
        """An array key whose items are one of item_types (None when absent)."""
        field = self.fields.get(key)
        if field is None:
            return None
        if field.type != "array" or field.item_type not in item_types:
            what = field.type if field.type != "array" else f"array of {field.item_type}"
            raise _bad(f"key {key!r} is a {what}, expected an array of {' or '.join(item_types)}")
        return field.value

    # -- tensors -------------------------------------------------------------------------

    def _add_tensor(self, name: str, type_id: int, dims: tuple[int, ...], offset: int) -> None:
        if name in self.tensors:
            raise _bad(f"tensor {name!r} appears twice")
        nbytes = _tensor_bytes(name, type_id, dims)
        if offset % self.alignment:
            raise _bad(
                f"tensor {name!r} has offset {offset}, not a multiple of the alignment "
                f"{self.alignment}"
            )
        room = len(self._data) - self.data_start
        if offset > room or nbytes > room - offset:
            raise _bad(
                f"tensor {name!r} ({nbytes} bytes at offset {offset}) runs past the end of "
                f"the file (its data section has {max(room, 0)} bytes)"
            )
        start = self.data_start + offset
        self.tensors[name] = TensorInfo(name, type_id, dims, start, start + nbytes)

    def _check_overlap(self) -> None:
        spans = sorted((t.start, t.end, t.name) for t in self.tensors.values())
        for (_, end, first), (start, _, second) in itertools.pairwise(spans):
            if start < end:
                raise _bad(f"tensor {second!r}'s bytes overlap those of {first!r}")

    def info(self, name: str) -> TensorInfo:
        if name not in self.tensors:
            raise _bad(f"tensor {name!r} is not in the file")
        return self.tensors[name]

    def raw(self, name: str) -> memoryview:
        """The tensor's bytes (a slice of the file's memory, no copy)."""
        info = self.info(name)
        return self._data[info.start : info.end]

    def __len__(self) -> int:
        return len(self._data)


def read(data: Any) -> GGUFFile:
    """A GGUF file from bytes-like data (bytes, bytearray, memoryview, mmap, a uint8 array)."""
    return GGUFFile(data)


def open_gguf(source: Any) -> GGUFFile:
    """A GGUF file from a path (memory-mapped where the platform can), bytes-like data, or a
    binary file object (read whole)."""
    if isinstance(source, (str, Path)):
        return GGUFFile(_map(Path(source)))
    if hasattr(source, "read"):
        return GGUFFile(source.read())
    return GGUFFile(source)


def _map(path: Path) -> Any:
    try:
        import mmap

        with path.open("rb") as f:
            return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (ImportError, OSError, ValueError):  # no mmap (Pyodide), or an empty file
        return path.read_bytes()
