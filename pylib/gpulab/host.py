"""Where a graph runs: the Pyodide bridge, the wgpu executor, or cpu-python, with records.

Every graph is validated first (`protocol.validate`), so bad input never reaches a device. Then:

- In Pyodide (`sys.platform == "emscripten"`) the graph goes to the JS runtime of the page via
  `gpulab.pyodide_bridge` (owned by the playground). The seam is three functions, all taking the
  plain protocol dict (numbers and "nan"/"inf"/"-inf" strings):
    `pyodide_bridge.execute(graph) -> result`              (synchronous, where JSPI allows)
    `pyodide_bridge.submit(graph, callback, on_error)`     (calls back when the page answers)
    `pyodide_bridge.prepare(graph, feeds=, carry=, resident=, outputs=, input_names=)`
                                                           (-> a session with Session's API)
- Natively, `backend=None`/"auto" tries the wgpu executor (`gpulab.native.wgpu_executor.
  open_executor(allow_software)`, probed lazily on the first graph and cached) unless the GPU is
  switched off (`configure(gpu=False)`, `--no-gpu`, `GPULAB_GPU=0`); when it is unavailable, or
  refuses a graph with LIMIT, the graph runs on cpu-python and the result says why
  (`stats["attempts"]`, `stats["fallback"]`). `backend="wgpu"` is never downgraded;
  `backend="cpu-python"` forces numpy; `strict=True` turns any fallback into an error.
  Software adapters (lavapipe, SwiftShader) are refused unless `allow_software=True` or
  `GPULAB_ALLOW_SOFTWARE=1`.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import GpuLabError
from .protocol import CheckedGraph, label, validate

AUTO = "auto"
CPU = "cpu-python"
WGPU = "wgpu"
BACKENDS = (AUTO, CPU, WGPU)


@dataclass
class HostConfig:
    """Process-wide choices (the CLI sets them); None means: read the environment."""

    gpu: bool | None = None
    allow_software: bool | None = None
    probes: dict[bool, Any] = field(default_factory=dict)  # allow_software -> executor or error


_config = HostConfig()


def configure(gpu: bool | None = None, allow_software: bool | None = None) -> None:
    """Set the host mode: `gpu=False` is `--no-gpu`; `allow_software=True` admits software
    adapters. Forgets any cached adapter probe."""
    _config.gpu = gpu
    _config.allow_software = allow_software
    _config.probes.clear()


def in_pyodide() -> bool:
    return sys.platform == "emscripten"


def gpu_enabled() -> bool:
    if _config.gpu is not None:
        return _config.gpu
    return os.environ.get("GPULAB_GPU", "1").strip().lower() not in ("0", "false", "no", "off")


def software_allowed(explicit: bool | None = None) -> bool:
    if explicit is not None:
        return explicit
    if _config.allow_software is not None:
        return _config.allow_software
    return os.environ.get("GPULAB_ALLOW_SOFTWARE", "0").strip().lower() in ("1", "true", "yes")


# ---------------------------------------------------------------------------------------------
# Executors


def _open_cpu() -> Any:
    from .cpu import CpuExecutor

    return CpuExecutor()


def _probe_wgpu(allow_software: bool) -> Any:
    """The wgpu executor, or the GpuLabError(UNAVAILABLE) saying why not; cached per mode."""
    if allow_software not in _config.probes:
        _config.probes[allow_software] = _open_wgpu(allow_software)
    return _config.probes[allow_software]


def _open_wgpu(allow_software: bool) -> Any:
    try:
        from .native.wgpu_executor import open_executor
    except ImportError as err:
        return GpuLabError("UNAVAILABLE", f"the wgpu executor is not available ({err})")
    try:
        return open_executor(allow_software)
    except GpuLabError as err:
        return err if err.code == "UNAVAILABLE" else GpuLabError("UNAVAILABLE", err.message)
    except Exception as err:  # noqa: BLE001 - a broken driver must not take the host down
        return GpuLabError("UNAVAILABLE", f"opening the wgpu executor failed: {err!r}")


@dataclass
class Attempts:
    """The record of where a graph tried to run: becomes stats["attempts"]."""

    items: list[dict[str, Any]] = field(default_factory=list)

    def add(self, backend: str, ok: bool, reason: str | None = None) -> None:
        self.items.append({"backend": backend, "ok": ok, "reason": reason})


def _candidates(backend: str | None, allow_software: bool | None, strict: bool,
                attempts: Attempts) -> list[Any]:
    """Executors to try in order (the first that does not refuse with LIMIT runs the graph)."""
    name = AUTO if backend is None else backend
    if name == CPU:
        return [_open_cpu()]
    if name == WGPU:
        probe = _probe_wgpu(software_allowed(allow_software))
        if isinstance(probe, GpuLabError):
            raise GpuLabError("UNAVAILABLE", f"backend 'wgpu' was requested: {probe.message}")
        return [probe]
    if name != AUTO:
        raise GpuLabError("UNAVAILABLE", f"unknown backend {name!r}; known: {list(BACKENDS)}")
    if not gpu_enabled():
        return [_open_cpu()]
    probe = _probe_wgpu(software_allowed(allow_software))
    if isinstance(probe, GpuLabError):
        attempts.add(WGPU, False, probe.message)
        if strict:
            raise GpuLabError("UNAVAILABLE", f"strict: no GPU ({probe.message})")
        return [_open_cpu()]
    return [probe, None]  # None: cpu-python, opened only if the GPU refuses with LIMIT


def _with_fallback(candidates: list[Any], strict: bool, attempts: Attempts,
                   action: Callable[[Any], Any]) -> tuple[Any, Any, str | None]:
    """Run action(executor) on the first candidate that does not refuse with LIMIT."""
    fallback = None
    for i, executor in enumerate(candidates):
        executor = executor if executor is not None else _open_cpu()
        last = i == len(candidates) - 1
        try:
            value = _as_gpulab_errors(executor.name, action, executor)
        except GpuLabError as err:
            attempts.add(executor.name, False, err.message)
            if err.code == "BACKEND" and executor.name == WGPU:
                _config.probes.clear()  # a lost device: the next graph probes afresh
            if err.code != "LIMIT" or last or strict:
                raise
            fallback = f"{executor.name} refused the graph ({err.message}); re-evaluated on {CPU}"
            continue
        attempts.add(executor.name, True)
        return executor, value, fallback
    raise AssertionError("unreachable: the last candidate either returns or raises")


def _as_gpulab_errors(name: str, action: Callable[[Any], Any], executor: Any) -> Any:
    """Every executor failure reaches the caller as a GpuLabError (BACKEND when untyped)."""
    try:
        return action(executor)
    except GpuLabError:
        raise
    except Exception as err:  # wrapped, with its cause chained
        raise GpuLabError("BACKEND", f"{name} failed: {type(err).__name__}: {err}") from err


# ---------------------------------------------------------------------------------------------
# execute / submit


def execute(graph: Any, backend: str | None = None, allow_software: bool | None = None,
            strict: bool = False) -> dict[str, Any]:
    """Validate and run a graph once; return {backend, outputs, stats}.

    `graph` is a protocol dict (data may be lists, array('f') or numpy arrays in-process).
    """
    if in_pyodide():
        # The page's runtime validates before any device work (same codes and messages);
        # validating here too would double the cost of every run in the page.
        from . import pyodide_bridge

        return pyodide_bridge.execute(graph)
    started = time.perf_counter()
    checked = validate(graph)
    validated = time.perf_counter()
    _refuse_unfed_inputs(checked)
    attempts = Attempts()
    candidates = _candidates(backend, allow_software, strict, attempts)
    out_ids = [o.id for o in checked.outputs]

    def run_once(executor: Any) -> dict[int, Any]:
        program = executor.prepare(checked, feeds=[], carry={}, keep=[])
        try:
            return program.run([{}], out_ids)
        finally:
            program.dispose()

    executor, values, fallback = _with_fallback(candidates, strict, attempts, run_once)
    stats = _stats(executor, attempts, fallback, checked)
    stats["validate_ms"] = (validated - started) * 1e3
    stats["run_ms"] = (time.perf_counter() - validated) * 1e3
    outputs = {o.name: output_entry(values[o.id], checked.by_id[o.id].shape)
               for o in checked.outputs}
    return {"backend": executor.name, "outputs": outputs, "stats": stats}


def submit(graph: Any, callback: Callable[[dict], Any],
           on_error: Callable[[GpuLabError], Any] | None = None, **options: Any) -> None:
    """Run a graph and call back with the result (natively before returning). Errors go to
    on_error, or raise when there is none."""
    if in_pyodide():
        # submit reports asynchronously, so bad input is refused here, at once, while the
        # caller's line is still on the stack (execute gets the runtime's error synchronously)
        validate(graph)
        from . import pyodide_bridge

        pyodide_bridge.submit(graph, callback, on_error)
        return
    try:
        result = execute(graph, **options)
    except GpuLabError as err:
        if on_error is None:
            raise
        on_error(err)
        return
    callback(result)


def _refuse_unfed_inputs(checked: CheckedGraph) -> None:
    for node_id in checked.order:
        node = checked.by_id[node_id]
        if node.op == "input" and node.data is None:
            raise GpuLabError(
                "VALIDATION",
                f"{label(node.id, node.op)}: an input without data can only run in a prepared "
                "session that feeds it (Graph.prepare(feeds=[...]))",
                node.id,
            )


def _stats(executor: Any, attempts: Attempts, fallback: str | None,
           checked: CheckedGraph) -> dict[str, Any]:
    info = getattr(executor, "info", None) or {}
    stats: dict[str, Any] = {
        "attempts": attempts.items,
        "adapter": None if executor.name == CPU else dict(info),
        "software": bool(info.get("software", False)),
        "required_version": checked.required_version,
    }
    if fallback:
        stats["fallback"] = fallback
    return stats


def output_entry(value: Any, shape: tuple[int, ...]) -> dict[str, Any]:
    """{shape, dtype, data (flat list of floats), array (numpy, shaped)} for one output."""
    import numpy as np

    arr = np.asarray(value, dtype=np.float32).reshape(shape)
    return {"shape": list(shape), "dtype": "float32", "data": arr.reshape(-1).tolist(),
            "array": arr}


# ---------------------------------------------------------------------------------------------
# prepare


def prepare(graph: Any, feeds: Iterable[int] = (), carry: Mapping[int, str] | None = None,
            resident: Iterable[str] = (), outputs: Iterable[str] | None = None,
            backend: str | None = None, allow_software: bool | None = None,
            strict: bool = False, input_names: Mapping[str, int] | None = None) -> Any:
    """Validate a graph and prepare a Session (docs/protocol.md "Prepared sessions").

    feeds: ids of inputs without data, given every step; carry: input id -> output name whose
    value replaces the input after each step; resident: output names kept for download;
    outputs: names read back after every run (default: the graph's outputs that are neither
    resident nor carry targets).
    """
    from .session import Session, SessionPlan

    checked = validate(graph)
    if in_pyodide():
        from . import pyodide_bridge

        return pyodide_bridge.prepare(graph, feeds=list(feeds), carry=dict(carry or {}),
                                      resident=list(resident), outputs=outputs,
                                      input_names=dict(input_names or {}))
    plan = SessionPlan.build(checked, list(feeds), dict(carry or {}), list(resident), outputs,
                             dict(input_names or {}))
    attempts = Attempts()
    candidates = _candidates(backend, allow_software, strict, attempts)

    def prepare_on(executor: Any) -> Any:
        return executor.prepare(checked, feeds=plan.feeds, carry=plan.carry_ids,
                                keep=plan.keep_ids)

    executor, program, fallback = _with_fallback(candidates, strict, attempts, prepare_on)
    return Session(program, executor.name, plan, _stats(executor, attempts, fallback, checked))
