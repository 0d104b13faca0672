"""A lowered aten graph as a callable over torch tensors, backed by one prepared session.

Static inputs (an inference graph's parameters and buffers: aot_autograd's
`static_input_indices`) become constants of the protocol graph, so their data are uploaded once
when the session is prepared; every other input is fed each call. A call converts the fed
tensors, runs one session step (one submission, one read-back of the outputs) and returns torch
tensors on the caller's device. The session is kept for the next call and prepared again only
when a static input changed (its storage or its version counter: an in-place update).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.fx

from ..errors import GpuLabError
from ..graph import Graph, Tensor
from .lower import Lowered, fed_input, lower
from .packing import Slot
from .table import protocol_dtype

INT32 = np.iinfo(np.int32)


@dataclass
class Options:
    """The backend's options (torch.compile(..., options={...}) or make_backend(...))."""

    backend: str | None = None  # "wgpu", "cpu-python" or None: gpulab.host's choice
    strict: bool = False  # an unmapped op raises UNSUPPORTED instead of running eager
    partition: bool = True  # split around unmapped ops (False: the whole aten graph eager)
    verbose: bool = True  # print the summary of a graph that falls back to eager

    @classmethod
    def parse(cls, options: dict[str, Any] | None) -> Options:
        options = dict(options or {})
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(options) - known)
        if unknown:
            raise GpuLabError(
                "VALIDATION",
                f"gpulab backend: unknown option(s) {unknown} (known: {sorted(known)})",
            )
        return cls(**options)


@dataclass
class Record:
    """What one compiled graph did, for `report()` and tests."""

    label: str
    ops: int = 0
    nodes: int = 0
    backend: str | None = None  # where it ran (None: eager PyTorch, see reason)
    reason: str = ""
    calls: int = 0
    prepares: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


RECORDS: list[Record] = []


def to_numpy(t: torch.Tensor, where: str) -> np.ndarray:
    """A torch tensor's values as the protocol carries them (int64 -> int32, checked)."""
    kind = protocol_dtype(t.dtype)
    arr = t.detach().to("cpu").contiguous().numpy()
    if kind == "int32" and arr.dtype != np.int32:
        if arr.size and (arr.min() < INT32.min or arr.max() > INT32.max):
            raise GpuLabError(
                "VALIDATION",
                f"{where}: int64 values outside int32's range cannot be sent to gpulab",
            )
        arr = arr.astype(np.int32)
    return arr


def to_torch(entry: dict[str, Any], dtype: torch.dtype | None, device: torch.device) -> Any:
    arr = np.array(entry["array"])  # a copy the caller owns (the read-back may be reused)
    out = torch.from_numpy(arr)
    if dtype is not None and out.dtype != dtype:
        out = out.to(dtype)
    return out.to(device) if device.type != "cpu" else out


class CompiledGraph:
    """Call with the FX graph's inputs (a list: aot_autograd's boxed convention)."""

    _boxed_call = True

    def __init__(
        self, gm: torch.fx.GraphModule, label: str, options: Options, static: Sequence[int] = ()
    ) -> None:
        self.gm = gm
        self.options = options
        self.static = set(static)
        self._boxed_call = True  # in the instance dict: dynamo's disable() wrapper copies it
        self.record = Record(label)
        probe = lower(gm)  # builds once now: a lowering error surfaces at compile time
        self.record.nodes = len(probe.graph._nodes)
        RECORDS.append(self.record)  # only a graph that lowered: a refusal is recorded eager
        self._session: Any = None
        self._lowered: Lowered | None = None
        self._key: tuple | None = None
        self._execute_only = False  # set when an output was non-finite (see _run)

    def __call__(self, *given: Any) -> list[Any]:
        # boxed (one list: aot_autograd's forward) or unboxed (its backward, wrapped in
        # dynamo's disable, which drops the _boxed_call mark)
        args = list(given[0]) if len(given) == 1 and isinstance(given[0], list) else list(given)
        outputs = self._run(args) if self._has_outputs() else {}
        self.record.calls += 1
        assert self._lowered is not None
        device = _device(args)
        out = []
        for spec in self._lowered.specs:
            if spec.kind == "tensor" and spec.name in self._lowered.slots:
                out.append(_unpack(outputs, self._lowered.slots[spec.name], spec.dtype, device))
            elif spec.kind == "tensor":
                out.append(to_torch(outputs[spec.name], spec.dtype, device))
            elif spec.kind == "input":
                out.append(args[spec.index])
            else:
                out.append(spec.value)
        return out

    def _has_outputs(self) -> bool:
        if self._lowered is None:
            self._lowered = lower(self.gm)
        return bool(self._lowered.outputs)

    def _run(self, args: list[Any]) -> dict[str, Any]:
        """One session step; a session refuses non-finite read-backs (the protocol poisons
        it), but a torch model may return inf or NaN: such a graph then runs as one
        `execute` per call (every input sent each call), which returns them as they are."""
        if not self._execute_only:
            key = self._static_key(args)
            if self._session is None or key != self._key:
                self._prepare(args, key)
            lowered = self._lowered
            assert lowered is not None
            feeds = {lowered.inputs[i]: to_numpy(args[i], f"input {i}") for i in lowered.fed}
            try:
                result = self._session.run(feeds)
            except GpuLabError as err:
                if "non-finite" not in err.message:
                    raise
                self.dispose()
                self._execute_only = True
                self.record.extra["execute_only"] = err.message
            else:
                self.record.backend = result["backend"]
                return result["outputs"]
        lowered = lower(self.gm, lambda g, i, node: _constant_input(g, args[i], node))
        self._lowered = lowered
        result = lowered.graph.run(backend=self.options.backend, **lowered.outputs)
        self.record.backend = result["backend"]
        return result["outputs"]

    def _static_key(self, args: list[Any]) -> tuple:
        return tuple(
            (i, args[i].data_ptr(), args[i]._version)
            for i in sorted(self.static)
            if isinstance(args[i], torch.Tensor)
        )

    def _prepare(self, args: list[Any], key: tuple) -> None:
        if self._session is not None:
            self._session.dispose()

        def make_input(g: Graph, index: int, node: torch.fx.Node) -> Tensor:
            if index in self.static and isinstance(args[index], torch.Tensor):
                arr = to_numpy(args[index], f"parameter input {index}")
                return g.tensor(arr, dtype=protocol_dtype(args[index].dtype))
            return fed_input(g, index, node)

        lowered = lower(self.gm, make_input)
        fed = [lowered.inputs[i] for i in lowered.fed]
        self._session = lowered.graph.prepare(
            feeds=fed, backend=self.options.backend, **lowered.outputs
        )
        self._lowered, self._key = lowered, key
        self.record.prepares += 1
        self.record.backend = self._session.backend

    def dispose(self) -> None:
        if self._session is not None:
            self._session.dispose()
            self._session = None


def _unpack(outputs: dict[str, Any], slot: Slot, dtype: Any, device: torch.device) -> Any:
    """An output packed past max_outputs (packing.py): its slice of the pack, reshaped."""
    flat = np.asarray(outputs[slot.pack]["array"]).reshape(-1)
    size = math.prod(slot.shape)
    part = flat[slot.offset : slot.offset + size].reshape(slot.shape)
    return to_torch({"array": part}, dtype, device)


def _constant_input(g: Graph, value: Any, node: torch.fx.Node) -> Tensor:
    if not isinstance(value, torch.Tensor):
        raise GpuLabError("UNSUPPORTED", f"input {node.name} is a {type(value).__name__}")
    return g.tensor(to_numpy(value, node.name), dtype=protocol_dtype(value.dtype))


def _device(args: list[Any]) -> torch.device:
    for a in args:
        if isinstance(a, torch.Tensor):
            return a.device
    return torch.device("cpu")


class SymbolicGraph:
    """An aten graph with symbolic shapes (dynamo's automatic dynamic after a shape change, or
    dynamic=True): specialized per concrete input shapes at call time (make_fx over the graph
    with the call's values bakes every size in), each specialization its own CompiledGraph;
    one whose lowering refuses runs the graph eagerly for those shapes."""

    def __init__(
        self,
        gm: torch.fx.GraphModule,
        label: str,
        options: Options,
        static: Sequence[int] = (),
        kind: str = "inference",
    ) -> None:
        self._boxed_call = True
        self.gm, self.label, self.options, self.static = gm, label, options, list(static)
        self.kind = kind
        self.record = Record(label, reason="symbolic shapes: specialized per call's shapes")
        RECORDS.append(self.record)
        self._by_shape: dict[tuple, Any] = {}

    def __call__(self, *given: Any) -> list[Any]:
        args = list(given[0]) if len(given) == 1 and isinstance(given[0], list) else list(given)
        key = tuple(tuple(a.shape) + (a.dtype,) if isinstance(a, torch.Tensor) else a for a in args)
        if key not in self._by_shape:
            self._by_shape[key] = self._specialize(args, len(self._by_shape))
        self.record.calls += 1
        run = self._by_shape[key]
        return run(args) if isinstance(run, CompiledGraph) else list(run(*args))

    def _specialize(self, args: list[Any], index: int) -> Any:
        from torch.fx.experimental.proxy_tensor import make_fx

        def replay(*values: Any) -> Any:
            return self.gm(*values)

        static_gm = make_fx(replay, tracing_mode="fake")(*args)
        try:
            compiled = CompiledGraph(
                static_gm, f"{self.label}.shape{index}", self.options, self.static
            )
        except GpuLabError as err:
            if self.kind == "backward":  # region.py's rule: never eager over our forward
                raise GpuLabError(
                    "UNSUPPORTED",
                    f"{self.label}: the backward for these shapes cannot run on gpulab "
                    f"({err.message}) and may not run eagerly over a gpulab forward",
                ) from err
            self.record.extra[f"shape{index}"] = f"eager: {err.message}"
            return self.gm.forward
        self.record.extra[f"shape{index}"] = compiled.record.label
        return compiled
