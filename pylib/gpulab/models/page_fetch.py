"""Bytes from the page's server into Pyodide, streamed, with a progress bar (Pyodide only).

`fetch_bytes(url)` reads the response body chunk by chunk (a ReadableStream of Uint8Arrays) and
copies each chunk straight into one preallocated bytearray (`JsBuffer.assign_to`: a memcpy, no
per-element list, no JSON), so 90 MB cost one 90 MB buffer. With a `label`, the cell's output
shows a progress bar (display.progress, web/py/display.py) updated at most every 1/50 of the
file; where `display` is absent (a worker without the notebook) it prints nothing.
"""

from __future__ import annotations

from typing import Any

from gpulab.errors import GpuLabError

STEPS = 50  # progress updates per file at most


def _progress() -> Any:
    try:
        import display  # the notebook's helpers (web/py/display.py)
    except ImportError:
        return None
    return getattr(display, "progress", None)


async def fetch_bytes(url: str, label: str | None = None) -> memoryview:
    from js import fetch  # type: ignore[import-not-found]

    response = await fetch(url)
    if not response.ok:
        text = await response.text()
        raise GpuLabError("UNAVAILABLE", f"{url}: HTTP {response.status}: {text.strip()[:300]}")
    total = int(response.headers.get("Content-Length") or 0)
    show = _progress() if label else None
    if not total or response.body is None:  # no length: one ArrayBuffer
        return memoryview((await response.arrayBuffer()).to_py()).cast("B")
    buf = bytearray(total)
    view = memoryview(buf)
    reader = response.body.getReader()
    done, shown = 0, -1
    while True:
        chunk = await reader.read()
        if chunk.done:
            break
        n = chunk.value.length
        if done + n > total:
            raise GpuLabError("UNAVAILABLE", f"{url}: more bytes than Content-Length {total}")
        chunk.value.assign_to(view[done : done + n])
        done += n
        if show is not None and done * STEPS // total != shown:
            shown = done * STEPS // total
            show(done, total, label=label, name=url)
    if done != total:
        raise GpuLabError("UNAVAILABLE", f"{url}: the download stopped at {done} of {total} bytes")
    return view
