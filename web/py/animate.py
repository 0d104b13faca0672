"""Live views: `display.animate` steps a prepared session once per frame and draws one output.

    life = await g.prepare_async(feeds=[toggle], carry={board: "board"}, board=...)
    view = display.animate(life, "board", feeds={toggle: display.toggles()}, fps=30)
    view.stop()                                   # or the toolbar's Stop, or run the cell again

The loop runs in the page's worker, not in Python: the cell finishes and the view runs on (and
other cells can run) until it has drawn `frames` frames, Stop is pressed, its cell runs again or
the session fails. The view owns the session: when it ends, the session is disposed.

Feeds (one per fed input of the session; each is built from the input since the last step):
  display.toggles()            a mask of the drawn output's shape: 1 where a click or a drag
                               toggled a cell (each cell once per stroke), else 0
  display.brush(radius, value) a mask: `value` within `radius` cells of the pointer while pressed
  display.pointer()            [row, col] of the pointer on the tensor ([-1, -1] when off it)
  display.key("ArrowUp")       [1] while the key is held, else [0]
  display.pressed()            [1] while a pointer button is held, else [0]
  any data                     the same value every step

Colours: a palette for masks and labels (0 dark, 1 green, 2.. distinct; integers and bool by
default, or palette=True for a float 0/1 board) and a colour map (viridis) over [vmin, vmax]
for floats. The pause key (Space by default; pause_key=None for none) pauses and resumes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import _notebook  # registered by web/worker.mjs
from js import Object
from pyodide.ffi import to_js

from gpulab.errors import GpuLabError
from gpulab.pyodide_bridge import feed_buffer


def toggles() -> dict:
    """Feed: a mask of the cells clicked (or dragged over) since the last step."""
    return {"kind": "toggle"}


def brush(radius: float = 2.0, value: float = 1.0) -> dict:
    """Feed: `value` on every cell within `radius` of the pointer while it is pressed."""
    return {"kind": "brush", "radius": float(radius), "value": float(value)}


def pointer() -> dict:
    """Feed: the pointer's [row, col] on the drawn tensor, [-1, -1] when it is off it."""
    return {"kind": "pointer"}


def key(name: str, value: float = 1.0) -> dict:
    """Feed: [value] while the key `name` (a KeyboardEvent.key: "a", "ArrowUp", " ") is held."""
    return {"kind": "key", "key": str(name), "value": float(value)}


def pressed(value: float = 1.0) -> dict:
    """Feed: [value] while a pointer button is held on the canvas."""
    return {"kind": "pressed", "value": float(value)}


class Animation:
    """A running live view: `stop()` ends it (and disposes its session)."""

    def __init__(self, view_id: int, session: Any) -> None:
        self.id = view_id
        self.session = session

    def stop(self) -> None:
        _notebook.animation_stop(self.id)
        self.session._disposed = True  # the page disposed it

    def __repr__(self) -> str:
        return f"<live view {self.id}>"


def _feed_spec(session: Any, node_id: int, value: Any) -> dict:
    if isinstance(value, dict) and "kind" in value:
        return value
    dtype = session._feed_dtypes.get(node_id, "float32")
    return {"kind": "const", "data": feed_buffer(value, dtype)}


def animate(session: Any, output: str, feeds: Mapping[Any, Any] | None = None, fps: float = 60,
            frames: int | None = None, palette: bool | None = None, vmin: float = 0.0,
            vmax: float = 1.0, pause_key: str | None = " ", scale: int | None = None,
            name: str = "animation", title: str | None = None) -> Animation:
    """Show `output` of the prepared `session` live: one step per frame, at most `fps` frames
    per second (paced by the display), `frames` frames in all (None: until stopped)."""
    if getattr(session, "disposed", False):
        raise GpuLabError("DISPOSED", "the session was disposed")
    if not hasattr(session, "_key_id"):
        raise TypeError("display.animate needs a session prepared in the page "
                        "(g.prepare / await g.prepare_async)")
    if frames is not None and (not isinstance(frames, int) or frames < 1):
        raise ValueError(f"frames must be a positive integer or None, got {frames!r}")
    specs = []
    for k, v in (feeds or {}).items():
        node_id = session._key_id(k)
        specs.append([node_id, _feed_spec(session, node_id, v)])
    spec = {"session": session.id, "output": str(output), "feeds": specs, "fps": float(fps),
            "frames": frames, "palette": palette, "vmin": float(vmin), "vmax": float(vmax),
            "pauseKey": pause_key, "scale": scale, "name": str(name), "title": title}
    answer = _notebook.animate(to_js(spec, dict_converter=Object.fromEntries))
    if not answer.ok:
        error = answer.error
        node = getattr(error, "node", None)
        raise GpuLabError(str(error.code), str(error.message),
                          node if isinstance(node, int) else None)
    return Animation(int(answer.value), session)
