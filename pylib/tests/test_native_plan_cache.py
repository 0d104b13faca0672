"""The wgpu executor's plan cache: a repeated execute of the same graph
structure re-plans nothing and creates no buffer, pipeline or bind group, only re-uploads the
data; a different shape, attr or dtype misses; results are bit-equal to an uncached executor
on the same (new) data. lavapipe here (software, allowed explicitly)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from gpulab.errors import GpuLabError
from gpulab.protocol import validate

pytest.importorskip("wgpu", reason="wgpu-py is not installed")
from gpulab.native.plan_cache import PlanCache, structure_key
from gpulab.native.wgpu_executor import open_executor


def _graph(seed: int, rows: int = 33, axis: int = 1, value: float = 0.5) -> dict:
    """matmul, softmax, a reduction, a full and an int32 path: several kernels and uploads."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((rows, 20)).astype(np.float32)
    b = rng.standard_normal((20, 12)).astype(np.float32)
    k = rng.integers(-50, 50, (rows, 12)).astype(np.int32)
    return {
        "version": 3,
        "nodes": [
            {"id": 0, "op": "input", "shape": [rows, 20], "data": a},
            {"id": 1, "op": "input", "shape": [20, 12], "data": b},
            {"id": 2, "op": "matmul", "a": 0, "b": 1},
            {"id": 3, "op": "softmax", "a": 2, "axis": axis},
            {"id": 4, "op": "full", "shape": [rows, 12], "value": value},
            {"id": 5, "op": "mul", "a": 3, "b": 4},
            {"id": 6, "op": "sum", "a": 5, "axis": 0},
            {"id": 7, "op": "input", "shape": [rows, 12], "dtype": "int32", "data": k},
            {"id": 8, "op": "abs", "a": 7},
            {"id": 9, "op": "argmax", "a": 2, "axis": 1},
        ],
        "outputs": [
            {"name": n, "id": i} for n, i in [("mm", 2), ("sm", 5), ("s", 6), ("k", 8), ("am", 9)]
        ],
    }


@pytest.fixture()
def executor() -> Iterator[Any]:
    ex = open_executor(True)
    yield ex
    ex.dispose()


@pytest.fixture(scope="module")
def uncached() -> Iterator[Any]:
    ex = open_executor(True, hooks={"plan_cache": PlanCache(0, 0)})
    yield ex
    ex.dispose()


def _execute(ex: Any, graph: dict) -> dict[int, np.ndarray]:
    checked = validate(graph)
    program = ex.prepare(checked)
    try:
        return program.run([{}], [o.id for o in checked.outputs])
    finally:
        program.dispose()


def _bits(values: dict[int, np.ndarray]) -> dict[int, bytes]:
    return {k: np.ascontiguousarray(v).tobytes() for k, v in values.items()}


def test_a_second_execute_of_the_same_structure_hits_and_creates_nothing(
    executor: Any, uncached: Any
) -> None:
    first = _execute(executor, _graph(1))
    counts = dict(executor.counters)
    second = _execute(executor, _graph(2))  # same structure, other data
    cache = executor.plan_cache.counters
    assert cache["program_hits"] == 1 and cache["plan_misses"] == 1
    for name in ("pipelines", "shader_modules", "buffers_created"):
        assert executor.counters[name] == counts[name], name
    # the new data really went up: the answer is the uncached executor's on that data, bit
    # for bit, and differs from the first run's
    assert _bits(second) == _bits(_execute(uncached, _graph(2)))
    assert _bits(first) == _bits(_execute(uncached, _graph(1)))
    assert _bits(first)[2] != _bits(second)[2]


@pytest.mark.parametrize("change", [{"rows": 34}, {"axis": 0}, {"value": -0.5}])
def test_a_different_shape_or_attr_misses(executor: Any, uncached: Any, change: dict) -> None:
    _execute(executor, _graph(1))
    other = _execute(executor, _graph(3, **change))
    cache = executor.plan_cache.counters
    assert cache["program_hits"] == 0 and cache["plan_misses"] == 2
    assert _bits(other) == _bits(_execute(uncached, _graph(3, **change)))


def test_the_key_holds_structure_and_not_data() -> None:
    one, two = validate(_graph(1)), validate(_graph(2))
    assert structure_key(one) == structure_key(two)
    for change in ({"rows": 34}, {"axis": 0}, {"value": -0.5}):
        assert structure_key(validate(_graph(1, **change))) != structure_key(one), change
    as_float = _graph(1)
    as_float["nodes"][7]["dtype"] = "float32"
    as_float["nodes"][7]["data"] = np.zeros((33, 12), np.float32)
    assert structure_key(validate(as_float)) != structure_key(one)  # a dtype
    assert structure_key(
        validate({**_graph(1), "outputs": [{"name": "mm", "id": 2}]})
    ) != structure_key(one)


def test_sessions_share_the_plan_but_not_the_program(executor: Any) -> None:
    """A prepared session (feeds or carries) reuses the cached plan; its program is its own."""
    graph = {
        "version": 2,
        "nodes": [
            {"id": 0, "op": "input", "shape": [4]},
            {"id": 1, "op": "input", "shape": [4], "data": [0, 0, 0, 0]},
            {"id": 2, "op": "add", "a": 1, "b": 0},
        ],
        "outputs": [{"name": "acc", "id": 2}],
    }
    sessions = [
        executor.prepare(validate(graph), feeds=[0], carry={1: 2}, keep=[2]) for _ in range(2)
    ]
    assert executor.plan_cache.counters["plan_hits"] == 1
    assert sessions[0].plan is sessions[1].plan
    out = [
        s.run([{0: np.full(4, i + 1, np.float32)}] * 3, [2])[2].tolist()
        for i, s in enumerate(sessions)
    ]
    assert out == [[3.0] * 4, [6.0] * 4]  # separate state
    for s in sessions:
        s.dispose()
    assert executor.plan_cache.counters["program_hits"] == 0


def test_a_disposed_lease_refuses_and_parking_is_bounded() -> None:
    ex = open_executor(True, hooks={"plan_cache": PlanCache(max_parked=1)})
    try:
        checked = validate(_graph(1))
        lease = ex.prepare(checked)
        lease.run([{}], [2])
        lease.dispose()
        lease.dispose()  # idempotent
        with pytest.raises(GpuLabError) as err:
            lease.run([{}], [2])
        assert err.value.code == "DISPOSED"
        _execute(ex, _graph(1, rows=40))  # parks a second structure: the first is evicted
        _execute(ex, _graph(1))
        assert ex.plan_cache.counters["program_hits"] == 0
        _execute(ex, _graph(1))
        assert ex.plan_cache.counters["program_hits"] == 1
    finally:
        ex.dispose()


def test_graph_run_repeated_hits_the_cache_through_the_host() -> None:
    from gpulab import executors, host

    graph = _graph(5)
    first = host.execute(graph, backend="wgpu", allow_software=True)
    ex = executors.open_executor("wgpu", True)
    hits = ex.plan_cache.counters["program_hits"]
    second = host.execute(_graph(5), backend="wgpu", allow_software=True)
    assert ex.plan_cache.counters["program_hits"] == hits + 1
    for name, entry in first["outputs"].items():
        got = second["outputs"][name]
        assert got["array"].tobytes() == entry["array"].tobytes(), name
