"""Pending results of torch.compile: one flow of GPU requests, three ways to wait for it.

A *flow* is a generator that yields requests (`Execute`, `Prepare`, `Steps`, `Download`,
`After`) and gets each one's answer back; its return value is the result. The same flow runs
- natively: at once, each request through gpulab.host (the result is ready before the call
  that made it returns);
- in the page by callbacks: each request through the bridge's callback forms
  (`host.submit`, `pyodide_bridge.submit_prepare`, `BrowserSession.submit_steps` /
  `submit_download`), the next request posted from the previous one's JS promise reaction, so
  nothing waits and every browser works (JSPI or not);
- in the page synchronously (`Pending.result()`, where JSPI lets Python block on a promise):
  each request through the bridge's blocking forms.

`Pending` is what `torch.compile(model)(x)` and the prepared-step methods return:
`.submit(callback, on_error=None)` (the seed's extension: browser completion is asynchronous),
`.result()` (natively, or in the page with JSPI), and `await pending` (the page's notebook).
In the page a pending result starts its requests at the first of those calls (a result no one
asks for costs nothing); natively it ran when it was made.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

from ..errors import GpuLabError
from ..host import in_pyodide

Callback = Callable[[Any], Any]
ErrorCallback = Callable[[GpuLabError], Any]
Flow = Generator[Any, Any, Any]


@dataclass
class Execute:
    """Run a protocol graph once (its result dict comes back)."""

    graph: dict[str, Any]
    backend: str | None = None


@dataclass
class Prepare:
    """Prepare a session (it comes back): options as gpulab.host.prepare takes them."""

    graph: dict[str, Any]
    options: dict[str, Any]
    backend: str | None = None


@dataclass
class Steps:
    """Run steps of a session (the last step's result dict comes back)."""

    session: Any
    steps: list[dict[Any, Any]]


@dataclass
class Download:
    """The current value of a kept output of a session (an output entry comes back)."""

    session: Any
    what: Any


@dataclass
class After:
    """Wait until another pending result settled (its value or error is not passed on): the
    operations of one prepared session run in the order they were called."""

    pending: Any


def perform_now(request: Any) -> Any:
    """One request, blocking: natively, or in the page where JSPI lets Python wait."""
    from .. import host

    if isinstance(request, After):
        try:
            request.pending.result()
        except GpuLabError:
            pass  # the earlier operation reported its own failure
        return None
    if isinstance(request, Execute):
        return host.execute(request.graph, backend=request.backend)
    if isinstance(request, Prepare):
        return host.prepare(request.graph, backend=request.backend, **request.options)
    if isinstance(request, Steps):
        return request.session.run_steps(request.steps)
    if isinstance(request, Download):
        return request.session.download(request.what)
    raise TypeError(f"not a request: {request!r}")


def perform_later(request: Any, callback: Callback, on_error: ErrorCallback) -> None:
    """One request in the page by callback (every browser)."""
    from .. import host, pyodide_bridge

    if isinstance(request, After):
        request.pending.submit(lambda _value: callback(None), lambda _err: callback(None))
    elif isinstance(request, Execute):
        host.submit(request.graph, callback, on_error)
    elif isinstance(request, Prepare):
        pyodide_bridge.submit_prepare(request.graph, callback, on_error, **request.options)
    elif isinstance(request, Steps):
        request.session.submit_steps(request.steps, callback, on_error)
    elif isinstance(request, Download):
        request.session.submit_download(request.what, callback, on_error)
    else:
        raise TypeError(f"not a request: {request!r}")


def run_now(flow: Flow) -> Any:
    """Drive a flow to its end, each request blocking; a failed request is thrown into the
    flow (its try/finally runs) and out of here."""
    advance: Callable[[], Any] = lambda: flow.send(None)
    while True:
        try:
            request = advance()
        except StopIteration as stop:
            return stop.value
        try:
            answer = perform_now(request)
        except GpuLabError as err:
            advance = lambda err=err: flow.throw(err)
        else:
            advance = lambda answer=answer: flow.send(answer)


def run_later(flow: Flow, done: Callback, failed: ErrorCallback) -> None:
    """Drive a flow by callbacks: each answer (or failure) resumes it from the request's
    reaction."""

    def advance(step: Callable[[], Any]) -> None:
        try:
            request = step()
        except StopIteration as stop:
            done(stop.value)
            return
        except GpuLabError as err:
            failed(err)
            return
        try:
            perform_later(
                request,
                lambda answer: advance(lambda: flow.send(answer)),
                lambda err: advance(lambda: flow.throw(err)),
            )
        except GpuLabError as refused:  # at once: PERMISSION, DISPOSED, bad steps
            advance(lambda refused=refused: flow.throw(refused))

    advance(lambda: flow.send(None))


class Pending:
    """A result on its way (see the module doc): submit(callback, on_error), result(), await."""

    def __init__(self, flow: Flow, what: str = "result") -> None:
        self._flow: Flow | None = flow
        self._what = what
        self._done = False
        self._value: Any = None
        self._error: GpuLabError | None = None
        self._waiting: list[tuple[Callback | None, ErrorCallback | None]] = []
        self._futures: list[Any] = []
        if not in_pyodide():
            self._start()

    @classmethod
    def ready(cls, value: Any, what: str = "result") -> Pending:
        """An already resolved pending result."""

        def flow() -> Flow:
            return value
            yield  # a generator with no request

        return cls(flow(), what)

    def __repr__(self) -> str:
        state = "done" if self._done else ("running" if self._flow is None else "not started")
        return f"<pending {self._what}: {state}>"

    @property
    def done(self) -> bool:
        return self._done

    def submit(self, callback: Callback, on_error: ErrorCallback | None = None) -> None:
        """callback(value) when done (natively: now); errors go to on_error, or raise (natively)
        / are shown as the cell's error (in the page) when there is none."""
        if self._done:
            self._deliver(callback, on_error)
            return
        self._waiting.append((callback, on_error))
        self._start()

    def result(self) -> Any:
        """The value, waiting for it where Python can block (natively; the page with JSPI)."""
        if not self._done:
            if self._flow is None:  # already going by callbacks: block on its future
                from pyodide.ffi import run_sync  # type: ignore[import-not-found]

                _require_sync()
                return run_sync(self._future())
            _require_sync()
            flow, self._flow = self._flow, None
            try:
                self._settle(run_now(flow), None)
            except GpuLabError as err:
                self._settle(None, err)
        if self._error is not None:
            raise self._error
        return self._value

    def __await__(self) -> Generator[Any, None, Any]:
        if self._done:
            if self._error is not None:
                raise self._error
            return self._value
        future = self._future()
        self._start()
        return (yield from future.__await__())

    # -- internals --------------------------------------------------------------------------

    def _future(self) -> Any:
        import asyncio

        future = asyncio.get_event_loop().create_future()
        self._futures.append(future)
        return future

    def _start(self) -> None:
        if self._flow is None or self._done:
            return
        flow, self._flow = self._flow, None
        if in_pyodide():
            run_later(flow, lambda v: self._settle(v, None), lambda e: self._settle(None, e))
            return
        try:
            value = run_now(flow)
        except GpuLabError as err:
            self._settle(None, err)
            return
        self._settle(value, None)

    def _settle(self, value: Any, error: GpuLabError | None) -> None:
        self._done, self._value, self._error = True, value, error
        waiting, self._waiting = self._waiting, []
        for callback, on_error in waiting:
            self._deliver(callback, on_error)
        futures, self._futures = self._futures, []
        for future in futures:
            if future.done():
                continue
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(value)

    def _deliver(self, callback: Callback | None, on_error: ErrorCallback | None) -> None:
        if self._error is None:
            if callback is not None:
                _call(callback, self._value)
            return
        if on_error is not None:
            _call(on_error, self._error)
        elif not in_pyodide():
            raise self._error
        else:
            _report(self._error)


def _call(fn: Callable[[Any], Any], value: Any) -> None:
    """A user's callback; natively its exception propagates, in the page it is shown as the
    cell's error (pyodide_bridge._report, which the page replaces)."""
    if not in_pyodide():
        fn(value)
        return
    try:
        fn(value)
    except BaseException as exc:  # noqa: BLE001 - a callback's error must not vanish in JS
        _report(exc)


def _report(exc: BaseException) -> None:
    from .. import pyodide_bridge

    pyodide_bridge._report(exc)


def _require_sync() -> None:
    if not in_pyodide():
        return
    from .. import pyodide_bridge

    if not pyodide_bridge.can_run_sync():
        raise GpuLabError(
            "UNAVAILABLE",
            "a synchronous .result() needs JavaScript promise integration (JSPI), which this "
            "browser or context lacks: use `await pending` or `pending.submit(callback)` (for "
            "prepared steps: `await prepared.step(None, x, target)` or a callback)",
        )
