"""Every buffer a student's kernel can read starts zeroed (WebGPU's rule, made the wgpu
executor's on every pooled path): a kernel that writes nothing reads zeros, never what a
disposed session, a parked one-shot program or an earlier step left in its pooled buffer
(natively on lavapipe; the page's twin is in e2e/test_student_wgsl.py)."""

from __future__ import annotations

import numpy as np
import pytest
from gpulab import Graph, host
from gpulab.native.plan_cache import PlanCache
from gpulab.native.wgpu_executor import open_executor

N = 1024
# copies x into its result unless x[0] is the "quiet" value: then it writes nothing
COPY_UNLESS_QUIET = """@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> o: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3u) {
  if (x[0] != 12345.0 && id.x < arrayLength(&o)) { o[id.x] = x[id.x]; }
}
"""
NOTHING = """@group(0) @binding(0) var<storage, read_write> o: array<f32>;
@compute @workgroup_size(1)
fn main() { }
"""
SECRET = np.arange(1, N + 1, dtype=np.float32)  # another graph's data
QUIET = np.full(N, 12345.0, dtype=np.float32)


def _copy_graph(data: np.ndarray) -> dict:
    g = Graph()
    x = g.tensor(data.tolist())
    o = g.wgsl(COPY_UNLESS_QUIET, inputs=[x], outputs={"o": ((N,), "float32")}, workgroups=N // 64)
    return g.to_dict(o=o)


def _nothing_graph() -> dict:
    g = Graph()
    o = g.wgsl(NOTHING, outputs={"o": ((N,), "float32")}, workgroups=1)
    return g.to_dict(o=o)


def _run(graph: dict) -> np.ndarray:
    r = host.execute(graph, backend="wgpu", allow_software=True)
    return np.asarray(r["outputs"]["o"]["array"])


def _fed_session() -> tuple[object, int]:
    g = Graph()
    x = g.input((N,), "float32")
    o = g.wgsl(COPY_UNLESS_QUIET, inputs=[x], outputs={"o": ((N,), "float32")}, workgroups=N // 64)
    session = host.prepare(
        g.to_dict(o=o), backend="wgpu", allow_software=True, feeds=[x.id], outputs=["o"]
    )
    return session, x.id


def test_a_student_kernel_that_writes_nothing_reads_zeros_after_a_disposed_session():
    """The session's buffers go back to the pool at dispose (a session with feeds is not
    parked); the next graph's result buffer of the same size comes from there."""
    session, x = _fed_session()
    out = session.run({x: SECRET})["outputs"]["o"]["array"]  # type: ignore[attr-defined]
    assert np.array_equal(np.asarray(out), SECRET)
    session.dispose()  # type: ignore[attr-defined]
    for _ in range(3):  # whichever pooled buffer comes back
        assert not _run(_nothing_graph()).any()


def test_a_parked_one_shot_program_starts_its_student_results_zeroed():
    """execute parks its program (plan_cache.py); the next execute of the same structure
    reuses it with new data: a run that writes nothing must not return the last run's values."""
    assert np.array_equal(_run(_copy_graph(SECRET)), SECRET)
    assert not _run(_copy_graph(QUIET)).any()


def test_each_session_step_starts_a_student_kernels_results_zeroed():
    """N session steps equal N chained executes: a step that writes nothing reads zeros, not
    the step before's values."""
    session, x = _fed_session()
    try:
        first = session.run({x: SECRET})["outputs"]["o"]["array"]  # type: ignore[attr-defined]
        second = session.run({x: QUIET})["outputs"]["o"]["array"]  # type: ignore[attr-defined]
    finally:
        session.dispose()  # type: ignore[attr-defined]
    assert np.array_equal(np.asarray(first), SECRET)
    assert not np.asarray(second).any()


@pytest.fixture()
def uncached():
    ex = open_executor(True, hooks={"plan_cache": PlanCache(0, 0)})
    yield ex
    ex.dispose()


def test_pooled_buffers_of_any_program_start_zeroed(uncached, monkeypatch):
    """Without the plan cache every execute takes its buffers from the pool: a program's
    buffers that come back from it are cleared before the program reads them, whatever
    kernel reads them (the students' per-step clears switched off here to see the pool's)."""
    from gpulab.native.program import WgpuProgram
    from gpulab.protocol import validate

    monkeypatch.setattr(WgpuProgram, "_results_of_students", lambda self, swapped: [])

    def run(graph: dict) -> np.ndarray:
        checked = validate(graph)
        program = uncached.prepare(checked, feeds=[], carry={}, keep=[])
        try:
            return np.asarray(program.run([{}], [checked.outputs[0].id])[checked.outputs[0].id])
        finally:
            program.dispose()

    assert np.array_equal(run(_copy_graph(SECRET)), SECRET)
    created = uncached.counters["buffers_created"]
    assert not run(_nothing_graph()).any()
    assert not run(_copy_graph(QUIET)).any()
    assert uncached.counters["buffers_created"] == created  # the pool's buffers were reused


def test_a_fed_session_on_pooled_buffers_reads_its_first_steps_feed(uncached):
    """The pool's clear never wipes what a program writes itself: a feed copied in before the
    first step into a buffer that came back from the pool is the step's input, not zeros."""
    from gpulab.protocol import validate

    def run_once(graph: dict) -> None:
        checked = validate(graph)
        program = uncached.prepare(checked, feeds=[], carry={}, keep=[])
        program.run([{}], [checked.outputs[0].id])
        program.dispose()

    run_once(_copy_graph(SECRET))  # its buffers (input and result) go back to the pool
    run_once(_nothing_graph())
    g = Graph()
    x = g.input((N,), "float32")
    o = g.wgsl(COPY_UNLESS_QUIET, inputs=[x], outputs={"o": ((N,), "float32")}, workgroups=N // 64)
    checked = validate(g.to_dict(o=o))
    pooled = {
        id(b) for (kind, _), free in uncached._pool.items() if kind == "storage" for b in free
    }
    program = uncached.prepare(checked, feeds=[x.id], carry={}, keep=[])
    feed_buffer = program._buffers[program._buffer_of[x.id]]
    try:
        fed = (SECRET * 2).astype(np.float32)
        first = program.run([{x.id: fed}], [o.id])[o.id]
        second = program.run([{x.id: fed + 1}], [o.id])[o.id]
    finally:
        program.dispose()
    assert id(feed_buffer) in pooled  # the feed's buffer came back from the pool
    assert np.array_equal(np.asarray(first), fed)
    assert np.array_equal(np.asarray(second), fed + 1)
