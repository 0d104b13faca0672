"""Graph validation and shape inference: the Python twin of backends-js/src/validate.mjs.

`validate(graph)` implements docs/protocol.md: the checks run in the documented order so both
validators report the same first error, every message names the node as `node <id> (<op>)`,
and the result is a `CheckedGraph`. Pure Python: numpy is accepted as input data but never needed.
"""

from __future__ import annotations

import array
import heapq
import math
import reprlib
from dataclasses import dataclass, field
from typing import Any

from . import optable
from .dtypes import DTYPES, as_number, block_shape_problem, result_dtype, to_typed
from .errors import GpuLabError
from .shapes import SHAPE_RULES, Shape, ShapeError, element_count, reduce_shape
from .shapes_conv import ConvLimitError
from .values import check_values
from .wgsl_check import ATTR_CHECKERS as WGSL_ATTR_CHECKERS
from .wgsl_check import NODE_DTYPE_RULES, NODE_SHAPE_RULES

__all__ = [
    "CheckedGraph",
    "CheckedNode",
    "Output",
    "check_attrs",
    "infer_node",
    "label",
    "node_version",
    "node_version_reason",
    "to_float32_array",
    "validate",
]

NONFINITE_STRINGS = {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf")}
TOP_LEVEL_FIELDS = ("version", "nodes", "outputs")
# Output names no result may use: `outputs[name] = ...` on a JS object sets its prototype
# instead (the output vanished in the page); refused by both validators, so also natively.
RESERVED_NAMES = ("__proto__",)


@dataclass(frozen=True)
class Output:
    """One named output of a graph."""

    name: str
    id: int


@dataclass
class CheckedNode:
    """A validated node: operands in op-table order, normalized attrs, inferred shape."""

    id: int
    op: str
    operands: tuple[int, ...]
    attrs: dict[str, Any]
    shape: Shape = ()
    # an input's values given by value: array.array of the dtype (gpulab.dtypes.TYPECODE)
    data: array.array | None = None
    version: int = 1  # the protocol version this node needs (op, dtype or feature)
    dtype: str = "float32"  # the result's dtype (op table types / result_type)
    why: str = ""  # what makes `version` necessary (for UNSUPPORTED_VERSION messages)


@dataclass
class CheckedGraph:
    """A validated graph: every node in input order, the execution order and the outputs."""

    version: int
    required_version: int
    nodes: list[CheckedNode]
    order: list[int]
    outputs: list[Output]
    by_id: dict[int, CheckedNode] = field(default_factory=dict, repr=False)
    # facts derived from the structure alone (the plan cache's key), computed once: validate_cache shares one memo among the checked graphs of one
    # structure. Never anything of the data.
    memo: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxlist, _REPR.maxtuple, _REPR.maxdict = 3, 8, 8, 4
_REPR.maxstring = _REPR.maxother = _REPR.maxlong = 60


def _show(value: Any) -> str:
    """A value in a message: repr, cut short (a hostile value may be nested a thousand deep or
    hold a million numbers; the message must not recurse or grow with it)."""
    return _REPR.repr(value)


def label(node_id: Any, op: Any) -> str:
    """How every message names a node: `node <id> (<op>)`."""
    return f"node {node_id} ({op if isinstance(op, str) else _show(op)})"


def _fail(code: str, message: str, node: int | None = None) -> GpuLabError:
    return GpuLabError(code, message, node)


def _as_int(value: Any) -> int | None:
    """The integer a JSON number stands for (1.0 counts, as in JS), or None. Booleans are not."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if _is_numpy_integer(value):
        return int(value)
    return None


MAX_ID = 2**53 - 1  # JS numbers merge larger integers (2^53 + 1 reads as 2^53): refused both sides


def _as_id(value: Any) -> int | None:
    """A node id (node, operand or output): an integer in 0..2^53-1, or None."""
    n = _as_int(value)
    return n if n is not None and 0 <= n <= MAX_ID else None


def _is_numpy_integer(value: Any) -> bool:
    kind = getattr(getattr(value, "dtype", None), "kind", None)
    return kind in ("i", "u") and getattr(value, "shape", None) == ()


# ---------------------------------------------------------------------------------------------
# Data: lists, typed arrays, buffers and numpy arrays become array('f')


def to_float32_array(data: Any, where: str, node: int | None = None) -> array.array:
    """Flat float32 values from a list, array.array, memoryview, bytes-like or numpy array.

    Lists hold numbers or the strings "nan", "inf", "-inf"; nested lists are refused (protocol
    data is flat). Raises GpuLabError(VALIDATION) naming `where` (and carrying `node`).
    Any dtype: gpulab.dtypes.to_typed.
    """
    return to_typed(data, "float32", where, node)


# ---------------------------------------------------------------------------------------------
# Attribute checkers, keyed by the op table's attr types


def _check_shape(value: Any, where: str, node: int | None, _: dict) -> Shape:
    lim = optable.limits()
    if not isinstance(value, (list, tuple)):
        raise _fail("VALIDATION", f"{where}: shape must be a list of integers", node)
    if len(value) > lim["max_rank"]:
        raise _fail(
            "LIMIT",
            f"{where}: shape {_show(list(value))} has rank {len(value)} > max_rank "
            f"{lim['max_rank']}",
            node,
        )
    dims = []
    for d in value:
        n = _as_int(d)
        if n is None or n < 0:
            raise _fail(
                "VALIDATION",
                f"{where}: shape {_show(list(value))} must hold integers >= 0 (got {_show(d)})",
                node,
            )
        dims.append(n)
    shape = tuple(dims)
    if element_count(shape) > lim["max_elements"]:
        raise _fail(
            "LIMIT",
            f"{where}: shape {list(shape)} has {element_count(shape)} elements "
            f"> max_elements {lim['max_elements']}",
            node,
        )
    return shape


def _check_data(value: Any, where: str, node: int | None, checked: dict) -> array.array:
    # the length is checked before the values, as in the JS twin, so both report the same error
    return to_typed(value, checked["dtype"], where, node, checked["shape"])


def _check_dtype(value: Any, where: str, node: int | None, checked: dict) -> str:
    if not isinstance(value, str) or value not in DTYPES:
        raise _fail(
            "VALIDATION",
            f"{where}: dtype must be one of {', '.join(DTYPES)}, got {_show(value)}",
            node,
        )
    # a block-quantized input is [N, K] with whole blocks along K (the shape is checked first)
    problem = block_shape_problem(value, checked["shape"]) if "shape" in checked else None
    if problem:
        raise _fail("VALIDATION", f"{where.split(' attribute')[0]}: {problem}", node)
    return value


def _check_int(value: Any, where: str, node: int | None, _: dict, spec: dict) -> int:
    """An integer in the row's [min, max] (matmul_fixed's frac_bits)."""
    n = _as_int(value)
    if n is None or not spec["min"] <= n <= spec["max"]:
        raise _fail(
            "VALIDATION",
            f"{where}: must be an integer in {spec['min']}..{spec['max']}, got {_show(value)}",
            node,
        )
    return n


def _check_dim(value: Any, where: str, node: int | None, checked: dict) -> int:
    """A required axis (the selection ops): an integer in -max_rank..max_rank-1, checked against
    the operand's rank by the shape rule."""
    rank = optable.limits()["max_rank"]
    return _check_int(value, where, node, checked, {"min": -rank, "max": rank - 1})


def _check_value(value: Any, where: str, node: int | None, _: dict) -> float:
    """`full.value`: a number or one of the non-finite strings."""
    number = as_number(value)
    if number is None and isinstance(value, str) and value in NONFINITE_STRINGS:
        number = NONFINITE_STRINGS[value]
    if number is None:
        raise _fail("VALIDATION", f"{where}: value must be a number, got {_show(value)}", node)
    return number


def _check_float(value: Any, where: str, node: int | None, _: dict) -> float:
    # Float attributes are float32 values (every GPU and wasm path uses them so); rounding
    # here gives every backend the same number.
    number = as_number(value)
    rounded = _float32(number) if number is not None and math.isfinite(number) else math.inf
    if not math.isfinite(rounded):
        raise _fail(
            "VALIDATION", f"{where}: expected a finite float32 number, got {_show(value)}", node
        )
    return rounded


def _check_uint32(value: Any, where: str, node: int | None, _: dict) -> int:
    # seeds (hash_uniform, dropout): an integer a uint32 holds
    n = _as_int(value)
    if n is None or not 0 <= n <= 0xFFFFFFFF:
        raise _fail(
            "VALIDATION", f"{where}: must be an integer in 0..4294967295, got {_show(value)}", node
        )
    return n


def _check_probability(value: Any, where: str, node: int | None, _: dict) -> float:
    # dropout's p: a float32 in [0, 1), checked after rounding (0.99999999 rounds to 1)
    number = as_number(value)
    p = _float32(number) if number is not None else math.nan
    if not 0.0 <= p < 1.0:
        raise _fail(
            "VALIDATION", f"{where}: must be a float32 number in [0, 1), got {_show(value)}", node
        )
    return p


def _check_optional_float(value: Any, where: str, node: int | None, checked: dict) -> float | None:
    # clamp's bounds: a float attribute where null means "no bound"
    if value is None:
        return None
    return _check_float(value, where, node, checked)


def _float32(x: float) -> float:
    """x rounded to the nearest float32 (inf past its range)."""
    try:
        return array.array("f", [x])[0]
    except OverflowError:
        return math.inf


def _check_axis(value: Any, where: str, node: int | None, _: dict) -> int | None:
    if value is None:
        return None
    n = _as_int(value)
    if n is None:
        raise _fail(
            "VALIDATION", f"{where}: axis must be an integer or null, got {_show(value)}", node
        )
    return n


def _check_bool(value: Any, where: str, node: int | None, _: dict) -> bool:
    if not isinstance(value, bool):
        raise _fail("VALIDATION", f"{where}: expected a boolean, got {_show(value)}", node)
    return value


def _check_perm(value: Any, where: str, node: int | None, _: dict) -> tuple[int, ...]:
    ints = [_as_int(d) for d in value] if isinstance(value, (list, tuple)) else None
    if ints is None or any(d is None for d in ints):
        raise _fail(
            "VALIDATION", f"{where}: dims must be a list of integers, got {_show(value)}", node
        )
    return tuple(ints)


def _check_reshape(value: Any, where: str, node: int | None, _: dict) -> tuple[int, ...]:
    # order as in the JS twin: entries, then the -1 count, then the rank limit
    lim = optable.limits()
    dims = [_as_int(d) for d in value] if isinstance(value, (list, tuple)) else [None]
    if any(d is None or d < -1 for d in dims):
        raise _fail(
            "VALIDATION",
            f"{where}: shape must be a list of integers >= 0 or -1, got {_show(value)}",
            node,
        )
    if dims.count(-1) > 1:
        raise _fail("VALIDATION", f"{where}: shape {dims} has more than one -1", node)
    if len(dims) > lim["max_rank"]:
        raise _fail(
            "LIMIT",
            f"{where}: shape {dims} has rank {len(dims)} > max_rank {lim['max_rank']}",
            node,
        )
    return tuple(dims)  # type: ignore[arg-type]


def _check_slices(value: Any, where: str, node: int | None, _: dict) -> list[list[int | None]]:
    # slice / slice_scatter: one [start, stop, step] per axis; start/stop None or an integer,
    # step None (1) or a non-zero integer
    def entry(e: Any) -> list[int | None] | None:
        if not isinstance(e, (list, tuple)) or len(e) != 3:
            return None
        ints = [None if x is None else _as_int(x) for x in e]
        if any(x is None and v is not None for x, v in zip(ints, e)) or ints[2] == 0:
            return None
        return ints

    entries = [entry(e) for e in value] if isinstance(value, (list, tuple)) else [None]
    if any(e is None for e in entries):
        raise _fail(
            "VALIDATION",
            f"{where}: slices must be a list of [start, stop, step] "
            f"(integers or null, step not 0), got {_show(value)}",
            node,
        )
    return entries  # type: ignore[return-value]


def _check_pad_widths(value: Any, where: str, node: int | None, _: dict) -> list[list[int]]:
    # pad: one [before, after] per axis, integers >= 0
    def entry(e: Any) -> list[int] | None:
        if not isinstance(e, (list, tuple)) or len(e) != 2:
            return None
        ints = [_as_int(x) for x in e]
        return None if any(x is None or x < 0 for x in ints) else ints  # type: ignore[return-value]

    entries = [entry(e) for e in value] if isinstance(value, (list, tuple)) else [None]
    if any(e is None for e in entries):
        raise _fail(
            "VALIDATION",
            f"{where}: widths must be a list of [before, after] "
            f"(integers >= 0), got {_show(value)}",
            node,
        )
    return entries  # type: ignore[return-value]


def _int_list(value: Any, count: int, low: int) -> list[int] | None:
    if not isinstance(value, (list, tuple)) or len(value) != count:
        return None
    ints = [_as_int(x) for x in value]
    return None if any(x is None or x < low for x in ints) else ints  # type: ignore[return-value]


def _check_pair(value: Any, where: str, node: int | None, _: dict) -> list[int]:
    # the v6 window ops' strides, dilations, kernel, resize's size: [h, w], integers >= 1
    pair = _int_list(value, 2, 1)
    if pair is None:
        raise _fail(
            "VALIDATION", f"{where}: must be a list of 2 integers >= 1, got {_show(value)}", node
        )
    return pair


def _check_pads4(value: Any, where: str, node: int | None, _: dict) -> list[int]:
    # the v6 window ops' padding: [top, left, bottom, right] (ONNX's pads order)
    pads = _int_list(value, 4, 0)
    if pads is None:
        raise _fail(
            "VALIDATION",
            f"{where}: must be a list of 4 integers >= 0 [top, left, "
            f"bottom, right], got {_show(value)}",
            node,
        )
    return pads


def _check_choice(value: Any, where: str, node: int | None, _: dict, spec: dict) -> str:
    """One of the row's values (resize's modes): anything else is refused by name."""
    if not isinstance(value, str) or value not in spec["values"]:
        raise _fail(
            "VALIDATION",
            f"{where}: must be one of {', '.join(spec['values'])}, got {_show(value)}",
            node,
        )
    return value


ATTR_CHECKERS = {
    "pair": _check_pair,
    "pads4": _check_pads4,
    "slices": _check_slices,
    "pad_widths": _check_pad_widths,
    "scalar": _check_value,
    "shape": _check_shape,
    "data": _check_data,
    "dtype": _check_dtype,
    "float": _check_float,
    "optional_float": _check_optional_float,
    "uint32": _check_uint32,
    "probability": _check_probability,
    "axis": _check_axis,
    "dim": _check_dim,
    "bool": _check_bool,
    "perm": _check_perm,
    "reshape": _check_reshape,
    **WGSL_ATTR_CHECKERS,  # the student wgsl op's attributes (wgsl_check.py)
}


def check_attrs(node_id: int, op: str, given: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    """Type-check an op's attributes (op-table order), fill defaults.

    Returns (attrs, data): `data` is the float32 array of an input given by value, else None.
    """
    where = label(node_id, op)
    checked: dict[str, Any] = {}
    for name, spec in optable.ops()[op]["attrs"].items():
        if name not in given:
            if spec.get("required"):
                raise _fail("VALIDATION", f"{where}: missing attribute '{name}'", node_id)
            if "default" in spec:
                default = spec["default"]
                checked[name] = _float32(default) if spec["type"] == "float" else default
            continue
        kind = "value" if (op, name) == ("full", "value") else spec["type"]
        # data messages are the JS twin's word for word ("node 0 (input): data ...")
        context = (
            where
            if kind == "data" or kind in WGSL_ATTR_CHECKERS
            else (f"{where} attribute '{name}'")
        )
        if kind in ("int", "choice"):  # checkers that read the row's spec (min/max, values)
            check = _check_int if kind == "int" else _check_choice
            checked[name] = check(given[name], context, node_id, checked, spec)
            continue
        checker = _check_value if kind == "value" else ATTR_CHECKERS[kind]
        checked[name] = checker(given[name], context, node_id, checked)
    data = checked.pop("data", None)
    return checked, data


# ---------------------------------------------------------------------------------------------
# Shape inference and per-node version


def infer_node(
    node_id: int, op: str, attrs: dict[str, Any], operand_shapes: list[Shape]
) -> tuple[Shape, dict[str, Any]]:
    """Result shape and normalized attrs by the op's shape rule; VALIDATION naming the node."""
    name = optable.ops()[op]["shape_rule"]
    rule = SHAPE_RULES[name]
    try:
        if name == "reduce":  # the only rule that reads the op (over_empty: refused or not)
            return reduce_shape(op, operand_shapes[0], attrs)
        return rule(operand_shapes, attrs)
    except ShapeError as err:
        raise _fail("VALIDATION", f"{label(node_id, op)}: {err}", node_id) from None
    except ConvLimitError as err:  # a v6 window op past max_macs_per_node / max_resize_product
        raise _fail("LIMIT", f"{label(node_id, op)}: {err}", node_id) from None


def _is_scalar_like(shape: Shape) -> bool:
    return len(shape) <= 1 and element_count(shape) == 1


FEATURE_USED = {
    "broadcast": lambda shapes, attrs: (
        shapes[0] != shapes[1] and not _is_scalar_like(shapes[0]) and not _is_scalar_like(shapes[1])
    ),
    "batched": lambda shapes, attrs: any(len(s) > 2 for s in shapes),
    "axis": lambda shapes, attrs: attrs.get("axis") is not None or bool(attrs.get("keepdim")),
}


# features of any node's tensors (the op table's `tensor_features`): its result shape, or an
# axis attribute on a rank-0 operand a
TENSOR_FEATURE_USED = {
    "high_rank": lambda shape, shapes, attrs: len(shape) > 4,
    "zero_size": lambda shape, shapes, attrs: 0 in shape,
    "scalar_axis": lambda shape, shapes, attrs: (
        attrs.get("axis") is not None and bool(shapes) and len(shapes[0]) == 0
    ),
}


def node_version(
    op: str,
    operand_shapes: list[Shape],
    attrs: dict[str, Any],
    dtype: str = "float32",
    shape: Shape = (),
) -> int:
    """The version a node needs: the highest of its op's `since`, its dtype's `since`, the
    versions (`features`: feature -> version) of the features it uses and of its tensor
    features (`tensor_features`)."""
    return node_version_reason(op, operand_shapes, attrs, dtype, shape)[0]


def node_version_reason(
    op: str,
    operand_shapes: list[Shape],
    attrs: dict[str, Any],
    dtype: str = "float32",
    shape: Shape = (),
) -> tuple[int, str]:
    """(version, why): why names the first of op, dtype, features, tensor features (table
    order) reaching it."""
    row = optable.ops()[op]
    reasons = [(row["since"], f"{op} is a version {row['since']} op")]
    since = DTYPES[dtype]["since"]
    reasons.append((since, f"its dtype {dtype} is a version {since} dtype"))
    for feature, version in row.get("features", {}).items():
        if FEATURE_USED[feature](operand_shapes, attrs):
            reasons.append((version, f"its use of {feature} is a version {version} feature"))
    for feature, spec in optable.tensor_features().items():
        if TENSOR_FEATURE_USED[feature](shape, operand_shapes, attrs):
            since = spec["since"]
            reasons.append((since, f"its use of {feature} is a version {since} feature"))
    need = max(v for v, _ in reasons)
    return need, next(why for v, why in reasons if v == need)


# ---------------------------------------------------------------------------------------------
# validate()


def validate(graph: Any) -> CheckedGraph:
    """Check a graph per docs/protocol.md and return the checked graph.

    Raises GpuLabError with code VALIDATION, UNSUPPORTED_VERSION or LIMIT: the first error in
    the documented order (top level, nodes in list order, structure, shapes, version).
    """
    version = _check_top_level(graph)
    nodes = _check_nodes(graph["nodes"])
    by_id = {n.id: n for n in nodes}
    outputs = _check_structure(nodes, by_id, graph["outputs"])
    topo = _topological_order(nodes, by_id)
    _infer_shapes(topo, by_id)
    _infer_dtypes(topo, by_id)
    _check_output_dtypes(outputs, by_id)
    required = _check_version(version, nodes)
    check_values(nodes, by_id)
    needed = _needed(outputs, by_id)
    order = [i for i in topo if i in needed]
    return CheckedGraph(version, required, nodes, order, outputs, by_id)


def _check_top_level(graph: Any) -> int:
    lim = optable.limits()
    if not isinstance(graph, dict):
        raise _fail("VALIDATION", f"a graph must be an object, got {type(graph).__name__}")
    for key in TOP_LEVEL_FIELDS:
        if key not in graph:
            raise _fail("VALIDATION", f"the graph has no '{key}' field")
    version = _as_int(graph["version"])
    if version is None:
        raise _fail("VALIDATION", f"version must be an integer, got {_show(graph['version'])}")
    if version not in optable.protocol_versions():
        raise _fail(
            "UNSUPPORTED_VERSION",
            f"graph version {version} is unknown to this host "
            f"(it knows {optable.protocol_versions()})",
        )
    for key in ("nodes", "outputs"):
        # a tuple too, as the page takes it (Pyodide's toJs makes it an Array)
        if not isinstance(graph[key], list | tuple) or not graph[key]:
            raise _fail("VALIDATION", f"'{key}' must be a non-empty list")
    if len(graph["nodes"]) > lim["max_nodes"]:
        raise _fail(
            "LIMIT", f"the graph has {len(graph['nodes'])} nodes > max_nodes {lim['max_nodes']}"
        )
    if len(graph["outputs"]) > lim["max_outputs"]:
        raise _fail(
            "LIMIT",
            f"the graph has {len(graph['outputs'])} outputs > max_outputs {lim['max_outputs']}",
        )
    return version


def _check_nodes(raw_nodes: list) -> list[CheckedNode]:
    nodes: list[CheckedNode] = []
    seen: set[int] = set()
    for index, raw in enumerate(raw_nodes):
        node = _check_node(index, raw, seen)
        seen.add(node.id)
        nodes.append(node)
    return nodes


def _check_node(index: int, raw: Any, seen: set[int]) -> CheckedNode:
    if not isinstance(raw, dict):
        raise _fail("VALIDATION", f"node at index {index} must be an object")
    node_id = _as_id(raw.get("id"))
    if node_id is None:
        raise _fail(
            "VALIDATION",
            f"node at index {index}: id must be an integer >= 0 and <= 2^53-1, got "
            f"{_show(raw.get('id'))}",
        )
    op = raw.get("op")
    if node_id in seen:
        raise _fail("VALIDATION", f"{label(node_id, op)}: duplicate id {node_id}", node_id)
    table = optable.ops()
    if not isinstance(op, str) or op not in table:
        raise _fail("VALIDATION", f"{label(node_id, op)}: unknown op {_show(op)}", node_id)
    row = table[op]
    operands = _variadic_operands(node_id, op, raw, row) if "variadic" in row else []
    for name in row["operands"]:
        ref = _as_id(raw.get(name)) if name in raw else None
        if ref is None:
            problem = (
                "is missing" if name not in raw else f"must be a node id, got {_show(raw[name])}"
            )
            raise _fail("VALIDATION", f"{label(node_id, op)}: operand '{name}' {problem}", node_id)
        operands.append(ref)
    allowed = {
        "id",
        "op",
        *row["operands"],
        *row["attrs"],
        *([row["variadic"]] if "variadic" in row else []),
    }
    unknown = sorted((k for k in raw if k not in allowed), key=repr)  # keys may not be str
    if unknown:
        raise _fail("VALIDATION", f"{label(node_id, op)}: unknown field(s) {unknown}", node_id)
    attrs, data = check_attrs(node_id, op, {k: raw[k] for k in row["attrs"] if k in raw})
    return CheckedNode(node_id, op, tuple(operands), attrs, data=data)


def _variadic_operands(node_id: int, op: str, raw: dict, row: dict) -> list[int]:
    """A variadic operand (docs/protocol.md "Variadic operands": the wgsl op's `inputs`,
    concat's `tensors`): a list of node ids, which become the operands; `variadic_count`
    bounds its length."""
    name = row["variadic"]
    if name not in raw:
        raise _fail("VALIDATION", f"{label(node_id, op)}: operand '{name}' is missing", node_id)
    value = raw[name]
    refs = [_as_id(v) for v in value] if isinstance(value, (list, tuple)) else [None]
    if any(r is None for r in refs):
        raise _fail(
            "VALIDATION",
            f"{label(node_id, op)}: operand '{name}' must be a list of "
            f"integer node ids, got {_show(value)}",
            node_id,
        )
    count = row.get("variadic_count")
    if count and not count["min"] <= len(refs) <= count["max"]:
        raise _fail(
            "VALIDATION",
            f"{label(node_id, op)}: operand {name} must be a list of "
            f"{count['min']} to {count['max']} node ids (it has {len(refs)})",
            node_id,
        )
    return [r for r in refs if r is not None]


def _check_structure(
    nodes: list[CheckedNode], by_id: dict[int, CheckedNode], raw_outputs: list
) -> list[Output]:
    for node in nodes:
        names = optable.operand_names(optable.ops()[node.op], len(node.operands))
        for name, ref in zip(names, node.operands):
            if ref not in by_id:
                raise _fail(
                    "VALIDATION",
                    f"{label(node.id, node.op)}: dangling operand '{name}' = {ref} "
                    "(no node has that id)",
                    node.id,
                )
    outputs: list[Output] = []
    names: set[str] = set()
    for index, raw in enumerate(raw_outputs):
        out = _check_output(index, raw, by_id)
        if out.name in names:
            raise _fail("VALIDATION", f"output name {_show(out.name)} is used twice")
        names.add(out.name)
        outputs.append(out)
    _check_acyclic(nodes, by_id)
    return outputs


def _check_output(index: int, raw: Any, by_id: dict[int, CheckedNode]) -> Output:
    if not isinstance(raw, dict):
        raise _fail("VALIDATION", f"output at index {index} must be an object {{name, id}}")
    unknown = sorted((k for k in raw if k not in ("name", "id")), key=repr)
    if unknown:
        raise _fail("VALIDATION", f"output at index {index}: unknown field(s) {unknown}")
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise _fail("VALIDATION", f"output at index {index}: name must be a non-empty string")
    if name in RESERVED_NAMES:
        raise _fail(
            "VALIDATION",
            f"output at index {index}: the name {name!r} is reserved "
            "(a JS object cannot hold it as a key)",
        )
    ref = _as_id(raw.get("id"))
    if ref is None:
        raise _fail(
            "VALIDATION",
            f"output {_show(name)}: id must be an integer node id, got {_show(raw.get('id'))}",
        )
    if ref not in by_id:
        raise _fail("VALIDATION", f"output {_show(name)}: dangling output id {ref} (no such node)")
    return Output(name, ref)


def _check_acyclic(nodes: list[CheckedNode], by_id: dict[int, CheckedNode]) -> None:
    """Refuse a cycle, naming the first node in list order that lies on one."""
    on_cycle = _nodes_on_cycles(nodes)
    if on_cycle:
        first = next(n for n in nodes if n.id in on_cycle)
        raise _fail(
            "VALIDATION", f"{label(first.id, first.op)}: is on a cycle of operands", first.id
        )


def _nodes_on_cycles(nodes: list[CheckedNode]) -> set[int]:
    """Ids in a strongly connected component of size > 1 or with a self-loop (Tarjan, iterative)."""
    operands = {n.id: n.operands for n in nodes}
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    stack: list[int] = []
    on_stack: set[int] = set()
    result: set[int] = set()
    counter = 0
    for root in operands:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on_stack.add(v)
            recurse = False
            succ = operands[v]
            while i < len(succ):
                w = succ[i]
                i += 1
                if w not in index:
                    work.append((v, i))
                    work.append((w, 0))
                    recurse = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if recurse:
                continue
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1 or v in operands[v]:
                    result.update(component)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return result


def _topological_order(nodes: list[CheckedNode], by_id: dict[int, CheckedNode]) -> list[int]:
    """All ids, operands first, ties broken by list position (Kahn with a position heap)."""
    position = {n.id: i for i, n in enumerate(nodes)}
    missing = {n.id: len(set(n.operands)) for n in nodes}
    users: dict[int, list[int]] = {n.id: [] for n in nodes}
    for n in nodes:
        for ref in set(n.operands):
            users[ref].append(n.id)
    ready = [position[i] for i, count in missing.items() if count == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        node_id = nodes[heapq.heappop(ready)].id
        order.append(node_id)
        for user in users[node_id]:
            missing[user] -= 1
            if missing[user] == 0:
                heapq.heappush(ready, position[user])
    return order


def _infer_shapes(topo: list[int], by_id: dict[int, CheckedNode]) -> None:
    lim = optable.limits()
    total = 0
    for node_id in topo:
        node = by_id[node_id]
        shapes = [by_id[ref].shape for ref in node.operands]
        rule = optable.ops()[node.op]["shape_rule"]
        if rule in NODE_SHAPE_RULES:  # rules that read their operand nodes (wgsl_check.py)
            node.shape = NODE_SHAPE_RULES[rule](node, [by_id[ref] for ref in node.operands])
        else:
            node.shape, node.attrs = infer_node(node.id, node.op, node.attrs, shapes)
        count = element_count(node.shape)
        if count > lim["max_elements"]:
            raise _fail(
                "LIMIT",
                f"{label(node.id, node.op)}: result shape {list(node.shape)} has {count} "
                f"elements > max_elements {lim['max_elements']}",
                node.id,
            )
        total += count
        if total > lim["max_total_elements"]:
            raise _fail(
                "LIMIT",
                f"{label(node.id, node.op)}: the graph's nodes hold {total} elements in all "
                f"> max_total_elements {lim['max_total_elements']}",
                node.id,
            )


def _infer_dtypes(topo: list[int], by_id: dict[int, CheckedNode]) -> None:
    """Step 5: every node's dtype by its op-table row, in topological order; then its version."""
    for node_id in topo:
        node = by_id[node_id]
        operands = [by_id[ref] for ref in node.operands]
        row = optable.ops()[node.op]
        if row["shape_rule"] in NODE_DTYPE_RULES:
            node.dtype = NODE_DTYPE_RULES[row["shape_rule"]](node, operands)
        else:
            node.dtype = result_dtype(
                label(node.id, node.op), node.id, row, [o.dtype for o in operands], node.attrs
            )
        node.version, node.why = node_version_reason(
            node.op, [o.shape for o in operands], node.attrs, node.dtype, node.shape
        )


def _check_output_dtypes(outputs: list[Output], by_id: dict[int, CheckedNode]) -> None:
    """Block-quantized tensors are weights read by matmul_q, dequantize and dequantize_rows
    only: no output is one (so no backend reads blocks back). Twin of validate.mjs checkOutputDtypes."""
    for out in outputs:
        node = by_id[out.id]
        if DTYPES[node.dtype].get("block"):
            raise _fail(
                "VALIDATION",
                f'{label(node.id, node.op)}: output "{out.name}" is a {node.dtype} tensor; '
                "only matmul_q, dequantize and dequantize_rows read one (output its dequantize)",
                node.id,
            )


def _check_version(declared: int, nodes: list[CheckedNode]) -> int:
    required = max(n.version for n in nodes)
    if required > declared:
        first = next(n for n in nodes if n.version > declared)
        raise _fail(
            "UNSUPPORTED_VERSION",
            f"{label(first.id, first.op)}: needs version {first.version} ({first.why}), "
            f"the graph declares version {declared}",
            first.id,
        )
    return required


def _needed(outputs: list[Output], by_id: dict[int, CheckedNode]) -> set[int]:
    needed: set[int] = set()
    todo = [o.id for o in outputs]
    while todo:
        node_id = todo.pop()
        if node_id not in needed:
            needed.add(node_id)
            todo.extend(by_id[node_id].operands)
    return needed
