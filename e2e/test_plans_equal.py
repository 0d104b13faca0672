"""The two planners give equal plans: planner.mjs (browser) and gpulab.native.planner (native).

Every conformance case is validated and planned on both sides under several limit sets; the
plans must be deep-equal JSON, so the browser WebGPU backend and the wgpu-py executor dispatch
the same kernels with the same params. The limit sets cover devices with 16 and 32 KiB of
workgroup storage, small devices (dispatches split over y/z, buffers past the limit) and
software adapters (`minMatmulWorkgroups` 1); the matmul kernel follows the work and that limit
(docs/plan.md), so one graph per matmul kernel is planned too. The storage-buffer limit decides
how many Adam parameters one dispatch updates (planner_multi.py): graphs of 2..8 parameters and
random ones with chained updates and cross-entropy pairs (e2e/multi_graphs.py) cover it.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gpulab.conformance.generate import values
from gpulab.conformance.runner import load_cases
from gpulab.errors import GpuLabError
from gpulab.kernel_table import family_ops, graph_version, plain_ops, scalar_attrs
from gpulab.lowering import lowered_checked
from gpulab.native.planner import plan_graph
from gpulab.protocol import validate

from e2e.epilogue_graphs import epilogue_graph
from e2e.multi_graphs import adam_chain_graph, multi_graph, params_graph

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = Path(__file__).with_name("plans_js.mjs")
LIMIT_SETS = [
    # 64 storage buffers a stage: multi-tensor Adam of up to 8 parameters (planner_multi.py)
    {"maxComputeWorkgroupStorageSize": 16384, "maxStorageBuffersPerShaderStage": 64},
    {"maxComputeWorkgroupStorageSize": 32768},  # WebGPU's default 8: one parameter a dispatch
    # a tiny device: every dispatch over 3 workgroups splits over y (and z); big buffers refused
    {
        "maxComputeWorkgroupStorageSize": 16384,
        "maxComputeWorkgroupsPerDimension": 3,
        "maxStorageBufferBindingSize": 4096,
        "maxStorageBuffersPerShaderStage": 15,
    },
    # a software adapter (SwiftShader, lavapipe): big matmul tiles whatever the workgroup count
    {
        "maxComputeWorkgroupStorageSize": 32768,
        "minMatmulWorkgroups": 1,
        "maxStorageBuffersPerShaderStage": 32,  # lavapipe's: 4 parameters a dispatch
    },
]
SOFTWARE = 3  # the index of the software limit set


# One [batch, M, K] @ [K, N] product per matmul kernel: the planner picks by shape.
MATMUL_KERNEL_SHAPES = {
    "matmul_small": (1, 5, 7, 3),
    "matmul": (128, 33, 4, 33),
    "matmul_v4": (128, 36, 4, 36),
    "matmul_rb": (128, 65, 5, 65),
    "matmul_rb_a4": (128, 65, 4, 65),
    "matmul_rb_b4": (128, 68, 5, 68),
    "matmul_rb_v4": (128, 68, 4, 68),
}


def matmul_kernel_graph(kernel: str, seed: int = 0) -> dict:
    """A graph whose one matmul the planner gives to `kernel` (b broadcast over the batch)."""
    batch, m, k, n = MATMUL_KERNEL_SHAPES[kernel]
    rng = np.random.default_rng(seed)
    return {
        "version": 2,
        "nodes": [
            {
                "id": 0,
                "op": "input",
                "shape": [batch, m, k],
                "data": rng.standard_normal(batch * m * k).astype(np.float32).tolist(),
            },
            {
                "id": 1,
                "op": "input",
                "shape": [k, n],
                "data": rng.standard_normal(k * n).astype(np.float32).tolist(),
            },
            {"id": 2, "op": "matmul", "a": 0, "b": 1},
        ],
        "outputs": [{"name": "c", "id": 2}],
    }


def transposes_into_matmuls_graph() -> dict:
    """Transposes that small matmuls read in place (as a and as b), one also read by a relu
    and one feeding a 64-tile matmul (both copied)."""

    def inp(i: int, shape: list[int]) -> dict:
        return {"id": i, "op": "input", "shape": shape, "data": [0.5] * math.prod(shape)}

    nodes = [
        inp(0, [9, 12]),
        inp(1, [9, 7]),
        {"id": 2, "op": "transpose", "a": 0},
        {"id": 3, "op": "matmul", "a": 2, "b": 1},
        inp(4, [7, 12]),
        {"id": 5, "op": "transpose", "a": 4},
        inp(6, [3, 12]),
        {"id": 7, "op": "matmul", "a": 6, "b": 5},
        {"id": 8, "op": "relu", "a": 5},
        inp(9, [128, 4, 36]),
        {"id": 10, "op": "transpose", "a": 9},
        inp(11, [4, 36]),
        {"id": 12, "op": "matmul", "a": 10, "b": 11},
    ]
    return {
        "version": 2,
        "nodes": nodes,
        "outputs": [{"name": f"o{i}", "id": i} for i in (3, 7, 8, 12)],
    }


def _jsonable(graph: dict) -> dict:
    """Input data as JSON numbers (NaN, inf as the protocol's strings)."""
    nodes = [{**n, "data": values(n["data"])} if "data" in n else n for n in graph["nodes"]]
    return {**graph, "nodes": nodes}


def mlp_step_graph() -> dict:
    """The MLP Adam step (gpulab.models.mlp) without its inputs' data: its plan folds three
    matmul epilogues (docs/plan.md "Fusion"), 15 dispatches."""
    from gpulab.models.mlp import init, step_graph

    step = step_graph(init(0))
    graph = step.graph._graph_dict(step.outputs())
    nodes = [{k: v for k, v in n.items() if k != "data"} for n in graph["nodes"]]
    return {**graph, "nodes": nodes}


def _matmul_cases() -> list[dict]:
    cases = [
        {"name": f"matmul-kernel/{k}", "op": "matmul", "graph": matmul_kernel_graph(k)}
        for k in MATMUL_KERNEL_SHAPES
    ]
    return [
        *cases,
        {"name": "matmul-kernel/mlp_step_epilogues", "op": "chain", "graph": mlp_step_graph()},
        *(
            {"name": f"matmul-kernel/epilogues_{kind}", "op": "chain", "graph": _jsonable(graph)}
            for kind, graph in (
                ("special", epilogue_graph(True)),
                ("random", epilogue_graph(False)),
            )
        ),
        {
            "name": "matmul-kernel/transposes",
            "op": "matmul",
            "graph": transposes_into_matmuls_graph(),
        },
    ]


def _multi_cases() -> list[dict]:
    """planner_multi.py's dispatches: one case per adam_multiK kernel, chained updates, and
    random graphs of many parameters and cross-entropy pairs."""
    rng = np.random.default_rng(20261201)
    cases = [{"name": f"multi/params_{k}", "graph": params_graph(k)} for k in range(2, 9)]
    cases.append({"name": "multi/adam_chain", "graph": adam_chain_graph()})
    cases += [{"name": f"multi/random_{i}", "graph": multi_graph(rng)} for i in range(20)]
    return [{**c, "op": "adam_update"} for c in cases]


def _python_plans(graph: dict) -> list[Any]:
    try:
        checked = validate(graph)
    except GpuLabError as err:
        return [{"error": {"code": err.code}}] * len(LIMIT_SETS)
    plans: list[Any] = []
    for limits in LIMIT_SETS:
        try:
            plans.append(plan_graph(lowered_checked(checked), limits))  # what executors get
        except GpuLabError as err:
            plans.append({"error": {"code": err.code}})
    return plans


def _js_plans(cases: list[dict]) -> dict[str, list[Any]]:
    node = shutil.which("node")
    assert node, "node is needed for the JS planner"
    payload = json.dumps(
        {"cases": [{"name": c["name"], "graph": c["graph"]} for c in cases], "limits": LIMIT_SETS}
    )
    done = subprocess.run(
        [node, str(SCRIPT)],
        input=payload,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    for plans in answer.values():  # messages may differ in wording; codes must agree
        for plan in plans:
            if "error" in plan:
                plan["error"] = {"code": plan["error"]["code"]}
    return answer


@pytest.fixture(scope="module")
def cases() -> list[dict]:
    found = load_cases()
    assert len(found) > 100, "the conformance corpus is missing"
    return found + _matmul_cases() + _multi_cases()


def test_python_and_js_plans_are_equal_for_every_case(cases: list[dict]) -> None:
    js = _js_plans(cases)
    assert set(js) == {c["name"] for c in cases}
    differ = []
    for case in cases:
        # through JSON so tuples/lists and 1/1.0 compare as the wire sees them
        py = json.loads(json.dumps(_python_plans(case["graph"])))
        if py != js[case["name"]]:
            differ.append(case["name"])
    assert not differ, f"{len(differ)} cases plan differently, first: {differ[:10]}"


def test_the_limit_sets_exercise_every_planner_path(cases: list[dict]) -> None:
    """Guards the test above against comparing only trivial plans."""
    kernels: dict[int, set[str]] = {i: set() for i in range(len(LIMIT_SETS))}
    split = limited = 0
    for case in cases:
        for i, plan in enumerate(_python_plans(case["graph"])):
            if "error" in plan:
                limited += plan["error"]["code"] == "LIMIT"
                continue
            kernels[i] |= {s["kernel"] for s in plan["steps"]}
            split += any(s["dispatch"][1] > 1 for s in plan["steps"])
    wgsl = {p.stem for p in (ROOT / "kernels" / "wgsl").glob("*.wgsl")}
    multi = {f"adam_multi{k}" for k in range(2, 9)}  # from 15, 29, .. 57 storage buffers
    assert kernels[0] == wgsl, "a kernel no case plans, or a plan names no file"
    assert kernels[1] == wgsl - multi, "8 storage buffers: one Adam parameter a dispatch"
    assert kernels[2] & multi == {"adam_multi2"}
    assert kernels[SOFTWARE] == wgsl - multi | {"adam_multi2", "adam_multi3", "adam_multi4"}
    for kernel in MATMUL_KERNEL_SHAPES:  # the shape table above really picks each kernel
        plan = plan_graph(validate(matmul_kernel_graph(kernel)))
        assert [s["kernel"] for s in plan["steps"]] == [kernel]
    plan = plan_graph(validate(transposes_into_matmuls_graph()))  # 2 read in place, 2 copied
    assert [s["kernel"] for s in plan["steps"]] == [
        "matmul_small",
        "permute",
        "matmul_small",
        "unary",
        "permute",
        "matmul_v4",
    ]
    assert [s["params"][11][1] for s in plan["steps"] if s["kernel"] == "matmul_small"] == [1, 0]
    epilogues = [
        s for s in plan_graph(validate(mlp_step_graph()))["steps"] if "EPI_OP" in s["overrides"]
    ]
    assert len(epilogues) == 3  # the MLP case really plans fused matmuls
    assert split > 0 and limited > 0


def test_software_limit_takes_big_tiles_where_hardware_takes_matmul_small() -> None:
    """The MLP's x @ W1 ([64, 784] @ [784, 256]: 4 tiles of 64) and a small batch of 128 tiles:
    matmul_small on a GPU (under 128 workgroups), the big tiles on a software adapter; products
    under half a 64 tile stay on matmul_small either way."""

    def kernels(limits: dict) -> list[str]:
        graph = {
            "version": 2,
            "nodes": [
                {"id": 0, "op": "input", "shape": [64, 784]},
                {"id": 1, "op": "input", "shape": [784, 256]},
                {"id": 2, "op": "matmul", "a": 0, "b": 1},
                {"id": 3, "op": "input", "shape": [2, 200, 9]},
                {"id": 4, "op": "input", "shape": [9, 130]},
                {"id": 5, "op": "matmul", "a": 3, "b": 4},
                {"id": 6, "op": "input", "shape": [5, 7]},
                {"id": 7, "op": "input", "shape": [7, 3]},
                {"id": 8, "op": "matmul", "a": 6, "b": 7},
            ],
            "outputs": [{"name": f"o{i}", "id": i} for i in (2, 5, 8)],
        }
        return [s["kernel"] for s in plan_graph(validate(graph), limits)["steps"]]

    hardware = ["matmul_small", "matmul_small", "matmul_small"]
    assert kernels({}) == kernels({"minMatmulWorkgroups": 128}) == hardware
    assert kernels(LIMIT_SETS[SOFTWARE]) == ["matmul_v4", "matmul_rb", "matmul_small"]
    assert kernels({"minMatmulWorkgroups": 0}) == hardware  # invalid: the default
    assert (
        plan_graph(validate(matmul_kernel_graph("matmul")), LIMIT_SETS[SOFTWARE])["limits"][
            "minMatmulWorkgroups"
        ]
        == 1
    )


def test_a_planner_difference_would_be_caught(cases: list[dict]) -> None:
    """The comparison is not vacuous: a changed param makes the plans differ."""
    case = next(c for c in cases if c["op"] == "add")
    plans = json.loads(json.dumps(_python_plans(case["graph"])))
    js = _js_plans([case])[case["name"]]
    assert plans == js
    plans[0]["steps"][0]["params"][0][1] += 1
    assert plans != js


# ---- random graphs: the same comparison beyond the corpus ------------------------------------

# Drawn from the kernel table, so a new map or reduce op is covered without editing this file.
UNARY = plain_ops("map1")
BINARY = plain_ops("map2", "broadcast")
SCALAR = scalar_attrs("map2")
SAME = plain_ops("map2", "same_ab") + list(SCALAR)  # two same-shape operands
REDUCE = family_ops("reduce")


class _Builder:
    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.nodes: list[dict] = []

    def add(self, node: dict) -> int:
        node["id"] = len(self.nodes) * 3 + 1  # sparse ids: plans must not assume 0..n-1
        self.nodes.append(node)
        return node["id"]

    def input(self, shape: list[int], fed: bool = False) -> int:
        node: dict = {"op": "input", "shape": shape}
        if not fed:
            node["data"] = self.rng.standard_normal(int(np.prod(shape))).round(3).tolist()
        return self.add(node)

    def shape(self, rank: int | None = None) -> list[int]:
        rank = int(self.rng.integers(1, 5)) if rank is None else rank
        return [int(d) for d in self.rng.integers(1, 6, rank)]

    def broadcastable(self, shape: list[int]) -> list[int]:
        keep = int(self.rng.integers(0, len(shape) + 1))
        return [1 if self.rng.random() < 0.4 else d for d in shape[len(shape) - keep :]]

    def axis(self, rank: int) -> int | None:
        return None if self.rng.random() < 0.3 else int(self.rng.integers(-rank, rank))


def random_graph(rng: np.random.Generator, allow_fed: bool = True) -> dict:
    """A small valid version-2 graph of random ops over random shapes (seeded: reproducible).
    Also used by e2e/test_conformance_wgpu.py (with every input given data)."""
    b = _Builder(rng)
    shape = b.shape()
    x = b.input(shape, fed=allow_fed and bool(rng.random() < 0.3))
    outs = [x]
    for _ in range(int(rng.integers(1, 6))):
        kind = rng.choice(
            [
                "unary",
                "binary",
                "same",
                "reduce",
                "softmax",
                "permute",
                "reshape",
                "matmul",
                "ce",
                "adam",
                "life",
                "full",
            ]
        )
        if kind == "unary":
            outs.append(b.add({"op": str(rng.choice(UNARY)), "a": x}))
        elif kind == "binary":
            other = b.input(b.broadcastable(shape))
            a, c = (x, other) if rng.random() < 0.5 else (other, x)
            outs.append(b.add({"op": str(rng.choice(BINARY)), "a": a, "b": c}))
        elif kind == "same":
            op = str(rng.choice(SAME))
            node = {"op": op, "a": x, "b": b.input(shape)}
            if op in SCALAR:
                node[SCALAR[op]] = float(rng.choice([0.1, 0.9, 1.0, 0.001]))
            outs.append(b.add(node))
        elif kind == "reduce":
            outs.append(
                b.add(
                    {
                        "op": str(rng.choice(REDUCE)),
                        "a": x,
                        "axis": b.axis(len(shape)),
                        "keepdim": bool(rng.random() < 0.5),
                    }
                )
            )
        elif kind == "softmax":
            axis = b.axis(len(shape))
            outs.append(
                b.add(
                    {
                        "op": str(rng.choice(["softmax", "log_softmax"])),
                        "a": x,
                        "axis": -1 if axis is None else axis,
                    }
                )
            )
        elif kind == "permute":
            if len(shape) >= 2 and rng.random() < 0.5:
                outs.append(b.add({"op": "transpose", "a": x}))
            else:
                dims = [int(d) for d in rng.permutation(len(shape))]
                outs.append(b.add({"op": "permute", "a": x, "dims": dims}))
        elif kind == "reshape":
            source = x if rng.random() < 0.5 else b.add({"op": "neg", "a": x})
            new = [-1] if rng.random() < 0.5 else [*reversed(shape)]
            outs.append(b.add({"op": "reshape", "a": source, "shape": new}))
        elif kind == "matmul":
            m, k, n = (int(v) for v in rng.integers(1, 140, 3))
            batch = b.shape(int(rng.integers(0, 3)))
            left = b.input([*b.broadcastable(batch), m, k])
            right = b.input([*b.broadcastable(batch), k, n])
            outs.append(b.add({"op": "matmul", "a": left, "b": right}))
        elif kind == "ce":
            two = b.shape(2)
            op = str(rng.choice(["cross_entropy", "cross_entropy_grad"]))
            outs.append(b.add({"op": op, "a": b.input(two), "b": b.input(two)}))
        elif kind == "adam":
            step = b.add({"op": "input", "shape": [1], "data": [float(rng.integers(1, 50))]})
            outs.append(
                b.add(
                    {
                        "op": "adam_update",
                        "a": x,
                        "b": b.input(shape),
                        "c": b.input(shape),
                        "t": step,
                        "lr": 0.01,
                    }
                )
            )
        elif kind == "life":
            outs.append(b.add({"op": "life", "a": b.input(b.shape(2))}))
        else:
            outs.append(b.add({"op": "full", "shape": b.shape(), "value": 2.5}))
    return {
        "version": graph_version(b.nodes),
        "nodes": b.nodes,
        "outputs": [{"name": f"o{i}", "id": o} for i, o in enumerate(outs)],
    }


def test_python_and_js_plans_are_equal_for_random_graphs() -> None:
    rng = np.random.default_rng(20261130)
    cases = [{"name": f"random/{i}", "graph": random_graph(rng)} for i in range(300)]
    valid = 0
    for case in cases:
        try:
            validate(case["graph"])
            valid += 1
        except GpuLabError as err:
            raise AssertionError(f"{case['name']}: the generator made a bad graph: {err}") from err
    js = _js_plans(cases)
    differ = [
        c["name"]
        for c in cases
        if json.loads(json.dumps(_python_plans(c["graph"]))) != js[c["name"]]
    ]
    assert valid == len(cases) and not differ, differ[:10]
