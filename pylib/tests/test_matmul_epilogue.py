"""The planners fold a map2 node (kernel table `epilogue`: add, sub, mul) that reads a matmul's
product into the matmul's dispatch, with the map1 ops map fusion folded into it (docs/plan.md
"Fusion"; issue 15). Every matmul kernel applies it to its finished sum: fused runs must give
the bits of unfused ones, on random data and on special values; the plan must fold exactly the
nodes the rule allows. (The two planners' equality on these graphs: e2e/test_plans_equal.py
over the corpus case chain/matmul_epilogues.)"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from gpulab.kernel_table import family_codes
from gpulab.models.mlp import init, step_graph
from gpulab.native import planner, planner_epilogue, planner_multi
from gpulab.native.bench_matmul import forcing_matmul_kernel
from gpulab.native.plan_cache import PlanCache
from gpulab.native.wgpu_executor import open_executor
from gpulab.protocol import validate

MAP1 = family_codes("map1")
MAP2 = family_codes("map2")
SPECIAL = [np.nan, 0.0, -0.0, np.inf, -np.inf, 1.5, -2.25, 3e38, -3e38, -1e-40, 7.0, -1e-30, -0.5]
BATCH, M, K, N = 2, 9, 12, 12  # N and K multiples of 4: a forced _v4 kernel really runs


def _data(shape: list[int], rng: np.random.Generator, special: bool) -> np.ndarray:
    n = int(np.prod(shape))
    if special:  # special values tiled, shuffled
        return rng.permutation(np.resize(np.array(SPECIAL, np.float32), n)).reshape(shape)
    return rng.standard_normal(n).astype(np.float32).reshape(shape)


def epilogue_graph(special: bool, seed: int = 0) -> dict[str, Any]:
    """Products p = x @ w folded into every epilogue slot, and five that must stay separate.
    With `special`, x and w hold small integers (exact sums, so `- p` cancels to signed zeros)
    with an inf and a NaN row in x, and the other operands hold special values."""
    rng = np.random.default_rng(seed)
    if special:
        x = rng.integers(-3, 4, (BATCH, M, K)).astype(np.float32)
        x[0, 1, 2], x[1, 3, 0] = np.inf, np.nan
        w = rng.integers(-3, 4, (K, N)).astype(np.float32)
    else:
        x, w = _data([BATCH, M, K], rng, False), _data([K, N], rng, False)
    with np.errstate(invalid="ignore"):  # the inf row meets zeros: NaN
        exact = (x.astype(np.float64) @ w.astype(np.float64)).astype(np.float32)
    z = _data([BATCH, M, N], rng, special)
    if special:  # some outputs cancel exactly: -p + p
        z[0, 0] = -exact[0, 0]
    nodes: list[dict[str, Any]] = [
        {"id": 0, "op": "input", "shape": [BATCH, M, K], "data": x.reshape(-1)},
        {"id": 1, "op": "input", "shape": [K, N], "data": w.reshape(-1)},
        {"id": 2, "op": "input", "shape": [N], "data": _data([N], rng, special).reshape(-1)},
        {"id": 3, "op": "input", "shape": [BATCH, M, N], "data": z.reshape(-1)},
        {"id": 4, "op": "input", "shape": [1, N], "data": _data([1, N], rng, special).reshape(-1)},
        {"id": 5, "op": "input", "shape": [M, 1], "data": _data([M, 1], rng, special).reshape(-1)},
        {"id": 6, "op": "input", "shape": [1], "data": _data([1], rng, special).reshape(-1)},
        {
            "id": 7,
            "op": "input",
            "shape": [BATCH, 1, N],
            "data": _data([BATCH, 1, N], rng, special).reshape(-1),
        },
        {"id": 8, "op": "input", "shape": [M, K], "data": x[0].reshape(-1)},
    ]
    ids = iter(range(10, 100))

    def op(name: str, *operands: int) -> int:
        i = next(ids)
        keys = ("a", "b")
        nodes.append({"id": i, "op": name, **dict(zip(keys, operands, strict=False))})
        return i

    def p() -> int:
        return op("matmul", 0, 1)

    outs = {  # each slot value at least once, in few override sets (pipelines to compile)
        "bias_relu": op("relu", op("add", p(), 2)),  # add, bias [N], POST relu
        "row_minus": op("sub", op("neg", 4), p()),  # sub, the product as b, [1, N], PRE neg
        "gated": op("abs", op("mul", p(), op("positive", 3))),  # mul, PRE positive, POST abs
        "cancel": op("add", 3, p()),  # the product as b, same shape; exact signed zeros
        "column": op("sub", p(), 5),  # [M, 1]
        "scaled": op("mul", 6, p()),  # one value, the product as b
    }
    keep = p()  # an output itself: stays a matmul
    twice = p()  # two readers
    outs |= {
        "kept": keep,
        "kept_plus": op("add", keep, 2),
        "twice_a": op("add", twice, 2),
        "twice_b": op("mul", twice, 3),
        "self": op("add", (s := p()), s),  # both operands the product
        "batch_row": op("add", p(), 7),  # [BATCH, 1, N]: a row per batch, not folded
        "up": op("add", op("matmul", 8, 1), 3),  # [M, N] product broadcast up to the batch
    }
    return {
        "version": 3,
        "nodes": nodes,
        "outputs": [{"name": k, "id": v} for k, v in outs.items()],
    }


FUSED = {  # output -> the epilogue overrides of its dispatch
    "bias_relu": {
        "EPI_OP": 1 + MAP2["add"],
        "EPI_SIDE": 0,
        "EPI_BCAST": 1,
        "EPI_POST": 1 + MAP1["relu"],
    },
    "row_minus": {
        "EPI_OP": 1 + MAP2["sub"],
        "EPI_SIDE": 1,
        "EPI_BCAST": 1,
        "EPI_PRE": 1 + MAP1["neg"],
    },
    "gated": {
        "EPI_OP": 1 + MAP2["mul"],
        "EPI_SIDE": 0,
        "EPI_BCAST": 0,
        "EPI_PRE": 1 + MAP1["positive"],
        "EPI_POST": 1 + MAP1["abs"],
    },
    "cancel": {"EPI_OP": 1 + MAP2["add"], "EPI_SIDE": 1, "EPI_BCAST": 0},
    "column": {"EPI_OP": 1 + MAP2["sub"], "EPI_SIDE": 0, "EPI_BCAST": 3},
    "scaled": {"EPI_OP": 1 + MAP2["mul"], "EPI_SIDE": 1, "EPI_BCAST": 2},
}


@pytest.fixture(scope="module")
def executor() -> Iterator[Any]:
    ex = open_executor(True, hooks={"plan_cache": PlanCache(0, 0)})  # plans made every time
    yield ex
    ex.dispose()


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
    return {o.name: _words(out[o.id]) for o in checked.outputs}


def _words(values: Any) -> bytes:
    """The float32 words, every NaN as 0x7fc00000: a NaN's payload is not part of the contract
    (docs/protocol.md; the exact class counts every NaN equal), and NaN * NaN gives the payload
    of whichever operand the compiled instruction names first, which differs between kernels."""
    x = np.array(values, np.float32).reshape(-1)
    words = x.view(np.uint32).copy()
    words[np.isnan(x)] = 0x7FC00000
    return words.tobytes()


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
