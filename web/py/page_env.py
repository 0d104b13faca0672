"""What Python in the page does differently from a terminal, in one place (imported once by
the cell runner as `_page_env`):

- `time.sleep` waits on the Stop flag, so Stop ends it at once (Pyodide's own sleep could not be
  interrupted, and a Stop during it left a run that resumed later and printed elsewhere);
- `input()` says clearly that there is no terminal (Pyodide raised `OSError: [Errno 29]`);
- `import numpy` (and the other packages students try) explain what the page has instead
  (`torch` is gpulab.torch here: web/py/torch_shim.py; a torch module outside it says so);
- tracebacks start at the cell and leave out gpulab's, the runner's and Pyodide's frames;
- an exception in a `submit` callback is shown as an error of the cell and makes it fail (it
  used to be printed while the cell said "done").
"""

from __future__ import annotations

import builtins
import importlib.abc
import sys
import time
import traceback
from typing import Any

import _notebook  # registered by web/worker.mjs

SIGINT_GRACE_S = 2.0  # the page writes SIGINT right after committing to it: microseconds
STOPPED = "stopped by the user (Stop)"
_system_sleep = time.sleep
current_cell: str | None = None  # the running cell's filename ("<cell 2>"), set by the runner

# ---------------------------------------------------------------------------------------------
# time.sleep


def sleep(seconds: float) -> None:
    """time.sleep that Stop ends at once: the worker waits on the Stop flag (Atomics.wait)
    instead of a timer, and the page's SIGINT is raised right after, in the cell's stack."""
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
    """Stop woke a sleep: let the page's SIGINT land here before any more of the cell runs
    (Pyodide checks the interrupt buffer only now and then), or raise for it."""
    deadline = time.monotonic() + SIGINT_GRACE_S
    while _notebook.interrupt_in_flight() and time.monotonic() < deadline:
        pass
    raise KeyboardInterrupt(STOPPED)


# ---------------------------------------------------------------------------------------------
# input() and packages the page does not have

NO_INPUT = ("input() is not available in the page: a cell cannot wait for typing. Set the value "
            "in a cell instead, e.g. `name = 'Ada'`, and run the cells below it")


def no_input(prompt: object = "") -> str:
    raise RuntimeError(NO_INPUT)


INSTEAD = {
    "numpy": "build tensors with gpulab (g = Graph(); x = g.tensor([[1, 2], [3, 4]]); "
             "g.run(y=x @ x)) and use plain lists for the rest; results' data are lists",
    "pandas": "results' outputs are dicts of lists (shape, dtype, data); print or "
              "display.show(result) shows them as tables",
    "matplotlib": "use display.plot(values) for a line plot and display.draw(grid) for an image",
}
INSTEAD["scipy"] = INSTEAD["numpy"]


class _MissingPackageHints(importlib.abc.MetaPathFinder):
    """Last on sys.meta_path: reached only when no finder has the module."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        top = name.partition(".")[0]
        if top == "torch":  # web/py/torch_shim.py: torch is gpulab.torch, a subset
            raise ModuleNotFoundError(
                f"No module named {name!r}: `torch` in this page is gpulab.torch, a PyTorch "
                "subset (Tensor, nn, optim, compile) without that module", name=name)
        if top in INSTEAD:
            raise ModuleNotFoundError(
                f"No module named {name!r}: {top} is not available in this page (Pyodide here "
                f"serves gpulab and micropip only, offline). Instead, {INSTEAD[top]}.", name=name)


# ---------------------------------------------------------------------------------------------
# tracebacks


def _internal(filename: str) -> bool:
    """Frames a student did not write: gpulab itself, the page's helpers, Pyodide's glue."""
    return ("/gpulab/" in filename or "_pyodide" in filename or "/pyodide/" in filename
            or filename.endswith(("/_cell_runner.py", "/_page_env.py", "/display.py",
                                 "/_display_animate.py")))


def format_error(exc: BaseException, filename: str | None) -> dict:
    """{type, message, traceback, line}: the frames from the cell (`filename`) onwards without
    internal ones (their count is said), line = the last line of the cell in the traceback."""
    tb = traceback.TracebackException.from_exception(exc)
    frames = list(tb.stack)
    first = next((i for i, f in enumerate(frames) if f.filename == filename), 0)
    kept = [f for f in frames[first:] if not _internal(f.filename)]
    hidden = len(frames) - first - len(kept)
    tb.stack = traceback.StackSummary.from_list(kept)
    cell_lines = [f.lineno for f in kept if f.filename == (filename or current_cell)]
    line = cell_lines[-1] if cell_lines else None
    if isinstance(exc, SyntaxError) and exc.filename == filename:
        line = exc.lineno
    text = "".join(tb.format())
    if hidden:
        plural = "s" if hidden != 1 else ""
        text += f"({hidden} internal frame{plural} hidden: the gpulab library's and the page's)\n"
    return {"type": type(exc).__name__, "message": str(exc), "traceback": text, "line": line}


# ---------------------------------------------------------------------------------------------
# submit callbacks that fail

_callback_failures = 0


def callback_failed(exc: BaseException) -> None:
    """In place of pyodide_bridge's report (which printed to stderr): the error is shown in
    the running cell as an error, and the cell ends with status "error"."""
    global _callback_failures
    _callback_failures += 1
    error = format_error(exc, None)
    error["title"] = "in a submit callback"
    _notebook.emit_error(error)


def take_callback_failures() -> int:
    """How many callbacks failed since the last call (the worker asks once per run)."""
    global _callback_failures
    count, _callback_failures = _callback_failures, 0
    return count


def install() -> None:
    time.sleep = sleep
    builtins.input = no_input
    sys.meta_path.append(_MissingPackageHints())
    # Each line reaches the page when printed (the worker batches them), not when a buffer fills.
    sys.stdout.reconfigure(line_buffering=True)
    sys.stderr.reconfigure(line_buffering=True)
    import gpulab.pyodide_bridge as bridge

    bridge._report = callback_failed  # its callbacks look the name up when they fail
