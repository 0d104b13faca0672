"""Bytes from the page's server into Pyodide, streamed, with a progress bar (Pyodide only).

`read_file(file)` does the same for a File the page opened (display.pick_file): slices of
CHUNK bytes, each copied into one preallocated bytearray. Both call `check_size(total)` before
allocating, so a file that cannot fit is refused before a byte is read.

`fetch_bytes(url)` reads the response body chunk by chunk (a ReadableStream of Uint8Arrays) and
copies each chunk straight into one preallocated bytearray (`JsBuffer.assign_to`: a memcpy, no
per-element list, no JSON), so 90 MB cost one 90 MB buffer. With a `label`, the cell's output
shows a progress bar (display.progress, web/py/display.py) updated at most every 1/50 of the
file; where `display` is absent (a worker without the notebook) it prints nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpulab.errors import GpuLabError

STEPS = 50  # progress updates per file at most
CHUNK = 4 * 1024 * 1024  # bytes of a File read at once
MIB = 1024 * 1024

SizeCheck = Callable[[int], None]


def quota_check(quota: int | None, what: str) -> SizeCheck:
    """A size check that refuses, with LIMIT naming the quota, a file of more bytes than the
    page runtime's device memory quota (`quota` bytes; None: no check): `what` must fit on the
    device, so a larger file cannot run here."""

    def check(size: int) -> None:
        if quota is not None and size > quota:
            raise GpuLabError(
                "LIMIT",
                f"{what} is {size / MIB:.1f} MiB, past this page's device memory quota of "
                f"{quota / MIB:.0f} MiB (quotas.memoryBytes): its weights must fit on the "
                "device. Use a smaller or more quantized file (e.g. Q4_0), or run it natively.",
            )

    return check


def _buffer(size: int, what: str) -> bytearray:
    try:
        return bytearray(size)
    except MemoryError:
        raise GpuLabError(
            "LIMIT", f"{what}: {size / MIB:.1f} MiB do not fit in this page's Python memory"
        ) from None


def _progress() -> Any:
    try:
        import display  # the notebook's helpers (web/py/display.py)
    except ImportError:
        return None
    return getattr(display, "progress", None)


async def fetch_bytes(
    url: str, label: str | None = None, check_size: SizeCheck | None = None
) -> memoryview:
    from js import fetch  # type: ignore[import-not-found]

    response = await fetch(url)
    if not response.ok:
        text = await response.text()
        raise GpuLabError("UNAVAILABLE", f"{url}: HTTP {response.status}: {text.strip()[:300]}")
    total = int(response.headers.get("Content-Length") or 0)
    show = _progress() if label else None
    if not total or response.body is None:  # no length: one ArrayBuffer
        data = memoryview((await response.arrayBuffer()).to_py()).cast("B")
        if check_size is not None:
            check_size(len(data))
        return data
    if check_size is not None:
        check_size(total)
    buf = _buffer(total, url)
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


async def read_file(
    file: Any, label: str | None = None, check_size: SizeCheck | None = None
) -> memoryview:
    """The bytes of a File the page opened (a JsProxy with .name, .size, .slice), read in
    slices of CHUNK bytes with a progress bar under `label`."""
    from js import Uint8Array  # type: ignore[import-not-found]

    name, total = str(file.name), int(file.size)
    if check_size is not None:
        check_size(total)
    view = memoryview(_buffer(total, name))
    show = _progress() if label else None
    done, shown = 0, -1
    while done < total:
        end = min(total, done + CHUNK)
        chunk = Uint8Array.new(await file.slice(done, end).arrayBuffer())
        if chunk.length != end - done:
            raise GpuLabError("UNAVAILABLE", f"{name}: the file changed while it was read")
        chunk.assign_to(view[done:end])
        done = end
        if show is not None and done * STEPS // total != shown:
            shown = done * STEPS // total
            show(done, total, label=label, name=name)
    return view
