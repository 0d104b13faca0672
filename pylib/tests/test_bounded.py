"""hostile.bounded, the memory-capped child the hostile-input tests run in: an allocation past
its cap ends in MemoryError, a busy loop is stopped by its CPU time (not the wall clock), and a
GpuLabError comes back with its code and message."""

from __future__ import annotations

from gpulab.errors import GpuLabError
from hostile.bounded import run_bounded


def _spin() -> None:
    while True:
        pass


def _refuse() -> None:
    raise GpuLabError("LIMIT", "too big")


def test_an_allocation_past_the_cap_is_a_memory_error() -> None:
    outcome = run_bounded(lambda: bytearray(1 << 31), memory=64 << 20)
    assert (outcome.kind, outcome.code) == ("crash", "MemoryError"), str(outcome)


def test_a_busy_loop_is_stopped_by_its_cpu_time() -> None:
    outcome = run_bounded(_spin, seconds=1)
    assert outcome.kind == "killed" and "s of CPU" in outcome.message, str(outcome)


def test_a_refusal_comes_back_with_its_code_and_message() -> None:
    outcome = run_bounded(_refuse)
    assert (outcome.kind, outcome.code, outcome.message) == ("error", "LIMIT", "too big")
