"""Multi-node dispatches (docs/plan.md "Fusion"; planner_multi.py): the planners
group independent adam_step updates into one adam_multiK dispatch, as far as the device's
storage-buffer limit allows, and pair cross_entropy with cross_entropy_grad of the same
operands into one cross_entropy_pair dispatch. Fused runs must give the bits of the unfused
ones on wgpu; nodes that depend on each other are never grouped; every plan only reads what an
earlier dispatch (or an upload) wrote. (The planners' equality is e2e/test_plans_equal.py.)"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from gpulab.models.mlp import init, step_graph
from gpulab.native import planner_multi
from gpulab.native.planner import plan_graph
from gpulab.native.wgpu_executor import open_executor
from gpulab.protocol import validate

from e2e.multi_graphs import adam_chain_graph, multi_graph

LAVAPIPE = {"maxStorageBuffersPerShaderStage": 32}  # lavapipe's limit: 4 parameters a group


def run(
    executor: Any, graph: dict[str, Any], fuse: bool, monkeypatch: pytest.MonkeyPatch
) -> dict[int, bytes]:
    with monkeypatch.context() as m:
        if not fuse:
            m.setattr(planner_multi, "MULTI_FUSIONS", set())
        checked = validate(graph)
        ids = [o.id for o in checked.outputs]
        program = executor.prepare(checked)
        try:
            out = program.run([{}], ids)
        finally:
            program.dispose()
    return {i: np.asarray(out[i], np.float32).tobytes() for i in ids}


def kernels(graph: dict[str, Any], limits: dict[str, int] | None = None) -> list[str]:
    return [s["kernel"] for s in plan_graph(validate(graph), limits)["steps"]]


def mlp_graph() -> dict[str, Any]:
    step = step_graph(init(0))
    return step.graph._graph_dict(step.outputs())


def assert_sound(plan: dict[str, Any]) -> None:
    """Every buffer a step reads was uploaded or written by an earlier step."""
    ready = {b["id"] for b in plan["buffers"] if b["kind"] in ("input", "const")}
    for i, step in enumerate(plan["steps"]):
        writes = step.get("writes", 1)
        read = step["bindings"][:-writes]
        missing = [b for b in read if b not in ready]
        assert not missing, f"step {i} ({step['kernel']}) reads unwritten buffers {missing}"
        ready.update(step["bindings"][-writes:])


def test_the_mlp_step_loses_4_dispatches_where_4_parameters_fit_one(monkeypatch) -> None:
    """3 adam_steps and cross_entropy_grad's rows go: 11 dispatches with the map fusion and the
    matmul epilogue (15 without planner_multi)."""
    graph = mlp_graph()
    with monkeypatch.context() as m:
        m.setattr(planner_multi, "MULTI_FUSIONS", set())
        unfused = len(kernels(graph, LAVAPIPE))
    steps = plan_graph(validate(graph), LAVAPIPE)["steps"]
    names = [s["kernel"] for s in steps]
    assert len(steps) == unfused - 4 == 11
    assert names.count("adam_multi4") == 1 and "adam" not in names
    assert names.count("cross_entropy_pair") == 1 and "rows" not in names
    multi = steps[names.index("adam_multi4")]
    assert multi["writes"] == 12 and len(multi["bindings"]) == 1 + 7 * 4
    # each parameter's workgroup range starts where the previous one's ends
    starts = [p[1] for p in multi["params"][1::8]]
    assert starts == [0, 784 * 256 // 64, 784 * 256 // 64 + 4, 784 * 256 // 64 + 4 + 40]
    assert multi["dispatch"] == [starts[-1] + 1, 1, 1]
    # WebGPU's default 8 storage buffers: one parameter a dispatch (the pair stays)
    assert len(kernels(graph)) == unfused - 1 and kernels(graph).count("adam") == 4
    assert kernels(graph, {"maxStorageBuffersPerShaderStage": 15}).count("adam_multi2") == 2


def test_fused_mlp_step_gives_the_unfused_bits(executor: Any, monkeypatch) -> None:
    assert executor.limits["maxStorageBuffersPerShaderStage"] >= 29, "lavapipe allows 32"
    graph = mlp_graph()
    assert run(executor, graph, True, monkeypatch) == run(executor, graph, False, monkeypatch)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_multi_graphs_give_the_unfused_bits(executor: Any, monkeypatch, seed) -> None:
    """Parameters of many sizes (a split dispatch on a device of 4 workgroups a dimension),
    hyperparameters per parameter, chained updates and cross-entropy pairs in either order."""
    graph = multi_graph(np.random.default_rng(seed))
    names = kernels(graph, executor.limits)
    assert any(k.startswith("adam_multi") for k in names) and "cross_entropy_pair" in names
    assert run(executor, graph, True, monkeypatch) == run(executor, graph, False, monkeypatch)


def test_a_split_multi_adam_dispatch_gives_the_unfused_bits(monkeypatch) -> None:
    ex = open_executor(True, limits={"maxComputeWorkgroupsPerDimension": 4})
    try:
        graph = multi_graph(np.random.default_rng(7))
        plan = plan_graph(validate(graph), ex.limits)
        assert any(s["dispatch"][1] > 1 for s in plan["steps"] if "multi" in s["kernel"])
        assert run(ex, graph, True, monkeypatch) == run(ex, graph, False, monkeypatch)
    finally:
        ex.dispose()


def test_dependent_updates_are_never_grouped() -> None:
    """p1's gradient reads p0's new weight, a node between p2 and p3 reads p2's new moment:
    groups [p0], [p1, p2], [p3, p4] (plan order), and every plan is sound."""
    graph = adam_chain_graph()
    plan = plan_graph(validate(graph), LAVAPIPE)
    assert_sound(plan)
    groups = [s for s in plan["steps"] if s["kernel"].startswith("adam")]
    assert [s["kernel"] for s in groups] == ["adam", "adam_multi2", "adam_multi2"]
    for limits in ({}, {"maxStorageBuffersPerShaderStage": 15}, LAVAPIPE):
        assert_sound(plan_graph(validate(graph), limits))


def test_random_multi_plans_are_sound() -> None:
    """Every plan is sound; not vacuously: at each limit that allows a group (15 storage
    buffers and up) some plan groups Adam updates, at 8 none does."""
    rng = np.random.default_rng(20261201)
    grouping: dict[int, int] = {8: 0, 15: 0, 32: 0, 64: 0}  # plans with a group, per limit
    for _ in range(40):
        graph = multi_graph(rng)
        for storage in grouping:
            plan = plan_graph(validate(graph), {"maxStorageBuffersPerShaderStage": storage})
            assert_sound(plan)
            grouping[storage] += any(s["kernel"].startswith("adam_multi") for s in plan["steps"])
    assert grouping[8] == 0 and all(grouping[k] for k in (15, 32, 64)), grouping


def test_a_cross_entropy_read_between_the_pair_is_not_paired() -> None:
    def graph(between: bool) -> dict[str, Any]:
        nodes = [
            {"id": 0, "op": "input", "shape": [3, 5], "data": [0.5] * 15},
            {"id": 1, "op": "input", "shape": [3, 5], "data": [0.2] * 15},
            {"id": 2, "op": "cross_entropy", "a": 0, "b": 1},
            {"id": 3, "op": "exp", "a": 2 if between else 0},  # exp: not folded
            {"id": 4, "op": "cross_entropy_grad", "a": 0, "b": 1},
            {"id": 5, "op": "mul", "a": 4, "b": 3},
        ]
        outputs = [{"name": "o", "id": 5}, {"name": "loss", "id": 2}]
        return {"version": 2, "nodes": nodes, "outputs": outputs}

    assert kernels(graph(False)) == ["unary", "cross_entropy_pair", "reduce", "binary"]
    assert kernels(graph(True)).count("cross_entropy_pair") == 0
