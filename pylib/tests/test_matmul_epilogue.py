"""The planners fold a map2 node (kernel table `epilogue`: add, sub, mul) that reads a matmul's
product into the matmul's dispatch, with the map1 ops map fusion folded into it (docs/plan.md
"Fusion"). Every matmul kernel applies it to its finished sum: fused runs must give
the bits of unfused ones, on random data and on special values; the plan must fold exactly the
nodes the rule allows. (The graphs: e2e/epilogue_graphs.py; the two planners' equality on
them: e2e/test_plans_equal.py over the corpus case chain/matmul_epilogues; Chromium's WebGPU:
e2e/test_matmul_epilogue_webgpu.py.)"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from gpulab.models.mlp import init, step_graph
from gpulab.native import planner, planner_epilogue, planner_multi
from gpulab.native.bench_matmul import forcing_matmul_kernel
from gpulab.protocol import validate

from e2e.epilogue_graphs import FUSED, MAP1, MAP2, SPECIAL, N, _data, epilogue_graph, words


def run(
    executor: Any, graph: dict[str, Any], fuse: bool, monkeypatch: pytest.MonkeyPatch
) -> dict[str, bytes]:
    """Output words by name; unfused: no epilogue and no map fusion (every op its dispatch)."""
    with monkeypatch.context() as m:
        if not fuse:
            m.setattr(planner_epilogue, "EPILOGUE_MAP2", {})
            m.setattr(planner, "FUSABLE_MAP1", {})
        checked = validate(graph)
        program = executor.prepare(checked)
        try:
            out = program.run([{}], [o.id for o in checked.outputs])
        finally:
            program.dispose()
    return {o.name: words(out[o.id]) for o in checked.outputs}


def test_the_plan_folds_exactly_the_allowed_nodes() -> None:
    graph = epilogue_graph(True)
    plan = planner.plan_graph(validate(graph))
    by_id = {n["id"]: n for n in graph["nodes"]}
    steps = {s["node"]: s for s in plan["steps"]}
    for name, overrides in FUSED.items():
        node = by_id[next(o["id"] for o in graph["outputs"] if o["name"] == name)]
        map2 = node["a"] if node["op"] in MAP1 else node["id"]  # a POST's map2 dispatches
        step = steps[map2]
        assert step["kernel"].startswith("matmul"), name
        assert step["overrides"] == overrides, name
        assert len(step["bindings"]) == 4
    with_epilogue = [s for s in plan["steps"] if "EPI_OP" in s["overrides"]]
    assert len(with_epilogue) == len(FUSED)
    # kept, twice, self, batch_row and up: plain matmuls (c bound to a), then their map2s
    plain = [s for s in plan["steps"] if s["kernel"].startswith("matmul") and not s["overrides"]]
    assert len(plain) == 5
    assert all(s["bindings"][2] == s["bindings"][0] for s in plain)
    assert sum(s["kernel"] == "binary" for s in plan["steps"]) == 6
    assert len(plan["steps"]) == len(FUSED) + 5 + 6
    valued = {v["node"] for v in plan["values"]}
    products = [n["id"] for n in graph["nodes"] if n["op"] == "matmul"]
    assert sum(i not in valued for i in products) == len(FUSED)  # folded: no buffer


@pytest.mark.slow  # over ~10 s of CPU: make test, not test-fast
@pytest.mark.parametrize("kernel", sorted(planner.MATMUL_TILES))
def test_every_kernel_gives_the_unfused_bits(executor: Any, monkeypatch, kernel: str) -> None:
    for special in (True, False):
        graph = epilogue_graph(special, seed=1)
        with forcing_matmul_kernel(kernel):
            plan = planner.plan_graph(validate(graph))
            assert {s["kernel"] for s in plan["steps"] if "EPI_OP" in s["overrides"]} == {kernel}
            fused = run(executor, graph, True, monkeypatch)
            plain = run(executor, graph, False, monkeypatch)
        differ = [name for name in fused if fused[name] != plain[name]]
        assert not differ, (kernel, special, differ)


def test_special_values_reach_the_epilogue(executor: Any, monkeypatch) -> None:
    """The special graph's fused outputs hold NaN, both infinities and both zeros (so the bit
    comparison above sees them), and `cancel` is exactly p + z."""
    out = {
        k: np.frombuffer(v, np.float32)
        for k, v in run(executor, epilogue_graph(True), True, monkeypatch).items()
    }
    every = np.concatenate(list(out.values()))
    assert np.isnan(every).any() and np.isposinf(every).any() and np.isneginf(every).any()
    zeros = every[every == 0]
    assert np.signbit(zeros).any() and (~np.signbit(zeros)).any()
    assert (out["cancel"][:N] == 0).all()  # row 0 of batch 0: -p + p


def test_the_mlp_step_takes_15_dispatches_with_the_unfused_bits(executor: Any, monkeypatch) -> None:
    step = step_graph(init(0))
    graph = step.graph._graph_dict(step.outputs())
    for limits in ({}, {"minMatmulWorkgroups": 1}):  # hardware: all matmul_small; software
        steps = planner.plan_graph(validate(graph), limits)["steps"]
        fused = [s["overrides"] for s in steps if "EPI_OP" in s["overrides"]]
        assert fused == [
            {
                "EPI_OP": 1 + MAP2["add"],
                "EPI_SIDE": 0,
                "EPI_BCAST": 1,
                "EPI_POST": 1 + MAP1["relu"],
            },
            {"EPI_OP": 1 + MAP2["add"], "EPI_SIDE": 0, "EPI_BCAST": 1},
            {
                "EPI_OP": 1 + MAP2["mul"],
                "EPI_SIDE": 0,
                "EPI_BCAST": 0,
                "EPI_PRE": 1 + MAP1["positive"],
            },
        ]
    with monkeypatch.context() as m:  # planner_multi's dispatches: test_multi_fusion.py
        m.setattr(planner_multi, "MULTI_FUSIONS", set())
        assert len(planner.plan_graph(validate(graph))["steps"]) == 15
    assert run(executor, graph, True, monkeypatch) == run(executor, graph, False, monkeypatch)


def conv_graph(seed: int) -> dict[str, Any]:
    """Two conv2d with a bias on the im2col + tiled matmul path (on a software adapter): groups
    1 (3x3, padded) and 2 (1x1: a its own column matrix), over 32 output channels a group (a
    64 tile), special values in the bias."""
    rng = np.random.default_rng(seed)

    def inp(i: int, shape: list[int], special: bool = False) -> dict[str, Any]:
        data = _data(shape, rng, False)
        if special:
            data.reshape(-1)[: len(SPECIAL)] = SPECIAL[: data.size]
        return {"id": i, "op": "input", "shape": shape, "data": data.reshape(-1)}

    conv = {"op": "conv2d", "strides": [1, 1], "dilations": [1, 1]}
    return {
        "version": 6,
        "nodes": [
            inp(0, [2, 8, 9, 9]),
            inp(1, [40, 8, 3, 3]),
            inp(2, [40], special=True),
            {"id": 3, "a": 0, "w": 1, "bias": [2], "padding": [1, 1, 1, 1], "groups": 1, **conv},
            inp(4, [2, 16, 6, 6]),
            inp(5, [80, 8, 1, 1]),
            inp(6, [80], special=True),
            {"id": 7, "a": 4, "w": 5, "bias": [6], "padding": [0, 0, 0, 0], "groups": 2, **conv},
        ],
        "outputs": [{"name": "y1", "id": 3}, {"name": "y2", "id": 7}],
    }


def test_conv2d_adds_its_bias_in_the_matmul_with_the_unfused_bits(
    executor: Any, monkeypatch
) -> None:
    """conv2d's bias (EPI_BCAST 4: per output channel across the groups' matrices) instead of
    window.wgsl's OP 6 pass: one dispatch less, the same float32 add."""
    graph = conv_graph(2)
    steps = planner.plan_graph(validate(graph), {"minMatmulWorkgroups": 1})["steps"]
    gemm = [s for s in steps if s["kernel"].startswith("matmul")]
    assert [s["overrides"].get("EPI_BCAST") for s in gemm] == [4, 4]
    assert not any(s["overrides"].get("OP") == 6 for s in steps if s["kernel"] == "window")
    assert run(executor, graph, True, monkeypatch) == run(executor, graph, False, monkeypatch)
