"""Run a call in a forked child whose address space is capped, so a test of "refused before it
allocates" fails with MemoryError (or a hang report) instead of taking the machine down when
the defect is back.

The child inherits everything already imported (a fork), sets RLIMIT_AS to what it has mapped
plus `memory` bytes, runs the call and sends back how it ended: its GpuLabError (code and
message), another exception (type and message), or its return value's repr. The hang guard
counts the child's CPU time (RLIMIT_CPU: `seconds`), not the wall clock, so a loaded machine
does not turn a slow run into a "hang"; a child blocked without using CPU is killed after
WALL_FACTOR times as long on the wall clock. Neither is a timing assertion.

Garbage is collected in the parent just before the fork, and the child never collects what it
inherited (gc.freeze): a wgpu device of an earlier test left in a reference cycle would
otherwise be released in the child, whose release waits on native threads that a fork does not
copy, and the child blocks until the wall-clock guard kills it.
"""

from __future__ import annotations

import gc
import os
import pickle
import resource
import select
import signal
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpulab.errors import GpuLabError

WALL_FACTOR = 20  # a 2-core machine shared by ~25 busy processes gives a child ~1/12 of a core


@dataclass
class Outcome:
    kind: str  # "error" (a GpuLabError), "crash" (any other exception), "ok", "killed"
    code: str = ""
    message: str = ""

    def __str__(self) -> str:
        return f"{self.kind} {self.code}: {self.message}"


def _mapped_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _child(fn: Callable[[], Any], memory: int, cpu_seconds: float, out: int) -> None:
    limit = _mapped_bytes() + memory
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    cpu = max(1, int(cpu_seconds))  # a forked child's CPU time starts at zero
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))  # SIGXCPU ends it
    try:
        result = Outcome("ok", "", repr(fn())[:2000])
    except GpuLabError as err:
        result = Outcome("error", err.code, err.message)
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, which fails the test
        # hypothesis puts the falsifying example in the exception's notes
        notes = "\n".join(str(n) for n in getattr(exc, "__notes__", ()))
        result = Outcome("crash", type(exc).__name__, f"{str(exc)[:4000]}\n{notes[:4000]}")
    os.write(out, pickle.dumps(result))


def run_bounded(fn: Callable[[], Any], memory: int = 1 << 30, seconds: float = 120.0) -> Outcome:
    """How fn() ends in a child allowed `memory` more bytes than the parent has mapped and
    `seconds` of CPU time."""
    read_end, write_end = os.pipe()
    gc.collect()  # finalize dead native objects here, where their release can complete
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        gc.freeze()  # what it inherited is never collected (nor released) in the child
        os.close(read_end)
        try:
            _child(fn, memory, seconds, write_end)
        finally:
            os._exit(0)
    os.close(write_end)
    chunks: list[bytes] = []
    try:
        while True:
            ready, _, _ = select.select([read_end], [], [], seconds * WALL_FACTOR)
            if not ready:
                os.kill(pid, signal.SIGKILL)
                return Outcome(
                    "killed", "", f"no answer within {seconds * WALL_FACTOR} s (a blocked child)"
                )
            chunk = os.read(read_end, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read_end)
        _, status = os.waitpid(pid, 0)
    if not chunks:
        if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGXCPU:
            return Outcome("killed", "", f"used more than {seconds} s of CPU (a hang)")
        return Outcome("killed", "", f"the child ended without an answer (status {status})")
    return pickle.loads(b"".join(chunks))
