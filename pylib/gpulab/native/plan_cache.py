"""Plans and one-shot programs of the wgpu executor, cached by graph structure.

A repeated `Graph.run` of the same shapes (a training loop calling `execute`, the benchmark's
"execute" mode) used to plan the graph, take its buffers from the pool, pack its params and
create one bind group per dispatch every time. None of that depends on the input data, only on
the graph's structure, so:

- `structure_key(checked)` is that structure: per node its id, op, operands, attrs, shape,
  dtype and whether it carries data; the outputs; and the planner's matmul choice function
  (benchmarks and tests swap it). Data values are not part of it.
- `PlanCache.plan(key, make)` keeps the last `max_plans` plans (sessions use them too).
- One-shot programs (no feeds, carries or kept values: what `execute` prepares) are handed out
  as a `Lease`; disposing the lease parks the program under its key instead of releasing its
  buffers, and the next prepare of the same structure takes it back and only re-uploads the
  input data (`WgpuProgram.refresh`). Parked programs are bounded by count and bytes; the oldest
  is disposed for real (buffers back to the pool) when a bound is passed.
A program is in use by one lease at a time: a second execute of the same structure while the
first is still out simply builds another program.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

from ..errors import GpuLabError
from ..protocol import CheckedGraph

MAX_PLANS = 64
MAX_PARKED = 8  # idle one-shot programs kept
MAX_PARKED_BYTES = 256 * 1024 * 1024  # device memory they may hold together


def structure_key(checked: CheckedGraph, *extra: Hashable) -> tuple:
    """Everything a plan and its recorded dispatches depend on, and nothing of the data.
    attrs go in as repr (sorted): deterministic, tells -0.0 from 0.0, and NaN equals NaN.
    Made once per structure (checked.memo, shared by validate_cache's graphs of it)."""
    base = checked.memo.get("structure_key")
    if base is None:
        base = checked.memo["structure_key"] = _structure(checked)
    return (*base, *extra)


def _structure(checked: CheckedGraph) -> tuple:
    nodes = tuple(
        (
            n.id,
            n.op,
            tuple(n.operands),
            repr(sorted(n.attrs.items())),
            tuple(n.shape),
            n.dtype,
            n.data is None,
        )
        for n in checked.nodes
    )
    outputs = tuple((o.name, o.id) for o in checked.outputs)
    return (nodes, outputs, tuple(checked.order))


class PlanCache:
    """LRU plans by structure, and parked one-shot programs (see the module docstring)."""

    def __init__(
        self,
        max_plans: int = MAX_PLANS,
        max_parked: int = MAX_PARKED,
        max_parked_bytes: int = MAX_PARKED_BYTES,
    ) -> None:
        self.max_plans = max_plans
        self.max_parked = max_parked
        self.max_parked_bytes = max_parked_bytes
        self.counters = {"plan_hits": 0, "plan_misses": 0, "program_hits": 0, "program_misses": 0}
        self._plans: OrderedDict[tuple, Any] = OrderedDict()
        self._parked: OrderedDict[tuple, list[Any]] = OrderedDict()
        self._parked_bytes = 0

    @property
    def enabled(self) -> bool:
        return self.max_plans > 0

    def plan(self, key: tuple, make: Callable[[], Any]) -> Any:
        """The cached plan for key, or make() (then cached). Plans are never mutated."""
        if not self.enabled:
            return make()
        found = self._plans.get(key)
        if found is not None:
            self._plans.move_to_end(key)
            self.counters["plan_hits"] += 1
            return found
        self.counters["plan_misses"] += 1
        found = self._plans[key] = make()
        while len(self._plans) > self.max_plans:
            self._plans.popitem(last=False)
        return found

    def take(self, key: tuple) -> Any | None:
        """A parked program of this structure (removed from the park), or None."""
        programs = self._parked.get(key)
        if not programs:
            self.counters["program_misses"] += 1
            return None
        program = programs.pop()
        if not programs:
            del self._parked[key]
        self._parked_bytes -= program.device_bytes
        self.counters["program_hits"] += 1
        return program

    def park(self, key: tuple, program: Any) -> None:
        """Keep an idle program for the next prepare of its structure; evict the oldest."""
        if self.max_parked <= 0 or program.device_bytes > self.max_parked_bytes:
            program.dispose()
            return
        self._parked.setdefault(key, []).append(program)
        self._parked.move_to_end(key)
        self._parked_bytes += program.device_bytes
        while (
            sum(len(v) for v in self._parked.values()) > self.max_parked
            or self._parked_bytes > self.max_parked_bytes
        ):
            old_key, old = next(iter(self._parked.items()))
            victim = old.pop(0)
            if not old:
                del self._parked[old_key]
            self._parked_bytes -= victim.device_bytes
            victim.dispose()

    def clear(self) -> None:
        """Dispose every parked program and forget the plans (executor dispose)."""
        for programs in self._parked.values():
            for program in programs:
                program.dispose()
        self._parked.clear()
        self._parked_bytes = 0
        self._plans.clear()


class Lease:
    """A one-shot program handed to one caller: run/download go through, dispose parks it.
    Anything else (plan, carry_mode, ...) reads the program's attribute."""

    def __init__(self, program: Any, key: tuple, cache: PlanCache) -> None:
        self._program = program
        self._key = key
        self._cache: PlanCache | None = cache

    def run(self, steps: Any, read_ids: Any) -> dict[int, Any]:
        return self._live().run(steps, read_ids)

    def download(self, node_id: int) -> Any:
        return self._live().download(node_id)

    def dispose(self) -> None:
        """Park the program for its next use. Idempotent; later calls raise DISPOSED."""
        cache, self._cache = self._cache, None
        if cache is not None:
            cache.park(self._key, self._program)

    def _live(self) -> Any:
        if self._cache is None:
            raise GpuLabError("DISPOSED", "this wgpu program was disposed")
        return self._program

    def __getattr__(self, name: str) -> Any:
        return getattr(self._program, name)
