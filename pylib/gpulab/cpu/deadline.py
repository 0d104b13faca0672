"""The server's per-request deadline on cpu-python.

numpy work in a thread cannot be interrupted, so the deadline is cooperative: a cpu-python
program run inside `deadline(seconds)` checks the clock before each node and, once the time
is past, stops with LIMIT naming the deadline (no partial answer). One node runs to its end;
the cost model (gpulab.quotas, the op table's cost_model) bounds it before any work. A context
variable, so each request thread of the server has its own.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from ..errors import GpuLabError
from ..protocol import CheckedNode, label

_DEADLINE: ContextVar[tuple[float, float] | None] = ContextVar("gpulab_cpu_deadline", default=None)


@contextmanager
def deadline(seconds: float | None) -> Iterator[None]:
    """cpu-python programs run in this context stop between nodes past `seconds` (None: no
    deadline)."""
    token = _DEADLINE.set(None if seconds is None else (time.monotonic() + seconds, seconds))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def check(node: CheckedNode) -> None:
    """LIMIT before `node` when the current deadline has passed."""
    current = _DEADLINE.get()
    if current is not None and time.monotonic() > current[0]:
        raise GpuLabError(
            "LIMIT",
            f"{label(node.id, node.op)}: stopped before this node, past the request's deadline "
            f"of {current[1]:g} s (deadline_s)",
            node.id,
        )
