"""Runs one notebook cell in the worker's Pyodide: one shared namespace, top-level await,
tracebacks that point at the cell's own lines (Pyodide's internal frames are dropped).

Stop: a SIGINT the page sent must land before `run_cell` returns. After that, the next Python
code to run is Pyodide's glue that hands our result to the worker; an interrupt there would lose
the result and leave the run unfinished forever (web/stop-control.mjs)."""

from __future__ import annotations

import asyncio
import linecache
import sys
import time
import traceback
from typing import Any

import _notebook  # registered by web/worker.mjs
import display
from pyodide.code import eval_code_async

SIGINT_GRACE_S = 2.0  # the page writes SIGINT right after committing to it: microseconds
_running: asyncio.Task | None = None  # the task of the cell that runs now

NAMESPACE: dict[str, Any] = {"__name__": "__main__"}
_system_sleep = time.sleep


def _sleep(seconds: float) -> None:
    """time.sleep that Stop ends at once: the worker waits on the Stop flag (Atomics.wait)
    instead of a timer, and the page's SIGINT raises KeyboardInterrupt right after. Pyodide's
    own sleep is neither interruptible nor final: a Stop during it was abandoned after 8 s and
    the cell resumed later, printing into another cell."""
    if seconds < 0:
        raise ValueError("sleep length must be non-negative")
    sys.stdout.flush()
    sys.stderr.flush()
    answer = _notebook.sleep(float(seconds))
    if answer == "unavailable":  # no Stop control (no isolation): sleep as usual
        _system_sleep(seconds)
    elif answer == "stopped":
        _take_stop()


def _take_stop() -> None:
    """Stop woke a sleep: let the page's SIGINT land here, in the cell's stack, before any more
    of the cell runs (Pyodide checks the interrupt buffer only now and then)."""
    deadline = time.monotonic() + SIGINT_GRACE_S
    while _notebook.interrupt_in_flight() and time.monotonic() < deadline:
        pass
    raise KeyboardInterrupt("stopped by the user (Stop)")


time.sleep = _sleep
# Each line reaches the page when printed (the worker batches them), not when a buffer fills.
sys.stdout.reconfigure(line_buffering=True)
sys.stderr.reconfigure(line_buffering=True)


def _register_source(code: str, filename: str) -> None:
    # So tracebacks can quote the offending line of the cell.
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)


def format_error(exc: BaseException, filename: str) -> dict:
    """{type, message, traceback, line}: frames from the cell onwards, line = the cell's line."""
    tb = traceback.TracebackException.from_exception(exc)
    frames = list(tb.stack)
    first = next((i for i, f in enumerate(frames) if f.filename == filename), None)
    if first is None:  # e.g. a SyntaxError: raised while compiling, only Pyodide's frames
        frames = [f for f in frames if "_pyodide" not in f.filename]
        first = 0
    tb.stack = traceback.StackSummary.from_list(frames[first:])
    cell_lines = [f.lineno for f in tb.stack if f.filename == filename]
    line = cell_lines[-1] if cell_lines else None
    if isinstance(exc, SyntaxError) and exc.filename == filename:
        line = exc.lineno
    return {
        "type": type(exc).__name__,
        "message": str(exc),
        "traceback": "".join(tb.format()),
        "line": line,
    }


def _settle_stop() -> bool:
    """Let a SIGINT still on its way land here (bounded), then drop any left; True if one did."""
    landed = False
    deadline = time.monotonic() + SIGINT_GRACE_S
    try:
        while _notebook.interrupt_in_flight() and time.monotonic() < deadline:
            pass
    except KeyboardInterrupt:
        landed = True
    _notebook.clear_interrupt()
    return landed


def _stopped_outside_the_cell(exc: BaseException) -> dict:
    return {"ok": False, "error": {"type": "KeyboardInterrupt", "message": str(exc),
                                   "traceback": "KeyboardInterrupt (after the cell's code)\n",
                                   "line": None}}


def cancel_running() -> bool:
    """The worker's fallback when a Stop found Python parked on an await that will not answer
    (no SIGINT can reach a coroutine that never resumes): cancel the cell's task."""
    task = _running
    if task is None or task.done():
        return False
    return task.cancel("stopped by the user (Stop)")


async def run_cell(code: str, filename: str) -> dict:
    """Run `code`; show its last expression (a result dict as tables, anything else as repr).
    Never raises: a Stop that lands in our own code (formatting an error, showing the value)
    is reported like one that landed in the cell."""
    global _running
    _running = asyncio.current_task()
    try:
        outcome = await _run(code, filename)
    except KeyboardInterrupt as exc:
        outcome = _stopped_outside_the_cell(exc)
    if _settle_stop() and outcome.get("ok"):
        outcome = _stopped_outside_the_cell(KeyboardInterrupt())
    _running = None
    return outcome


async def _run(code: str, filename: str) -> dict:
    _register_source(code, filename)
    try:
        value = await eval_code_async(code, NAMESPACE, filename=filename)
    except BaseException as exc:  # noqa: BLE001 - every failure is shown in the cell
        return {"ok": False, "error": format_error(exc, filename)}
    if value is not None:
        if display.is_result(value):
            display.show(value)
        else:
            display.text(repr(value))
    return {"ok": True}
