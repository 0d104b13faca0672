"""hostile.bounded, the memory-capped child the hostile-input tests run in: an allocation past
its cap ends in MemoryError, a busy loop is stopped by its CPU time (not the wall clock), a
GpuLabError comes back with its code and message, and a wgpu device an earlier test left in a
reference cycle does not block the child."""

from __future__ import annotations

import gc

import wgpu
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


class _Cycle:
    def __init__(self, device: object) -> None:
        self.device, self.me = device, self


def test_a_device_left_in_a_cycle_does_not_block_the_child() -> None:
    """Released in the child, it waited forever on native threads a fork does not copy (the
    child was killed by the wall-clock guard; a fresh clone's make test once sat there)."""
    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    device = adapter.request_device_sync()
    device.create_buffer(size=64, usage=wgpu.BufferUsage.STORAGE)
    _Cycle(device)
    del device  # now garbage in a cycle, not yet collected
    outcome = run_bounded(gc.collect, seconds=1.5)
    assert outcome.kind == "ok", str(outcome)
