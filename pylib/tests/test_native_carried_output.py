"""An output that is a carried input reads the value its step used (docs/protocol.md
"Prepared sessions"; the cpu executors' answer), on the wgpu executor's ping-pong path too:
it read the carried (next) value there until the JS twin of ping-pong found it."""

from __future__ import annotations

import pytest
from gpulab import host

pytest.importorskip("wgpu", reason="wgpu-py is not installed")
from gpulab.native.wgpu_executor import open_executor
from gpulab.protocol import validate

GRAPH = {
    "version": 1,
    "nodes": [
        {"id": 0, "op": "input", "shape": [2], "data": [1.0, 2.0]},
        {"id": 1, "op": "full", "shape": [2], "value": 1},
        {"id": 2, "op": "add", "a": 0, "b": 1},
    ],
    "outputs": [{"name": "w", "id": 0}, {"name": "wn", "id": 2}],
}
# runs of 1, 1 and 3 steps: (w, wn) after each; then the carried input's value
WANT = [([1, 2], [2, 3]), ([2, 3], [3, 4]), ([5, 6], [6, 7])], [6, 7]


def _runs(backend: str) -> tuple[list[tuple[list[float], list[float]]], list[float]]:
    s = host.prepare(
        GRAPH, carry={0: "wn"}, outputs=["w", "wn"], backend=backend, allow_software=True
    )
    try:
        runs = []
        for n in (1, 1, 3):
            out = s.run(n)["outputs"]
            runs.append((out["w"]["array"].tolist(), out["wn"]["array"].tolist()))
        return runs, s.download(0)["array"].tolist()
    finally:
        s.dispose()


def test_the_wgpu_program_ping_pongs_this_carry() -> None:
    ex = open_executor(True)
    try:
        program = ex.prepare(validate(GRAPH), feeds=[], carry={0: 2}, keep=[2])
        assert program.carry_mode == "ping-pong"
        program.dispose()
    finally:
        ex.dispose()


@pytest.mark.parametrize("backend", ["cpu-python", "wgpu"])
def test_an_output_that_is_a_carried_input_reads_the_value_its_step_used(backend: str) -> None:
    assert _runs(backend) == WANT
