"""A pure-Python safetensors reader (works in Pyodide: no numpy, no torch).

The format (https://huggingface.co/docs/safetensors): 8 bytes of little-endian u64 header length
N, N bytes of a JSON object `{name: {"dtype", "shape", "data_offsets": [begin, end]}, ...,
"__metadata__": {str: str}}`, then the raw little-endian tensor bytes (offsets relative to the end
of the header). Tensors are handed out as memoryview slices of the file's bytes (no copy, no
per-element Python list): `raw(name)` the bytes, `float32(name)` a memoryview of format 'f'
(F16 / BF16 widened at C speed), `int32(name)` (I64 / I32 narrowed, range-checked).

Everything is checked before a tensor is handed out: the header length against the file size and
`MAX_HEADER_BYTES`, the JSON shape, every dtype, shape and offset pair against the data size and
the element count, and that no two tensors overlap. A bad file is refused with
GpuLabError("VALIDATION", "safetensors: tensor 'name': ...") naming the tensor.
"""

from __future__ import annotations

import array
import itertools
import json
import math
import struct
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpulab.errors import GpuLabError
from gpulab.models import untrusted_json

MAX_HEADER_BYTES = 100 * 1024 * 1024  # the reference implementation's limit
MAX_RANK = 8  # checked before a shape's product is taken (a checkpoint's tensors have <= 5)
ITEM_BYTES = {
    "F64": 8,
    "F32": 4,
    "F16": 2,
    "BF16": 2,
    "I64": 8,
    "I32": 4,
    "I16": 2,
    "I8": 1,
    "U8": 1,
    "BOOL": 1,
}
CHUNK = 1 << 16  # values widened per struct call
BIG_ENDIAN = sys.byteorder == "big"

__all__ = ["ITEM_BYTES", "SafeTensors", "TensorInfo", "encode", "load"]


def _bad(message: str, name: str | None = None) -> GpuLabError:
    where = f"tensor {name!r}: " if name is not None else ""
    return GpuLabError("VALIDATION", f"safetensors: {where}{message}")


@dataclass(frozen=True)
class TensorInfo:
    """One header entry, checked: `start`/`end` are absolute offsets into the file's bytes."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    start: int
    end: int

    @property
    def size(self) -> int:
        return math.prod(self.shape)


class SafeTensors:
    """The tensors of one safetensors file held in memory (bytes, bytearray or memoryview)."""

    def __init__(self, data: Any) -> None:
        view = memoryview(data).cast("B") if not isinstance(data, memoryview) else data.cast("B")
        self._data = view
        self.infos, self.metadata = _parse_header(view)

    def keys(self) -> list[str]:
        return list(self.infos)

    def __contains__(self, name: object) -> bool:
        return name in self.infos

    def info(self, name: str) -> TensorInfo:
        if name not in self.infos:
            raise _bad("not in the file", name)
        return self.infos[name]

    def shape(self, name: str) -> tuple[int, ...]:
        return self.info(name).shape

    def raw(self, name: str) -> memoryview:
        """The tensor's little-endian bytes (a slice of the file's bytes, no copy)."""
        info = self.info(name)
        return self._data[info.start : info.end]

    def float32(self, name: str) -> memoryview:
        """The values as a flat float32 memoryview (F32 without a copy where it can)."""
        info = self.info(name)
        raw = self.raw(name)
        if info.dtype == "F32":
            return _native(raw, "f")
        if info.dtype == "BF16":  # bf16 is the top half of a float32: interleave zero bytes
            out = bytearray(2 * len(raw))
            out[2::4], out[3::4] = raw[0::2], raw[1::2]
            return _native(memoryview(out), "f")
        if info.dtype == "F16":  # in slices: a tuple of every value at once would be huge
            out = array.array("f")
            for i in range(0, info.size, CHUNK):
                out.extend(struct.unpack_from(f"<{min(CHUNK, info.size - i)}e", raw, 2 * i))
            return memoryview(out)
        if info.dtype == "F64":
            return memoryview(array.array("f", struct.unpack(f"<{info.size}d", raw)))
        raise _bad(f"dtype {info.dtype} is not a float dtype", name)

    def int32(self, name: str) -> memoryview:
        """The values as a flat int32 memoryview (I64 narrowed: every value must fit)."""
        info = self.info(name)
        raw = self.raw(name)
        if info.dtype == "I32":
            return _native(raw, "i")
        if info.dtype != "I64":
            raise _bad(f"dtype {info.dtype} is not an integer dtype", name)
        wide = _native(raw, "q")
        if len(wide) and (max(wide) > 2**31 - 1 or min(wide) < -(2**31)):
            raise _bad("an I64 value does not fit in int32", name)
        return memoryview(array.array("i", wide))


def _native(raw: memoryview, code: str) -> memoryview:
    """Little-endian bytes as a memoryview of `code` (byte-swapped on a big-endian host)."""
    if not BIG_ENDIAN:
        return raw.cast(code)
    values = array.array(code)  # pragma: no cover - no big-endian host here
    values.frombytes(raw)
    values.byteswap()
    return memoryview(values)


def _parse_header(view: memoryview) -> tuple[dict[str, TensorInfo], dict[str, str]]:
    if len(view) < 8:
        raise _bad(f"the file has {len(view)} bytes, fewer than the 8 of the header length")
    (n,) = struct.unpack("<Q", view[:8])
    if n > MAX_HEADER_BYTES or 8 + n > len(view):
        raise _bad(
            f"header length {n} does not fit the file ({len(view)} bytes, at most "
            f"{MAX_HEADER_BYTES} of header)"
        )
    header = untrusted_json.loads(view[8 : 8 + n], "the header", "safetensors")
    if not isinstance(header, dict):
        raise _bad("the header is not a JSON object")
    metadata = header.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict):
        raise _bad("__metadata__ is not an object")
    base, size = 8 + n, len(view) - 8 - n
    infos = {name: _entry(name, entry, base, size) for name, entry in header.items()}
    _check_overlap(infos)
    return infos, {str(k): str(v) for k, v in metadata.items()}


def _entry(name: str, entry: Any, base: int, size: int) -> TensorInfo:
    if not isinstance(entry, dict):
        raise _bad("its entry is not an object", name)
    dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    if not isinstance(dtype, str) or dtype not in ITEM_BYTES:
        raise _bad(f"unknown dtype {_short(dtype)} (known: {', '.join(ITEM_BYTES)})", name)
    if isinstance(shape, list) and len(shape) > MAX_RANK:
        raise _bad(f"shape of rank {len(shape)}, more than {MAX_RANK}", name)
    if not isinstance(shape, list) or not all(_count(d) for d in shape):
        raise _bad(f"shape {_short(shape)} is not a list of non-negative integers", name)
    if (
        not isinstance(offsets, list)
        or len(offsets) != 2
        or not all(_count(o) for o in offsets)
        or offsets[0] > offsets[1]
    ):
        raise _bad(
            f"data_offsets {_short(offsets)} is not [begin, end] with 0 <= begin <= end", name
        )
    if offsets[1] > size:
        raise _bad(f"data_offsets {offsets} run past the data ({size} bytes)", name)
    want = math.prod(shape) * ITEM_BYTES[dtype]
    if offsets[1] - offsets[0] != want:
        raise _bad(f"holds {offsets[1] - offsets[0]} bytes but {dtype} {shape} needs {want}", name)
    return TensorInfo(name, dtype, tuple(shape), base + offsets[0], base + offsets[1])


def _short(value: Any, most: int = 80) -> str:
    """A header value as a message shows it: its repr, cut (a file may hold megabytes)."""
    text = repr(value)
    return text if len(text) <= most else text[:most] + "..."


def _count(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def _check_overlap(infos: dict[str, TensorInfo]) -> None:
    spans = sorted((i.start, i.end, i.name) for i in infos.values() if i.end > i.start)
    for (_, end, first), (start, _, second) in itertools.pairwise(spans):
        if start < end:
            raise _bad(f"its bytes overlap those of {first!r}", second)


def load(path: str | Path) -> SafeTensors:
    """Read a safetensors file into memory."""
    return SafeTensors(Path(path).read_bytes())


def encode(
    tensors: dict[str, tuple[str, list[int], Any]], metadata: dict[str, str] | None = None
) -> bytes:
    """A safetensors file of {name: (dtype, shape, little-endian bytes)}, in the given order
    (the server writes the quantized checkpoint with it)."""
    header: dict[str, Any] = {"__metadata__": dict(metadata)} if metadata else {}
    parts, offset = [], 0
    for name, (dtype, shape, data) in tensors.items():
        blob = bytes(data)
        header[name] = {
            "dtype": dtype,
            "shape": list(shape),
            "data_offsets": [offset, offset + len(blob)],
        }
        parts.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the data starts 8-byte aligned, as the reference writes
    return struct.pack("<Q", len(text)) + text + b"".join(parts)
