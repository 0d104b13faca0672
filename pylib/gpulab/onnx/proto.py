"""A bounded protobuf reader for onnx.proto's ModelProto, in pure Python (it runs in Pyodide).

Only the fields the loader uses are decoded; every other field is skipped by its wire type.
Every length is checked against the bytes that remain and against the limits (limits.py)
before anything is allocated, so hostile bytes end in GpuLabError (VALIDATION or LIMIT),
never in another exception. Tensor payloads stay bytes (raw_data, or packed repeated fields
re-packed with `array` at C speed), never per-element Python lists.
"""

from __future__ import annotations

import array
import struct
import sys
from dataclasses import dataclass, field

from ..errors import GpuLabError
from .limits import LIMITS

# TensorProto.DataType numbers the loader names in messages.
DATA_TYPES = {
    0: "UNDEFINED",
    1: "FLOAT",
    2: "UINT8",
    3: "INT8",
    4: "UINT16",
    5: "INT16",
    6: "INT32",
    7: "INT64",
    8: "STRING",
    9: "BOOL",
    10: "FLOAT16",
    11: "DOUBLE",
    12: "UINT32",
    13: "UINT64",
    14: "COMPLEX64",
    15: "COMPLEX128",
    16: "BFLOAT16",
    17: "FLOAT8E4M3FN",
    18: "FLOAT8E4M3FNUZ",
    19: "FLOAT8E5M2",
    20: "FLOAT8E5M2FNUZ",
    21: "UINT4",
    22: "INT4",
    23: "FLOAT4E2M1",
    24: "FLOAT8E8M0",
    25: "UINT2",
    26: "INT2",
}
# AttributeProto.AttributeType
ATTR_TYPES = {
    0: "UNDEFINED",
    1: "FLOAT",
    2: "INT",
    3: "STRING",
    4: "TENSOR",
    5: "GRAPH",
    6: "FLOATS",
    7: "INTS",
    8: "STRINGS",
    9: "TENSORS",
    10: "GRAPHS",
    11: "SPARSE_TENSOR",
    12: "SPARSE_TENSORS",
    13: "TYPE_PROTO",
    14: "TYPE_PROTOS",
}


def _bad(message: str) -> GpuLabError:
    return GpuLabError("VALIDATION", f"onnx: malformed model: {message}")


@dataclass
class TensorProto:
    name: str = ""
    dims: list[int] = field(default_factory=list)
    data_type: int = 0
    raw: bytes | None = None  # raw_data, or the typed repeated field packed little-endian
    external: bool = False
    int32_words: bool = False  # raw holds int32_data words carrying a narrower type


@dataclass
class ValueInfo:
    name: str = ""
    elem_type: int | None = None  # None: not a tensor type (sequence, map, ...)
    shape: list[int | str] | None = None  # None: no shape given; a str is a symbolic dim


@dataclass
class Attribute:
    name: str = ""
    type: int = 0
    f: float = 0.0
    i: int = 0
    s: bytes = b""
    t: TensorProto | None = None
    floats: list[float] = field(default_factory=list)
    ints: list[int] = field(default_factory=list)
    strings: list[bytes] = field(default_factory=list)
    has_graph: bool = False  # a subgraph (If, Loop, Scan): the loader refuses it


@dataclass
class Node:
    op_type: str = ""
    domain: str = ""
    name: str = ""
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    attrs: dict[str, Attribute] = field(default_factory=dict)


@dataclass
class GraphProto:
    name: str = ""
    nodes: list[Node] = field(default_factory=list)
    initializers: list[TensorProto] = field(default_factory=list)
    inputs: list[ValueInfo] = field(default_factory=list)
    outputs: list[ValueInfo] = field(default_factory=list)
    value_info: list[ValueInfo] = field(default_factory=list)
    sparse_initializers: int = 0


@dataclass
class ModelProto:
    ir_version: int = 0
    opsets: dict[str, int] = field(default_factory=dict)
    producer: str = ""
    graph: GraphProto = field(default_factory=GraphProto)
    functions: int = 0


class Reader:
    """The fields of one message in buf[pos:end]: (number, wire type, value) where value is an
    int (varint, fixed32, fixed64) or a (start, end) span of a length-delimited field."""

    def __init__(self, buf: memoryview, pos: int, end: int, what: str) -> None:
        self.buf, self.pos, self.end, self.what = buf, pos, end, what

    def varint(self) -> int:
        result = shift = 0
        buf, pos, end = self.buf, self.pos, self.end
        for _ in range(10):
            if pos >= end:
                raise _bad(f"{self.what}: a varint runs past the end of its message")
            b = buf[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                self.pos = pos
                return result & 0xFFFFFFFFFFFFFFFF
            shift += 7
        raise _bad(f"{self.what}: a varint longer than 10 bytes")

    def fields(self):
        while self.pos < self.end:
            key = self.varint()
            number, wire = key >> 3, key & 7
            if number == 0:
                raise _bad(f"{self.what}: field number 0")
            if wire == 0:
                yield number, wire, self.varint()
            elif wire == 2:
                n = self.varint()
                if n > self.end - self.pos:
                    raise _bad(
                        f"{self.what}: field {number} says {n} bytes, {self.end - self.pos} remain"
                    )
                start = self.pos
                self.pos += n
                yield number, wire, (start, self.pos)
            elif wire in (1, 5):
                n = 8 if wire == 1 else 4
                if n > self.end - self.pos:
                    raise _bad(f"{self.what}: a fixed field runs past the end of its message")
                value = int.from_bytes(self.buf[self.pos : self.pos + n], "little")
                self.pos += n
                yield number, wire, value
            else:
                raise _bad(
                    f"{self.what}: field {number} has wire type {wire} (groups and "
                    f"unknown wire types are not read)"
                )

    def sub(self, span: tuple[int, int], what: str) -> Reader:
        return Reader(self.buf, span[0], span[1], what)

    def text(self, span: tuple[int, int], what: str) -> str:
        if span[1] - span[0] > LIMITS["max_string_bytes"]:
            raise GpuLabError(
                "LIMIT", f"onnx: {what} is {span[1] - span[0]} bytes > {LIMITS['max_string_bytes']}"
            )
        try:
            return bytes(self.buf[span[0] : span[1]]).decode("utf-8")
        except UnicodeDecodeError:
            raise _bad(f"{what} is not UTF-8") from None

    def raw(self, span: tuple[int, int]) -> bytes:
        return bytes(self.buf[span[0] : span[1]])


def _signed64(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def _signed32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


class _Counter:
    """Counts what a model holds against the limits while it is read."""

    def __init__(self) -> None:
        self.nodes = 0
        self.values = 0  # repeated scalars read into lists (dims, ints, floats)

    def list_items(self, n: int, what: str) -> None:
        self.values += n
        if self.values > LIMITS["max_list_values"]:
            raise GpuLabError(
                "LIMIT",
                f"onnx: {what}: more than {LIMITS['max_list_values']} "
                f"listed values in the model (dims, ints, floats)",
            )


_CONTINUED = bytes(range(0x80, 0x100))


def _varint_count(r: Reader, span: tuple[int, int]) -> int:
    """How many varints a packed span holds, counted at C speed without decoding them (a
    span of more than 10 x max_list_values bytes is refused unread: it holds more)."""
    n = span[1] - span[0]
    if n > 10 * LIMITS["max_list_values"]:
        return n // 10
    return len(r.raw(span).translate(None, _CONTINUED))


def _ints(
    r: Reader, wire: int, value, out: list[int], count: _Counter, what: str, signed32: bool = False
) -> None:
    """A repeated int field, packed (wire 2) or one element (wire 0)."""
    conv = _signed32 if signed32 else _signed64
    if wire == 0:
        count.list_items(1, what)
        out.append(conv(value))
        return
    if wire != 2:
        raise _bad(f"{what}: wire type {wire} for a repeated int")
    count.list_items(_varint_count(r, value), what)
    sub = r.sub(value, what)
    while sub.pos < sub.end:
        out.append(conv(sub.varint()))


def _floats(r: Reader, wire: int, value, out: list[float], count: _Counter, what: str) -> None:
    if wire == 5:
        count.list_items(1, what)
        out.append(struct.unpack("<f", value.to_bytes(4, "little"))[0])
        return
    if wire != 2 or (value[1] - value[0]) % 4:
        raise _bad(
            f"{what}: a packed float field of {value[1] - value[0]} bytes"
            if wire == 2
            else f"{what}: wire type {wire} for a repeated float"
        )
    n = (value[1] - value[0]) // 4
    count.list_items(n, what)
    out.extend(struct.unpack(f"<{n}f", r.raw(value)))


def _expect(wire: int, want: int, what: str) -> None:
    if wire != want:
        raise _bad(f"{what}: wire type {wire}, expected {want}")


# Typed repeated fields of TensorProto: field number -> (array typecode, data types it holds).
_TYPED_FIELDS = {4: "f", 5: "i", 7: "q", 10: "d", 11: "Q"}
_FIELD_NAMES = {
    4: "float_data",
    5: "int32_data",
    7: "int64_data",
    10: "double_data",
    11: "uint64_data",
}
# int32_data also carries these types' values, one element per entry.
_INT32_CARRIED = {"INT32", "INT16", "INT8", "UINT16", "UINT8", "BOOL", "FLOAT16", "BFLOAT16"}


def _packed_varints(
    r: Reader, wire: int, value, code: str, out: array.array, count: _Counter, what: str
) -> None:
    if wire == 0:
        items = [value]
        count.list_items(1, what)
    elif wire == 2:
        # counted before decoding: a packed field of n bytes holds between n / 10 and n
        # varints, exactly as many as bytes without the continuation bit
        count.list_items(_varint_count(r, value), what)
        sub = r.sub(value, what)
        items = []
        while sub.pos < sub.end:
            items.append(sub.varint())
    else:
        raise _bad(f"{what}: wire type {wire} for a repeated int")
    conv = _signed32 if code == "i" else (_signed64 if code == "q" else (lambda v: v))
    out.extend(conv(v) for v in items)


def read_tensor(r: Reader, span, count: _Counter, what: str) -> TensorProto:
    t = TensorProto()
    sub = r.sub(span, what)
    typed: dict[int, array.array] = {}
    for number, wire, value in sub.fields():
        if number == 1:
            _ints(sub, wire, value, t.dims, count, f"{what} dims")
        elif number == 2:
            _expect(wire, 0, f"{what} data_type")
            t.data_type = _signed32(value)
        elif number == 8:
            _expect(wire, 2, f"{what} name")
            t.name = sub.text(value, f"{what} name")
            what = f"tensor {t.name!r}"
        elif number == 9:
            _expect(wire, 2, f"{what} raw_data")
            t.raw = sub.raw(value)
        elif number in (4, 10):  # float_data, double_data: fixed-width
            code = _TYPED_FIELDS[number]
            width = 4 if code == "f" else 8
            buf = typed.setdefault(number, array.array(code))
            if wire == 2:
                if (value[1] - value[0]) % width:
                    raise _bad(f"{what}: packed field {number} of {value[1] - value[0]} bytes")
                buf.frombytes(sub.raw(value))
            elif wire == (5 if width == 4 else 1):
                buf.frombytes(value.to_bytes(width, "little"))
            else:
                raise _bad(f"{what}: wire type {wire} for field {number}")
        elif number in (5, 7, 11):  # int32_data, int64_data, uint64_data: varints
            code = _TYPED_FIELDS[number]
            _packed_varints(
                sub,
                wire,
                value,
                code,
                typed.setdefault(number, array.array(code)),
                count,
                f"{what} {_FIELD_NAMES[number]}",
            )
        elif number == 14:
            _expect(wire, 0, f"{what} data_location")
            t.external = value == 1
        elif number == 13:
            t.external = True
    if t.raw is None and typed:
        if len(typed) > 1:
            raise _bad(f"{what} holds two typed data fields")
        ((number, buf),) = typed.items()
        if sys.byteorder == "big":  # pragma: no cover - every supported host is little-endian
            buf.byteswap()
        t.raw = buf.tobytes()
        _typed_ok(t, _FIELD_NAMES[number], what)
    return t


def _typed_ok(t: TensorProto, field_name: str, what: str) -> None:
    """The loader reads typed fields as the element type they say; int32_data holding a
    narrower type is re-read by the loader (it knows the element count)."""
    kind = DATA_TYPES.get(t.data_type, str(t.data_type))
    fits = {
        "float_data": {"FLOAT"},
        "int64_data": {"INT64"},
        "double_data": {"DOUBLE"},
        "uint64_data": {"UINT64", "UINT32"},
        "int32_data": _INT32_CARRIED,
    }[field_name]
    if kind not in fits:
        raise _bad(f"{what}: {field_name} holds data of type {kind}")
    if field_name == "int32_data" and kind != "INT32":
        t.int32_words = True


def _read_dim(r: Reader, span, what: str) -> int | str:
    sub = r.sub(span, what)
    dim: int | str = "?"
    for number, wire, value in sub.fields():
        if number == 1 and wire == 0:
            dim = _signed64(value)
        elif number == 2 and wire == 2:
            dim = sub.text(value, f"{what} dim_param") or "?"
    return dim


def read_value_info(r: Reader, span, count: _Counter, what: str) -> ValueInfo:
    v = ValueInfo()
    sub = r.sub(span, what)
    for number, wire, value in sub.fields():
        if number == 1:
            _expect(wire, 2, f"{what} name")
            v.name = sub.text(value, f"{what} name")
        elif number == 2:
            _expect(wire, 2, f"{what} type")
            _read_type(sub, value, v, count, f"value {v.name!r}")
    return v


def _read_type(r: Reader, span, v: ValueInfo, count: _Counter, what: str) -> None:
    sub = r.sub(span, what)
    for number, wire, value in sub.fields():
        if number != 1:
            continue  # sequence, map, optional, sparse: elem_type stays None (refused later)
        _expect(wire, 2, f"{what} tensor_type")
        tt = sub.sub(value, what)
        v.elem_type = 0
        for n2, w2, val2 in tt.fields():
            if n2 == 1:
                _expect(w2, 0, f"{what} elem_type")
                v.elem_type = _signed32(val2)
            elif n2 == 2:
                _expect(w2, 2, f"{what} shape")
                v.shape = []
                shape = tt.sub(val2, what)
                for n3, w3, val3 in shape.fields():
                    if n3 == 1:
                        _expect(w3, 2, f"{what} dim")
                        count.list_items(1, f"{what} dims")
                        v.shape.append(_read_dim(shape, val3, what))


def read_attribute(r: Reader, span, count: _Counter, what: str) -> Attribute:
    a = Attribute()
    sub = r.sub(span, what)
    for number, wire, value in sub.fields():
        if number == 1:
            _expect(wire, 2, f"{what} name")
            a.name = sub.text(value, f"{what} name")
            what = f"{what} attribute {a.name!r}"
        elif number == 20:
            _expect(wire, 0, f"{what} type")
            a.type = _signed32(value)
        elif number == 2:
            _expect(wire, 5, f"{what} f")
            a.f = struct.unpack("<f", value.to_bytes(4, "little"))[0]
        elif number == 3:
            _expect(wire, 0, f"{what} i")
            a.i = _signed64(value)
        elif number == 4:
            _expect(wire, 2, f"{what} s")
            if value[1] - value[0] > LIMITS["max_string_bytes"]:
                raise GpuLabError(
                    "LIMIT", f"onnx: {what} is longer than {LIMITS['max_string_bytes']} bytes"
                )
            a.s = sub.raw(value)
        elif number == 5:
            _expect(wire, 2, f"{what} t")
            a.t = read_tensor(sub, value, count, f"{what} tensor")
        elif number in (6, 11):
            a.has_graph = True  # the bytes are not decoded: subgraphs are refused
        elif number == 7:
            _floats(sub, wire, value, a.floats, count, what)
        elif number == 8:
            _ints(sub, wire, value, a.ints, count, what)
        elif number == 9:
            _expect(wire, 2, f"{what} strings")
            count.list_items(1, what)
            a.strings.append(sub.raw(value))
    return a


def read_node(r: Reader, span, count: _Counter, index: int) -> Node:
    n = Node()
    what = f"node {index}"
    sub = r.sub(span, what)
    for number, wire, value in sub.fields():
        if wire != 2:
            continue
        if number == 1:
            count.list_items(1, what)
            n.inputs.append(sub.text(value, f"{what} input"))
        elif number == 2:
            count.list_items(1, what)
            n.outputs.append(sub.text(value, f"{what} output"))
        elif number == 3:
            n.name = sub.text(value, f"{what} name")
        elif number == 4:
            n.op_type = sub.text(value, f"{what} op_type")
        elif number == 7:
            n.domain = sub.text(value, f"{what} domain")
        elif number == 5:
            a = read_attribute(sub, value, count, f"{what} ({n.op_type or '?'})")
            if a.name in n.attrs:
                raise _bad(f"{what}: attribute {a.name!r} given twice")
            n.attrs[a.name] = a
    return n


def read_graph(r: Reader, span, count: _Counter) -> GraphProto:
    g = GraphProto()
    sub = r.sub(span, "graph")
    for number, wire, value in sub.fields():
        if wire != 2:
            continue
        if number == 1:
            count.nodes += 1
            if count.nodes > LIMITS["max_nodes"]:
                raise GpuLabError(
                    "LIMIT", f"onnx: the graph has more than {LIMITS['max_nodes']} nodes"
                )
            g.nodes.append(read_node(sub, value, count, len(g.nodes)))
        elif number == 2:
            g.name = sub.text(value, "graph name")
        elif number == 5:
            if len(g.initializers) >= LIMITS["max_nodes"]:
                raise GpuLabError("LIMIT", f"onnx: more than {LIMITS['max_nodes']} initializers")
            g.initializers.append(
                read_tensor(sub, value, count, f"initializer {len(g.initializers)}")
            )
        elif number == 15:
            g.sparse_initializers += 1
        elif number in (11, 12, 13):
            target = {11: g.inputs, 12: g.outputs, 13: g.value_info}[number]
            if len(target) >= LIMITS["max_nodes"]:
                raise GpuLabError("LIMIT", f"onnx: more than {LIMITS['max_nodes']} graph values")
            target.append(read_value_info(sub, value, count, "graph value"))
    return g


def read_model(data: bytes | bytearray | memoryview) -> ModelProto:
    """Decode a ModelProto, or GpuLabError (VALIDATION for malformed bytes, LIMIT past a
    limit)."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise GpuLabError("VALIDATION", f"onnx: model bytes expected, got {type(data).__name__}")
    buf = memoryview(data).cast("B")
    if len(buf) > LIMITS["max_model_bytes"]:
        raise GpuLabError(
            "LIMIT", f"onnx: the model is {len(buf)} bytes > {LIMITS['max_model_bytes']}"
        )
    r = Reader(buf, 0, len(buf), "model")
    m = ModelProto()
    count = _Counter()
    seen_graph = False
    for number, wire, value in r.fields():
        if number == 1:
            _expect(wire, 0, "model ir_version")
            m.ir_version = _signed64(value)
        elif number == 2 and wire == 2:
            m.producer = r.text(value, "producer_name")
        elif number == 8:
            _expect(wire, 2, "model opset_import")
            domain, version = "", 0
            sub = r.sub(value, "opset_import")
            for n2, w2, v2 in sub.fields():
                if n2 == 1 and w2 == 2:
                    domain = sub.text(v2, "opset domain")
                elif n2 == 2 and w2 == 0:
                    version = _signed64(v2)
            if len(m.opsets) >= 64:
                raise GpuLabError("LIMIT", "onnx: more than 64 opset imports")
            m.opsets["ai.onnx" if domain == "" else domain] = version
        elif number == 7:
            _expect(wire, 2, "model graph")
            if seen_graph:
                raise _bad("two graphs in one model")
            seen_graph = True
            m.graph = read_graph(r, value, count)
        elif number == 25:
            m.functions += 1
    if not seen_graph:
        raise _bad("no graph (is this an ONNX model?)")
    return m
