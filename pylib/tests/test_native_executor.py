"""The wgpu executor on this machine's adapter (lavapipe here: software, allowed explicitly):
one submission per run, cached pipelines, pooled buffers, every matmul kernel and split
dispatches giving the same bits, matmul accuracy across tile edges, and errors as BACKEND."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from gpulab.errors import GpuLabError
from gpulab.protocol import validate

pytest.importorskip("wgpu", reason="wgpu-py is not installed")
from gpulab.native import wgpu_executor
from gpulab.native.bench_matmul import forcing_matmul_kernel
from gpulab.native.planner import MATMUL_TILES
from gpulab.native.wgpu_executor import open_executor

RNG = np.random.default_rng(1234)


def _data(*shape: int) -> list[float]:
    return RNG.standard_normal(int(np.prod(shape))).astype(np.float32).tolist()


def _mixed_graph() -> dict:
    """Batched matmul across tile edges, softmax along a middle axis, reductions, a broadcast."""
    return {
        "version": 2,
        "nodes": [
            {"id": 0, "op": "input", "shape": [2, 130, 33], "data": _data(2, 130, 33)},
            {"id": 1, "op": "input", "shape": [33, 129], "data": _data(33, 129)},
            {"id": 2, "op": "matmul", "a": 0, "b": 1},
            {"id": 3, "op": "softmax", "a": 2, "axis": 1},
            {"id": 4, "op": "sum", "a": 2, "axis": 2, "keepdim": True},
            {"id": 5, "op": "sub", "a": 2, "b": 4},
            {"id": 6, "op": "gelu", "a": 5},
            {"id": 7, "op": "mean", "a": 6},
            # K and N multiples of 4: the _v4 kernels where those are forced
            {"id": 8, "op": "input", "shape": [2, 1, 130, 36], "data": _data(2, 1, 130, 36)},
            {"id": 9, "op": "input", "shape": [3, 36, 132], "data": _data(3, 36, 132)},
            {"id": 10, "op": "matmul", "a": 8, "b": 9},
            # only K a multiple of 4 (vec4 a: matmul_rb_a4), only N (vec4 b: matmul_rb_b4)
            {"id": 11, "op": "input", "shape": [130, 36], "data": _data(130, 36)},
            {"id": 12, "op": "input", "shape": [36, 131], "data": _data(36, 131)},
            {"id": 13, "op": "matmul", "a": 11, "b": 12},
            {"id": 14, "op": "input", "shape": [2, 131, 35], "data": _data(2, 131, 35)},
            {"id": 15, "op": "input", "shape": [35, 132], "data": _data(35, 132)},
            {"id": 16, "op": "matmul", "a": 14, "b": 15},
        ],
        "outputs": [
            {"name": n, "id": i}
            for n, i in [
                ("mm", 2),
                ("sm", 3),
                ("rows", 4),
                ("g", 6),
                ("m", 7),
                ("mm4", 10),
                ("mm_a4", 13),
                ("mm_b4", 16),
            ]
        ],
    }


@pytest.fixture(scope="module")
def executor() -> Iterator[Any]:
    ex = open_executor(True)
    yield ex
    ex.dispose()


def _run(ex: Any, graph: dict) -> dict[int, np.ndarray]:
    checked = validate(graph)
    program = ex.prepare(checked)
    try:
        return program.run([{}], [o.id for o in checked.outputs])
    finally:
        program.dispose()


def _bits_equal(a: dict, b: dict) -> bool:
    return all(np.array_equal(a[k].view(np.uint32), b[k].view(np.uint32)) for k in a)


def _operand(graph: dict, node_id: int) -> np.ndarray:
    node = next(n for n in graph["nodes"] if n["id"] == node_id)
    return np.array(node["data"], np.float64).reshape(node["shape"])


def _run_forced(graph: dict, kernel: str | None, **limits: int) -> tuple[dict, list[dict]]:
    """Outputs and plan steps with every matmul on `kernel` (None: the planner's choice)."""
    ex = open_executor(True, limits=limits)
    try:
        with forcing_matmul_kernel(kernel):
            steps = ex.prepare(validate(graph)).plan["steps"]
            return _run(ex, graph), steps
    finally:
        ex.dispose()


@pytest.mark.slow  # over ~10 s of CPU: make test, not test-fast
def test_matmul_within_the_protocol_bound_on_every_kernel() -> None:
    graph = _mixed_graph()
    eps = float(np.finfo(np.float32).eps)
    for kernel in MATMUL_TILES:
        got, steps = _run_forced(graph, kernel)
        planned = {s["kernel"] for s in steps} & set(MATMUL_TILES)
        # the forced kernel, or its tile's kernel where the shape's alignment needs another
        assert kernel in planned and {MATMUL_TILES[k][0] for k in planned} == {
            MATMUL_TILES[kernel][0]
        }, planned
        for out, (a_id, b_id) in ((2, (0, 1)), (10, (8, 9)), (13, (11, 12)), (16, (14, 15))):
            a, b = _operand(graph, a_id), _operand(graph, b_id)
            ref, scale = a @ b, np.abs(a) @ np.abs(b)
            ulp = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
            err = np.abs(got[out].astype(np.float64) - ref)
            assert np.all(err <= 8 * ulp + 4 * eps * scale), (kernel, out)


@pytest.mark.slow  # over ~10 s of CPU: make test, not test-fast
def test_matmul_kernels_and_split_dispatches_give_identical_bits(executor: Any) -> None:
    graph = _mixed_graph()
    base = _run(executor, graph)
    for kernel in MATMUL_TILES:
        assert _bits_equal(base, _run_forced(graph, kernel)[0]), kernel
    other, steps = _run_forced(graph, None, maxComputeWorkgroupsPerDimension=9)
    assert any(s["dispatch"][2] > 1 for s in steps)  # really split over z
    assert _bits_equal(base, other)


def test_one_submission_per_step_and_one_readback_per_run() -> None:
    """Each step is submitted as soon as it is encoded (program.STEPS_PER_SUBMIT = 1: the GPU
    runs it while the next is encoded); the values are read back once, after the last."""
    submits: list[int] = []
    # (on a software adapter, like this machine's, the default is one submission per run)
    ex = open_executor(True, hooks={"on_submit": submits.append, "steps_per_submit": 1})
    try:
        graph = {
            "version": 2,
            "nodes": [
                {"id": 0, "op": "input", "shape": [4]},
                {"id": 1, "op": "input", "shape": [4], "data": [0, 0, 0, 0]},
                {"id": 2, "op": "add", "a": 1, "b": 0},
            ],
            "outputs": [{"name": "acc", "id": 2}],
        }
        program = ex.prepare(validate(graph), feeds=[0], carry={1: 2}, keep=[2])
        steps = [{0: np.full(4, i, np.float32)} for i in range(1, 9)]
        out = program.run(steps, [2])
        assert submits == list(range(1, 9)) and ex.counters["readbacks"] == 1
        assert out[2].tolist() == [36.0] * 4  # 1 + 2 + ... + 8, carried through the steps
        assert program.download(1).tolist() == [36.0] * 4
        program.run(steps[:2], [2])
        assert submits == list(range(1, 12))  # the download was one submission too
        ex.hooks["steps_per_submit"] = 0  # all steps in one submission
        out = program.run(steps, [2])
        assert submits[-1] == 12 and ex.counters["readbacks"] == 4
        assert out[2].tolist() == [36.0 + 3 + 36] * 4  # 8 more steps, same sums
        program.dispose()
    finally:
        ex.dispose()


@pytest.mark.slow  # every kernel of the mixed graph compiled on lavapipe (~10 s of CPU)
def test_pipelines_are_cached_and_buffers_reused(executor: Any) -> None:
    """Every buffer kind (values, params uniform, read-back, feed staging) comes from the pool:
    after the first execute, 4 more create no buffer and no pipeline."""
    graph = _mixed_graph()
    graph["nodes"].append({"id": 31, "op": "input", "shape": [3]})
    graph["nodes"].append({"id": 32, "op": "neg", "a": 31})
    graph["outputs"].append({"name": "fed", "id": 32})

    def _run_fed() -> None:
        checked = validate(graph)
        program = executor.prepare(checked, feeds=[31])
        try:
            program.run([{31: [1.0, 2.0, 3.0]}] * 2, [o.id for o in checked.outputs])
        finally:
            program.dispose()

    _run_fed()
    pipelines = executor.counters["pipelines"]
    buffers = executor.counters["buffers_created"]
    for _ in range(4):
        _run_fed()
    assert executor.counters["pipelines"] == pipelines
    assert executor.counters["buffers_created"] == buffers


def test_feeds_of_the_wrong_size_are_refused(executor: Any) -> None:
    graph = {
        "version": 2,
        "nodes": [{"id": 0, "op": "input", "shape": [3]}, {"id": 1, "op": "neg", "a": 0}],
        "outputs": [{"name": "y", "id": 1}],
    }
    program = executor.prepare(validate(graph), feeds=[0])
    try:
        with pytest.raises(GpuLabError) as err:
            program.run([{0: [1.0, 2.0]}], [1])
        assert err.value.code == "VALIDATION" and "node 0 (input)" in err.value.message
        assert program.run([{0: [1.0, -0.0, 3.0]}], [1])[1].tolist() == [-1.0, 0.0, -3.0]
    finally:
        program.dispose()
    with pytest.raises(GpuLabError) as err:
        program.run([{}], [1])
    assert err.value.code == "DISPOSED"


def test_a_wgsl_error_becomes_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    ex = open_executor(True)
    monkeypatch.setattr(wgpu_executor, "kernel_source", lambda kernel: "fn main( {")
    try:
        with pytest.raises(GpuLabError) as err:
            ex.prepare(validate(_mixed_graph()))
        assert err.value.code == "BACKEND" and "prepare" in err.value.message
    finally:
        ex.dispose()


@pytest.mark.parametrize("how", ["hook", "destroy"])
def test_a_lost_device_becomes_backend(how: str) -> None:
    ex = open_executor(True)
    program = ex.prepare(validate(_mixed_graph()))
    program.run([{}], [2])
    if how == "hook":
        ex.lose_device()
    else:
        ex.device.destroy()  # what a driver reset looks like to wgpu: the device is lost
    with pytest.raises(GpuLabError) as err:
        program.run([{}], [2])
    assert err.value.code == "BACKEND" and "lost" in err.value.message
    with pytest.raises(GpuLabError) as err:
        ex.prepare(validate(_mixed_graph()))
    assert err.value.code == "BACKEND"
    program.dispose()  # always works
    ex.dispose()


def test_carries_act_simultaneously_even_when_they_swap(executor: Any) -> None:
    graph = {
        "version": 2,
        "nodes": [
            {"id": 0, "op": "input", "shape": [2], "data": [1, 2]},
            {"id": 1, "op": "input", "shape": [2], "data": [3, 4]},
            {"id": 2, "op": "neg", "a": 0},
        ],
        "outputs": [{"name": "a", "id": 0}, {"name": "b", "id": 1}, {"name": "na", "id": 2}],
    }
    program = executor.prepare(validate(graph), carry={0: 1, 1: 0}, keep=[2])
    try:
        out = program.run([{}], [2])
        assert out[2].tolist() == [-1.0, -2.0]  # computed before the carries
        assert program.download(0).tolist() == [3.0, 4.0]
        assert program.download(1).tolist() == [1.0, 2.0]
        out = program.run([{}, {}, {}], [2])  # three more swaps, one submission
        assert out[2].tolist() == [-3.0, -4.0]  # step 4 saw a = [3, 4]
        assert program.download(0).tolist() == [1.0, 2.0]
    finally:
        program.dispose()


def test_a_row_longer_than_llvmpipes_loop_cap_sums_correctly(executor: Any) -> None:
    """64 lanes x 65600 steps: past the 65535 loop iterations llvmpipe allows an invocation
    (reduce.wgsl adds 32 elements per iteration). Before that fix the tree's last step was
    silently dropped on lavapipe and the sum came out as half."""
    n = 64 * 65600
    graph = {
        "version": 2,
        "nodes": [
            {"id": 0, "op": "full", "shape": [n], "value": 1.0},
            {"id": 1, "op": "sum", "a": 0},
            {"id": 2, "op": "mean", "a": 0},
        ],
        "outputs": [{"name": "s", "id": 1}, {"name": "m", "id": 2}],
    }
    out = _run(executor, graph)
    assert float(out[1]) == n  # exact: n < 2^24
    assert float(out[2]) == 1.0


def test_a_carried_input_no_output_reads_still_carries(executor: Any) -> None:
    """As on cpu-python: input 0 feeds nothing, yet it is carried (and downloadable); feeding an
    input no output depends on is accepted and changes nothing."""
    graph = {
        "version": 2,
        "nodes": [
            {"id": 0, "op": "input", "shape": [2], "data": [5, 6]},
            {"id": 1, "op": "input", "shape": [2], "data": [1, 2]},
            {"id": 2, "op": "neg", "a": 1},
            {"id": 3, "op": "input", "shape": [1]},
        ],
        "outputs": [{"name": "n", "id": 2}],
    }
    program = executor.prepare(validate(graph), feeds=[3], carry={0: 2}, keep=[2])
    try:
        assert program.download(0).tolist() == [5.0, 6.0]
        assert program.run([{3: [1.0]}], [2])[2].tolist() == [-1.0, -2.0]
        assert program.download(0).tolist() == [-1.0, -2.0]
    finally:
        program.dispose()


def _transposes_graph() -> dict:
    """Transposes feeding small matmuls as a (x^T @ y, batched too) and as b (d @ w^T)."""
    nodes = [
        {"id": 0, "op": "input", "shape": [9, 12], "data": _data(9, 12)},
        {"id": 1, "op": "input", "shape": [9, 7], "data": _data(9, 7)},
        {"id": 2, "op": "transpose", "a": 0},
        {"id": 3, "op": "matmul", "a": 2, "b": 1},  # [12, 7]
        {"id": 4, "op": "input", "shape": [7, 12], "data": _data(7, 12)},
        {"id": 5, "op": "transpose", "a": 4},
        {"id": 6, "op": "input", "shape": [3, 12], "data": _data(3, 12)},
        {"id": 7, "op": "matmul", "a": 6, "b": 5},  # [3, 7]
        {"id": 8, "op": "input", "shape": [2, 5, 4], "data": _data(2, 5, 4)},
        {"id": 9, "op": "transpose", "a": 8},
        {"id": 10, "op": "input", "shape": [5, 6], "data": _data(5, 6)},
        {"id": 11, "op": "matmul", "a": 9, "b": 10},  # [2, 4, 6]
        {"id": 12, "op": "matmul", "a": 9, "b": 10},
    ]
    outputs = [("c", 3), ("e", 7), ("f", 11)]
    return {"version": 2, "nodes": nodes, "outputs": [{"name": n, "id": i} for n, i in outputs]}


def test_transposes_read_in_place_by_small_matmuls_give_the_same_bits(executor: Any) -> None:
    fused = _transposes_graph()
    steps = executor.prepare(validate(fused)).plan["steps"]
    assert [s["kernel"] for s in steps] == ["matmul_small"] * 3  # no permute dispatch
    assert [s["params"][11][1] for s in steps] == [1, 2, 1]  # the transposed operand's flag
    copied = {
        **fused,
        "outputs": [*fused["outputs"], *({"name": f"t{i}", "id": i} for i in (2, 5, 9))],
    }  # so copied
    assert (
        sum(s["kernel"] == "permute" for s in executor.prepare(validate(copied)).plan["steps"]) == 3
    )
    got, want = _run(executor, fused), _run(executor, copied)
    assert all(np.array_equal(got[i].view(np.uint32), want[i].view(np.uint32)) for i in got)
    a = _operand(fused, 0)
    assert np.allclose(got[3], a.T @ _operand(fused, 1), rtol=1e-5, atol=1e-5)


def test_fused_adam_step_matches_the_three_adam_kernels(executor: Any, monkeypatch) -> None:
    """adam_m + adam_v + adam_update of one parameter plan as one adam_step dispatch (both
    parameters of the session test's MLP here); where a moment has another reader they stay
    three dispatches. Same outputs, bit for bit. (Without planner_multi's multi-tensor Adam,
    which would take both parameters into one dispatch: test_multi_fusion.py.)"""
    from gpulab.native import planner_multi
    from test_native_session import mlp_adam_graph

    monkeypatch.setattr(planner_multi, "MULTI_FUSIONS", set())

    graph = mlp_adam_graph()
    for node in graph["nodes"]:  # the session feeds x and y; give them data here
        if node["id"] in (0, 1):
            node["data"] = _data(*node["shape"])
    fused_steps = executor.prepare(validate(graph)).plan["steps"]
    assert [s["entry"] for s in fused_steps].count("adam_step") == 2
    assert not {"adam_update"} & {s["entry"] for s in fused_steps}
    assert all(s.get("writes", 1) == (3 if s["entry"] == "adam_step" else 1) for s in fused_steps)
    split = {
        **graph,
        "nodes": [*graph["nodes"], {"id": 40, "op": "neg", "a": 24}],
        "outputs": [*graph["outputs"], {"name": "neg_m1", "id": 40}],
    }
    split_steps = executor.prepare(validate(split)).plan["steps"]
    assert [s["entry"] for s in split_steps].count("adam_step") == 1
    assert [s["entry"] for s in split_steps].count("adam_update") == 1
    got, want = _run(executor, graph), _run(executor, split)
    assert all(_bits_equal({k: got[k]}, {k: want[k]}) for k in got), [
        k for k in got if not _bits_equal({k: got[k]}, {k: want[k]})
    ]
