"""Rich outputs for notebook cells: result tables, 0/1 grids on a <canvas>, line plots (uPlot).

    import display
    display.show(result)                   # every output as a table of numbers with its shape
    display.draw(board, name="life")       # a 2-D tensor (0 = dark, 1 = light) on a canvas
    display.plot(losses, name="loss")      # a line plot; calling again updates it
    display.plot({"train": tr, "val": va}) # several series (a legend shows values on hover)
    display.plot([0.5], name="loss", append=True)   # add points to the plot's series
    display.progress(done, total, label="weights")  # a progress bar; again: updated in place
    file = await display.pick_file(".gguf")  # a file picker; the File chosen (read in chunks)

Outputs go to the running cell through the worker (`_notebook.emit`); repeated draws/plots with
the same name update one canvas, so a loop animates. Pure Python: no numpy in the page.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import _notebook  # registered by web/worker.mjs
from js import Object
from pyodide.ffi import to_js


def _emit(kind: str, payload: dict) -> None:
    _notebook.emit(kind, to_js(payload, dict_converter=Object.fromEntries))


def is_result(value: Any) -> bool:
    """True for a gpulab result dict ({"backend", "outputs": {...}, ...})."""
    return isinstance(value, dict) and isinstance(value.get("outputs"), dict)


def _floats(data: Any) -> list[float]:
    if hasattr(data, "tolist"):
        data = data.tolist()
    return [float(x) for x in data]  # float() also reads the protocol's "nan"/"inf"/"-inf"


def _output(value: Any, shape: Sequence[int] | None = None) -> tuple[list[int], list[float]]:
    """(shape, flat data) of a result output dict, a tensor-like, or a (nested) list."""
    if isinstance(value, dict) and "data" in value:
        return list(value.get("shape") or [len(value["data"])]), _floats(value["data"])
    if shape is not None:
        return list(shape), _floats(_flatten(value))
    rows = list(value)
    if rows and isinstance(rows[0], list | tuple):
        return [len(rows), len(rows[0])], _floats(_flatten(rows))
    return [len(rows)], _floats(rows)


def _flatten(value: Any) -> list:
    if isinstance(value, list | tuple) and value and isinstance(value[0], list | tuple):
        return [x for row in value for x in _flatten(row)]
    return list(value)


def show(result: dict, title: str | None = None) -> None:
    """Render every output of `result` as a table with its name, shape and dtype."""
    if not is_result(result):
        raise TypeError("display.show expects a result dict with 'outputs' (from g.run/submit)")
    outputs = [
        {"name": name, "shape": list(o.get("shape") or []), "dtype": o.get("dtype", "float32"),
         "data": _floats(o["data"])}
        for name, o in result["outputs"].items()
    ]
    stats = result.get("stats") if isinstance(result.get("stats"), dict) else {}
    ms = stats.get("runMs", stats.get("run_ms"))
    _emit("table", {"title": title, "backend": result.get("backend"), "outputs": outputs,
                    "software": bool(stats.get("software")),
                    "ms": float(ms) if isinstance(ms, int | float) else None})


def text(message: str) -> None:
    """Show `message` as the cell's value (monospace)."""
    _emit("text", {"text": str(message)})


def draw(grid: Any, shape: Sequence[int] | None = None, name: str = "canvas",
         scale: int | None = None, title: str | None = None) -> None:
    """Draw a 2-D tensor on the canvas `name`: values are clamped to 0..1 (0 dark, 1 light).

    `grid`: a result output ({"shape", "data"}), a list of rows, or a flat list with `shape`.
    """
    dims, data = _output(grid, shape)
    if len(dims) != 2:
        raise ValueError(f"display.draw needs a 2-D tensor, got shape {dims}")
    height, width = dims
    pixels = bytearray(height * width)
    for i, v in enumerate(data):
        pixels[i] = 0 if not math.isfinite(v) else round(255 * min(1.0, max(0.0, v)))
    cell = scale or max(1, min(12, 480 // max(width, height)))
    _emit("canvas", {"name": name, "title": title, "width": width, "height": height,
                     "scale": cell, "pixels": bytes(pixels)})


# The series each plot showed last, by plot name, so that `append=True` can extend them.
_PLOTS: dict[str, tuple[list[float] | None, dict[str, list[float]]]] = {}


def _series(ys: Any, label: str) -> dict[str, list[float]]:
    """{label: values} of a plot's `ys`: a dict of series, an output entry, or one sequence."""
    if isinstance(ys, dict) and not ("data" in ys and "shape" in ys):
        if not ys:
            raise ValueError("display.plot: the dict of series is empty")
        return {str(k): _floats(v["data"] if isinstance(v, dict) else v) for k, v in ys.items()}
    return {label: _floats(ys["data"] if isinstance(ys, dict) else ys)}


def plot(ys: Any, xs: Sequence[float] | None = None, name: str = "plot", title: str = "",
         xlabel: str = "step", ylabel: str = "", append: bool = False) -> None:
    """A line plot (uPlot in the page: axes, a legend with the values under the cursor).

    `ys`: a sequence of numbers (one series), a result output entry, or a dict of series
    (`{"train": [...], "val": [...]}`). `xs`: the x values shared by every series (default
    0..n-1). The same `name` updates the plot in place; `append=True` adds `ys` (and `xs`) to
    the series the plot shows instead of replacing them.
    """
    series = _series(ys, ylabel or name)
    xs_list = _floats(xs) if xs is not None else None
    if append and name in _PLOTS:
        old_xs, old = _PLOTS[name]
        if (old_xs is None) != (xs_list is None):
            raise ValueError(f"display.plot(append=True): plot {name!r} was drawn "
                             f"{'without' if old_xs is None else 'with'} xs; pass xs the same way")
        if old_xs is not None and xs_list is not None:
            xs_list = old_xs + xs_list
        series = {**old, **{k: old.get(k, []) + v for k, v in series.items()}}
    if xs_list is not None:
        for label, values in series.items():
            if len(values) != len(xs_list):
                raise ValueError(f"display.plot: series {label!r} has {len(values)} values "
                                 f"for {len(xs_list)} x values")
    _PLOTS[name] = (xs_list, series)
    _emit("plot", {"name": name, "title": title, "xlabel": xlabel, "ylabel": ylabel,
                   "xs": xs_list or [],
                   "series": [{"label": k, "ys": v} for k, v in series.items()]})


def progress(done: float, total: float, label: str = "", name: str = "progress") -> None:
    """A progress bar (`done` of `total`, e.g. bytes of a download) under `name`: calling again
    with the same name updates it in place (gpulab.models' weight downloads use it)."""
    _emit("progress", {"name": str(name), "label": str(label), "done": float(done),
                       "total": float(total)})


async def pick_file(accept: str = "", label: str = "Choose a file") -> Any:
    """A file picker in the cell's output; waits until a file is chosen and returns it (a JS
    File: .name, .size; gpulab.models' loaders read it in chunks, e.g.
    `llm.load_async(await display.pick_file(".gguf"))`)."""
    return await _notebook.pick_file(to_js({"accept": str(accept), "label": str(label)},
                                           dict_converter=Object.fromEntries))


# Live views (display.animate and its feeds) live in their own module: web/py/animate.py.
from _display_animate import (  # noqa: E402
    Animation, animate, brush, key, pointer, pressed, toggles,
)

__all__ = ["Animation", "animate", "brush", "draw", "is_result", "key", "pick_file", "plot",
           "pointer", "pressed", "progress", "show", "text", "toggles"]
