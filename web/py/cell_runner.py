"""Runs one notebook cell in the worker's Pyodide: one shared namespace, top-level await,
tracebacks that point at the cell's own lines (Pyodide's internal frames are dropped).

Stop: a SIGINT the page sent must land before `run_cell` returns. After that, the next Python
code to run is Pyodide's glue that hands our result to the worker; an interrupt there would lose
the result and leave the run unfinished forever (web/stop-control.mjs)."""

from __future__ import annotations

import asyncio
import linecache
import time
from typing import Any

import _notebook  # registered by web/worker.mjs
import _page_env  # web/py/page_env.py: sleep, input, missing packages, tracebacks, callbacks
import display
from _page_env import SIGINT_GRACE_S, format_error
from pyodide.code import eval_code_async

_running: asyncio.Task | None = None  # the task of the cell that runs now

NAMESPACE: dict[str, Any] = {"__name__": "__main__"}
_page_env.install()


def _register_source(code: str, filename: str) -> None:
    # So tracebacks can quote the offending line of the cell.
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)


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
    _page_env.current_cell = filename
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
