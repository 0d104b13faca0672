"""gpulab in the browser: graphs go to the page's JS runtime through `_gpulab_adapter`.

The page registers that JS module with `createPythonGPUAdapter(pyodide, runtime, {allowExecute:
true})` (backends-js/src/python-adapter.mjs). Its functions answer envelopes, `{ok, value}` or
`{ok: false, error: {code, message, node}}`, which we turn into result dicts or GpuLabError.

Three ways to run, as in the native host:
- `execute(graph)`: synchronous, where Pyodide can suspend on a JS promise (JSPI, current
  Chromium): `pyodide.ffi.run_sync`; elsewhere it says to use one of the others.
- `await execute_async(graph)`: always works (top-level await in the notebook).
- `submit(graph, callback, on_error)`: calls back when the GPU is done (sessions too:
  `submit_prepare`, `BrowserSession.submit_steps` / `submit_download`, on `when_done`).
Results are the native shape: {"backend", "outputs": {name: {"shape", "dtype", "data": list of
numbers}}, "stats"}. Nothing here needs numpy (the page has none).

Transport: tensor data crosses as typed arrays, never as per-element lists. Graph data and
feeds are buffers (array.array, memoryview, numpy) that `to_js` copies into a typed array of
their format in one go; outputs come back as typed arrays that `to_py()` copies into a
memoryview, and an entry's `data` list is made from it (C speed) only when read.

Validation: none here. The page's runtime validates every graph (execute, submit, prepare),
before any device work, with the codes and messages of gpulab.protocol; a session's shapes and
dtypes come from the runtime's answers (docs/architecture.md "Python layers").

Stop: every wait on a request is bracketed by the adapter's `enter_wait()`/`leave_wait()`. While
Python waits, the page does not send SIGINT (it would land in Pyodide's glue that hands the
answer back, and be lost together with the answer: the cell would wait forever); it raises the
cancel flag instead, and `leave_wait()` says "stopped", so we raise KeyboardInterrupt here, in the
cell's own stack (web/stop-control.mjs has the page's side).
"""

from __future__ import annotations

import array
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any, Self

from .dtypes import TYPECODE
from .errors import GpuLabError
from .results import OutputEntry, buffer_entry
from .steps import step_arg

MODULE_NAME = "_gpulab_adapter"
NO_ADAPTER = (
    "no GPU adapter in this page: the page must call createPythonGPUAdapter(pyodide, runtime, "
    "{allowExecute: true}) before Python submits graphs"
)
NO_SYNC = (
    "a synchronous run needs JavaScript promise integration (JSPI), which this browser or "
    "context lacks: use `await g.run_async(...)` or `g.submit(callback, ...)`; for sessions "
    "`s = await g.prepare_async(...)`, `await s.run_async(...)`, `await s.run_steps_async(n)`, "
    "`await s.download_async(t)`"
)

STOPPED = "stopped by the user (Stop)"
SIGINT_GRACE_S = 2.0  # the page writes SIGINT right after committing to it: microseconds

Callback = Callable[[dict], Any]
ErrorCallback = Callable[[GpuLabError], Any]


def _adapter() -> Any:
    """The JS adapter module, looked up fresh: a backend switch registers a new one."""
    sys.modules.pop(MODULE_NAME, None)
    try:
        return __import__(MODULE_NAME)
    except ImportError:
        raise GpuLabError("UNAVAILABLE", NO_ADAPTER) from None


def _is_current(adapter: Any) -> bool:
    """Whether `adapter` is the page's adapter now (JsProxy == compares the JS objects)."""
    try:
        return bool(_adapter() == adapter)
    except GpuLabError:
        return False


def can_run_sync() -> bool:
    """True where `execute` can block on the GPU promise (JSPI)."""
    try:
        from pyodide.ffi import can_run_sync as _can
    except ImportError:
        return False
    return bool(_can())


def _error_from(js_error: Any) -> GpuLabError:
    code = str(getattr(js_error, "code", "BACKEND"))
    node = getattr(js_error, "node", None)
    node_id = node if isinstance(node, int) and not isinstance(node, bool) else None
    message = str(getattr(js_error, "message", js_error))
    try:
        return GpuLabError(code, message, node_id)
    except ValueError:  # a code the protocol does not know: still a backend failure
        return GpuLabError("BACKEND", f"{code}: {message}", node_id)


def _unwrap(envelope: Any) -> Any:
    if not envelope.ok:
        raise _error_from(envelope.error)
    return envelope.value


def typed_buffer(data: Any) -> Any:
    """A JS typed array (or a Python buffer) as a flat memoryview, copied once (no loop)."""
    if hasattr(data, "to_py"):
        data = data.to_py()
    if isinstance(data, memoryview):
        return data
    if isinstance(data, (array.array, bytes, bytearray)):
        return memoryview(data)
    return array.array("d", data)  # a plain list, only from a hand-written JS answer


def floats(data: Any) -> list[float]:
    """A JS typed array (or a Python sequence) as a list of Python floats."""
    return [float(x) for x in typed_buffer(data).tolist()]


def _plain(value: Any) -> Any:
    """JS data (stats, attempts) as Python dicts/lists/scalars."""
    if hasattr(value, "to_py"):
        try:
            value = value.to_py()
        except Exception:  # noqa: BLE001 - an unconvertible value is shown as text
            return str(value)
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, memoryview):
        return value.tolist()
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def output_to_py(js_output: Any) -> OutputEntry:
    """One output {shape, dtype, data}: data arrives as a typed array; the list is deferred."""
    return buffer_entry(
        typed_buffer(js_output.data),
        [int(d) for d in _plain(js_output.shape)],
        str(getattr(js_output, "dtype", "float32") or "float32"),
    )


def _entries(js_object: Any) -> list[tuple[Any, Any]]:
    """(key, value) of a JS object's own properties, read in JS: an output may be named
    `to_py`, `typeof` or `__class__`, which getattr on a JsProxy finds first."""
    if isinstance(js_object, dict):
        return list(js_object.items())
    from js import Object

    return [(pair[0], pair[1]) for pair in Object.entries(js_object)]


def result_to_py(js_result: Any) -> dict:
    """The runtime's result as the dict native gpulab returns."""
    outputs = {str(name): output_to_py(value) for name, value in _entries(js_result.outputs)}
    stats = getattr(js_result, "stats", None)
    return {
        "backend": str(js_result.backend),
        "outputs": outputs,
        "stats": _plain(stats) if stats is not None else {},
    }


def _to_js(value: Any) -> Any:
    """Python data -> JS objects (dicts become plain objects, as the runtime expects)."""
    from js import Object
    from pyodide.ffi import to_js

    return to_js(value, dict_converter=Object.fromEntries)


def execute(graph: dict) -> dict:
    """Run `graph` and return its result, blocking on the GPU promise (needs JSPI)."""
    if not can_run_sync():
        raise GpuLabError("UNAVAILABLE", NO_SYNC)
    adapter = _adapter()
    return result_to_py(_unwrap(_block_on(adapter.execute(_to_js(graph)), adapter)))


async def execute_async(graph: dict) -> dict:
    """Run `graph`; await the result (works in every browser)."""
    adapter = _adapter()
    return result_to_py(_unwrap(await _wait_async(adapter.execute(_to_js(graph)), adapter)))


def _report(exc: BaseException) -> None:
    # Exceptions raised inside a callback would vanish into a JS promise: show them instead.
    traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)


def submit(graph: dict, callback: Callback, on_error: ErrorCallback | None = None) -> None:
    """Post `graph`; `callback(result)` runs when the GPU is done, `on_error(GpuLabError)` if it
    fails (without on_error the error is printed to stderr). Refusals raise at once."""
    from pyodide.ffi import create_proxy

    hold = _hold()

    def delivered(envelope: Any) -> None:
        hold.release()
        try:
            callback(result_to_py(envelope.value))
        except BaseException as exc:  # noqa: BLE001 - see _report
            _report(exc)

    def failed(envelope: Any) -> None:
        hold.release()
        err = _error_from(envelope.error)
        try:
            if on_error is None:
                raise err
            on_error(err)
        except BaseException as exc:  # noqa: BLE001 - see _report
            _report(exc)

    try:
        _unwrap(_adapter().submit(_to_js(graph), create_proxy(delivered), create_proxy(failed)))
    except BaseException:
        hold.release()  # refused at once: no callback will come
        raise


def when_done(
    pending: Any,
    convert: Callable[[Any], Any],
    callback: Callable[[Any], Any],
    on_error: ErrorCallback | None = None,
) -> None:
    """Call back when an adapter request settles: `callback(convert(value))`, or
    `on_error(GpuLabError)` (stderr without one). The callback runs in the JS promise's own
    reaction, never through asyncio's scheduler, so a callback that posts the next request does
    so before the notebook checks that nothing is pending (web/worker.mjs `runToIdle`). The
    callback forms of sessions (`submit_prepare`, `BrowserSession.submit_steps`,
    `submit_download`; gpulab.torch.compile chains them) are built on it."""
    from pyodide.ffi import create_once_callable

    hold = _hold()

    def settled(envelope: Any) -> None:
        hold.release()
        try:
            if not envelope.ok:
                err = _error_from(envelope.error)
                if on_error is None:
                    raise err
                on_error(err)
                return
            value = convert(envelope.value)
        except BaseException as exc:  # noqa: BLE001 - see _report
            _report(exc)
            return
        try:
            callback(value)
        except BaseException as exc:  # noqa: BLE001 - see _report
            _report(exc)

    pending.then(create_once_callable(settled))


class _Hold:
    """One callback that an adapter request will call: counted until it ran (`holds()`)."""

    def __init__(self) -> None:
        _HOLDS[0] += 1
        self._generation: int | None = _HOLDS[1]

    def release(self) -> None:
        if self._generation == _HOLDS[1]:
            _HOLDS[0] -= 1
        self._generation = None


_HOLDS = [0, 0]  # [count, generation]


def reset_holds() -> None:
    """Forget every hold (the worker, at each run and at a new adapter: a dropped result never
    calls back); holds of before no longer count when they are released."""
    _HOLDS[0], _HOLDS[1] = 0, _HOLDS[1] + 1


def _hold() -> _Hold:
    return _Hold()


def holds() -> int:
    """How many Python callbacks of settled or pending requests have not run yet. The notebook
    ends a run when no request is pending AND this is 0: a request's result can reach its
    Python callback only after a later task (Pyodide's call into Python), and a callback chain
    (submit in a callback, torch.compile's prepared steps) posts its next request from there."""
    return _HOLDS[0]


def feed_buffer(value: Any, dtype: str = "float32") -> Any:
    """A feed value as a buffer that `to_js` turns into one typed array: buffers and numpy
    arrays as they are (C-contiguous), (nested) lists packed into an array.array of the
    dtype. The runtime checks the length and values."""
    if hasattr(value, "__array_interface__"):
        value = value.reshape(-1)
        return memoryview(value if value.flags.c_contiguous else value.copy())
    if isinstance(value, array.array | memoryview | bytes | bytearray):
        return value
    flat = _flat(list(value))
    try:
        return array.array(TYPECODE.get(dtype, "f"), flat)
    except (TypeError, OverflowError) as err:
        raise GpuLabError(
            "VALIDATION", f"feed data must be numbers of dtype {dtype}: {err}"
        ) from None


def _flat(value: list) -> list:
    if value and isinstance(value[0], list | tuple):
        return [x for row in value for x in _flat(list(row))]
    return value


class BrowserSession:
    """A prepared session in the page's runtime (runtime.prepare), with the native Session's
    API (`host.SessionLike`): `run(feeds)`, `run_steps(steps)`, `download(what)`, `dispose()`,
    plus awaitable forms (`run_async`, `run_steps_async`, `download_async`) for browsers
    without JSPI.

    Feed keys are Tensors, input ids or input names; a long `run_steps` is split into chunks by
    the adapter so the page's Stop button can cancel it between chunks. Nothing is validated
    here: the runtime checked the graph at prepare and checks every step's feeds; downloads
    come back with their shape and dtype.
    """

    def __init__(
        self,
        session_id: int,
        feed_dtypes: dict[int, str] | None = None,
        input_names: dict[str, int] | None = None,
        backend: str | None = None,
        adapter: Any = None,
    ) -> None:
        self.id = session_id
        self.backend = backend
        # The adapter (one backend's runtime) that holds it: session ids are per adapter, so a
        # session must never be run or disposed through the adapter of a later backend switch.
        self._adapter = adapter
        self._feed_dtypes = dict(feed_dtypes or {})
        self._input_names = dict(input_names or {})
        self._disposed = False
        self.steps_run = 0
        self.owner: Any = None  # the Graph that prepared it (Graph.prepare sets it)

    @property
    def disposed(self) -> bool:
        """True once disposed, and once the page replaced the runtime it was prepared on (a
        backend switch disposes every session)."""
        return self._disposed or (self._adapter is not None and not _is_current(self._adapter))

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.dispose()

    def _live(self) -> Any:
        if self._disposed:
            raise GpuLabError("DISPOSED", "the session was disposed")
        if self._adapter is None:
            return _adapter()
        if not _is_current(self._adapter):
            raise GpuLabError(
                "DISPOSED",
                f"session {self.id} was disposed: the page switched backends since it was "
                "prepared (every session lives in one backend's runtime)",
            )
        return self._adapter

    def _key_id(self, key: Any) -> int:
        if hasattr(key, "id") and hasattr(key, "graph"):
            if self.owner is not None and key.graph is not self.owner:
                raise GpuLabError(
                    "VALIDATION", f"tensor {key.id} belongs to another graph than this session's"
                )
            return int(key.id)
        if isinstance(key, int) and not isinstance(key, bool):
            return key
        if isinstance(key, str) and key in self._input_names:
            return self._input_names[key]
        raise GpuLabError(
            "VALIDATION",
            f"{key!r} is not an input of this session (a Tensor, an input id or an input name)",
        )

    def _steps_js(self, steps: Any) -> Any:
        if isinstance(steps, int) and not isinstance(steps, bool):
            return _to_js(steps)
        plain = []
        for step in steps:
            feeds = {}
            for key, value in (step or {}).items():
                node_id = self._key_id(key)
                feeds[str(node_id)] = feed_buffer(value, self._feed_dtypes.get(node_id, "float32"))
            plain.append(feeds)
        return _to_js(plain)

    def _finish(self, js_result: Any, count: int | None) -> dict:
        result = result_to_py(js_result)
        self.steps_run += count or 1
        return result

    @staticmethod
    def _count(steps: Any) -> int | None:
        return steps if isinstance(steps, int) else None

    def run(self, feeds: dict | int | None = None) -> dict:
        """One step; `feeds` maps each fed input to its data for this step. A step count
        (`run(10)`) runs that many steps, as run_steps(10) (sessions without feeds)."""
        if isinstance(feeds, int) and not isinstance(feeds, bool):
            return self.run_steps(feeds)
        return self.run_steps([feeds or {}])

    def run_steps(self, steps: int | list[dict | None]) -> dict:
        """Many steps (a count, or one feed map per step); returns the last step's outputs."""
        steps = step_arg(steps)  # VALIDATION / LIMIT here, before anything is sent
        adapter = self._live()
        pending = adapter.session_run(self.id, self._steps_js(steps))
        return self._finish(_unwrap(_block_on(pending, adapter)), self._count(steps) or len(steps))

    async def run_async(self, feeds: dict | int | None = None) -> dict:
        if isinstance(feeds, int) and not isinstance(feeds, bool):
            return await self.run_steps_async(feeds)
        return await self.run_steps_async([feeds or {}])

    async def run_steps_async(self, steps: int | list[dict | None]) -> dict:
        steps = step_arg(steps)  # VALIDATION / LIMIT here, before anything is sent
        adapter = self._live()
        pending = adapter.session_run(self.id, self._steps_js(steps))
        return self._finish(
            _unwrap(await _wait_async(pending, adapter)), self._count(steps) or len(steps)
        )

    def submit_steps(
        self,
        steps: int | list[dict | None],
        callback: Callback,
        on_error: ErrorCallback | None = None,
    ) -> None:
        """`run_steps` that calls back with the result instead of waiting (every browser);
        bad steps raise at once, before anything is sent."""
        steps = step_arg(steps)
        adapter = self._live()
        count = self._count(steps) or len(steps)
        pending = adapter.session_run(self.id, self._steps_js(steps))
        when_done(pending, lambda value: self._finish(value, count), callback, on_error)

    def submit_download(
        self,
        what: Any,
        callback: Callable[[OutputEntry], Any],
        on_error: ErrorCallback | None = None,
    ) -> None:
        """`download` that calls back with the entry instead of waiting (every browser)."""
        adapter = self._live()
        pending = adapter.session_download(self.id, self._download_key(what))
        when_done(pending, output_to_py, callback, on_error)

    def _download_key(self, what: Any) -> Any:
        """An output name as it is (the runtime knows the names), anything else as an id."""
        if isinstance(what, str) and what not in self._input_names:
            return what
        return self._key_id(what)

    def download(self, what: Any) -> dict:
        """The current value of a resident/carried output (by name) or a carried input."""
        adapter = self._live()
        pending = adapter.session_download(self.id, self._download_key(what))
        return output_to_py(_unwrap(_block_on(pending, adapter)))

    async def download_async(self, what: Any) -> dict:
        adapter = self._live()
        pending = adapter.session_download(self.id, self._download_key(what))
        return output_to_py(_unwrap(await _wait_async(pending, adapter)))

    def dispose(self) -> None:
        """Release the session in the page; idempotent, always works."""
        if self._disposed:
            return
        self._disposed = True
        try:
            (self._adapter if self._adapter is not None else _adapter()).session_dispose(self.id)
        except GpuLabError:
            pass  # the adapter is gone, and with it the session


def _await_interrupt() -> None:
    """The page's SIGINT is on its way: run bytecode until Pyodide raises it here, in the cell's
    own stack (not later in glue that would lose it)."""
    deadline = time.monotonic() + SIGINT_GRACE_S
    while time.monotonic() < deadline:
        pass


def _enter_wait(adapter: Any) -> None:
    """Tell the page that Python is about to wait; raise KeyboardInterrupt if it was stopped."""
    enter = getattr(adapter, "enter_wait", None)
    answer = "ok" if enter is None else str(enter())
    if answer == "sigint":
        _await_interrupt()
    if answer != "ok":
        raise KeyboardInterrupt(STOPPED)


def _leave_wait(adapter: Any) -> bool:
    """Back in our own code after a wait; True if Stop was pressed meanwhile."""
    leave = getattr(adapter, "leave_wait", None)
    return leave is not None and str(leave()) == "stopped"


def _block_on(promise: Any, adapter: Any) -> Any:
    from pyodide.ffi import run_sync

    if not can_run_sync():
        raise GpuLabError("UNAVAILABLE", NO_SYNC)
    _enter_wait(adapter)
    try:
        value = run_sync(promise)
    except BaseException:
        _leave_wait(adapter)
        raise
    if _leave_wait(adapter):
        raise KeyboardInterrupt(STOPPED)
    return value


async def _wait_async(promise: Any, adapter: Any) -> Any:
    _enter_wait(adapter)
    try:
        value = await promise
    except BaseException:
        _leave_wait(adapter)
        raise
    if _leave_wait(adapter):
        raise KeyboardInterrupt(STOPPED)
    return value


def _session_options(feeds: Any, carry: Any, resident: Any, outputs: Any) -> dict:
    options: dict[str, Any] = {
        "feeds": [int(i) for i in feeds or ()],
        "carry": {str(k): str(v) for k, v in (carry or {}).items()},
        "resident": [str(n) for n in resident or ()],
    }
    if outputs is not None:
        options["outputs"] = [str(n) for n in outputs]
    return options


def prepare(
    graph: dict,
    feeds: Any = (),
    carry: Any = None,
    resident: Any = (),
    outputs: Any = None,
    input_names: dict[str, int] | None = None,
) -> BrowserSession:
    """Prepare `graph` in the page (runtime.prepare); needs JSPI (else `prepare_async`).
    feeds: input ids; carry: {input id: output name}; resident/outputs: output names."""
    adapter = _adapter()
    pending = adapter.prepare(
        _to_js(graph), _to_js(_session_options(feeds, carry, resident, outputs))
    )
    session_id = int(_unwrap(_block_on(pending, adapter)))
    return BrowserSession(
        session_id, _feed_dtypes(graph, feeds), input_names, _backend_name(), adapter
    )


async def prepare_async(
    graph: dict,
    feeds: Any = (),
    carry: Any = None,
    resident: Any = (),
    outputs: Any = None,
    input_names: dict[str, int] | None = None,
) -> BrowserSession:
    """Prepare `graph` in the page; await the session (works in every browser)."""
    adapter = _adapter()
    pending = adapter.prepare(
        _to_js(graph), _to_js(_session_options(feeds, carry, resident, outputs))
    )
    session_id = int(_unwrap(await _wait_async(pending, adapter)))
    return BrowserSession(
        session_id, _feed_dtypes(graph, feeds), input_names, _backend_name(), adapter
    )


def submit_prepare(
    graph: dict,
    callback: Callable[[BrowserSession], Any],
    on_error: ErrorCallback | None = None,
    feeds: Any = (),
    carry: Any = None,
    resident: Any = (),
    outputs: Any = None,
    input_names: dict[str, int] | None = None,
) -> None:
    """`prepare` that calls back with the session instead of waiting (every browser)."""
    adapter = _adapter()
    pending = adapter.prepare(
        _to_js(graph), _to_js(_session_options(feeds, carry, resident, outputs))
    )

    def session(value: Any) -> BrowserSession:
        return BrowserSession(
            int(value), _feed_dtypes(graph, feeds), input_names, _backend_name(), adapter
        )

    when_done(pending, session, callback, on_error)


def _feed_dtypes(graph: Any, feeds: Any) -> dict[int, str]:
    """The dtype each fed input declares (to pack list feeds; the runtime checks them)."""
    fed = {int(i) for i in feeds or ()}
    nodes = graph.get("nodes", []) if isinstance(graph, dict) else []
    return {
        n["id"]: str(n.get("dtype", "float32"))
        for n in nodes
        if isinstance(n, dict) and n.get("id") in fed
    }


def memory_quota() -> int | None:
    """The page runtime's device memory quota in bytes (its quotas.memoryBytes), None when the
    adapter does not say."""
    ask = getattr(_adapter(), "memory_quota", None)
    value = ask() if ask is not None else None
    return None if value is None else int(value)


def _backend_name() -> str | None:
    name = _adapter().backend()
    return None if name is None else str(name)
