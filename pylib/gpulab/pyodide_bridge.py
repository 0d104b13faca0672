"""gpulab in the browser: graphs go to the page's JS runtime through `_gpulab_adapter`.

The page registers that JS module with `createPythonGPUAdapter(pyodide, runtime, {allowExecute:
true})` (backends-js/src/python-adapter.mjs). Its functions answer envelopes, `{ok, value}` or
`{ok: false, error: {code, message, node}}`, which we turn into result dicts or GpuLabError.

Three ways to run, as in the native host:
- `execute(graph)`: synchronous, where Pyodide can suspend on a JS promise (JSPI, current
  Chromium): `pyodide.ffi.run_sync`; elsewhere it says to use one of the others.
- `await execute_async(graph)`: always works (top-level await in the notebook).
- `submit(graph, callback, on_error)`: calls back when the GPU is done.
Results are the native shape: {"backend", "outputs": {name: {"shape", "dtype", "data": list of
floats}}, "stats"}. Nothing here needs numpy (the page has none).
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable
from typing import Any

from .errors import GpuLabError

MODULE_NAME = "_gpulab_adapter"
NO_ADAPTER = (
    "no GPU adapter in this page: the page must call createPythonGPUAdapter(pyodide, runtime, "
    "{allowExecute: true}) before Python submits graphs"
)
NO_SYNC = (
    "a synchronous run needs JavaScript promise integration (JSPI), which this browser or "
    "context lacks: use `await g.run_async(...)` or `g.submit(callback, ...)`"
)

Callback = Callable[[dict], Any]
ErrorCallback = Callable[[GpuLabError], Any]


def in_pyodide() -> bool:
    """True when running inside Pyodide (the browser)."""
    return sys.platform == "emscripten"


def _adapter() -> Any:
    """The JS adapter module, looked up fresh: a backend switch registers a new one."""
    sys.modules.pop(MODULE_NAME, None)
    try:
        return __import__(MODULE_NAME)
    except ImportError:
        raise GpuLabError("UNAVAILABLE", NO_ADAPTER) from None


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


def floats(data: Any) -> list[float]:
    """A JS typed array or array (or a Python sequence) as a list of Python floats."""
    if hasattr(data, "to_py"):
        data = data.to_py()
    if isinstance(data, memoryview):
        return [float(x) for x in data.tolist()]
    return [float(x) for x in data]


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


def output_to_py(js_output: Any) -> dict:
    """One output {shape, dtype, data} with data as a list of floats."""
    return {
        "shape": [int(d) for d in _plain(js_output.shape)],
        "dtype": str(getattr(js_output, "dtype", "float32") or "float32"),
        "data": floats(js_output.data),
    }


def result_to_py(js_result: Any) -> dict:
    """The runtime's result as the dict native gpulab returns."""
    outputs_js = js_result.outputs
    names = list(outputs_js.object_keys()) if hasattr(outputs_js, "object_keys") else []
    outputs = {str(name): output_to_py(getattr(outputs_js, name)) for name in names}
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
    from pyodide.ffi import run_sync

    if not can_run_sync():
        raise GpuLabError("UNAVAILABLE", NO_SYNC)
    return result_to_py(_unwrap(run_sync(_adapter().execute(_to_js(graph)))))


async def execute_async(graph: dict) -> dict:
    """Run `graph`; await the result (works in every browser)."""
    return result_to_py(_unwrap(await _adapter().execute(_to_js(graph))))


def _report(exc: BaseException) -> None:
    # Exceptions raised inside a callback would vanish into a JS promise: show them instead.
    traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)


def submit(graph: dict, callback: Callback, on_error: ErrorCallback | None = None) -> None:
    """Post `graph`; `callback(result)` runs when the GPU is done, `on_error(GpuLabError)` if it
    fails (without on_error the error is printed to stderr). Refusals raise at once."""
    from pyodide.ffi import create_proxy

    def delivered(envelope: Any) -> None:
        try:
            callback(result_to_py(envelope.value))
        except BaseException as exc:  # noqa: BLE001 - see _report
            _report(exc)

    def failed(envelope: Any) -> None:
        err = _error_from(envelope.error)
        try:
            if on_error is None:
                raise err
            on_error(err)
        except BaseException as exc:  # noqa: BLE001 - see _report
            _report(exc)

    _unwrap(_adapter().submit(_to_js(graph), create_proxy(delivered), create_proxy(failed)))


def _download_to_py(value: Any) -> dict:
    if hasattr(value, "data"):
        return output_to_py(value)
    return {"shape": None, "dtype": "float32", "data": floats(value)}


class BrowserSession:
    """A prepared session in the page's runtime (runtime.prepare): run, download, dispose.

    `steps` is a step count or a list of feed maps ({input id: list of floats}); a long run is
    split into chunks by the adapter so the Stop button can cancel it between chunks.
    """

    def __init__(self, session_id: int) -> None:
        self.id = session_id
        self.disposed = False

    def _check(self) -> Any:
        if self.disposed:
            raise GpuLabError("DISPOSED", f"session {self.id} was disposed")
        return _adapter()

    def run(self, steps: int | list[dict] = 1) -> dict:
        from pyodide.ffi import run_sync

        if not can_run_sync():
            raise GpuLabError("UNAVAILABLE", NO_SYNC)
        return result_to_py(_unwrap(run_sync(self._check().session_run(self.id, _to_js(steps)))))

    async def run_async(self, steps: int | list[dict] = 1) -> dict:
        return result_to_py(_unwrap(await self._check().session_run(self.id, _to_js(steps))))

    def download(self, name: str) -> dict:
        from pyodide.ffi import run_sync

        if not can_run_sync():
            raise GpuLabError("UNAVAILABLE", NO_SYNC)
        return _download_to_py(_unwrap(run_sync(self._check().session_download(self.id, name))))

    async def download_async(self, name: str) -> dict:
        return _download_to_py(_unwrap(await self._check().session_download(self.id, name)))

    def dispose(self) -> None:
        if not self.disposed:
            self.disposed = True
            try:
                _adapter().session_dispose(self.id)
            except GpuLabError:
                pass  # the adapter is gone: so is the session


def prepare(graph: dict, options: dict | None = None) -> BrowserSession:
    """Prepare `graph` (runtime.prepare: {feeds, carry, resident, outputs}); needs JSPI."""
    from pyodide.ffi import run_sync

    if not can_run_sync():
        raise GpuLabError("UNAVAILABLE", NO_SYNC)
    pending = _adapter().prepare(_to_js(graph), _to_js(options or {}))
    return BrowserSession(int(_unwrap(run_sync(pending))))


async def prepare_async(graph: dict, options: dict | None = None) -> BrowserSession:
    """Prepare `graph`; await the session (works in every browser)."""
    pending = _adapter().prepare(_to_js(graph), _to_js(options or {}))
    return BrowserSession(int(_unwrap(await pending)))
