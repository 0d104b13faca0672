"""What every executor is spared (docs/protocol.md "Zero-size tensors"): the host lowers a
checked graph before an executor prepares it, so no kernel ever sees

- a zero-size tensor: every empty node is dropped (its value is an empty array, answered here,
  never by a device: WebGPU has no zero-size binding), and a node with elements that reads an
  empty operand is rewritten: to a constant where it reduces over no element (the op table's
  `over_empty`: sum 0, mean NaN, matmul with K = 0 zeros, cross_entropy NaN; pad of an empty a
  is all `value`), to a copy where the empty operand adds nothing (concat drops it;
  slice_scatter, index_add, scatter_add with nothing to write give a);
- an axis on a rank-0 tensor (PyTorch's dim=0 / dim=-1 of a scalar): softmax, log_softmax and
  the index ops run on the element reshaped to [1], then back to []; a reduction over it is
  one over all (axis None); slice, slice_scatter, pad and permute of a rank-0 tensor are
  copies.

A graph with neither is returned as it is. Twin of backends-js/src/lowering.mjs (a test
compares them on the corpus).
"""

from __future__ import annotations

import array
import dataclasses
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from . import optable
from .dtypes import TYPECODE, alloc_typed
from .errors import GpuLabError
from .lowering_rank import lower_rank
from .protocol import CheckedGraph, CheckedNode

# ops that read an axis of operand a: on a rank-0 a they run on a [1] view of it
AXIS_OPS = frozenset(
    ("softmax", "log_softmax", "index_select", "gather", "index_add", "scatter_add")
)
# ops that are copies on a rank-0 tensor: the operand whose value the result is
RANK0_COPY = {"slice": 0, "pad": 0, "permute": 0, "slice_scatter": 1}
COPY_OF_A = frozenset(("slice_scatter", "index_add", "scatter_add"))


@dataclass
class Lowered:
    """The graph an executor runs, and the dtype of every dropped (zero-size) node."""

    checked: CheckedGraph
    empty: dict[int, str]


def _is_empty(shape: Iterable[int]) -> bool:
    return 0 in tuple(shape)


def _is_rank0_reduce(node: CheckedNode, by_id: Mapping[int, CheckedNode]) -> bool:
    """A reduction over axis 0 of a rank-0 tensor."""
    return (
        optable.ops()[node.op]["shape_rule"] == "reduce"
        and node.attrs.get("axis") is not None
        and len(by_id[node.operands[0]].shape) == 0
    )


def _rank0_kind(node: CheckedNode, by_id: Mapping[int, CheckedNode]) -> bool:
    if _is_rank0_reduce(node, by_id):
        return True
    if node.op not in AXIS_OPS and node.op not in RANK0_COPY:
        return False
    return len(by_id[node.operands[0]].shape) == 0


def _constant(node: CheckedNode, value: float) -> CheckedNode:
    """An input of the node's shape holding `value` (the node's dtype; NaN as float32's quiet
    NaN, the bits of the JS twin's Float32Array.fill)."""
    one = value if node.dtype == "float32" else int(value)
    data = array.array(TYPECODE[node.dtype], [one]) * math.prod(node.shape)
    return dataclasses.replace(
        node,
        op="input",
        operands=(),
        attrs={"shape": tuple(node.shape), "dtype": node.dtype},
        data=data,
    )


def _copy_of(node: CheckedNode, source: int) -> CheckedNode:
    """A copy of `source` (same shape and dtype) under the node's id: a reshape to its own shape."""
    return dataclasses.replace(
        node, op="reshape", operands=(source,), attrs={"shape": tuple(node.shape)}, data=None
    )


def _over_empty(node: CheckedNode, by_id: Mapping[int, CheckedNode]) -> CheckedNode:
    """A node with elements that reads an empty operand, rewritten (one node, same id)."""
    rule = optable.ops()[node.op].get("over_empty")
    if rule in ("0", "nan"):
        return _constant(node, math.nan if rule == "nan" else 0)
    if node.op == "pad":
        return _constant(node, node.attrs["value"])
    if node.op == "concat":
        kept = tuple(ref for ref in node.operands if not _is_empty(by_id[ref].shape))
        return (
            _copy_of(node, kept[0]) if len(kept) == 1 else dataclasses.replace(node, operands=kept)
        )
    if node.op in COPY_OF_A:
        return _copy_of(node, node.operands[0])
    # the validator refuses every other way to compute elements from nothing
    raise GpuLabError(
        "BACKEND",
        f"node {node.id} ({node.op}): no lowering for a result {list(node.shape)} over an "
        "empty operand",
        node.id,
    )


def _reshaped(node_id: int, source: int, shape: tuple[int, ...], dtype: str) -> CheckedNode:
    return CheckedNode(node_id, "reshape", (source,), {"shape": shape}, shape, dtype=dtype)


def _over_rank0(
    node: CheckedNode, by_id: Mapping[int, CheckedNode], fresh: Callable[[], int]
) -> list[CheckedNode]:
    """The nodes that replace a rank-0 node (same id last)."""
    if _is_rank0_reduce(node, by_id):
        return [dataclasses.replace(node, attrs={**node.attrs, "axis": None})]
    if node.op in RANK0_COPY:
        return [_copy_of(node, node.operands[RANK0_COPY[node.op]])]
    made: list[CheckedNode] = []

    def as_vector(ref: int) -> int:
        source = by_id[ref]
        if len(source.shape) == 1:
            return ref
        made.append(_reshaped(fresh(), ref, (1,), source.dtype))
        return made[-1].id

    operands = tuple(as_vector(ref) for ref in node.operands)
    inner = fresh()
    made.append(
        dataclasses.replace(
            node, id=inner, operands=operands, attrs={**node.attrs, "axis": 0}, shape=(1,)
        )
    )
    made.append(_reshaped(node.id, inner, (), node.dtype))
    return made


def lower_graph(checked: CheckedGraph) -> Lowered | None:
    """The graph an executor runs, or None when `checked` needs no lowering: zero-size
    tensors and rank-0 axes first, then ranks past 4 (lowering_rank.py)."""
    first = _lower_empty(checked)
    ranked = lower_rank(first.checked if first else checked)
    if ranked is None:
        return first
    return Lowered(ranked, first.empty if first else {})


def lowered_checked(checked: CheckedGraph) -> CheckedGraph:
    """The graph an executor's kernels see (what `supports` judges)."""
    lowered = lower_graph(checked)
    return lowered.checked if lowered else checked


def _lower_empty(checked: CheckedGraph) -> Lowered | None:
    """Zero-size tensors and rank-0 axes lowered, or None when the graph has neither."""
    by_id = checked.by_id
    if not any(_is_empty(n.shape) or _rank0_kind(n, by_id) for n in checked.nodes):
        return None
    counter = [max(n.id for n in checked.nodes) + 1]

    def fresh() -> int:
        counter[0] += 1
        return counter[0] - 1

    empty: dict[int, str] = {}
    replaced: dict[int, list[CheckedNode]] = {}
    for node in checked.nodes:
        if _is_empty(node.shape):
            empty[node.id] = node.dtype
        elif any(_is_empty(by_id[ref].shape) for ref in node.operands):
            replaced[node.id] = [_over_empty(node, by_id)]
        elif _rank0_kind(node, by_id):
            replaced[node.id] = _over_rank0(node, by_id, fresh)
    nodes = [m for n in checked.nodes if n.id not in empty for m in replaced.get(n.id, [n])]
    order = [m.id for i in checked.order if i not in empty for m in replaced.get(i, [by_id[i]])]
    outputs = [o for o in checked.outputs if o.id not in empty]
    # the lowered structure follows from the checked one: its memo (plan cache key) is shared
    memo = checked.memo.setdefault("lowered_memo", {})
    lowered = dataclasses.replace(
        checked,
        nodes=nodes,
        order=order,
        outputs=outputs,
        by_id={n.id: n for n in nodes},
        memo=memo,
    )
    return Lowered(lowered, empty)


class LoweredProgram:
    """An executor's program over the lowered graph (or none, when every output is empty) that
    answers the empty nodes itself; anything else is the inner program's."""

    def __init__(self, inner: Any, empty: dict[int, str]) -> None:
        self._inner = inner
        self._empty = empty

    def __getattr__(self, name: str) -> Any:  # max_steps_per_run, refresh, ...
        if self._inner is None:
            raise AttributeError(name)
        return getattr(self._inner, name)

    def run(self, steps: list[dict[int, Any]], read_ids: list[int]) -> dict[int, Any]:
        values: dict[int, Any] = {}
        if self._inner is not None:
            fed = [{k: v for k, v in step.items() if k not in self._empty} for step in steps]
            values.update(self._inner.run(fed, [i for i in read_ids if i not in self._empty]))
        for i in read_ids:
            if i in self._empty:
                values[i] = alloc_typed(self._empty[i], 0)
        return values

    def download(self, node_id: int) -> Any:
        if node_id in self._empty:
            return alloc_typed(self._empty[node_id], 0)
        return self._inner.download(node_id)

    def dispose(self) -> None:
        if self._inner is not None:
            self._inner.dispose()


def prepare_lowered(
    executor: Any,
    checked: CheckedGraph,
    feeds: list[int],
    carry: Mapping[int, int],
    keep: list[int],
) -> Any:
    """`executor.prepare` of the lowered graph: what the host calls (execute and sessions)."""
    lowered = lower_graph(checked)
    if lowered is None:
        return executor.prepare(checked, feeds=feeds, carry=dict(carry), keep=keep)
    empty = lowered.empty
    inner = None
    if lowered.checked.outputs:
        inner = executor.prepare(
            lowered.checked,
            feeds=[i for i in feeds if i not in empty],
            carry={k: v for k, v in carry.items() if k not in empty},
            keep=[i for i in keep if i not in empty],
        )
    return LoweredProgram(inner, empty)
