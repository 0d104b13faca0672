"""The per-submission deadline of the native wgpu executor (docs/protocol.md, default 2 s).

A run waits for its read-back at most the deadline: the wait (wgpu's map_sync) happens on a
helper thread, and past the deadline the device is destroyed, the executor marked lost with a
message naming the deadline (so the session is poisoned and the host's next graph opens a fresh
device), and BACKEND is raised. Measured on lavapipe (docs/protocol.md "Quotas"): a running
shader cannot be interrupted (destroy() returns at once, the shader goes on), and until it ends
every wgpu call of the process that polls (a new adapter or device included) waits for it; so
recreation works once the runaway dispatch has ended. lavapipe (Mesa 22.3) ends every loop
after 65535 iterations per invocation, so a shader cannot loop forever there; many
invocations can still run for minutes. A student's loops are stopped before either, by the loop
budget (wgsl_budget.py, docs/protocol.md "The loop budget of students' kernels"): this
deadline is the backstop for long dispatches.

The deadline: `hooks["deadline_s"]` (tests), else `set_deadline(seconds)`, else
`GPULAB_DEADLINE_S` (seconds, > 0), each applied to every run; without any, 2 s for programs
that run a student's kernel (wgsl) and none for the others (our kernels are bounded by the
protocol's limits and the cost model; lavapipe runs the large corpus cases for longer).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

from ..errors import GpuLabError

DEFAULT_DEADLINE_S = 2.0
MAX_DEADLINE_S = 600.0
_deadline: float | None = None


def set_deadline(seconds: float | None) -> None:
    """The process-wide deadline (None: back to GPULAB_DEADLINE_S or the default)."""
    global _deadline
    _deadline = None if seconds is None else check_deadline(seconds)


def check_deadline(seconds: Any) -> float:
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, (int, float))
        or not 0 < seconds <= MAX_DEADLINE_S
    ):
        raise GpuLabError(
            "VALIDATION",
            f"the deadline must be a number of seconds in (0, {MAX_DEADLINE_S:g}], got {seconds!r}",
        )
    return float(seconds)


def deadline_s(hooks: dict[str, Any], student: bool) -> float | None:
    """The deadline of a program's runs (None: no deadline)."""
    if "deadline_s" in hooks:
        return check_deadline(hooks["deadline_s"])
    if _deadline is not None:
        return _deadline
    env = os.environ.get("GPULAB_DEADLINE_S")
    if env:
        return check_deadline(float(env))
    return DEFAULT_DEADLINE_S if student else None


def map_within(
    buffer: Any, mode: int | str, size: int, seconds: float | None, expire: Callable[[str], None]
) -> None:
    """buffer.map_sync(mode, 0, size), waiting at most `seconds` (None: as long as it takes);
    past it `expire(message)` (destroy the device, mark it lost) and raise BACKEND naming the
    deadline."""
    if seconds is None:
        buffer.map_sync(mode, 0, size)
        return
    done = threading.Event()
    failure: list[BaseException] = []

    def wait() -> None:
        try:
            buffer.map_sync(mode, 0, size)
        except BaseException as err:  # noqa: BLE001 - handed to the caller's thread
            failure.append(err)
        finally:
            done.set()

    threading.Thread(target=wait, name="gpulab-readback", daemon=True).start()
    if not done.wait(seconds):
        message = (
            f"run: the submission ran past the {seconds:g} s deadline (GPULAB_DEADLINE_S); "
            "the wgpu device was destroyed: the next graph opens a new one"
        )
        expire(message)
        raise GpuLabError("BACKEND", message)
    if failure:
        raise failure[0]
