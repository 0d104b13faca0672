"""`gpulab serve` runs its native executor in a child process (gpulab.playground.native_child):
a crash there (a segfault in naga or the driver) or a shader past its deadline ends that process,
the request gets BACKEND naming what happened, and the server goes on; the next request is
answered by the warm spare within a second (the issue's one timing requirement, measured from
the next request's send). Also: two clients through /api/execute never see each other's data
(every buffer a student's kernel can read starts zeroed)."""

from __future__ import annotations

import base64
import http.client
import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gpulab import Graph
from gpulab.playground.api import ExecuteEndpoint
from gpulab.playground.native_child import ChildExecutor, read_frame, write_frame
from gpulab.quotas import Quotas
from gpulab.static_server import start_server

ROOT = Path(__file__).resolve().parents[2]
N = 1024
# each of 1000 x 64 invocations loops to the budget (65,533 iterations, inside every limit:
# 4e9 of max_kernel_work's 6.9e10); lavapipe takes well over the 2 s native deadline for it
ENDLESS_ENOUGH = """@group(0) @binding(0) var<storage, read_write> o: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3u) {
  var s = 0.0;
  for (var i = 0u; i < 65533u; i++) { s += sin(f32(i) * 0.001 + f32(id.x)); }
  if (id.x < arrayLength(&o)) { o[id.x] = s; }
}
"""
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


def _small_graph() -> dict:
    g = Graph()
    a = g.tensor([1.0, 2.0, 3.0, 4.0])
    return g.to_dict(y=a + a)


def _endless_graph() -> dict:
    g = Graph()
    o = g.wgsl(ENDLESS_ENOUGH, outputs={"o": ((N,), "float32")}, workgroups=1000)
    return g.to_dict(o=o)


def _copy_graph(values: list[float]) -> dict:
    g = Graph()
    x = g.tensor(values)
    o = g.wgsl(COPY_UNLESS_QUIET, inputs=[x], outputs={"o": ((N,), "float32")}, workgroups=N // 64)
    return g.to_dict(o=o)


def _nothing_graph() -> dict:
    g = Graph()
    return g.to_dict(o=g.wgsl(NOTHING, outputs={"o": ((N,), "float32")}, workgroups=1))


@pytest.fixture(scope="module")
def served():
    """The execute route of `gpulab serve` with its child-process executor (no Pyodide site),
    lavapipe admitted (the children take the server's setting with each request)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GPULAB_ALLOW_SOFTWARE", "1")
        executor = ChildExecutor(deadline_s=Quotas().deadline_s, grace_s=2.0)
        executor.start()
        executor.hooks["sent"] = threading.Event()
        endpoint = ExecuteEndpoint(set(), executor)
        srv = start_server(ROOT / "web", routes=[endpoint])
        port = srv.server_address[1]
        endpoint.allowed_hosts = {f"127.0.0.1:{port}"}
        yield port, executor
        srv.shutdown()
        executor.close()


def _execute(port: int, graph: dict) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    conn.request(
        "POST",
        "/api/execute",
        body=json.dumps(graph).encode(),
        headers={"Origin": f"http://127.0.0.1:{port}", "Content-Type": "application/json"},
    )
    response = conn.getresponse()
    answer = json.loads(response.read())
    conn.close()
    return response.status, answer


def _values(answer: dict) -> np.ndarray:
    return np.frombuffer(base64.b64decode(answer["outputs"]["o"]["data"]["base64"]), np.float32)


def _next_request_is_quick(port: int) -> float:
    """Seconds from sending a small graph to its answer (asserted correct)."""
    t0 = time.monotonic()
    status, answer = _execute(port, _small_graph())
    seconds = time.monotonic() - t0
    assert status == 200, answer
    assert answer["stats"]["process"] == "child"
    return seconds


def _run_in_thread(port: int, graph: dict) -> tuple[threading.Thread, dict[str, Any]]:
    box: dict[str, Any] = {}

    def go() -> None:
        box["answer"] = _execute(port, graph)

    thread = threading.Thread(target=go, daemon=True)
    thread.start()
    return thread, box


@pytest.mark.slow
def test_the_server_survives_a_segfault_in_its_native_executor(served):
    """A SIGSEGV in the child while it runs a graph (what naga's stack overflow and lavapipe's
    crashes were): BACKEND naming the signal, a fresh child, the next request under a second."""
    port, executor = served
    executor.wait_ready(300)  # the spare too: the next request must not wait for a cold start
    victim = executor.active_pid
    sent = executor.hooks["sent"]
    sent.clear()
    thread, box = _run_in_thread(port, _endless_graph())
    assert sent.wait(60)
    os.kill(victim, signal.SIGSEGV)
    thread.join(120)
    status, answer = box["answer"]
    assert status == 500 and answer["code"] == "BACKEND", answer
    assert "killed by SIGSEGV while running a graph" in answer["message"]
    assert "server goes on" in answer["message"]
    assert executor.active_pid != victim
    assert _next_request_is_quick(port) < 1.0


@pytest.mark.slow
def test_a_shader_past_its_deadline_ends_its_process_and_the_next_request_does_not_wait(served):
    """The native deadline answers at 2 s, but lavapipe's shader would run on for many seconds
    (the next request waited 13.5 s behind it): its process is killed instead."""
    port, executor = served
    executor.wait_ready(300)
    victim = executor.active_pid
    status, answer = _execute(port, _endless_graph())
    assert status == 500 and answer["code"] == "BACKEND", answer
    assert "deadline" in answer["message"]
    assert executor.active_pid != victim
    assert _next_request_is_quick(port) < 1.0


@pytest.mark.slow
def test_a_child_that_stops_answering_is_killed_past_the_request_deadline(served):
    """A hung child (stopped here: what a shader that never returns looks like from outside)
    is killed `grace_s` past the server's deadline and replaced; BACKEND names the deadline."""
    port, executor = served
    executor.wait_ready(300)
    victim = executor.active_pid
    saved = executor.deadline_s
    executor.deadline_s = 0.5
    try:
        os.kill(victim, signal.SIGSTOP)
        status, answer = _execute(port, _small_graph())
    finally:
        executor.deadline_s = saved
    assert status == 500 and answer["code"] == "BACKEND", answer
    assert "deadline" in answer["message"] and "killed" in answer["message"]
    assert executor.active_pid != victim
    with pytest.raises(ProcessLookupError):
        os.kill(victim, 0)  # reaped: gone
    assert _next_request_is_quick(port) < 1.0


@pytest.mark.slow
def test_client_b_never_sees_client_a_data_through_api_execute(served):
    """Client A's inputs through a student's kernel; client B's kernel writes nothing: B reads
    zeros (before: A's 1024 values came back from the pooled result buffer)."""
    port, _executor = served
    secret = [float(i + 1) for i in range(N)]
    status, a = _execute(port, _copy_graph(secret))
    assert status == 200, a
    assert _values(a).tolist() == secret
    for _ in range(3):
        status, b = _execute(port, _nothing_graph())
        assert status == 200, b
        assert not _values(b).any()
    status, quiet = _execute(port, _copy_graph([12345.0] * N))  # the parked program, reused
    assert status == 200, quiet
    assert not _values(quiet).any()


def test_frames_round_trip_and_a_cut_frame_is_an_error(tmp_path):
    path = tmp_path / "frames"
    with path.open("wb") as out:
        write_frame(out, b"")
        write_frame(out, b"x" * 70000)
    with path.open("rb") as inp:
        assert read_frame(inp) == b""
        assert read_frame(inp) == b"x" * 70000
        assert read_frame(inp) is None
    path.write_bytes((10).to_bytes(8, "big") + b"short")
    with path.open("rb") as inp, pytest.raises(EOFError):
        read_frame(inp)
