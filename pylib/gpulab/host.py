"""Where a graph runs: `NativeHost` (wgpu or cpu-python) or `PageHost` (the page's JS runtime).

The host is chosen once, at import: `PageHost` in Pyodide (`sys.platform == "emscripten"`),
`NativeHost` elsewhere; `execute`, `execute_async`, `submit` and `prepare` here call `HOST`.
Both take protocol dicts whose data may be buffers (array.array, memoryview, numpy arrays) or
plain lists; the page sends buffers to JS as typed arrays (pyodide_bridge).

Validation, one policy (docs/architecture.md "Python layers"):
- `Graph` checks each node as it is appended (shape, attrs, limits: errors at the user's line);
- natively the host validates each graph once (`protocol.validate`), before any device work;
  a graph whose structure validated before only has its data checked again (validate_cache.py);
- in the page nothing is validated in Python: the JS runtime validates every graph, for every
  entry point (execute, run_async, submit, prepare), with the same codes and messages, and
  `BrowserSession` takes shapes and dtypes from the runtime's answers.

Natively, where a graph runs is `gpulab.executors`' policy (registry, `auto` order, fallback on
UNAVAILABLE / UNSUPPORTED / LIMIT with the reason in stats, `strict`, software admission).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from . import executors
from .errors import GpuLabError
from .executors import AUTO, CPU, WGPU, configure, gpu_enabled, software_allowed
from .lowering import prepare_lowered
from .protocol import CheckedGraph, label
from .results import output_entry, run_stats
from .validate_cache import validate

__all__ = [
    "AUTO",
    "BACKENDS",
    "CPU",
    "HOST",
    "WGPU",
    "NativeHost",
    "PageHost",
    "SessionLike",
    "configure",
    "execute",
    "execute_async",
    "gpu_enabled",
    "in_pyodide",
    "prepare",
    "prepare_async",
    "software_allowed",
    "submit",
]

BACKENDS = (AUTO, CPU, WGPU)

Callback = Callable[[dict], Any]
ErrorCallback = Callable[[GpuLabError], Any]


def in_pyodide() -> bool:
    return sys.platform == "emscripten"


class SessionLike(Protocol):
    """What `Graph.prepare` returns: `session.Session` natively, `pyodide_bridge.
    BrowserSession` in the page."""

    backend: str | None
    steps_run: int

    def run(self, feeds: Mapping[Any, Any] | None = None) -> dict[str, Any]: ...

    def run_steps(self, steps: Any) -> dict[str, Any]: ...

    def download(self, what: Any) -> dict[str, Any]: ...

    def dispose(self) -> None: ...

    @property
    def disposed(self) -> bool: ...


class NativeHost:
    """Validate once, then run on the executor the policy picks (gpulab.executors)."""

    name = "native"

    def execute(
        self,
        graph: Any,
        backend: str | None = None,
        allow_software: bool | None = None,
        strict: bool = False,
    ) -> dict[str, Any]:
        """Validate and run a graph once; return {backend, outputs, stats}."""
        started = time.perf_counter()
        checked = validate(graph)
        validated = time.perf_counter()
        _refuse_unfed_inputs(checked)
        out_ids = [o.id for o in checked.outputs]

        def run_once(executor: Any) -> dict[int, Any]:
            program = prepare_lowered(executor, checked, feeds=[], carry={}, keep=[])
            try:
                return program.run([{}], out_ids)
            finally:
                program.dispose()

        executor, values, attempts, fallback = executors.run_with_fallback(
            backend, checked, allow_software, strict, run_once
        )
        stats = run_stats(executor, attempts, fallback, checked.required_version)
        stats["validate_ms"] = (validated - started) * 1e3
        stats["run_ms"] = (time.perf_counter() - validated) * 1e3
        outputs = {
            o.name: output_entry(values[o.id], checked.by_id[o.id].shape, _dtype(checked, o.id))
            for o in checked.outputs
        }
        return {"backend": executor.name, "outputs": outputs, "stats": stats}

    async def execute_async(self, graph: Any, **options: Any) -> dict[str, Any]:
        return self.execute(graph, **options)

    def submit(
        self, graph: Any, callback: Callback, on_error: ErrorCallback | None = None, **options: Any
    ) -> None:
        """Run now and call back before returning; errors go to on_error (or raise)."""
        try:
            result = self.execute(graph, **options)
        except GpuLabError as err:
            if on_error is None:
                raise
            on_error(err)
            return
        callback(result)

    def prepare(
        self,
        graph: Any,
        feeds: Iterable[int] = (),
        carry: Mapping[int, str] | None = None,
        resident: Iterable[str] = (),
        outputs: Iterable[str] | None = None,
        backend: str | None = None,
        allow_software: bool | None = None,
        strict: bool = False,
        input_names: Mapping[str, int] | None = None,
    ) -> SessionLike:
        from .session import Session, SessionPlan

        checked = validate(graph)
        plan = SessionPlan.build(
            checked,
            list(feeds),
            dict(carry or {}),
            list(resident),
            outputs,
            dict(input_names or {}),
        )

        def prepare_on(executor: Any) -> Any:
            return prepare_lowered(
                executor, checked, feeds=plan.feeds, carry=plan.carry_ids, keep=plan.keep_ids
            )

        executor, program, attempts, fallback = executors.run_with_fallback(
            backend, checked, allow_software, strict, prepare_on
        )
        stats = run_stats(executor, attempts, fallback, checked.required_version)
        return Session(program, executor.name, plan, stats)

    async def prepare_async(self, graph: Any, **options: Any) -> SessionLike:
        return self.prepare(graph, **options)


class PageHost:
    """Hand graphs to the page's JS runtime (gpulab.pyodide_bridge); it validates them.

    `backend`, `allow_software` and `strict` are the page's choice (its backend menu), so
    they are accepted and ignored here."""

    name = "page"

    @staticmethod
    def _bridge() -> Any:
        from . import pyodide_bridge

        return pyodide_bridge

    def execute(self, graph: Any, **_options: Any) -> dict[str, Any]:
        return self._bridge().execute(graph)

    async def execute_async(self, graph: Any, **_options: Any) -> dict[str, Any]:
        return await self._bridge().execute_async(graph)

    def submit(
        self, graph: Any, callback: Callback, on_error: ErrorCallback | None = None, **_options: Any
    ) -> None:
        """Post the graph; bad input, like any failure, reaches on_error (stderr without)."""
        self._bridge().submit(graph, callback, on_error)

    def prepare(
        self,
        graph: Any,
        feeds: Iterable[int] = (),
        carry: Mapping[int, str] | None = None,
        resident: Iterable[str] = (),
        outputs: Iterable[str] | None = None,
        input_names: Mapping[str, int] | None = None,
        **_options: Any,
    ) -> SessionLike:
        return self._bridge().prepare(
            graph,
            feeds=list(feeds),
            carry=dict(carry or {}),
            resident=list(resident),
            outputs=outputs,
            input_names=dict(input_names or {}),
        )

    async def prepare_async(
        self,
        graph: Any,
        feeds: Iterable[int] = (),
        carry: Mapping[int, str] | None = None,
        resident: Iterable[str] = (),
        outputs: Iterable[str] | None = None,
        input_names: Mapping[str, int] | None = None,
        **_options: Any,
    ) -> SessionLike:
        return await self._bridge().prepare_async(
            graph,
            feeds=list(feeds),
            carry=dict(carry or {}),
            resident=list(resident),
            outputs=outputs,
            input_names=dict(input_names or {}),
        )


HOST: NativeHost | PageHost = PageHost() if in_pyodide() else NativeHost()


def execute(graph: Any, **options: Any) -> dict[str, Any]:
    """Run a graph once: {backend, outputs: {name: {shape, dtype, data, ...}}, stats}.
    Options (natively): backend, allow_software, strict."""
    return HOST.execute(graph, **options)


async def execute_async(graph: Any, **options: Any) -> dict[str, Any]:
    """Awaitable `execute`: in the page it awaits the GPU without blocking (every browser)."""
    return await HOST.execute_async(graph, **options)


def submit(
    graph: Any, callback: Callback, on_error: ErrorCallback | None = None, **options: Any
) -> None:
    """Run a graph and call back with the result (natively before returning)."""
    HOST.submit(graph, callback, on_error, **options)


def prepare(graph: Any, **options: Any) -> SessionLike:
    """A prepared session (docs/protocol.md "Prepared sessions"): feeds (input ids given every
    step), carry (input id -> output name), resident, outputs, input_names; natively also
    backend, allow_software, strict."""
    return HOST.prepare(graph, **options)


async def prepare_async(graph: Any, **options: Any) -> SessionLike:
    """Awaitable `prepare` (in the page it works without JSPI)."""
    return await HOST.prepare_async(graph, **options)


def _dtype(checked: CheckedGraph, node_id: int) -> str:
    return str(getattr(checked.by_id[node_id], "dtype", None) or "float32")


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
