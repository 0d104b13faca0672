"""`cpu-python`: the numpy evaluator, with the executor interface of docs/architecture.md.

`CpuExecutor().prepare(checked, feeds, carry, keep)` returns a `CpuProgram` whose
`run(steps, read_ids)` evaluates the checked graph once per step (kernels from the registry in
kernels.py), applies `carry` after each step and returns the read ids' values after the last.
"""

from __future__ import annotations

import platform
from collections.abc import Iterable, Mapping
from typing import Any

from .. import optable, support
from ..dtypes import DTYPES, as_numpy, block_of
from ..errors import GpuLabError
from ..protocol import CheckedGraph, CheckedNode, label
from .deadline import check as check_deadline

try:
    import numpy as np
except ImportError:  # Pyodide without numpy, or a bare install: the package still imports
    np = None  # type: ignore[assignment]

NAME = "cpu-python"
NEEDS_NUMPY = "cpu-python needs numpy: pip install gpulab[native]"


class CpuExecutor:
    """The numpy evaluator. Raises GpuLabError(UNAVAILABLE) when numpy is missing."""

    name = NAME

    def __init__(self) -> None:
        if np is None:
            raise GpuLabError("UNAVAILABLE", NEEDS_NUMPY)
        self.info = {
            "vendor": "numpy",
            "architecture": platform.machine(),
            "description": f"numpy {np.__version__} evaluator on the CPU",
            "software": False,
        }

    def supports(self, checked: CheckedGraph) -> support.Support:
        """Every node needs a kernel in kernels.KERNELS taking its dtypes (kernels.
        KERNEL_DTYPES, float32 where a kernel declares none)."""
        from . import kernels

        ops = {"input", *kernels.KERNELS}  # inputs are read by the evaluator itself
        # ... as numpy arrays of any dtype (dtypes.as_numpy)
        dtypes = {**getattr(kernels, "KERNEL_DTYPES", {}), "input": tuple(DTYPES)}
        # numpy walks any number of axes: every kernel handles max_rank
        rank = optable.limits()["max_rank"]
        return support.check_kernels(checked, ops, dtypes, default_rank=rank)

    def prepare(
        self,
        checked: CheckedGraph,
        feeds: Iterable[int] = (),
        carry: Mapping[int, int] | None = None,
        keep: Iterable[int] = (),
    ) -> CpuProgram:
        """UNSUPPORTED (a missing kernel, named) before anything runs."""
        self.supports(checked).refuse(NAME)
        return CpuProgram(checked, list(feeds), dict(carry or {}), list(keep))

    def dispose(self) -> None:
        """Nothing to release: numpy memory goes with the programs."""


class CpuProgram:
    """A prepared graph: constants converted once, carried inputs and kept outputs in memory."""

    def __init__(
        self, checked: CheckedGraph, feeds: list[int], carry: dict[int, int], keep: list[int]
    ) -> None:
        from .kernels import KERNELS  # numpy is known to be present here

        self._kernels = KERNELS
        self._checked = checked
        self._feeds = set(feeds)
        self._carry = carry
        self._keep = set(keep) | set(carry.values())
        self._constants: dict[int, Any] = {}
        self._state: dict[int, Any] = {}  # carried inputs' current values
        self._kept: dict[int, Any] = {}
        self._disposed = False
        for node in checked.nodes:
            if node.op == "input" and node.id not in self._feeds:
                value = _input_value(node)
                target = self._state if node.id in carry else self._constants
                target[node.id] = value

    def run(self, steps: list[Mapping[int, Any]], read_ids: Iterable[int]) -> dict[int, Any]:
        """Run each step in order; return {id: array of the node's dtype} of read_ids after the
        last step (numpy bool for bool)."""
        self._check_alive()
        values: dict[int, Any] = {}
        for step in steps or [{}]:
            values = self._run_step(step)
            for node_id in self._keep:
                self._kept[node_id] = values[node_id]
            # carry after each step, all at once (one carried input may feed another's output)
            updates = {inp: values[out] for inp, out in self._carry.items()}
            self._state.update(updates)
        return {node_id: values[node_id] for node_id in read_ids}

    def _run_step(self, step: Mapping[int, Any]) -> dict[int, Any]:
        by_id = self._checked.by_id
        values: dict[int, Any] = {}
        for node_id in self._checked.order:
            node = by_id[node_id]
            if node.op == "input":
                values[node_id] = self._input(node, step)
                continue
            args = [values[ref] for ref in node.operands]
            check_deadline(node)  # the server's per-request deadline, if one is set
            try:
                values[node_id] = self._kernels[node.op](node, args)
            except GpuLabError:  # a kernel's own error (an index out of range): as it is
                raise
            except Exception as err:  # a kernel bug must surface as a backend error, named
                raise GpuLabError(
                    "BACKEND",
                    f"{label(node.id, node.op)}: cpu-python kernel failed: {err}",
                    node.id,
                ) from err
        return values

    def _input(self, node: CheckedNode, step: Mapping[int, Any]) -> Any:
        if node.id in self._feeds:
            if node.id not in step:
                raise GpuLabError(
                    "VALIDATION", f"{label(node.id, node.op)}: no value fed for this step", node.id
                )
            return _tag_blocks(node, as_numpy(step[node.id], node.dtype, node.shape))
        if node.id in self._state:
            return self._state[node.id]
        return self._constants[node.id]

    def download(self, node_id: int) -> Any:
        """Current value of a carried input or a kept output (an array of its dtype)."""
        self._check_alive()
        if node_id in self._state:
            return self._state[node_id].copy()
        if node_id in self._kept:
            return self._kept[node_id].copy()
        if node_id in self._keep:
            raise GpuLabError("VALIDATION", f"node {node_id} has no value yet: run a step first")
        raise GpuLabError("VALIDATION", f"node {node_id} is neither carried nor kept")

    def dispose(self) -> None:
        self._disposed = True
        self._constants.clear()
        self._state.clear()
        self._kept.clear()

    def _check_alive(self) -> None:
        if self._disposed:
            raise GpuLabError("DISPOSED", "this cpu-python program was disposed")


def _input_value(node: CheckedNode) -> Any:
    if node.data is None:
        raise GpuLabError(
            "VALIDATION",
            f"{label(node.id, node.op)}: an input without data must be fed (prepare a session "
            "and list it in feeds)",
            node.id,
        )
    return _tag_blocks(node, as_numpy(node.data, node.dtype, node.shape).copy())


def _tag_blocks(node: CheckedNode, value: Any) -> Any:
    """A block-quantized input's bytes as records named by its kind (quant.tagged): q4_k and
    q4_0 take the same bytes for one shape, so the kernels read the kind from the value."""
    if not block_of(node.dtype):
        return value
    from ..quant import tagged

    return tagged(value, node.dtype)
