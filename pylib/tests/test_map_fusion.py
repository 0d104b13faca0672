"""The planners fold fusable map1 ops (kernel table `fuse`: relu, positive, neg, abs) into a
map2 dispatch (binary.wgsl PRE_A / PRE_B / POST, docs/plan.md "Fusion"). Fused runs
must give the bits of the unfused ones, and of numpy; the plan must show the fusion. (The two
planners' equality, fusion included, is e2e/test_plans_equal.py.)"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from gpulab.kernel_table import family_codes
from gpulab.models.mlp import init, step_graph
from gpulab.native import planner, planner_multi
from gpulab.protocol import validate

CODE = family_codes("map1")
SPECIAL = [
    np.nan,
    -np.nan,
    0.0,
    -0.0,
    np.inf,
    -np.inf,
    1.5,
    -2.25,
    3e38,
    -1e-40,
    7.0,
    -7.0,
    1e-30,
    2.0,
    -0.5,
]


def fused_graph() -> dict[str, Any]:
    """relu(neg(a) + abs(b)) with b broadcast, then positive(a) * that: every fusion slot once;
    neg(b) (an output) and a second abs(b) (two readers) are not folded."""
    a = np.array(SPECIAL, np.float32)
    b = np.array(SPECIAL[:5], np.float32)[::-1].copy()
    return {
        "version": 3,
        "nodes": [  # abs is a version-3 op
            {"id": 0, "op": "input", "shape": [3, 5], "data": a},
            {"id": 1, "op": "input", "shape": [5], "data": b},
            {"id": 2, "op": "neg", "a": 0},
            {"id": 3, "op": "abs", "a": 1},
            {"id": 4, "op": "add", "a": 2, "b": 3},
            {"id": 5, "op": "relu", "a": 4},
            {"id": 6, "op": "positive", "a": 0},
            {"id": 7, "op": "mul", "a": 6, "b": 5},
            {"id": 8, "op": "neg", "a": 1},
            {"id": 10, "op": "abs", "a": 1},
            {"id": 9, "op": "sub", "a": 8, "b": 10},
            {"id": 11, "op": "mul", "a": 10, "b": 10},
        ],
        "outputs": [
            {"name": "r", "id": 5},
            {"name": "m", "id": 7},
            {"name": "n", "id": 8},
            {"name": "s", "id": 9},
            {"name": "t", "id": 11},
        ],
    }


def expected() -> dict[int, np.ndarray]:
    a = np.array(SPECIAL, np.float32).reshape(3, 5)
    b = np.array(SPECIAL[:5], np.float32)[::-1]
    with np.errstate(all="ignore"):
        s = (-a + np.abs(b)).astype(np.float32)
        r = np.where(s > 0, s, np.float32(0.0)).astype(np.float32)
        m = ((a > 0).astype(np.float32) * r).astype(np.float32)
        return {
            5: r,
            7: m,
            8: -b,
            9: (-b - np.abs(b)).astype(np.float32),
            11: (np.abs(b) * np.abs(b)).astype(np.float32),
        }


def run(
    executor: Any, graph: dict[str, Any], fuse: bool, monkeypatch: pytest.MonkeyPatch
) -> dict[int, bytes]:
    with monkeypatch.context() as m:
        if not fuse:
            m.setattr(planner, "FUSABLE_MAP1", {})
        checked = validate(graph)
        ids = [o.id for o in checked.outputs]
        program = executor.prepare(checked)
        try:
            out = program.run([{}], ids)
        finally:
            program.dispose()
    return {i: np.asarray(out[i], np.float32).tobytes() for i in ids}


def test_the_plan_folds_every_slot_and_only_single_reader_map1_ops() -> None:
    steps = planner.plan_graph(validate(fused_graph()))["steps"]
    by_node = {s["node"]: s for s in steps}
    assert by_node[4]["overrides"] == {
        "WG": 64,
        "OP": 0,
        "PRE_A": 1 + CODE["neg"],
        "PRE_B": 1 + CODE["abs"],
        "POST": 1 + CODE["relu"],
    }
    assert by_node[7]["overrides"]["PRE_A"] == 1 + CODE["positive"]
    assert "PRE_B" not in by_node[7]["overrides"]  # relu(..): an output, already folded
    assert set(by_node[9]["overrides"]) == {"WG", "OP"}  # neg(b) is an output, abs(b) read twice
    assert set(by_node[11]["overrides"]) == {"WG", "OP"}
    assert [s["node"] for s in steps] == [4, 7, 8, 10, 9, 11]


def test_fused_runs_give_the_unfused_bits_and_numpy_s(executor: Any, monkeypatch) -> None:
    fused = run(executor, fused_graph(), True, monkeypatch)
    plain = run(executor, fused_graph(), False, monkeypatch)
    assert fused == plain
    for node, want in expected().items():
        assert fused[node] == want.reshape(-1).tobytes(), node


def test_the_mlp_step_fuses_and_keeps_its_bits(executor: Any, monkeypatch) -> None:
    step = step_graph(init(0))
    graph = step.graph._graph_dict(step.outputs())
    with monkeypatch.context() as m:  # without planner_multi's dispatches (test_multi_fusion)
        m.setattr(planner_multi, "MULTI_FUSIONS", set())
        steps = planner.plan_graph(validate(graph))["steps"]
    # the bias add + relu and the gated backward product: matmul epilogues (planner_epilogue.py)
    slots = ("POST", "PRE_B", "EPI_POST", "EPI_PRE")
    assert sum(1 for s in steps if any(k in s["overrides"] for k in slots)) == 2
    assert len(steps) == 15
    assert run(executor, graph, True, monkeypatch) == run(executor, graph, False, monkeypatch)
