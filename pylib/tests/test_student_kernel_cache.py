"""Compiled student kernels are kept per executor up to MAX_STUDENT_KERNELS, least recently used
dropped first (natively each holds about 1 MB; they were kept forever, one per distinct source a
notebook or a client of the server sent). The page's twin: backends-js/test/student-cache.test.mjs."""

from __future__ import annotations

import numpy as np
from gpulab import Graph
from gpulab.native.wgpu_executor import open_executor
from gpulab.protocol import validate


def _graph(k: int) -> dict:
    """A kernel of its own source per k (writes k + 1 into its result)."""
    source = f"""@group(0) @binding(0) var<storage, read_write> o: array<f32>;
@compute @workgroup_size(1)
fn main() {{ o[0] = {k + 1}.0; }}
"""
    g = Graph()
    return g.to_dict(o=g.wgsl(source, outputs={"o": ((1,), "float32")}, workgroups=1))


def _run(ex, k: int) -> float:
    checked = validate(_graph(k))
    program = ex.prepare(checked, feeds=[], carry={}, keep=[])
    try:
        return float(
            np.asarray(program.run([{}], [checked.outputs[0].id])[checked.outputs[0].id])[0]
        )
    finally:
        program.dispose()


def test_compiled_student_kernels_are_bounded_least_recently_used_first():
    from gpulab.native.plan_cache import PlanCache

    ex = open_executor(True, hooks={"max_student_kernels": 3, "plan_cache": PlanCache(0, 0)})
    try:
        for k in range(5):
            assert _run(ex, k) == k + 1
        assert len(ex._student) == 3  # kernels 2, 3, 4
        made = ex.counters["pipelines"]
        assert _run(ex, 2) == 3  # kept: no new pipeline; now the most recent
        assert ex.counters["pipelines"] == made
        assert _run(ex, 5) == 6  # drops the least recent: kernel 3
        assert _run(ex, 4) == 5 and ex.counters["pipelines"] == made + 1
        assert _run(ex, 3) == 4 and ex.counters["pipelines"] == made + 2  # compiled again
        assert len(ex._student) == 3
    finally:
        ex.dispose()


def test_the_page_keeps_as_many_compiled_kernels_as_the_native_executor():
    import re
    from pathlib import Path

    from gpulab.native.student import MAX_STUDENT_KERNELS

    js = (
        Path(__file__).resolve().parents[2] / "backends-js/src/backends/webgpu/student.mjs"
    ).read_text()
    found = re.search(r"export const MAX_STUDENT_KERNELS = (\d+);", js)
    assert found is not None and int(found.group(1)) == MAX_STUDENT_KERNELS
