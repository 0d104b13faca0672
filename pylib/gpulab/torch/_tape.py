"""The recording: which gpulab Graph torch operations append to, and when it runs.

Execution model (docs/torch.md):
- every torch operation appends protocol nodes to the current `Record`'s Graph (one Graph per
  record) and returns a lazy Tensor (a node, no value);
- `.item()`, `.tolist()`, `.numpy()`, `repr`, and a Python branch on a value run the Graph
  once (`Graph.run`) for the tensor asked and every other still-referenced pending tensor of
  that record, so the values come back together; when that run fails, it runs again for the
  tensor asked alone, and the others are set aside (filled only when asked for), so one bad
  tensor (an index out of range, kept alive by its traceback) does not fail every later read;
- `optimizer.step()` records the update in the same Graph, runs it once (forward, backward and
  update together) and starts a new record: parameters and optimizer state hold concrete values
  again, read back from that run.
- a tensor that has a value enters another record as an `input` node holding its data; a
  pending tensor of an older record is run in its own Graph first.
Leaves that require grad (parameters) get one node per record, the node `backward()` asks
`gpulab.autograd.grad` about; under `no_grad()` they are read through a second node of the
same data, so nothing recorded there carries gradient to them.
"""

from __future__ import annotations

import array
import math
import weakref
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import GpuLabError
from ..graph import Graph
from ..graph import Tensor as Node

if TYPE_CHECKING:
    from .tensor import Tensor

_BACKEND: dict[str, str | None] = {"name": None}
RESET_NODES = 2000  # a record this large starts afresh at the next run (its tensors keep values)


def set_backend(name: str | None) -> None:
    """Where graphs run natively: "cpu-python", "wgpu", "auto" or None (the host's default:
    gpulab.host picks wgpu, else cpu-python). In the page the page's backend menu decides."""
    if name not in (None, "auto", "cpu-python", "wgpu"):
        raise ValueError(
            f"gpulab.torch.set_backend: unknown backend {name!r} (auto, cpu-python, wgpu)"
        )
    _BACKEND["name"] = name


def get_backend() -> str | None:
    return _BACKEND["name"]


class Alive:
    """Weak references to pending tensors by id (a WeakSet would compare tensors with ==,
    which is elementwise for torch tensors)."""

    def __init__(self) -> None:
        self._refs: dict[int, weakref.ref] = {}

    def add(self, t: Tensor) -> None:
        key = id(t)
        self._refs[key] = weakref.ref(t, lambda _r, k=key, refs=self._refs: refs.pop(k, None))

    def has(self, t: Tensor) -> bool:
        return id(t) in self._refs

    def discard(self, t: Tensor) -> None:
        self._refs.pop(id(t), None)

    def __iter__(self) -> Iterator[Tensor]:
        """The pending ones."""
        return (t for t in self.all() if t._value is None)

    def all(self) -> Iterator[Tensor]:
        """Every tensor still referenced (pending, or filled by a run)."""
        for r in list(self._refs.values()):
            t = r()
            if t is not None:
                yield t


class Record:
    """One Graph being recorded, the tensors alive in it and what backward() has used."""

    def __init__(self) -> None:
        self.graph = Graph()
        self.alive = Alive()  # pending tensors still referenced
        # (id(leaf), leaf._version) -> (leaf, its node): the differentiable node, and the copy
        # read under no_grad
        self.leaves: dict[tuple[int, int], tuple[Tensor, Node]] = {}
        self.plain: dict[tuple[int, int], tuple[Tensor, Node]] = {}
        self.freed: set[int] = set()  # node ids a backward() without retain_graph went through
        self.draws: list[tuple[Node, int]] = []  # random counters drawn: (uint32 node, value)
        self.scalars: list[tuple[Node, str, float]] = []  # optimizer scalars: (node, key, value)
        self.runs = 0
        self.retained = Alive()  # results that asked for retain_grad() (weakly)
        self.last_id = -1  # the highest node id seen (the graph's size, for RESET_NODES)
        self.set_aside: set[int] = set()  # node ids of pending tensors a failed run carried

    def constant(self, t: Tensor) -> Node:
        """t's value as an input node of this record."""
        return self.graph.tensor(t._value, shape=list(t.shape), dtype=t.dtype.device)

    def leaf_node(self, t: Tensor, grad: bool) -> Node:
        """The node of a leaf (at its current version) in this record: the differentiable
        one, or the no-grad copy."""
        key = (id(t), t._version)
        table = self.leaves if grad else self.plain
        if key in table:
            return table[key][1]
        node = self.constant(t)
        table[key] = (t, node)
        return node

    def scalar(self, value: float, key: str) -> Node:
        """A float32 scalar [] input the optimizer computed on the host (lr, bias corrections):
        listed in `scalars`, so a prepared session can feed it per step."""
        node = self.graph.tensor(float(value))
        self.scalars.append((node, key, float(value)))
        return node

    def draw(self, value: int) -> Node:
        """A uint32 [] counter of a random draw (dropout), listed in `draws`."""
        node = self.graph.tensor(value, dtype="uint32")
        self.draws.append((node, value))
        return node


class Tape:
    """The current record; a new one after each optimizer step."""

    def __init__(self) -> None:
        self.record = Record()

    def reset(self) -> None:
        self.record = Record()


TAPE = Tape()


def current() -> Record:
    return TAPE.record


Plan = list[tuple[list[tuple[Any, Node]], list["Tensor"], dict[str, Node]]]


def _plan(record: Record, wanted: Sequence[tuple[Any, Node]], extra: Iterable[Tensor]) -> Plan:
    """The runs for `wanted` (owner, node) pairs (several when they exceed the output limit),
    the first also filling every pending tensor of `extra` that fits."""
    from ..optable import limits

    budget = limits()["max_outputs"]
    pending = [
        t
        for t in extra
        if t._value is None
        and t._node is not None
        and t._rec is record
        and t._node.id not in record.set_aside
    ]
    plan: Plan = []
    for start in range(0, max(len(wanted), 1), budget):
        chunk = list(wanted[start : start + budget])
        others = pending[: budget - len(chunk)] if start == 0 else []
        outputs = {f"o{i}": node for i, (_, node) in enumerate(chunk)}
        outputs.update({f"x{i}": t._node for i, t in enumerate(others)})
        if outputs:
            plan.append((chunk, others, outputs))
    return plan


def _apply(record: Record, chunk: list, others: list[Tensor], out: dict[str, Any]) -> list[Any]:
    record.runs += 1
    for i, t in enumerate(others):
        t._value = _flat(out[f"x{i}"])
    return [_flat(out[f"o{i}"]) for i in range(len(chunk))]


def _after(record: Record) -> None:
    """Start a new record when this one is large, unless a live tensor still has gradient
    history in it (a later backward() must find that history in one graph)."""
    if record is not TAPE.record or record.last_id <= RESET_NODES:
        return
    if not any(t.requires_grad and not t._leaf for t in record.alive.all()):
        TAPE.reset()


def _set_aside(record: Record, extra: Iterable[Tensor]) -> bool:
    """After a failed run: the pending tensors it carried besides the ones asked for are filled
    only when asked for from now on. True if there were any (the run is worth repeating)."""
    ids = {t._node.id for chunk in _plan(record, [], extra) for t in chunk[1]}
    record.set_aside |= ids
    return bool(ids)


def run(
    record: Record, wanted: Sequence[tuple[Any, Node]], extra: Iterable[Tensor] = ()
) -> list[Any]:
    """Run record's Graph once for `wanted` (owner, node) pairs, also filling every pending
    tensor in `extra` that fits the output limit; returns the flat values of `wanted`."""
    extra = list(extra)
    results: list[Any] = []
    try:
        for chunk, others, outputs in _plan(record, wanted, extra):
            out = record.graph.run(backend=_BACKEND["name"], **outputs)["outputs"]
            results += _apply(record, chunk, others, out)
    except GpuLabError:
        if not _set_aside(record, extra):
            raise
        return run(record, wanted)
    _after(record)
    return results


async def run_async(
    record: Record, wanted: Sequence[tuple[Any, Node]], extra: Iterable[Tensor] = ()
) -> list[Any]:
    """`run` awaiting the GPU (in the page: works without JSPI)."""
    extra = list(extra)
    results: list[Any] = []
    try:
        for chunk, others, outputs in _plan(record, wanted, extra):
            out = (await record.graph.run_async(backend=_BACKEND["name"], **outputs))["outputs"]
            results += _apply(record, chunk, others, out)
    except GpuLabError:
        if not _set_aside(record, extra):
            raise
        return await run_async(record, wanted)
    _after(record)
    return results


def _flat(entry: Any) -> Any:
    """An output's values as a flat array('f') / array('i') / list of bools."""
    dtype = entry["dtype"]
    arr = entry.get("array") if "array" in entry else None
    if arr is not None and dtype in ("float32", "int32"):
        code = "f" if dtype == "float32" else "i"
        return array.array(code, arr.astype("<f4" if code == "f" else "<i4").tobytes())
    data = entry["data"]
    if dtype == "float32":
        try:  # numbers (a page read-back: its list is made at C speed) go in at C speed too
            return array.array("f", data)
        except TypeError:  # JSON's "nan" / "inf" / "-inf" spellings
            return array.array("f", [_float(v) for v in data])
    if dtype == "int32":
        return array.array("i", data)
    return [bool(v) for v in data]


def _float(v: Any) -> float:
    if isinstance(v, str):  # JSON's non-finite spellings
        return {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}[v]
    return float(v)
