"""Fixtures shared by the fusion tests (map fusion, the matmul epilogue, the multi dispatches):
each compares a fused plan with an unfused one on the same executor."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="module")
def executor() -> Iterator[Any]:
    """A wgpu executor (lavapipe here: software allowed) whose plan cache is off, so a test that
    switches a fusion off gets a plan made for that setting (a module may define its own)."""
    from gpulab.native.plan_cache import PlanCache
    from gpulab.native.wgpu_executor import open_executor

    ex = open_executor(True, hooks={"plan_cache": PlanCache(0, 0)})  # plans made every time
    yield ex
    ex.dispose()
