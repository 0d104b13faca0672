"""`protocol.validate` cached by the raw graph's structure (for execute <= 2 ms).

A training loop calling `Graph.run`, or the benchmark's "execute" mode, validates a graph of
the same structure again and again: only the input data changes, and the structural checks
(fields, ops, attrs, operands, outputs, cycles, shapes, dtypes, versions) were 0.52 ms of the
MLP step's execute on the H200. `validate(graph)` here gives the same CheckedGraph or the same
first error as `protocol.validate`, but a graph whose structure already validated only has its
data checked again:

- the key is the raw graph with every node's `data` value replaced by a marker, pickled by a
  pickler that takes exact builtin types only (`reducer_override`, which the C pickler calls for
  every other object, refuses: a subclass, a numpy scalar or any other object makes the graph
  uncacheable, validated in full every time) and has no memo (`fast`: the bytes depend on the
  values only; a cycle is refused). Dict order and float bits are kept, so equal keys are equal
  values of equal types: nothing `protocol.validate` could tell apart. (marshal, the first
  choice, writes any object with the buffer protocol as bytes: np.int64(2) and b"\x02..."
  would share a key.) The plan cache's `structure_key` is made from a CheckedGraph, after
  validation, so it cannot be this key.
- only graphs that validated are cached, so a key hit means every check but the data's passed;
- on a hit each data value is checked by the same checker, with the same message context, as
  `protocol.check_attrs` (validation step 2, in node order: length against the shape, the
  values against the dtype), then validation step 7 (values.py: index data in range) for each
  node that has data or reads a node with data. Every other check is independent of the data,
  so the first error, if any, is the one `protocol.validate` reports.

The returned CheckedGraph shares the nodes without data (and the order and outputs) with the
cached one: checked graphs are read-only after validation. The cache holds no data values
(its template's data nodes have data None). `configure(0)` turns it off (bench A/B).
"""

from __future__ import annotations

import dataclasses
import io
import pickle
import threading
from collections import OrderedDict
from typing import Any

from . import protocol
from .protocol import CheckedGraph, CheckedNode, label
from .values import check_node_values

MAX_ENTRIES = 64
_MARK = "\x00data"  # stands for any data value in a key (every hit re-checks the data)
_lock = threading.Lock()
_entries: OrderedDict[bytes, _Entry] = OrderedDict()
_limit = [MAX_ENTRIES]
counters = {"hits": 0, "misses": 0, "uncacheable": 0}


@dataclasses.dataclass(frozen=True)
class _Entry:
    checked: CheckedGraph  # its data nodes hold data None
    data_nodes: tuple[int, ...]  # positions in `nodes` of the nodes given data
    value_nodes: tuple[int, ...]  # positions of nodes whose step-7 check may read data

    @classmethod
    def of(cls, checked: CheckedGraph) -> _Entry:
        with_data = {n.id for n in checked.nodes if n.data is not None}
        data_nodes = tuple(i for i, n in enumerate(checked.nodes) if n.id in with_data)
        value_nodes = tuple(
            i
            for i, n in enumerate(checked.nodes)
            if n.id in with_data or any(r in with_data for r in n.operands)
        )
        nodes = [
            dataclasses.replace(n, data=None) if n.id in with_data else n for n in checked.nodes
        ]
        template = dataclasses.replace(checked, nodes=nodes, by_id={n.id: n for n in nodes})
        return cls(template, data_nodes, value_nodes)

    def refill(self, raw_nodes: list[Any]) -> CheckedGraph:
        """The checked graph of raw_nodes (same structure as the template): its data checked."""
        nodes = list(self.checked.nodes)
        by_id = dict(self.checked.by_id)
        check = protocol.ATTR_CHECKERS["data"]
        for i in self.data_nodes:
            node = nodes[i]
            # the call protocol.check_attrs makes for a "data" attr (context: the node's label)
            data = check(raw_nodes[i]["data"], label(node.id, node.op), node.id, node.attrs)
            nodes[i] = by_id[node.id] = _with_data(node, data)
        for i in self.value_nodes:
            node = nodes[i]
            check_node_values(node, [by_id[r] for r in node.operands])
        c = self.checked
        return CheckedGraph(
            c.version, c.required_version, nodes, list(c.order), list(c.outputs), by_id, c.memo
        )


def _with_data(node: CheckedNode, data: Any) -> CheckedNode:
    """A copy of node holding data (dataclasses.replace costs 4x as much: 15 inputs per step)."""
    new = object.__new__(CheckedNode)
    new.__dict__.update(node.__dict__)
    new.data = data
    return new


class _NotPlain(Exception):
    """A value of a type other than the exact builtins in a graph's structure."""


class _ExactPickler(pickle.Pickler):
    """Pickles exact builtin types only (the C pickler handles those before reducer_override)."""

    def reducer_override(self, obj: Any) -> Any:
        raise _NotPlain(type(obj).__name__)


def structure_key(graph: Any) -> bytes | None:
    """The raw graph without its data values, pickled (exact builtin types only); None for a
    graph with any other type outside its data, a cycle, or that is not a dict of node dicts."""
    if type(graph) is not dict or type(graph.get("nodes")) is not list:
        return None
    nodes: list[Any] = []
    for raw in graph["nodes"]:
        if type(raw) is not dict:
            return None
        nodes.append({**raw, "data": _MARK} if "data" in raw else raw)
    out = io.BytesIO()
    pickler = _ExactPickler(out, 5)
    pickler.fast = True  # no memo: the same bytes however the values share objects
    try:
        pickler.dump({**graph, "nodes": nodes})
    except (_NotPlain, pickle.PicklingError, ValueError, TypeError, OverflowError, RecursionError):
        return None
    return out.getvalue()


def validate(graph: Any) -> CheckedGraph:
    """`protocol.validate(graph)`, with the structural checks cached (module docstring)."""
    key = structure_key(graph) if _limit[0] > 0 else None
    if key is None:
        counters["uncacheable"] += 1
        return protocol.validate(graph)
    with _lock:
        entry = _entries.get(key)
        if entry is not None:
            _entries.move_to_end(key)
    if entry is not None:
        counters["hits"] += 1
        return entry.refill(graph["nodes"])
    counters["misses"] += 1
    checked = protocol.validate(graph)
    with _lock:
        _entries[key] = _Entry.of(checked)
        while len(_entries) > _limit[0]:
            _entries.popitem(last=False)
    return checked


def configure(max_entries: int = MAX_ENTRIES) -> None:
    """Bound the cache (0 turns it off); clears it."""
    with _lock:
        _limit[0] = max(0, int(max_entries))
        _entries.clear()


def clear() -> None:
    with _lock:
        _entries.clear()


__all__ = ["clear", "configure", "counters", "structure_key", "validate"]
