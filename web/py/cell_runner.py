"""Runs one notebook cell in the worker's Pyodide: one shared namespace, top-level await,
tracebacks that point at the cell's own lines (Pyodide's internal frames are dropped)."""

from __future__ import annotations

import linecache
import traceback
from typing import Any

import display
from pyodide.code import eval_code_async

NAMESPACE: dict[str, Any] = {"__name__": "__main__"}


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


async def run_cell(code: str, filename: str) -> dict:
    """Run `code`; show its last expression (a result dict as tables, anything else as repr)."""
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
