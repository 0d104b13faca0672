"""Validation step 7, "Values" (docs/protocol.md): what a graph's data says about its v4 ops,
checked once shapes and dtypes are known. An index operand (`idx`) that is an input with data
must hold indices in 0..a.shape[axis]-1 (fed or computed indices are checked by the kernels at
run time: BACKEND); pad's value must be one of the data's dtype. Twin of
backends-js/src/values.mjs, message for message."""

from __future__ import annotations

import math
from typing import Any

from . import optable
from .errors import GpuLabError

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def _fmt(shape: Any) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def _where(node: Any) -> str:
    return f"node {node.id} ({node.op})"


def _first_bad(data: Any, n: int) -> int | None:
    """The first position of a value outside 0..n-1 (numpy when it is there: no Python loop
    over a large index tensor)."""
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - Pyodide without numpy
        return next((p for p, v in enumerate(data) if not 0 <= v < n), None)
    values = np.frombuffer(data, dtype=np.int32) if len(data) else np.zeros(0, np.int32)
    bad = np.flatnonzero((values < 0) | (values >= n))
    return int(bad[0]) if bad.size else None


def index_axis_of(node: Any) -> int:
    """The axis an op's idx picks along: its `axis` attribute, 0 for dequantize_rows (rows)."""
    return int(node.attrs.get("axis", 0))


def axis_extent(a_shape: Any, axis: int) -> int:
    """The indices an axis takes: its size (a rank-0 a, indexed along axis 0 as PyTorch does:
    1). Twin of values.mjs axisExtent."""
    return 1 if len(a_shape) == 0 else int(a_shape[axis])


def index_error(
    code: str, node: Any, a_shape: Any, p: int, value: int | None = None
) -> GpuLabError:
    """The out-of-range message, at validation (VALIDATION) and from kernels at run time
    (BACKEND; a GPU reports the position only, `value` None): twin of values.mjs indexError."""
    axis = index_axis_of(node)
    n = axis_extent(a_shape, axis)
    held = (
        f"an index at idx[{p}] out of range"
        if value is None
        else f"idx[{p}] = {value}, out of range"
    )
    return GpuLabError(
        code,
        f"{_where(node)}: operand idx holds {held} for axis {axis} of a "
        f"{_fmt(a_shape)} (valid 0..{n - 1})",
        node.id,
    )


def _check_index_data(node: Any, operands: list[Any]) -> None:
    names = optable.ops()[node.op]["operands"]
    if "idx" not in names:
        return
    idx = operands[names.index("idx")]
    if idx.op != "input" or idx.data is None:
        return
    a = operands[0].shape
    n = axis_extent(a, index_axis_of(node))
    p = _first_bad(idx.data, n)
    if p is not None:
        raise index_error("VALIDATION", node, a, p, idx.data[p])


def _js_number(v: float) -> str:
    """A number as JS's String() writes it (the message twin): 2.0 -> 2, nan -> NaN."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return str(int(v)) if float(v).is_integer() and abs(v) < 1e21 else repr(float(v))


def _check_pad_value(node: Any) -> None:
    if node.op != "pad" or node.dtype != "int32":
        return
    v = node.attrs["value"]
    if not (math.isfinite(v) and float(v).is_integer() and INT32_MIN <= v <= INT32_MAX):
        raise GpuLabError(
            "VALIDATION",
            f"{_where(node)}: value {_js_number(v)} is not an int32 (the data is int32)",
            node.id,
        )


def check_node_values(node: Any, operands: list[Any]) -> None:
    """Step 7 for one node (id, op, attrs, dtype) given its operands (op, shape, data): the
    validator's loop and the builder's check of each appended node (graph.py)."""
    _check_index_data(node, operands)
    _check_pad_value(node)


def check_values(nodes: list[Any], by_id: dict[int, Any]) -> None:
    """Step 7 over every node in list order."""
    for node in nodes:
        check_node_values(node, [by_id[ref] for ref in node.operands])
