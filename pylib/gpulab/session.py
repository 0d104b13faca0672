"""Prepared sessions: the bookkeeping that is the same for every executor (twin of session.mjs).

A `SessionPlan` checks what `prepare` was given against the checked graph (feeds are the inputs
without data, carried inputs have data and the shape of their output, names exist). A `Session`
maps names and tensors to ids, checks every step's feeds before any work, and keeps the state
machine of docs/protocol.md: a failure after work began (an executor error, a non-finite value in
a read-back) poisons the session, so `run`/`download` refuse with STATE; `dispose` always works
and afterwards every call refuses with DISPOSED.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Self

from .dtypes import as_numpy, to_typed
from .errors import GpuLabError
from .protocol import CheckedGraph, label
from .results import output_entry
from .steps import step_arg


@dataclass
class SessionPlan:
    """Ids and names of a prepared session, checked against the graph."""

    checked: CheckedGraph
    feeds: list[int]
    carry_ids: dict[int, int]  # input id -> output id
    keep_ids: list[int]  # resident and carried outputs
    read_names: list[str]  # read back after every run
    names: dict[str, int]  # output name -> id
    resident: list[str]
    input_names: dict[str, int]  # optional names of inputs (g.input(name=...))

    @classmethod
    def build(
        cls,
        checked: CheckedGraph,
        feeds: list[int],
        carry: dict[int, str],
        resident: list[str],
        outputs: Iterable[str] | None,
        input_names: dict[str, int],
    ) -> SessionPlan:
        names = {o.name: o.id for o in checked.outputs}
        _check_feeds(checked, feeds)
        carry_ids = _check_carry(checked, carry, names)
        for name in resident:
            _require_output(names, name, "resident")
        if outputs is None:
            hidden = set(resident) | set(carry.values())
            read = [o.name for o in checked.outputs if o.name not in hidden]
        else:
            read = list(outputs)
            for name in read:
                _require_output(names, name, "outputs")
        keep = sorted({names[n] for n in resident} | set(carry_ids.values()))
        return cls(checked, feeds, carry_ids, keep, read, names, list(resident), input_names)


def _require_output(names: Mapping[str, int], name: Any, what: str) -> None:
    if name not in names:
        raise GpuLabError(
            "VALIDATION",
            f"{what}: {name!r} is not an output of the graph (outputs: {sorted(names)})",
        )


def _check_feeds(checked: CheckedGraph, feeds: list[int]) -> None:
    for node_id in feeds:
        node = checked.by_id.get(node_id)
        if node is None or node.op != "input" or node.data is not None:
            what = "no such node" if node is None else label(node.id, node.op)
            raise GpuLabError(
                "VALIDATION",
                f"feeds: {node_id} ({what}) is not an input without data",
                node_id if node else None,
            )
    for node in checked.nodes:
        if node.op == "input" and node.data is None and node.id not in feeds:
            raise GpuLabError(
                "VALIDATION",
                f"{label(node.id, node.op)}: has no data and is not listed in feeds",
                node.id,
            )


def _check_carry(
    checked: CheckedGraph, carry: dict[int, str], names: Mapping[str, int]
) -> dict[int, int]:
    ids = {}
    for input_id, name in carry.items():
        node = checked.by_id.get(input_id)
        if node is None or node.op != "input" or node.data is None:
            raise GpuLabError(
                "VALIDATION",
                f"carry: node {input_id} must be an input with data (its initial value)",
                input_id,
            )
        _require_output(names, name, "carry")
        out = checked.by_id[names[name]]
        if out.shape != node.shape:
            raise GpuLabError(
                "VALIDATION",
                f"carry: {label(node.id, node.op)} has shape {list(node.shape)} but output "
                f"{name!r} has shape {list(out.shape)}",
                input_id,
            )
        if out.dtype != node.dtype:
            raise GpuLabError(
                "VALIDATION",
                f"carry: {label(node.id, node.op)} has dtype {node.dtype} but output "
                f"{name!r} has dtype {out.dtype}",
                input_id,
            )
        ids[input_id] = out.id
    return ids


class Session:
    """A prepared graph on one executor: run steps, download kept values, dispose."""

    def __init__(self, program: Any, backend: str, plan: SessionPlan, stats: dict) -> None:
        self._program = program
        self.backend = backend
        self._plan = plan
        self._stats = stats
        self._poisoned: str | None = None
        self._disposed = False
        self.steps_run = 0
        self.owner: Any = None  # the Graph that prepared it (Graph.prepare sets it)

    # -- public API -----------------------------------------------------------------------

    def run(self, feeds: Mapping[Any, Any] | int | None = None) -> dict[str, Any]:
        """One step; feeds map an input (Tensor, id or name) to its data for this step. A step
        count (`run(10)`) runs that many steps, as run_steps(10) (sessions without feeds)."""
        if isinstance(feeds, int) and not isinstance(feeds, bool):
            return self.run_steps(feeds)
        return self.run_steps([feeds or {}])

    def run_steps(self, steps: int | Iterable[Mapping[Any, Any] | None]) -> dict[str, Any]:
        """Many steps in one call (one submission where the executor can); returns the last
        step's outputs. `steps` is a step count (no feeds) or one feed map per step."""
        self._check_usable()
        prepared = self._prepare_steps(steps)
        read = [self._plan.names[n] for n in self._plan.read_names]
        try:
            values = self._run_in_parts(prepared, read)
        except Exception as err:
            raise self._poison(err) from err
        self.steps_run += len(prepared)
        outputs = {}
        for name in self._plan.read_names:
            outputs[name] = self._entry(
                values[self._plan.names[name]], self._plan.names[name], name
            )
        stats = {**self._stats, "steps": len(prepared), "steps_run": self.steps_run}
        return {"backend": self.backend, "outputs": outputs, "stats": stats}

    def download(self, what: Any) -> dict[str, Any]:
        """The current value of a resident or carried output, or of a carried input."""
        self._check_usable()
        node_id = self._resolve_kept(what)
        try:
            value = self._program.download(node_id)
        except GpuLabError as err:
            if err.code == "VALIDATION":
                raise
            raise self._poison(err) from err
        except Exception as err:
            raise self._poison(err) from err
        return self._entry(value, node_id, str(what))

    def dispose(self) -> None:
        """Release the program. Always works, also on a poisoned session; idempotent."""
        if self._disposed:
            return
        self._disposed = True
        try:
            self._program.dispose()
        finally:
            self._program = None

    @property
    def poisoned(self) -> str | None:
        """Why the session is poisoned, or None."""
        return self._poisoned

    @property
    def disposed(self) -> bool:
        return self._disposed

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.dispose()

    # -- internals ------------------------------------------------------------------------

    def _run_in_parts(self, prepared: list[dict[int, Any]], read: list[int]) -> Any:
        """program.run over the steps, in as many runs as the executor's staging buffer needs
        (`max_steps_per_run`; carries persist between runs, only the last one reads back)."""
        per_run = getattr(self._program, "max_steps_per_run", lambda: None)()
        if not per_run or len(prepared) <= per_run:
            return self._program.run(prepared, read)
        for start in range(0, len(prepared) - per_run, per_run):
            self._program.run(prepared[start : start + per_run], [])
        rest = len(prepared) % per_run or per_run
        return self._program.run(prepared[-rest:], read)

    def _check_usable(self) -> None:
        if self._disposed:
            raise GpuLabError("DISPOSED", "the session was disposed")
        if self._poisoned is not None:
            raise GpuLabError(
                "STATE", f"the session is poisoned ({self._poisoned}): only dispose() remains"
            )

    def _poison(self, err: Exception) -> GpuLabError:
        message = err.message if isinstance(err, GpuLabError) else f"{type(err).__name__}: {err}"
        self._poisoned = message
        if isinstance(err, GpuLabError) and err.code == "BACKEND":
            return err
        return GpuLabError(
            "BACKEND",
            f"{self.backend} failed during a session run: {message}",
            getattr(err, "node", None),
        )

    def _prepare_steps(self, steps: Any) -> list[dict[int, Any]]:
        """Every step checked before any device work (all or nothing), bounded by max_steps
        before anything is built (gpulab.steps)."""
        arg = step_arg(steps)
        if isinstance(arg, int):
            if self._plan.feeds:
                raise GpuLabError(
                    "VALIDATION",
                    "run_steps: this session has fed inputs; pass one feed dict per step",
                )
            empty: dict[int, Any] = {}
            return [empty] * arg  # one shared empty map: nothing per step to build
        return [self._step_feeds(i, step) for i, step in enumerate(arg)]

    def _step_feeds(self, index: int, step: Any) -> dict[int, Any]:
        step = step or {}
        fed: dict[int, Any] = {}
        for key, data in step.items():
            node_id = self._resolve_input(key, index)
            node = self._plan.checked.by_id[node_id]
            # checked as input data is (docs/protocol.md "Dtypes"): the input's dtype and size
            values = to_typed(
                data,
                node.dtype,
                label(node.id, node.op),
                node.id,
                node.shape,
                f"step {index}: feed",
            )
            fed[node_id] = as_numpy(values, node.dtype, node.shape)
        missing = [i for i in self._plan.feeds if i not in fed]
        if missing:
            raise GpuLabError(
                "VALIDATION", f"step {index}: no value for fed input(s) {missing}", missing[0]
            )
        return fed

    def _resolve_input(self, key: Any, index: int) -> int:
        node_id = _key_to_id(key, self._plan.input_names, self.owner)
        if node_id not in self._plan.feeds:
            raise GpuLabError(
                "VALIDATION",
                f"step {index}: {key!r} is not a fed input of this "
                f"session (feeds: {self._plan.feeds})",
            )
        return node_id

    def _resolve_kept(self, what: Any) -> int:
        plan = self._plan
        if isinstance(what, str) and what in plan.names:
            node_id = plan.names[what]
        else:
            node_id = _key_to_id(what, plan.input_names, self.owner)
        if node_id in plan.carry_ids or node_id in plan.keep_ids:
            return node_id
        raise GpuLabError(
            "VALIDATION",
            f"download: {what!r} is neither resident nor carried "
            "(list it in resident= when preparing)",
        )

    def _entry(self, value: Any, node_id: int, name: str) -> dict[str, Any]:
        node = self._plan.checked.by_id[node_id]
        entry = output_entry(value, node.shape, getattr(node, "dtype", None) or "float32")
        arr = entry["array"]
        if not _all_finite(arr):
            self._poisoned = f"non-finite value in the read-back of {name!r}"
            raise GpuLabError("BACKEND", f"{self._poisoned}; the session is poisoned", node_id)
        return entry


def _all_finite(arr: Any) -> bool:
    import numpy as np

    return arr.dtype.kind != "f" or bool(np.isfinite(arr).all())


def _key_to_id(key: Any, input_names: Mapping[str, int], owner: Any = None) -> int:
    """A Tensor (of `owner`, the session's Graph, when known), a node id or an input's name ->
    node id."""
    node_id = getattr(key, "id", None)
    if node_id is not None and hasattr(key, "graph"):
        if owner is not None and key.graph is not owner:
            raise GpuLabError(
                "VALIDATION", f"tensor {node_id} belongs to another graph than this session's"
            )
        return node_id
    if isinstance(key, int) and not isinstance(key, bool):
        return key
    if isinstance(key, str) and key in input_names:
        return input_names[key]
    raise GpuLabError("VALIDATION", f"{key!r} does not name a tensor of this session")
