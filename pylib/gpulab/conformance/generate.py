"""Generate the conformance corpus, pylib/gpulab/conformance/cases.json, and the table of bad graphs,
pylib/gpulab/conformance/bad_graphs.json (bad_graphs.py); deterministic, both committed.

    .venv/bin/python -m gpulab.conformance.generate          # rewrite both
    .venv/bin/python -m gpulab.conformance.generate --check  # exit 1 if one is stale

A case is plain data: {name, op, tolerance, graph}. `graph` is a protocol graph with its input
data inline (non-finite values as "nan"/"inf"/"-inf"), labelled with the lowest version its
ops need. Single-op cases have op = the op under test; chain cases have op = "chain" and list
every computed node as an output, so the runner checks each node against the reference computed
from the backend's own operand values. Each case's random data comes from a generator seeded
by the case name, so adding a case never changes another.
"""

from __future__ import annotations

import argparse
import base64
import itertools
import json
import math
import sys
import zlib
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

from gpulab import Graph, Tensor
from gpulab import functional as F
from gpulab.conformance.bad_graphs import build_bad_graphs
from gpulab.conformance.reference import INT32_MAX, INT32_MIN, OP_TABLE, evaluate, operand_ids
from gpulab.kernel_table import plain_ops

CASES_PATH = Path(__file__).with_name("cases.json")
BAD_GRAPHS_PATH = Path(__file__).with_name("bad_graphs.json")
OPS = OP_TABLE["ops"]
Shape = Sequence[int]


def _json_number(x: np.float32) -> float | int | str:
    """The shortest JSON token that reads back as this float32 (via float64, as JSON does)."""
    if not np.isfinite(x):
        return "nan" if np.isnan(x) else ("inf" if x > 0 else "-inf")
    if x == 0:
        return -0.0 if np.signbit(x) else 0
    if x == int(x) and abs(x) < 2**24:
        return int(x)
    short = float(str(x))
    return short if np.float32(short) == x else float(x)


def values(arr: np.ndarray | Iterable[float]) -> list:
    """Protocol data for an array: float32-rounded, flat, row-major."""
    flat = np.asarray(arr, dtype=np.float64).astype(np.float32).reshape(-1)
    return [_json_number(x) for x in flat]


class Builder:
    """Builds one case: nodes with ids in creation order, outputs by name."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.rng = np.random.default_rng(zlib.crc32(name.encode()))
        self.nodes: list[dict] = []
        self.outputs: list[dict] = []

    def _add(self, node: dict) -> int:
        node = {"id": len(self.nodes), **node}
        self.nodes.append(node)
        return node["id"]

    def input(self, shape: Shape, data: np.ndarray | Iterable[float]) -> int:
        data = values(data)
        assert len(data) == math.prod(shape), (self.name, shape, len(data))
        return self._add({"op": "input", "shape": list(shape), "data": data})

    def ints(self, shape: Shape, data: np.ndarray | Iterable[int]) -> int:
        """An int32 input (protocol version 3), its data a plain list of integers."""
        flat = [
            int(v)
            for v in np.asarray(list(data) if not isinstance(data, np.ndarray) else data).reshape(
                -1
            )
        ]
        assert len(flat) == math.prod(shape), (self.name, shape, len(flat))
        assert all(INT32_MIN <= v <= INT32_MAX for v in flat), self.name
        return self._add({"op": "input", "shape": list(shape), "dtype": "int32", "data": flat})

    def rand_ints(self, shape: Shape, lo: int = -1000, hi: int = 1000) -> int:
        """An int32 input of uniform random integers in [lo, hi]."""
        return self.ints(shape, self.rng.integers(lo, hi, size=math.prod(shape), endpoint=True))

    def rand(self, shape: Shape, lo: float = -2.0, hi: float = 2.0, digits: int = 3) -> int:
        """An input of uniform random short decimals (short JSON, exact float32 values)."""
        return self.input(shape, self.uniform(shape, lo, hi, digits))

    def uniform(self, shape: Shape, lo: float, hi: float, digits: int = 3) -> np.ndarray:
        return np.round(self.rng.uniform(lo, hi, size=math.prod(shape)), digits)

    def quantized(self, kind: str, shape: Shape, raw: bytes) -> int:
        """A block-quantized input [N, K]: its blocks' bytes as {"base64": ...}."""
        return self._add(
            {
                "op": "input",
                "shape": list(shape),
                "dtype": kind,
                "data": {"base64": base64.b64encode(raw).decode("ascii")},
            }
        )

    def full(self, shape: Shape, value: float | str) -> int:
        return self._add({"op": "full", "shape": list(shape), "value": value})

    def op(self, op: str, *operands: int, **attrs: object) -> int:
        names = OPS[op]["operands"]
        assert len(names) == len(operands), (op, operands)
        return self._add({"op": op, **dict(zip(names, operands, strict=True)), **attrs})

    def concat(self, ids: Sequence[int], axis: int) -> int:
        """concat's node: its operand `tensors` is a list of ids (the variadic form)."""
        return self._add({"op": "concat", "tensors": list(ids), "axis": axis})

    def out(self, node_id: int, name: str | None = None) -> int:
        self.outputs.append({"name": name or f"out{len(self.outputs)}", "id": node_id})
        return node_id

    def case(self, op: str) -> dict:
        graph = {"version": 1, "nodes": self.nodes, "outputs": self.outputs}
        graph["version"] = required_version(graph)
        tolerance = OPS[op]["tolerance"] if op in OPS else "per-node"
        return {"name": self.name, "op": op, "tolerance": tolerance, "graph": graph}


def _one_element_low_rank(shape: Shape) -> bool:
    return len(shape) <= 1 and math.prod(shape) == 1


def _needs_v2(node: dict, shapes: list[Shape]) -> bool:
    when = next(iter(OPS[node["op"]].get("features", {})), None)
    if when == "broadcast":
        a, b = shapes
        return list(a) != list(b) and not (_one_element_low_rank(a) or _one_element_low_rank(b))
    if when == "batched":
        return any(len(s) > 2 for s in shapes)
    if when == "axis":
        return node.get("axis") is not None or bool(node.get("keepdim", False))
    return False


def _every_node(graph: dict) -> dict:
    return {**graph, "outputs": [{"name": str(n["id"]), "id": n["id"]} for n in graph["nodes"]]}


def node_shapes(graph: dict) -> dict[int, tuple[int, ...]]:
    """Every node's shape (the reference evaluates all of them, live or not)."""
    return {i: r.value.shape for i, r in evaluate(_every_node(graph)).items()}


def _needs_v8(node: dict, shapes: list[Shape], result: Shape) -> bool:
    """The tensor features (op table `tensor_features`): a result of rank > 4 or with a
    dimension of 0, an axis on a rank-0 operand a."""
    spec = OPS[node["op"]]["attrs"].get("axis")
    axis = node.get("axis", spec.get("default") if spec else None)
    scalar_axis = spec is not None and axis is not None and len(shapes[0]) == 0
    return len(result) > 4 or 0 in result or scalar_axis


def required_version(graph: dict, shapes: dict[int, tuple[int, ...]] | None = None) -> int:
    """The lowest protocol version the graph's ops, dtypes and their uses need
    (docs/protocol.md: an op's `since`, its result dtype's `since`, the features it uses)."""
    refs = evaluate(_every_node(graph))
    shapes = {i: r.value.shape for i, r in refs.items()} if shapes is None else shapes
    version = 1
    for node in graph["nodes"]:
        operand_shapes = [shapes[i] for i in operand_ids(node)]
        dtype_since = OP_TABLE["dtypes"][refs[node["id"]].dtype]["since"]
        need = max(
            OPS[node["op"]]["since"], dtype_since, 2 if _needs_v2(node, operand_shapes) else 1
        )
        if _needs_v8(node, operand_shapes, shapes[node["id"]]):
            need = max(need, 8)
        version = max(version, need)
    return version


def single(name: str, op: str, build: Callable[[Builder], list[int]], **attrs: object) -> dict:
    """A case of one op: `build` makes its operands; the op's node is the only output."""
    b = Builder(name)
    b.out(b.op(op, *build(b), **attrs), "y")
    return b.case(op)


# ---- special values -------------------------------------------------------------------------

NONFINITE = [math.inf, -math.inf, math.nan]
SIGNED = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 1e-30, -1e-30, 1e30, -1e30, 3e38, -3e38]


# ---- families -------------------------------------------------------------------------------

BINARY = plain_ops("map2", "broadcast")  # add, sub, mul, div (+ new rows of the kernel table)
BROADCAST_PAIRS: list[tuple[Shape, Shape]] = [
    ([], []),
    ([1], [1]),
    ([5], []),
    ([], [5]),
    ([7], [1]),
    ([1], [2, 3]),
    ([3, 1], [4]),
    ([4, 1], [1, 4]),
    ([2, 3, 4, 5], [5]),
    ([2, 3, 4, 5], [1, 1, 1, 1]),
    ([2, 1, 3, 1], [1, 4, 1, 5]),
    ([1, 1, 1, 1], [3, 2, 1, 2]),
    ([3, 1, 5], [2, 1, 4, 1]),
    ([17, 33], [17, 33]),
]


def _divisor(b: Builder, shape: Shape) -> int:
    """Random divisors kept away from 0 so quotients stay in range."""
    mag = b.uniform(shape, 0.25, 4.0)
    sign = np.where(b.rng.random(math.prod(shape)) < 0.5, -1.0, 1.0)
    return b.input(shape, mag * sign)


def binary_cases() -> list[dict]:
    cases = []
    for op in BINARY:
        lengths = [63, 64, 65, 1000, 4097] if op == "add" else [65, 1000]
        pairs = [([n], [n]) for n in lengths] + BROADCAST_PAIRS
        for sa, sb in pairs:
            name = f"{op}/{'x'.join(map(str, sa)) or 'scalar'}_{'x'.join(map(str, sb)) or 'scalar'}"

            def build(b: Builder, sa: Shape = sa, sb: Shape = sb, op: str = op) -> list[int]:
                second = _divisor(b, sb) if op == "div" else b.rand(sb)
                return [b.rand(sa), second]

            cases.append(single(name, op, build))
        # every special value against every special value: non-finite, signed zeros, extremes
        grid = np.array(SIGNED + NONFINITE)
        av, bv = (g.reshape(-1) for g in np.meshgrid(grid, grid, indexing="ij"))
        cases.append(
            single(
                f"{op}/special_values",
                op,
                lambda b, av=av, bv=bv: [b.input([av.size], av), b.input([bv.size], bv)],
            )
        )
        big = [1e30, -3e38, 2.5e-30, 7e37]
        cases.append(
            single(
                f"{op}/magnitudes_rank2",
                op,
                lambda b, big=big: [
                    b.input([2, 2], big),
                    b.input([2, 2], [3e38, -1e10, 4e-9, 9e-9]),
                ],
            )
        )
    # cancellation: nearly equal operands
    cases.append(
        single(
            "sub/cancellation",
            "sub",
            lambda b: [
                b.input([4], [1.0000001, 1e30, 3.1415927, -2.0]),
                b.input([4], [1.0, 0.99999994e30, 3.1415925, -2.0000002]),
            ],
        )
    )
    return cases


UNARY_DOMAINS: dict[str, tuple[float, float, list[float]]] = {
    # op: (random low, random high, special inputs)
    "relu": (-3, 3, SIGNED + NONFINITE),
    "positive": (-3, 3, SIGNED + NONFINITE),
    "neg": (-3, 3, SIGNED + NONFINITE),
    "exp": (-20, 20, [0.0, -0.0, 1.0, -1.0, 88.0, -87.0, 100.0, -100.0, 1e-30, -1e30] + NONFINITE),
    "log": (1e-3, 50, [0.0, -0.0, 1.0, -1.0, 1e-30, 1e30, 3e38, 1.0000001, 0.9999999] + NONFINITE),
    "sqrt": (0, 50, [0.0, -0.0, 1.0, 4.0, 2.0, -1.0, 1e-30, 1e30, 3e38, -1e30] + NONFINITE),
    "tanh": (-6, 6, [0.0, -0.0, 1e-30, -1e-30, 0.5, -0.5, 20.0, -20.0, 1e30, -1e30] + NONFINITE),
    "sigmoid": (-20, 20, [0.0, -0.0, 1e-30, 50.0, -50.0, 100.0, -100.0, 1e30, -1e30] + NONFINITE),
    # gelu at +-inf: nonfinite_cases (gelu/nonfinite)
    "gelu": (-6, 6, [0.0, -0.0, 1e-30, -1e-30, 10.0, -10.0, 30.0, -30.0, 1e30, -1e30, math.nan]),
}


def unary_cases() -> list[dict]:
    missing = [op for op in plain_ops("map1") if op not in UNARY_DOMAINS and op not in MAP1_V3]
    assert not missing, f"UNARY_DOMAINS has no input domain for {missing} (kernels/ops.json)"
    cases = []
    for op, (lo, hi, special) in UNARY_DOMAINS.items():
        lengths = [63, 65, 4097] if op in ("relu", "exp") else [65, 1000]
        shapes: list[Shape] = [[], [1]] + [[n] for n in lengths] + [[2, 3, 4, 5], [1, 1, 1, 1]]
        for shape in shapes:
            name = f"{op}/{'x'.join(map(str, shape)) or 'scalar'}"
            cases.append(single(name, op, lambda b, s=shape, lo=lo, hi=hi: [b.rand(s, lo, hi)]))
        cases.append(
            single(f"{op}/special_values", op, lambda b, sp=special: [b.input([len(sp)], sp)])
        )
    # gelu_grad: forward input a, upstream gradient b
    for shape in ([], [1], [65], [1000], [2, 3, 4, 5]):
        name = f"gelu_grad/{'x'.join(map(str, shape)) or 'scalar'}"
        cases.append(single(name, "gelu_grad", lambda b, s=shape: [b.rand(s, -6, 6), b.rand(s)]))
    gg = [0.0, -0.0, 1.0, -1.0, 5.0, -5.0, 10.0, -10.0, 1e30, -1e30, 1e-30]
    cases.append(
        single(
            "gelu_grad/special_values",
            "gelu_grad",
            lambda b: [b.input([len(gg)], gg), b.input([len(gg)], [0.5] * len(gg))],
        )
    )
    return cases


def layout_cases() -> list[dict]:
    cases = []
    for shape in (
        [2, 3],
        [1, 1],
        [1, 5],
        [5, 1],
        [17, 33],
        [65, 64],
        [2, 3, 4],
        [2, 3, 4, 5],
        [1, 1, 1, 1],
    ):
        name = f"transpose/{'x'.join(map(str, shape))}"
        cases.append(single(name, "transpose", lambda b, s=shape: [b.rand(s)]))
    cases.append(
        single(
            "transpose/special_values",
            "transpose",
            lambda b: [b.input([3, 5], (SIGNED + NONFINITE)[:15])],
        )
    )
    for dims in itertools.permutations(range(3)):
        cases.append(
            single(
                f"permute/2x3x4_{''.join(map(str, dims))}",
                "permute",
                lambda b: [b.rand([2, 3, 4])],
                dims=list(dims),
            )
        )
    for dims in ([0, 1, 2, 3], [3, 2, 1, 0], [1, 3, 0, 2], [2, 0, 3, 1]):
        cases.append(
            single(
                f"permute/2x3x4x5_{''.join(map(str, dims))}",
                "permute",
                lambda b: [b.rand([2, 3, 4, 5])],
                dims=dims,
            )
        )
    for shape, dims in (([7], [0]), ([], []), ([1, 65], [1, 0]), ([3, 1, 1, 2], [3, 1, 2, 0])):
        tag = "x".join(map(str, shape)) or "scalar"
        cases.append(
            single(
                f"permute/{tag}_{''.join(map(str, dims)) or 'none'}",
                "permute",
                lambda b, s=shape: [b.rand(s)],
                dims=dims,
            )
        )
    reshapes: list[tuple[Shape, list[int]]] = [
        ([6], [2, 3]),
        ([2, 3], [-1]),
        ([2, 3, 4], [4, -1]),
        ([], [1]),
        ([1], []),
        ([4097], [1, 4097]),
        ([2, 3, 4, 5], [5, 4, 3, 2]),
        ([2, 3, 4, 5], [-1, 1, 1, 1]),
        ([1, 1, 1, 1], []),
        ([12], [2, -1, 3]),
    ]
    for src, dst in reshapes:
        tag = f"{'x'.join(map(str, src)) or 'scalar'}_to_{'x'.join(map(str, dst)) or 'scalar'}"
        cases.append(single(f"reshape/{tag}", "reshape", lambda b, s=src: [b.rand(s)], shape=dst))
    return cases


def source_cases() -> list[dict]:
    cases = []
    for shape in ([], [1], [5], [2, 3], [1, 1, 1, 1], [2, 3, 4, 5]):
        b = Builder(f"input/{'x'.join(map(str, shape)) or 'scalar'}")
        b.out(b.rand(shape, -1e3, 1e3), "y")
        cases.append(b.case("input"))
    b = Builder("input/special_values")
    b.out(b.input([15], SIGNED + NONFINITE), "y")
    cases.append(b.case("input"))
    b = Builder("input/explicit_dtype_declares_more_version")
    x = b.input([2, 2], [1.5, -2, 0.25, 8])
    b.nodes[x]["dtype"] = "float32"
    b.out(b.op("relu", x), "y")
    case = b.case("input")
    case["graph"]["version"] = 2  # declaring more than it needs (1) is accepted
    cases.append(case)
    fulls: list[tuple[Shape, float | str]] = [
        ([], 1.5),
        ([3], -0.0),
        ([2, 2, 2, 2], 0.1),
        ([1], 1e30),
        ([4], 1e-30),
        ([2], "nan"),
        ([3, 1], "inf"),
        ([1, 3], "-inf"),
        ([65], -3e38),
        ([7], 2),
    ]
    for i, (shape, value) in enumerate(fulls):
        b = Builder(f"full/{i}_{'x'.join(map(str, shape)) or 'scalar'}_{value}")
        b.out(b.full(shape, value), "y")
        cases.append(b.case("full"))
    return cases


def reduction_cases() -> list[dict]:
    cases = []
    for op in ("sum", "mean"):
        lengths = [1, 63, 64, 65, 1000, 4097] if op == "sum" else [1, 65, 4097]
        for n in lengths:
            cases.append(single(f"{op}/all_{n}", op, lambda b, n=n: [b.rand([n])]))
        cases.append(single(f"{op}/all_scalar", op, lambda b: [b.rand([])]))
        cases.append(
            single(
                f"{op}/all_2x3x4x5_keepdim",
                op,
                lambda b: [b.rand([2, 3, 4, 5])],
                axis=None,
                keepdim=True,
            )
        )
        for axis in range(-4, 4):
            for keepdim in (False, True):
                name = f"{op}/2x3x4x5_axis{axis}{'_keepdim' if keepdim else ''}"
                cases.append(
                    single(name, op, lambda b: [b.rand([2, 3, 4, 5])], axis=axis, keepdim=keepdim)
                )
        for axis in (0, 1, -1):
            cases.append(
                single(f"{op}/65x4_axis{axis}", op, lambda b: [b.rand([65, 4])], axis=axis)
            )
        cases.append(
            single(f"{op}/1_axis0_keepdim", op, lambda b: [b.rand([1])], axis=0, keepdim=True)
        )
        cases.append(
            single(f"{op}/magnitudes", op, lambda b: [b.input([5], [1e30, 1.0, -1e30, 2.0, 1e-30])])
        )
        cases.append(single(f"{op}/small", op, lambda b: [b.input([100], [1e-30] * 100)]))
        cases.append(single(f"{op}/inf", op, lambda b: [b.input([70], [1.0] * 69 + [math.inf])]))
        cases.append(
            single(f"{op}/inf_minus_inf", op, lambda b: [b.input([3], [math.inf, 1.0, -math.inf])])
        )
        cases.append(
            single(
                f"{op}/nan_axis1",
                op,
                lambda b: [b.input([2, 3], [1.0, math.nan, 2.0, 3.0, 4.0, 5.0])],
                axis=1,
            )
        )
    return cases


def softmax_cases() -> list[dict]:
    cases = []
    for op in ("softmax", "log_softmax"):
        cases.append(single(f"{op}/4x10", op, lambda b: [b.rand([4, 10], -5, 5)]))
        cases.append(single(f"{op}/1", op, lambda b: [b.rand([1])]))
        cases.append(single(f"{op}/1x1_axis0", op, lambda b: [b.rand([1, 1])], axis=0))
        for axis in range(-3, 3):
            cases.append(
                single(
                    f"{op}/3x4x5_axis{axis}", op, lambda b: [b.rand([3, 4, 5], -4, 4)], axis=axis
                )
            )
        cases.append(
            single(f"{op}/4x6_axis_null", op, lambda b: [b.rand([4, 6], -3, 3)], axis=None)
        )
        cases.append(single(f"{op}/2x3x4x5_axis1", op, lambda b: [b.rand([2, 3, 4, 5])], axis=1))
        cases.append(single(f"{op}/3x1000", op, lambda b: [b.rand([3, 1000], -10, 10)]))
        cases.append(single(f"{op}/4097", op, lambda b: [b.rand([4097], -10, 10)]))
        cases.append(single(f"{op}/65x3_axis0", op, lambda b: [b.rand([65, 3], -10, 10)], axis=0))
        cases.append(
            single(
                f"{op}/large_logits",
                op,
                lambda b: [
                    b.input(
                        [3, 5],
                        [
                            1e4,
                            -1e4,
                            50.0,
                            88.0,
                            100.0,
                            1e30,
                            1e30,
                            -1e30,
                            0.0,
                            1.0,
                            -3e38,
                            3e38,
                            3e38,
                            87.5,
                            -87.5,
                        ],
                    )
                ],
            )
        )
        cases.append(
            single(
                f"{op}/neg_inf_logits",
                op,
                lambda b: [
                    b.input(
                        [2, 4],
                        [-math.inf, 0.0, 1.0, -math.inf, 2.0, -math.inf, -math.inf, -math.inf],
                    )
                ],
            )
        )
    return cases


def _one_hot(b: Builder, n: int, c: int) -> int:
    labels = b.rng.integers(0, c, size=n)
    return b.input([n, c], np.eye(c)[labels])


def _soft_targets(b: Builder, n: int, c: int) -> int:
    p = b.rng.random((n, c)) + 0.05
    return b.input([n, c], np.round(p / p.sum(axis=1, keepdims=True), 3))


def cross_entropy_cases() -> list[dict]:
    cases = []
    for op in ("cross_entropy", "cross_entropy_grad"):
        for n, c in ((4, 10), (1, 1), (64, 10), (65, 3), (3, 130), (1, 1000)):
            cases.append(
                single(
                    f"{op}/{n}x{c}_onehot",
                    op,
                    lambda b, n=n, c=c: [b.rand([n, c], -5, 5), _one_hot(b, n, c)],
                )
            )
        cases.append(
            single(f"{op}/8x5_soft", op, lambda b: [b.rand([8, 5], -3, 3), _soft_targets(b, 8, 5)])
        )
        cases.append(
            single(
                f"{op}/large_logits",
                op,
                lambda b: [
                    b.input(
                        [3, 4],
                        [1e4, -1e4, 50.0, 0.0, 88.0, 100.0, -100.0, 3.0, 1e30, -1e30, 1.0, 2.0],
                    ),
                    b.input([3, 4], [0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0]),
                ],
            )
        )
    return cases


def matmul_cases() -> list[dict]:
    cases = []
    shapes: list[tuple[Shape, Shape]] = [
        ([1, 1], [1, 1]),
        ([2, 3], [3, 4]),
        ([17, 33], [33, 9]),
        ([65, 64], [64, 63]),
        ([1, 1000], [1000, 1]),
        ([3, 1], [1, 4]),
        ([64, 64], [64, 64]),
        ([1, 130], [130, 65]),
        ([2, 3, 4], [2, 4, 5]),
        ([2, 1, 3, 4], [1, 5, 4, 2]),
        ([3, 4], [2, 4, 5]),
        ([2, 3, 4], [4, 5]),
        ([2, 2, 3, 4], [2, 2, 4, 3]),
        ([1, 1, 1], [1, 1, 1]),
        ([4, 1, 7, 9], [3, 9, 2]),
    ]
    for sa, sb in shapes:
        name = f"matmul/{'x'.join(map(str, sa))}_{'x'.join(map(str, sb))}"
        cases.append(single(name, "matmul", lambda b, sa=sa, sb=sb: [b.rand(sa), b.rand(sb)]))
    cases.append(
        single(
            "matmul/large_magnitudes",
            "matmul",
            lambda b: [
                b.input([2, 3], b.uniform([2, 3], -4, 4) * 1e15),
                b.input([3, 2], b.uniform([3, 2], -4, 4) * 1e14),
            ],
        )
    )
    cases.append(
        single(
            "matmul/small_magnitudes",
            "matmul",
            lambda b: [
                b.input([2, 3], b.uniform([2, 3], 1, 4) * 1e-15),
                b.input([3, 2], b.uniform([3, 2], 1, 4) * 1e-14),
            ],
        )
    )
    cases.append(
        single(
            "matmul/nonfinite",
            "matmul",
            lambda b: [
                b.input([3, 2], [math.inf, 1.0, math.nan, 1.0, 2.0, 3.0]),
                b.input([2, 2], [1.0, 2.0, 0.5, 0.25]),
            ],
        )
    )
    return cases


def optimizer_cases() -> list[dict]:
    cases = []
    shapes: list[Shape] = [[], [1], [65], [2, 3, 4, 5]]
    specs: list[tuple[str, dict[str, object]]] = [
        ("sgd_update", {"lr": 0.1}),
        ("sgd_update", {"lr": 0.003}),
        ("momentum_update", {"momentum": 0.9}),
        ("momentum_update", {"momentum": 0.0}),
        ("adam_m", {}),
        ("adam_m", {"beta1": 0.8}),
        ("adam_v", {}),
        ("adam_v", {"beta2": 0.99}),
    ]
    for op, attrs in specs:
        tag = "_".join(f"{k}{v}" for k, v in attrs.items()) or "default"
        for shape in shapes + ([[4097]] if tag in ("lr0.1", "default") else []):
            name = f"{op}/{tag}_{'x'.join(map(str, shape)) or 'scalar'}"
            cases.append(single(name, op, lambda b, s=shape: [b.rand(s), b.rand(s)], **attrs))
        # gradients stay below 1e19 so that b * b (adam_v) cannot overflow in any order
        cases.append(
            single(
                f"{op}/{tag}_magnitudes",
                op,
                lambda b: [
                    b.input([4], [1e30, -1e-30, 3.0, 1e15]),
                    b.input([4], [1e18, 1e-30, -2e-30, -1e15]),
                ],
                **attrs,
            )
        )
    adam_specs: list[tuple[Shape, float, dict[str, object]]] = [
        ([], 1, {}),
        ([1], 1, {}),
        ([], 2, {}),
        ([1], 10, {}),
        ([], 1000, {}),
        ([1], 3, {"lr": 0.01, "beta1": 0.8, "beta2": 0.99, "eps": 1e-6}),
    ]
    for t_shape, t, attrs in adam_specs:
        for shape in ([], [65], [2, 3, 4, 5]):
            tag = "_".join(f"{k}{v}" for k, v in attrs.items()) or "default"
            t_tag = "t[]" if not t_shape else "t[1]"
            name = f"adam_update/{tag}_{t_tag}={t}_{'x'.join(map(str, shape)) or 'scalar'}"
            cases.append(
                single(
                    name,
                    "adam_update",
                    lambda b, s=shape, ts=t_shape, t=t: [
                        b.rand(s),
                        b.rand(s, -0.1, 0.1, 4),
                        b.rand(s, 0, 0.01, 5),
                        b.input(ts, [t]),
                    ],
                    **attrs,
                )
            )
    return cases


# ---- life -----------------------------------------------------------------------------------

GLIDER = [(0, 1), (1, 2), (2, 0), (2, 1), (2, 2)]


def _grid(
    h: int, w: int, cells: Iterable[tuple[int, int]], top: int = 0, left: int = 0
) -> np.ndarray:
    g = np.zeros((h, w))
    for r, c in cells:
        g[(top + r) % h, (left + c) % w] = 1.0
    return g


def _life_chain(name: str, grid: np.ndarray, steps: int) -> dict:
    b = Builder(name)
    x = b.input(list(grid.shape), grid)
    for _ in range(steps):
        x = b.out(b.op("life", x), f"step{len(b.outputs) + 1}")
    return b.case("life")


def life_cases() -> list[dict]:
    cases = [
        _life_chain("life/glider_across_corner_8x8_x6", _grid(8, 8, GLIDER, 6, 6), 6),
        _life_chain("life/glider_64x64_x4", _grid(64, 64, GLIDER, 62, 30), 4),
        _life_chain("life/blinker_on_edge_5x7", _grid(5, 7, [(0, 6), (1, 6), (4, 6)]), 2),
        _life_chain("life/glider_wraps_17x33_x8", _grid(17, 33, GLIDER, 15, 31), 8),
    ]
    b = Builder("life/random_65x63_x3")
    cases.append(_life_chain(b.name, (b.rng.random((65, 63)) < 0.35).astype(float), 3))
    b = Builder("life/thresholds")
    grid = b.rng.choice([0.0, 0.5, 0.50000006, 0.7, 1.0, -1.0, 2.0, math.nan], size=(9, 11))
    cases.append(_life_chain(b.name, grid, 1))
    for h, w in ((1, 1), (2, 3), (3, 3), (1, 8)):
        b = Builder(f"life/tiny_{h}x{w}")
        cases.append(_life_chain(b.name, (b.rng.random((h, w)) < 0.5).astype(float), 2))
    return cases


# ---- chains ---------------------------------------------------------------------------------


def _mlp_step() -> dict:
    """An MLP forward + backward + Adam step; every computed node is an output."""
    b = Builder("chain/mlp_forward_backward_adam")
    n, d, h, c = 8, 16, 32, 10
    x, y = b.rand([n, d]), _one_hot(b, n, c)
    w1, b1 = b.rand([d, h], -0.3, 0.3), b.rand([h], -0.1, 0.1)
    w2, b2 = b.rand([h, c], -0.3, 0.3), b.rand([c], -0.1, 0.1)
    keep = b.out
    hid = keep(b.op("add", keep(b.op("matmul", x, w1)), b1))
    act = keep(b.op("relu", hid))
    logits = keep(b.op("add", keep(b.op("matmul", act, w2)), b2))
    keep(b.op("cross_entropy", logits, y), "loss")
    dlogits = keep(b.op("cross_entropy_grad", logits, y))
    dw2 = keep(b.op("matmul", keep(b.op("transpose", act)), dlogits))
    db2 = keep(b.op("sum", dlogits, axis=0))
    dact = keep(b.op("matmul", dlogits, keep(b.op("transpose", w2))))
    dhid = keep(b.op("mul", dact, keep(b.op("positive", hid))))
    dw1 = keep(b.op("matmul", keep(b.op("transpose", x)), dhid))
    keep(b.op("sum", dhid, axis=0, keepdim=False))
    t = b.input([1], [1])
    for w, g in ((w1, dw1), (w2, dw2)):
        m = keep(b.op("adam_m", b.full(b_shape(b, w), 0.0), g))
        v = keep(b.op("adam_v", b.full(b_shape(b, w), 0.0), g))
        keep(b.op("adam_update", w, m, v, t, lr=0.01))
    keep(b.op("sgd_update", b1, keep(b.op("mean", dhid, axis=0)), lr=0.1))
    keep(b.op("momentum_update", b2, db2, momentum=0.9))
    return b.case("chain")


def b_shape(b: Builder, node_id: int) -> list[int]:
    return list(b.nodes[node_id]["shape"])


def _softmax_by_hand() -> dict:
    b = Builder("chain/softmax_by_hand")
    a = b.rand([3, 7], -4, 4)
    keep = b.out
    e = keep(b.op("exp", a))
    s = keep(b.op("sum", e, axis=-1, keepdim=True))
    keep(b.op("div", e, s))
    keep(b.op("softmax", a))
    keep(b.op("log", keep(b.op("sigmoid", keep(b.op("tanh", a))))))
    return b.case("chain")


def _layout_chain() -> dict:
    b = Builder("chain/reshape_permute_transpose")
    a = b.rand([24])
    keep = b.out
    r = keep(b.op("reshape", a, shape=[2, 3, 4]))
    p = keep(b.op("permute", r, dims=[2, 0, 1]))
    t = keep(b.op("transpose", keep(b.op("transpose", p))))
    keep(b.op("reshape", keep(b.op("neg", t)), shape=[-1, 2]))
    return b.case("chain")


def _gelu_chain() -> dict:
    b = Builder("chain/gelu_and_grad")
    a, g = b.rand([5, 13], -4, 4), b.rand([5, 13])
    keep = b.out
    y = keep(b.op("gelu", a))
    keep(b.op("gelu_grad", a, keep(b.op("mul", y, g))))
    keep(b.op("sqrt", keep(b.op("mul", y, y))))
    return b.case("chain")


def _shuffled_ids() -> dict:
    """Nodes listed out of order with sparse ids: validators must not assume either."""
    b = Builder("add/shuffled_ids")
    b.nodes = [
        {"id": 40, "op": "add", "a": 7, "b": 3},
        {"id": 3, "op": "input", "shape": [2], "data": [1.5, -2]},
        {"id": 7, "op": "input", "shape": [2], "data": [0.25, 8]},
    ]
    b.outputs = [{"name": "y", "id": 40}]
    return b.case("add")


def _integers_as_floats() -> dict:
    """ids, dims and axis written as floats with no fraction: valid (docs/protocol.md)."""
    b = Builder("sum/integers_written_as_floats")
    b.nodes = [
        {"id": 0.0, "op": "input", "shape": [2.0, 3.0], "data": [1, 2, 3, 4, 5, 6.5]},
        {"id": 1.0, "op": "sum", "a": 0.0, "axis": 1.0},
    ]
    b.outputs = [{"name": "y", "id": 1.0}]
    return b.case("sum")


def _matmul_epilogues() -> dict:
    """Map2 nodes the planners fold into the matmul whose product they read
    (docs/plan.md "Fusion"): a bias + relu, a row minus the product, a product gated by
    positive(z), a column [M, 1] and a scalar operand, on shapes that take matmul_rb_v4, matmul
    and matmul_small on a software adapter; and products that must stay unfused (an output,
    read twice, a [B, 1, N] operand).
    The matmul operands are small integers, so every product is exact in any order and each
    output is one rounding of exact operands: judged by its own op's class, as a chain."""
    b = Builder("chain/matmul_epilogues")
    out = b.out

    def mm(sa: Shape, sb: Shape) -> int:
        x = b.input(sa, np.round(b.uniform(sa, -4, 4)))
        return b.op("matmul", x, b.input(sb, np.round(b.uniform(sb, -4, 4))))

    out(b.op("relu", b.op("add", mm([70, 8], [8, 68]), b.rand([68]))), "bias_relu")
    out(b.op("sub", b.op("neg", b.rand([1, 33])), mm([40, 9], [9, 33])), "row_minus")
    out(b.op("mul", mm([2, 5, 7], [7, 3]), b.op("positive", b.rand([2, 5, 3]))), "gated")
    kept = out(mm([5, 7], [7, 3]), "kept")
    out(b.op("add", kept, b.rand([3])), "kept_plus")
    twice = mm([5, 7], [7, 3])
    out(b.op("add", twice, b.rand([3])), "twice_a")
    out(b.op("mul", twice, b.rand([5, 3])), "twice_b")
    out(b.op("add", mm([5, 7], [7, 3]), b.rand([5, 1])), "column")
    out(b.op("mul", b.rand([1]), mm([4, 6], [6, 5])), "scaled")
    out(b.op("add", mm([2, 5, 7], [7, 3]), b.rand([2, 1, 3])), "batch_row")
    return b.case("chain")


def chain_cases() -> list[dict]:
    return [
        _mlp_step(),
        _matmul_epilogues(),
        _softmax_by_hand(),
        _layout_chain(),
        _gelu_chain(),
        _shuffled_ids(),
        _integers_as_floats(),
    ]


# ---- large: many elements from little data (broadcasting), one small output -------------


def _grid_of(b: Builder, rows: int, cols: int) -> int:
    """A varied [rows, cols] tensor from rows + cols values: u_i + r_j (one float32 rounding,
    the same on every backend, so the node needs not be an output)."""
    return b.op("add", b.rand([rows, 1], -1, 1), b.rand([cols], -1, 1))


def large_cases() -> list[dict]:
    """Sizes past a GPU's one-dimensional dispatch limit (65535 workgroups of 64) and long
    reduction rows, built by broadcasting so the corpus stays small."""
    cases = []
    b = Builder("sum/large_all_2049x2047")  # 4194303 elements: > 65535 * 64
    b.out(b.op("sum", _grid_of(b, 2049, 2047)), "y")
    cases.append(b.case("sum"))
    b = Builder("sum/large_65537x64_axis0")
    b.out(b.op("sum", b.op("add", b.full([65537, 64], 1.5), b.rand([64], -1, 1)), axis=0), "y")
    cases.append(b.case("sum"))
    b = Builder("mean/large_relu_2049x2047_axis1")
    b.out(b.op("mean", b.op("relu", _grid_of(b, 2049, 2047)), axis=1), "y")
    cases.append(b.case("mean"))
    b = Builder("matmul/large_257x1000x129")
    b.out(b.op("matmul", _grid_of(b, 257, 1000), _grid_of(b, 1000, 129)), "y")
    cases.append(b.case("matmul"))
    # each 128-tile kernel by operand alignment (software adapters plan 128 tiles for these;
    # the webgpu lane runs them through Tint): vec4 a and b, vec4 b only (K % 4 != 0, batched),
    # scalar both sides (matmul_rb_a4 is the 257x1000x129 case above)
    for tag, sa, sb in (
        ("tile128_v4", [130, 36], [36, 132]),
        ("tile128_b4", [2, 131, 35], [35, 132]),
        ("tile128_scalar", [130, 33], [33, 129]),
    ):
        b = Builder(f"matmul/{tag}_{'x'.join(map(str, sa))}_{'x'.join(map(str, sb))}")
        grid_a = b.op("add", b.rand([*sa[:-1], 1], -1, 1), b.rand([sa[-1]], -1, 1))
        mixed_a = b.op("mul", grid_a, b.op("add", b.rand([*sa[:-1], 1]), b.rand([sa[-1]])))
        b.out(b.op("matmul", mixed_a, _grid_of(b, *sb)), "y")
        cases.append(b.case("matmul"))
    b = Builder("permute/large_40x50x30x70_3102_then_sums")
    grid = b.op("add", b.rand([40, 1, 30, 1], -1, 1), b.rand([50, 1, 70], -1, 1))
    moved = b.op("permute", grid, dims=[3, 1, 0, 2])  # [70, 50, 40, 30], 4.2M elements
    b.out(b.op("sum", b.op("sum", moved, axis=3), axis=1), "y")
    cases.append(b.case("permute"))
    b = Builder("matmul/batched_33x1x9x5_17x5x11")
    b.out(b.op("matmul", b.rand([33, 1, 9, 5]), b.rand([17, 5, 11])), "y")
    cases.append(b.case("matmul"))
    b = Builder("softmax/large_row_100489")
    b.out(b.op("softmax", b.op("reshape", _grid_of(b, 317, 317), shape=[100489])), "y")
    cases.append(b.case("softmax"))
    b = Builder("cross_entropy/large_4097x10")
    logits = b.op("mul", _grid_of(b, 4097, 10), b.full([], 3.0))
    targets = b.op("add", b.full([4097, 10], 0.0), b.input([10], np.eye(10)[3]))
    b.out(b.op("cross_entropy", logits, targets), "loss")
    cases.append(b.case("cross_entropy"))
    return cases


# ---- protocol-v3 ops: abs, square, clamp, reduce_max/min, argmax/argmin, float32 and int32 -

INT_SPECIAL = [
    INT32_MIN,
    INT32_MIN + 1,
    INT32_MAX,
    INT32_MAX - 1,
    0,
    1,
    -1,
    2,
    -2,
    46340,
    46341,
    -46341,
    65535,
    65536,
    -65536,
    123456789,
    -987654321,
]
V3_SHAPES: list[Shape] = [[], [1], [65], [1000], [2, 3, 4, 5], [1, 1, 1, 1]]


def _tag(shape: Shape) -> str:
    return "x".join(map(str, shape)) or "scalar"


# The v3 map1 ops at float32 and int32 (their input domains: map1_v3_cases, not UNARY_DOMAINS).
MAP1_V3 = ("abs", "square")


def map1_v3_cases() -> list[dict]:
    """abs and square (and clamp below) at float32 and int32, with their special values:
    signed zeros, NaN, infinities, float32 extremes (squares overflow to inf; no input's
    square is subnormal: GPUs may flush those), int32 extremes (abs(-2^31) and squares wrap)."""
    cases = []
    for op in MAP1_V3:
        for shape in V3_SHAPES:
            cases.append(single(f"{op}/{_tag(shape)}", op, lambda b, s=shape: [b.rand(s, -5, 5)]))
            cases.append(
                single(
                    f"{op}/int32_{_tag(shape)}",
                    op,
                    lambda b, s=shape: [b.rand_ints(s, -50000, 50000)],
                )
            )
        special = SIGNED + NONFINITE + [1.8e19, -1.9e19, 1.7e38, 3.4028235e38]
        cases.append(
            single(f"{op}/special_values", op, lambda b, sp=special: [b.input([len(sp)], sp)])
        )
        cases.append(
            single(f"{op}/int32_extremes", op, lambda b: [b.ints([len(INT_SPECIAL)], INT_SPECIAL)])
        )
    return cases


CLAMP_BOUNDS: list[tuple[str, dict[str, object]]] = [
    ("both", {"min": -1, "max": 1}),
    ("min_only", {"min": -0.5}),
    ("max_only", {"max": 0.25}),
    ("none", {}),
    ("null_both", {"min": None, "max": None}),
    ("zero_zero", {"min": 0, "max": 0}),
    ("min_above_max", {"min": 2, "max": 1}),
    ("fractional", {"min": -2.5, "max": 7.5}),
    ("wide", {"min": -3e9, "max": 3e9}),
    ("max_null_min", {"min": None, "max": -1}),
]


def clamp_cases() -> list[dict]:
    cases = []
    special = SIGNED + NONFINITE
    for tag, bounds in CLAMP_BOUNDS:
        cases.append(single(f"clamp/{tag}_65", "clamp", lambda b: [b.rand([65], -3, 3)], **bounds))
        cases.append(
            single(
                f"clamp/{tag}_special_values",
                "clamp",
                lambda b: [b.input([len(special)], special)],
                **bounds,
            )
        )
        cases.append(
            single(
                f"clamp/int32_{tag}",
                "clamp",
                lambda b: [b.ints([len(INT_SPECIAL) + 40], INT_SPECIAL + list(range(-20, 20)))],
                **bounds,
            )
        )
    for shape in ([], [1], [2, 3, 4, 5], [1000]):
        cases.append(
            single(
                f"clamp/{_tag(shape)}",
                "clamp",
                lambda b, s=shape: [b.rand(s, -3, 3)],
                min=-1.5,
                max=2,
            )
        )
        cases.append(
            single(
                f"clamp/int32_{_tag(shape)}",
                "clamp",
                lambda b, s=shape: [b.rand_ints(s, -10, 10)],
                min=-4,
                max=6,
            )
        )
    cases.append(
        single(
            "clamp/zero_bounds_keep_sign",
            "clamp",
            lambda b: [b.input([4], [0.0, -0.0, 1e-30, -1e-30])],
            min=0.0,
        )
    )
    cases.append(
        single(
            "clamp/negative_zero_bound",
            "clamp",
            lambda b: [b.input([4], [0.0, -0.0, -1.0, 1.0])],
            min=-0.0,
            max=-0.0,
        )
    )
    return cases


REDUCE_V3 = ["reduce_max", "reduce_min", "argmax", "argmin"]


def _ties(b: Builder, n: int, where: Sequence[int], value: float) -> np.ndarray:
    """n random values below |value| with `value` placed at the given positions."""
    x = b.uniform([n], -abs(value) * 0.9, abs(value) * 0.9)
    x[list(where)] = value
    return x


def reduce_v3_cases() -> list[dict]:
    """Every axis (negative too) with and without keepdim, rank 0..4, lengths around the 64
    lanes, ties (across lanes), NaN first-wins, signed zeros, infinities, int32 extremes."""
    cases = []
    for op in REDUCE_V3:
        # longer rows: the large cases below (4194303 and 65792 elements, built from little data)
        for n in (1, 63, 64, 65, 300):
            cases.append(single(f"{op}/all_{n}", op, lambda b, n=n: [b.rand([n])]))
            wide = 2**31 if n <= 65 else 10**6  # the corpus stays small
            cases.append(
                single(
                    f"{op}/int32_all_{n}", op, lambda b, n=n, w=wide: [b.rand_ints([n], -w, w - 1)]
                )
            )
        cases.append(single(f"{op}/all_scalar", op, lambda b: [b.rand([])]))
        cases.append(single(f"{op}/int32_all_scalar", op, lambda b: [b.rand_ints([])]))
        cases.append(
            single(
                f"{op}/all_2x3x4x5_keepdim",
                op,
                lambda b: [b.rand([2, 3, 4, 5])],
                axis=None,
                keepdim=True,
            )
        )
        cases.append(
            single(f"{op}/scalar_axis0", op, lambda b: [b.rand([1])], axis=0, keepdim=True)
        )
        for axis in range(-4, 4):
            for keepdim in (False, True):
                kd = "_keepdim" if keepdim else ""
                # one decimal: ties along the axis are common, as they should be here
                cases.append(
                    single(
                        f"{op}/2x3x4x5_axis{axis}{kd}",
                        op,
                        lambda b: [b.rand([2, 3, 4, 5], digits=1)],
                        axis=axis,
                        keepdim=keepdim,
                    )
                )
                cases.append(
                    single(
                        f"{op}/int32_2x3x4x5_axis{axis}{kd}",
                        op,
                        lambda b: [b.rand_ints([2, 3, 4, 5], -5, 5)],
                        axis=axis,
                        keepdim=keepdim,
                    )
                )
        for axis in (0, 1, -1):
            cases.append(
                single(f"{op}/65x4_axis{axis}", op, lambda b: [b.rand([65, 4])], axis=axis)
            )
        for rank_shape, axis in (([7], 0), ([3, 130], 1), ([130, 3], 0), ([2, 65, 3], 1)):
            cases.append(
                single(
                    f"{op}/{_tag(rank_shape)}_axis{axis}",
                    op,
                    lambda b, s=rank_shape: [b.rand(s, digits=2)],
                    axis=axis,
                )
            )
        # ties: the same extreme at several positions (lanes 5, 3 and 0 of the 64)
        ext = 7.0 if op in ("reduce_max", "argmax") else -7.0
        cases.append(
            single(
                f"{op}/ties_300",
                op,
                lambda b, e=ext: [b.input([300], _ties(b, 300, [237, 69, 128, 240], e))],
            )
        )
        cases.append(
            single(
                f"{op}/ties_rows_axis1",
                op,
                lambda b, e=ext: [
                    b.input(
                        [3, 200],
                        np.concatenate(
                            [_ties(b, 200, w, e) for w in ([199, 3], [64, 0, 128], [150, 100, 50])]
                        ),
                    )
                ],
                axis=1,
            )
        )
        cases.append(
            single(
                f"{op}/int32_ties_axis0",
                op,
                lambda b: [
                    b.ints(
                        [4, 3],
                        [
                            5,
                            -7,
                            INT32_MAX,
                            5,
                            INT32_MIN,
                            INT32_MAX,
                            -1,
                            INT32_MIN,
                            0,
                            5,
                            -7,
                            INT32_MIN,
                        ],
                    )
                ],
                axis=0,
            )
        )
        cases.append(
            single(f"{op}/int32_extremes", op, lambda b: [b.ints([len(INT_SPECIAL)], INT_SPECIAL)])
        )
        cases.append(single(f"{op}/int32_all_equal_130", op, lambda b: [b.ints([130], [-3] * 130)]))
        # NaN: propagates (max/min), the first NaN wins (arg): NaNs at 70 and 3 of 100
        cases.append(
            single(
                f"{op}/nan_first_wins",
                op,
                lambda b: [
                    b.input(
                        [100], [math.nan if i in (3, 70) else (i - 50) * 0.5 for i in range(100)]
                    )
                ],
            )
        )
        cases.append(
            single(
                f"{op}/nan_axis1",
                op,
                lambda b: [
                    b.input(
                        [3, 4],
                        [
                            1.0,
                            math.nan,
                            2.0,
                            math.nan,
                            math.inf,
                            1.0,
                            -math.inf,
                            math.nan,
                            -1.0,
                            -2.0,
                            -3.0,
                            -4.0,
                        ],
                    )
                ],
                axis=1,
            )
        )
        cases.append(
            single(
                f"{op}/nan_after_extreme_axis0",
                op,
                lambda b: [b.input([3, 2], [math.inf, -math.inf, math.nan, 0.0, 5.0, math.nan])],
                axis=0,
            )
        )
        # signed zeros: every order of -0 and +0 in a row; the whole row zero
        zeros = [[-0.0, -0.0], [-0.0, 0.0], [0.0, -0.0], [0.0, 0.0]]
        cases.append(
            single(
                f"{op}/signed_zeros_axis1",
                op,
                lambda b, z=zeros: [b.input([4, 2], np.array(z).reshape(-1))],
                axis=1,
            )
        )
        cases.append(
            single(
                f"{op}/signed_zeros_with_negatives_axis0",
                op,
                lambda b: [
                    b.input(
                        [3, 4],
                        [-1.0, -0.0, 0.0, -0.0, -0.0, -1.0, -0.0, 0.0, -2.0, 0.0, -0.0, -0.0],
                    )
                ],
                axis=0,
            )
        )
        cases.append(
            single(
                f"{op}/signed_zeros_130",
                op,
                lambda b: [b.input([130], [-0.0 if i % 3 else 0.0 for i in range(130)])],
            )
        )
        cases.append(
            single(
                f"{op}/infinities",
                op,
                lambda b: [b.input([6], [-math.inf, 3e38, -3e38, math.inf, math.inf, -math.inf])],
            )
        )
        cases.append(
            single(
                f"{op}/all_neg_inf_axis1",
                op,
                lambda b: [b.input([2, 3], [-math.inf] * 3 + [math.inf] * 3)],
                axis=1,
            )
        )
        cases.append(
            single(
                f"{op}/magnitudes",
                op,
                lambda b: [b.input([6], [1e30, 1e-30, -1e30, -1e-30, 3e38, -3e38])],
            )
        )
    return cases


def v3_chain_cases() -> list[dict]:
    """int32 through several new ops; a float MLP head's prediction (argmax of logits)."""
    b = Builder("chain/int32_abs_square_clamp_reduce")
    keep = b.out
    x = b.ints(
        [4, 5],
        [
            INT32_MIN,
            -3,
            46341,
            7,
            -1,
            0,
            12,
            -65536,
            9,
            2,
            -9,
            100,
            5,
            5,
            -5,
            INT32_MAX,
            1,
            3,
            -2,
            8,
        ],
    )
    a = keep(b.op("abs", x))
    sq = keep(b.op("square", a))
    c = keep(b.op("clamp", sq, min=-100, max=1e9))
    keep(b.op("reduce_max", c, axis=1))
    keep(b.op("reduce_min", c, axis=0, keepdim=True))
    keep(b.op("argmax", c, axis=0))
    keep(b.op("argmin", sq))
    cases = [b.case("chain")]
    b = Builder("chain/float_logits_argmax")
    keep = b.out
    logits = keep(b.op("matmul", b.rand([8, 16]), b.rand([16, 10], -0.3, 0.3)))
    keep(b.op("argmax", logits, axis=1))
    keep(b.op("reduce_max", logits, axis=1, keepdim=True))
    keep(b.op("argmin", keep(b.op("abs", keep(b.op("clamp", logits, min=-0.5, max=0.5))))))
    keep(b.op("square", logits))
    cases.append(b.case("chain"))
    return cases


def large_v3_cases() -> list[dict]:
    """A flattened argmax / reduce over 4210560 elements (more than 65535 workgroups of 64),
    from 512 values (three broadcast operands, two float32 roundings), and a long column."""
    cases = []
    for op in REDUCE_V3:
        b = Builder(f"{op}/large_all_129x128x255")
        grid = b.op(
            "add",
            b.op("add", b.rand([129, 1, 1], -1, 1), b.rand([128, 1], -1, 1)),
            b.rand([255], -1, 1),
        )
        b.out(b.op(op, grid), "y")
        cases.append(b.case(op))
        b = Builder(f"{op}/large_65792x3_axis0")  # 257 * 256 rows from 257 + 256 + 3 values
        grid = b.op(
            "add",
            b.op("add", b.rand([257, 1, 1], -1, 1), b.rand([256, 1], -1, 1)),
            b.rand([3], -1, 1),
        )
        b.out(b.op(op, b.op("reshape", grid, shape=[65792, 3]), axis=0), "y")
        cases.append(b.case(op))
    return cases


# ---- non-finite agreement (docs/protocol.md "Numerics") ----------------------------------------

# gelu_grad's forward inputs and upstream gradients: every non-finite x against finite, zero
# and non-finite g; finite x against infinite g (gelu' is far from 0 at 1, -1 and 0).
GELU_GRAD_X = [math.inf, -math.inf, math.nan, 1.0, -1.0, 0.0]
GELU_GRAD_G = [0.5, -0.5, 0.0, -0.0, math.inf, -math.inf, math.nan]


def _overflow_rows(k: int) -> list[list[float]]:
    """Rows whose dot product with ones overflows in the protocol's ascending-k float32 order
    but not in float64 (or in another order), each product exact so fma changes nothing."""
    half = k // 2
    return [
        [3e38, 3e38, -3e38, -3e38] + [0.0] * (k - 4),  # +inf, then stays inf (float64: 0)
        [-3e38, -3e38, 3e38] + [0.0] * (k - 3),  # -inf (float64: -3e38)
        [3e38, 3e38, -3e38, -math.inf] + [0.0] * (k - 4),  # inf + -inf = NaN (float64: -inf)
        [3e38, -3e38] * half + [0.0] * (k - 2 * half),  # finite: 0 (pairwise: inf - inf)
        [1e37] * half + [-1e37] * (k - half),  # past k = 34 the sum overflows: inf (float64: 0)
    ]


def nonfinite_cases() -> list[dict]:
    """gelu and gelu_grad at +-inf and NaN, and matmuls whose ascending-k partial sums overflow
    (K = 4, 8 and 300: past one tile of every blocked kernel), beside ordinary rows."""
    cases = [
        single(
            "gelu/nonfinite",
            "gelu",
            lambda b: [b.input([5], [math.inf, -math.inf, math.nan, -30.0, 30.0])],
        )
    ]
    xs, gs = (g.reshape(-1) for g in np.meshgrid(GELU_GRAD_X, GELU_GRAD_G, indexing="ij"))
    cases.append(
        single(
            "gelu_grad/nonfinite",
            "gelu_grad",
            lambda b: [b.input([xs.size], xs), b.input([gs.size], gs)],
        )
    )
    for k in (4, 8, 300):

        def build(b: Builder, k: int = k) -> list[int]:
            rows = _overflow_rows(k) + [list(b.uniform([k], -2, 2))]
            return [b.input([len(rows), k], np.array(rows)), b.input([k, 3], np.ones(k * 3))]

        cases.append(single(f"matmul/overflow_k{k}", "matmul", build))
    cases.append(
        single(
            "matmul/overflow_batched",
            "matmul",
            lambda b: [
                b.input([2, 5, 4], np.array(_overflow_rows(4) * 2)),
                # b's 0.5 keeps every product exact (x 2 made 3e38 * 2 overflow alone, and an H200's
                # fused multiply-add then kept +inf where the rounded product gave inf - inf = NaN)
                b.input([4, 2], [1.0, 0.5] * 4),
            ],
        )
    )
    return cases


# ---- protocol-v3 select ops: maximum, minimum, eq..ge, where, cast, hash_uniform, dropout ---

COMPARE_OPS = ("eq", "ne", "lt", "le", "gt", "ge")
EXTREME_OPS = ("maximum", "minimum")
# every pair of these meets in the [n, 1] x [1, n] grid: NaN against everything, -0 against +0
SELECT_SPECIAL = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    2.5,
    -2.5,
    1e-30,
    -1e-30,
    3e38,
    -3e38,
    math.inf,
    -math.inf,
    math.nan,
]
SELECT_INTS = [INT32_MIN, INT32_MIN + 1, -2, -1, 0, 1, 2, INT32_MAX - 1, INT32_MAX]
SELECT_PAIRS: list[tuple[Shape, Shape]] = [
    ([], []),
    ([17], [17]),
    ([7], []),
    ([], [5]),
    ([3, 1], [4]),
    ([2, 1, 3, 1], [1, 4, 1, 5]),
]
UINT32_MAX = 2**32 - 1


def typed_input(b: Builder, shape: Shape, dtype: str, data: Iterable[int]) -> int:
    """An input of an integer dtype (int32, uint32, bool) from a list of integers."""
    flat = [int(v) for v in data]
    assert len(flat) == math.prod(shape), (b.name, shape, len(flat))
    return b._add({"op": "input", "shape": list(shape), "dtype": dtype, "data": flat})


def _counter(b: Builder, value: int) -> int:
    return typed_input(b, [], "uint32", [value])


def _select_operand(b: Builder, shape: Shape, dtype: str) -> int:
    """Random operands with many ties (small integers), float32 or int32."""
    if dtype == "int32":
        return b.rand_ints(shape, -3, 3)
    return b.input(shape, b.rng.integers(-3, 4, size=math.prod(shape)) * 0.5)


def select_binary_cases() -> list[dict]:
    """maximum, minimum and the masks at float32 and int32: the special-value grid (broadcast
    [n, 1] against [1, n]), int32 extremes, broadcasting pairs up to rank 4."""
    cases = []
    for op in EXTREME_OPS + COMPARE_OPS:
        n = len(SELECT_SPECIAL)
        cases.append(
            single(
                f"{op}/special_grid",
                op,
                lambda b, n=n: [b.input([n, 1], SELECT_SPECIAL), b.input([1, n], SELECT_SPECIAL)],
            )
        )
        k = len(SELECT_INTS)
        cases.append(
            single(
                f"{op}/int32_extremes_grid",
                op,
                lambda b, k=k: [b.ints([k, 1], SELECT_INTS), b.ints([1, k], SELECT_INTS)],
            )
        )
        for dtype in ("float32", "int32"):
            for sa, sb in SELECT_PAIRS:
                prefix = "" if dtype == "float32" else "int32_"
                cases.append(
                    single(
                        f"{op}/{prefix}{_tag(sa)}_{_tag(sb)}",
                        op,
                        lambda b, sa=sa, sb=sb, d=dtype: [
                            _select_operand(b, sa, d),
                            _select_operand(b, sb, d),
                        ],
                    )
                )
    return cases


WHERE_SHAPES: list[tuple[Shape, Shape, Shape]] = [
    ([], [], []),
    ([65], [65], [65]),
    ([4], [], [4]),
    ([2, 1, 3], [1, 4, 1], []),
    ([3, 1], [1], [1, 5]),
    ([2, 1, 3, 1], [1, 4, 1, 5], [2, 4, 3, 5]),
    ([1], [3, 2], [2]),
]


def _bools(b: Builder, shape: Shape) -> int:
    return typed_input(b, shape, "bool", b.rng.integers(0, 2, size=math.prod(shape)))


def where_cases() -> list[dict]:
    """where at float32 and int32, the three operands broadcast together (rank <= 4); the
    chosen operand's bits (signed zeros, NaN, int32 extremes)."""
    cases = []
    for sc, sa, sb in WHERE_SHAPES:
        tag = f"{_tag(sc)}_{_tag(sa)}_{_tag(sb)}"
        cases.append(
            single(
                f"where/{tag}",
                "where",
                lambda b, s=(sc, sa, sb): [_bools(b, s[0]), b.rand(s[1]), b.rand(s[2])],
            )
        )
        cases.append(
            single(
                f"where/int32_{tag}",
                "where",
                lambda b, s=(sc, sa, sb): [
                    _bools(b, s[0]),
                    b.rand_ints(s[1], INT32_MIN, INT32_MAX),
                    b.rand_ints(s[2], INT32_MIN, INT32_MAX),
                ],
            )
        )
    n = len(SELECT_SPECIAL)
    cases.append(
        single(
            "where/special_values",
            "where",
            lambda b: [
                typed_input(b, [2, 1], "bool", [1, 0]),
                b.input([n], SELECT_SPECIAL),
                b.input([n], list(reversed(SELECT_SPECIAL))),
            ],
        )
    )
    return cases


# float32 values around every cast rule: truncation, NaN, saturation edges, rounding
CAST_FLOATS = [
    0.0,
    -0.0,
    0.5,
    -0.5,
    0.99999994,
    -0.99999994,
    1.5,
    -1.5,
    2.5,
    -2.5,
    1e-30,
    -1e-30,
    16777216.0,
    -16777216.0,
    2147483520.0,
    2147483648.0,
    -2147483648.0,
    -2147483904.0,
    4294967040.0,
    4294967296.0,
    1e30,
    -1e30,
    math.inf,
    -math.inf,
    math.nan,
    123456.789,
    -98765.4321,
]
CAST_INTS = [
    INT32_MIN,
    INT32_MIN + 1,
    -16777219,
    -16777217,
    -16777216,
    -1,
    0,
    1,
    2,
    16777216,
    16777217,
    16777218,
    16777219,
    33554435,
    2147483520,
    2147483583,
    2147483584,
    INT32_MAX,
]
CAST_UINTS = [
    0,
    1,
    2,
    16777217,
    16777219,
    2**31 - 1,
    2**31,
    2**31 + 1,
    4294967040,
    4294967167,
    4294967168,
    4294967295,
]
CAST_VALUES: dict[str, list] = {
    "float32": CAST_FLOATS,
    "int32": CAST_INTS,
    "uint32": CAST_UINTS,
    "bool": [0, 1, 1, 0],
}
DTYPES = ("float32", "int32", "uint32", "bool")


def cast_cases() -> list[dict]:
    """Every (from, to) pair of dtypes on the values at each rule's edges, and a random tensor
    of each source dtype."""
    cases = []
    for src in DTYPES:
        vals = CAST_VALUES[src]
        for dst in DTYPES:

            def operand(b: Builder, src: str = src, vals: list = vals, shape: Shape = (0,)) -> int:
                shape = [len(vals)] if shape == (0,) else shape
                if src == "float32":
                    return b.input(shape, vals)
                return typed_input(b, shape, src, vals)

            cases.append(
                single(f"cast/{src}_to_{dst}", "cast", lambda b, f=operand: [f(b)], dtype=dst)
            )
        cases.append(
            single(
                f"cast/{src}_to_float32_2x3x4x5",
                "cast",
                lambda b, s=src: [
                    b.rand([2, 3, 4, 5], -1e5, 1e5, 2)
                    if s == "float32"
                    else typed_input(
                        b,
                        [2, 3, 4, 5],
                        s,
                        b.rng.integers(0, 2 if s == "bool" else 2**31 - 1, size=120),
                    )
                ],
                dtype="float32",
            )
        )
    return cases


HASH_COUNTERS = (0, 1, 7, 2**31, UINT32_MAX)


def hash_cases() -> list[dict]:
    """hash_uniform at counters 0 and 2^32 - 1 (and between), two seeds, several shapes."""
    cases = []
    for counter in HASH_COUNTERS:
        for seed in (0, 12345, UINT32_MAX):
            cases.append(
                single(
                    f"hash_uniform/counter_{counter}_seed_{seed}",
                    "hash_uniform",
                    lambda b, c=counter: [_counter(b, c)],
                    shape=[1000],
                    seed=seed,
                )
            )
    for shape in ([], [1], [7], [3, 5], [2, 3, 4, 5], [65537]):
        cases.append(
            single(
                f"hash_uniform/{_tag(shape)}",
                "hash_uniform",
                lambda b: [_counter(b, 3)],
                shape=list(shape),
                seed=42,
            )
        )
    cases.append(
        single(
            "hash_uniform/counter_rank1",
            "hash_uniform",
            lambda b: [typed_input(b, [1], "uint32", [UINT32_MAX])],
            shape=[64],
        )
    )
    return cases


DROPOUT_P = [0.0, 0.1, 0.5, 0.9, 0.999, 0.99999994]


def dropout_cases() -> list[dict]:
    """dropout at p = 0 (identity), p near 1 (0.999 and the largest float32 below 1), counters
    0 and 2^32 - 1; special values in a (a dropped NaN or inf is NaN, a dropped -x is -0)."""
    cases = []
    for p in DROPOUT_P:
        for counter in (0, UINT32_MAX):
            cases.append(
                single(
                    f"dropout/p{p}_counter_{counter}",
                    "dropout",
                    lambda b, c=counter: [b.rand([2, 100], -3, 3), _counter(b, c)],
                    p=p,
                    seed=7,
                )
            )
    special = SIGNED + NONFINITE
    cases.append(
        single(
            "dropout/special_values",
            "dropout",
            lambda b: [b.input([4, len(special)], special * 4), _counter(b, 1)],
            p=0.5,
        )
    )
    cases.append(
        single("dropout/scalar", "dropout", lambda b: [b.input([], [2.0]), _counter(b, 2)], p=0.25)
    )
    return cases


def select_chain_cases() -> list[dict]:
    """A float32 0/1 mask (cast of a comparison), where on it, and dropout written by hand
    (hash_uniform >= p, cast, multiply) beside the dropout op."""
    b = Builder("chain/select_mask_where_dropout")
    keep = b.out
    x = b.rand([4, 8], -2, 2)
    y = b.rand([8], -2, 2)
    mask = keep(b.op("lt", x, y))
    keep(b.op("cast", mask, dtype="float32"))
    keep(b.op("where", mask, x, keep(b.op("maximum", x, y))))
    counter = _counter(b, 9)
    u = keep(b.op("hash_uniform", counter, shape=[4, 8], seed=3))
    kept = keep(b.op("cast", keep(b.op("ge", u, b.full([], 0.25))), dtype="float32"))
    keep(b.op("dropout", x, counter, p=0.25, seed=3))
    keep(b.op("mul", x, kept))
    keep(b.op("cast", keep(b.op("cast", x, dtype="int32")), dtype="uint32"))
    return [b.case("chain")]


def large_select_cases() -> list[dict]:
    """More than 65535 workgroups of 64: a 2056 x 2048 where / comparison / maximum / dropout
    from broadcast operands (hash_uniform columns and rows: no data in the corpus), and a
    hash_uniform of 4210688 elements."""
    cases = []
    for op in ("where", "lt", "maximum"):
        b = Builder(f"{op}/large_2056x2048")
        col = b.op("hash_uniform", _counter(b, 1), shape=[2056, 1], seed=11)
        row = b.op("hash_uniform", _counter(b, 2), shape=[1, 2048], seed=12)
        operands = [b.op("lt", col, row), col, row] if op == "where" else [col, row]
        b.out(b.op(op, *operands), "y")
        cases.append(b.case(op))
    cases.append(
        single(
            "hash_uniform/large_4210688",
            "hash_uniform",
            lambda b: [_counter(b, UINT32_MAX)],
            shape=[4210688],
            seed=1,
        )
    )
    b = Builder("dropout/large_2056x2048")
    grid = b.op(
        "add",
        b.op("hash_uniform", _counter(b, 3), shape=[2056, 1]),
        b.op("hash_uniform", _counter(b, 4), shape=[1, 2048]),
    )
    b.out(b.op("dropout", grid, _counter(b, 5), p=0.5), "y")
    cases.append(b.case("dropout"))
    return cases


# ---- protocol v4: slice, slice_scatter, index_select, gather, index_add, scatter_add, concat,
# pad (exact: every lane gives the reference's bits; index_add/scatter_add in the fixed order)


def _data(b: Builder, shape: Shape, dtype: str) -> int:
    return b.rand_ints(shape, -1000, 1000) if dtype == "int32" else b.rand(shape, -5, 5)


def _idx(b: Builder, shape: Shape, n: int) -> int:
    return b.ints(shape, b.rng.integers(0, n, size=math.prod(shape)))


N = None  # an open end of a slice, as in Python
SLICES: list[tuple[str, Shape, list[list[int | None]]]] = [
    ("rank1_step2", [10], [[1, 9, 2]]),
    ("rank1_reverse", [7], [[N, N, -1]]),
    ("neg_steps", [5, 6], [[4, 0, -2], [N, N, -3]]),
    ("clamped_ends", [5, 4], [[-100, 100, 1], [2, 99, N]]),
    ("neg_start_stop", [9], [[-2, -8, -2]]),
    ("rank4", [2, 3, 4, 5], [[1, N, 1], [N, N, -1], [0, 4, 3], [-2, N, N]]),
    ("one_element", [3, 3], [[2, 3, 1], [-1, -2, -1]]),
]


def slice_v4_cases() -> list[dict]:
    """slice and slice_scatter: positive and negative steps, clamped and negative ends, rank 4,
    float32 and int32 data."""
    cases = []
    for dtype in ("float32", "int32"):
        for tag, shape, slices in SLICES:
            cases.append(
                single(
                    f"slice/{dtype}_{tag}",
                    "slice",
                    lambda b, s=shape, d=dtype: [_data(b, s, d)],
                    slices=slices,
                )
            )
            want = [len(range(*slice(*e).indices(n))) for e, n in zip(slices, shape)]
            cases.append(
                single(
                    f"slice_scatter/{dtype}_{tag}",
                    "slice_scatter",
                    lambda b, s=shape, w=want, d=dtype: [_data(b, s, d), _data(b, w, d)],
                    slices=slices,
                )
            )
    cases.append(
        single(
            "slice/special_values",
            "slice",
            lambda b: [b.input([15], SIGNED[:12] + NONFINITE)],
            slices=[[N, N, -2]],
        )
    )
    return cases


def index_v4_cases() -> list[dict]:
    """index_select and gather (repeated indices, every axis, rank 4, int32 data)."""
    cases = []
    for dtype in ("float32", "int32"):
        cases.append(
            single(
                f"index_select/{dtype}_axis0_repeated",
                "index_select",
                lambda b, d=dtype: [_data(b, [5, 4], d), b.ints([6], [4, 0, 4, 1, 1, 3])],
                axis=0,
            )
        )
        cases.append(
            single(
                f"index_select/{dtype}_last_axis",
                "index_select",
                lambda b, d=dtype: [_data(b, [3, 7], d), _idx(b, [9], 7)],
                axis=-1,
            )
        )
        cases.append(
            single(
                f"index_select/{dtype}_rank4_axis2",
                "index_select",
                lambda b, d=dtype: [_data(b, [2, 3, 4, 5], d), _idx(b, [5], 4)],
                axis=2,
            )
        )
        cases.append(
            single(
                f"gather/{dtype}_axis1",
                "gather",
                lambda b, d=dtype: [_data(b, [4, 5], d), _idx(b, [4, 7], 5)],
                axis=1,
            )
        )
        cases.append(
            single(
                f"gather/{dtype}_smaller_idx_axis0",
                "gather",
                lambda b, d=dtype: [_data(b, [6, 5], d), _idx(b, [3, 2], 6)],
                axis=0,
            )
        )
        cases.append(
            single(
                f"gather/{dtype}_rank4_axis3",
                "gather",
                lambda b, d=dtype: [_data(b, [2, 3, 2, 5], d), _idx(b, [2, 2, 2, 4], 5)],
                axis=-1,
            )
        )
    cases.append(
        single(
            "gather/rank1",
            "gather",
            lambda b: [b.input([8], SIGNED[:8]), b.ints([5], [7, 0, 7, 3, 1])],
            axis=0,
        )
    )
    return cases


# Order-sensitive float32 sources: 2^24 + 1 + 1 - 2^24 depends on the order of the additions.
ORDERED = [16777216.0, 1.0, 1.0, -16777216.0, 0.5, 3e38, 3e38, -3e38]


def accumulate_v4_cases() -> list[dict]:
    """index_add and scatter_add: repeated indices with order-sensitive float32 values (a
    different order gives other bits), int32 wrap-around, rank 3 and 4."""
    cases = []
    for dtype in ("float32", "int32"):
        cases.append(
            single(
                f"index_add/{dtype}_repeated_axis0",
                "index_add",
                lambda b, d=dtype: [
                    _data(b, [4, 3], d),
                    b.ints([6], [2, 0, 2, 2, 3, 0]),
                    _data(b, [6, 3], d),
                ],
                axis=0,
            )
        )
        cases.append(
            single(
                f"index_add/{dtype}_rank3_axis1",
                "index_add",
                lambda b, d=dtype: [
                    _data(b, [2, 5, 3], d),
                    _idx(b, [9], 5),
                    _data(b, [2, 9, 3], d),
                ],
                axis=1,
            )
        )
        cases.append(
            single(
                f"scatter_add/{dtype}_axis0",
                "scatter_add",
                lambda b, d=dtype: [_data(b, [3, 4], d), _idx(b, [5, 4], 3), _data(b, [5, 4], d)],
                axis=0,
            )
        )
        cases.append(
            single(
                f"scatter_add/{dtype}_rank4_smaller_idx",
                "scatter_add",
                lambda b, d=dtype: [
                    _data(b, [2, 3, 4, 3], d),
                    _idx(b, [1, 2, 6, 3], 4),
                    _data(b, [1, 2, 6, 3], d),
                ],
                axis=2,
            )
        )
    cases.append(
        single(
            "index_add/float32_order_sensitive",
            "index_add",
            lambda b: [
                b.input([2, 1], [0.0, -0.0]),
                b.ints([8], [0] * 4 + [1] * 4),
                b.input([8, 1], ORDERED),
            ],
            axis=0,
        )
    )
    cases.append(
        single(
            "scatter_add/float32_order_sensitive",
            "scatter_add",
            lambda b: [
                b.input([1, 2], [0.0, 1.0]),
                b.ints([1, 8], [0, 1] * 4),
                b.input([1, 8], ORDERED),
            ],
            axis=1,
        )
    )
    cases.append(
        single(
            "index_add/int32_wraps",
            "index_add",
            lambda b: [
                b.ints([2], [INT32_MAX, INT32_MIN]),
                b.ints([3], [0, 1, 0]),
                b.ints([3], [1, -1, INT32_MAX]),
            ],
            axis=0,
        )
    )
    return cases


def concat_pad_v4_cases() -> list[dict]:
    """concat of 2 and of 8 operands (unequal sizes along the axis, one node twice), int32,
    rank 4; pad with zero widths on some axes, NaN and int32 values, rank 4."""
    cases = []
    for dtype in ("float32", "int32"):
        b = Builder(f"concat/{dtype}_two_axis0")
        b.out(b.concat([_data(b, [2, 3], dtype), _data(b, [4, 3], dtype)], 0), "y")
        cases.append(b.case("concat"))
        b = Builder(f"concat/{dtype}_eight_axis1")
        parts = [_data(b, [3, k % 3 + 1], dtype) for k in range(7)]
        b.out(b.concat([*parts, parts[0]], -1), "y")
        cases.append(b.case("concat"))
        b = Builder(f"concat/{dtype}_rank4_axis2")
        b.out(
            b.concat(
                [
                    _data(b, [2, 1, 3, 2], dtype),
                    _data(b, [2, 1, 1, 2], dtype),
                    _data(b, [2, 1, 2, 2], dtype),
                ],
                2,
            ),
            "y",
        )
        cases.append(b.case("concat"))
        cases.append(
            single(
                f"pad/{dtype}_zero_widths",
                "pad",
                lambda b, d=dtype: [_data(b, [3, 4], d)],
                widths=[[0, 0], [2, 1]],
                value=-7,
            )
        )
        cases.append(
            single(
                f"pad/{dtype}_rank4",
                "pad",
                lambda b, d=dtype: [_data(b, [2, 1, 3, 2], d)],
                widths=[[1, 0], [0, 0], [2, 2], [0, 1]],
            )
        )
    cases.append(
        single(
            "pad/float32_nan_value",
            "pad",
            lambda b: [b.rand([5], -1, 1)],
            widths=[[3, 2]],
            value="nan",
        )
    )
    cases.append(
        single(
            "pad/float32_fraction_value",
            "pad",
            lambda b: [b.rand([2, 2], -1, 1)],
            widths=[[1, 1], [1, 1]],
            value=0.1,
        )
    )
    cases.append(
        single(
            "pad/int32_extreme_value",
            "pad",
            lambda b: [b.rand_ints([4])],
            widths=[[1, 1]],
            value=INT32_MIN,
        )
    )
    # reshape at int32 (t[..., 0] on int32 data is a slice and a reshape)
    cases.append(
        single(
            "reshape/int32_2x3x4_to_4x6",
            "reshape",
            lambda b: [b.ints([2, 3, 4], [*range(-12, 11), INT32_MIN])],
            shape=[4, -1],
        )
    )
    b = Builder("chain/int32_index_drops_an_axis")
    b.out(
        b.op(
            "reshape", b.op("slice", b.rand_ints([3, 4]), slices=[[N, N, -1], [1, 2, 1]]), shape=[3]
        )
    )
    cases.append(b.case("chain"))
    return cases


def v4_chain_cases() -> list[dict]:
    """Selection ops feeding each other, and indices computed in the graph (argmax: indices a
    GPU reads from a buffer it wrote, the run-time checked path)."""
    cases = []
    b = Builder("chain/v4_select")
    x = b.rand([6, 8], -3, 3)
    s = b.op("slice", x, slices=[[N, N, -1], [1, 7, 2]])
    i = b.op("index_select", s, b.ints([4], [0, 5, 5, 2]), axis=0)
    c = b.concat([i, s], 0)
    p = b.op("pad", c, widths=[[1, 0], [0, 2]], value=0.25)
    for node in (s, i, c, p):
        b.out(node)
    cases.append(b.case("chain"))
    b = Builder("chain/v4_argmax_gather")
    x = b.rand([5, 7], -3, 3)
    where = b.op("argmax", x, axis=1, keepdim=True)
    b.out(b.op("gather", x, where, axis=1))
    b.out(b.op("scatter_add", b.full([5, 7], 0.0), where, b.full([5, 1], 1.0), axis=1))
    cases.append(b.case("chain"))
    return cases


def large_v4_cases() -> list[dict]:
    """Large shapes (more than 65535 workgroups of 64 on GPUs): a strided reverse slice, an
    index_select and an index_add of 4096 repeated indices, concat and pad of 2^18 elements."""
    cases = []
    b = Builder("slice/large_514x512")
    grid = b.op("add", b.rand([514, 1], -1, 1), b.rand([512], -1, 1))
    b.out(b.op("slice", grid, slices=[[1, N, 1], [N, N, -1]]), "y")
    cases.append(b.case("slice"))
    b = Builder("index_select/large_4096_rows")  # 4096 indices: 8 copies of 512 (short JSON)
    grid = b.op("add", b.rand([512, 1], -1, 1), b.rand([256], -1, 1))
    b.out(b.op("index_select", grid, b.concat([_idx(b, [512], 512)] * 8, 0), axis=0), "y")
    cases.append(b.case("index_select"))
    b = Builder("index_add/large_4096_repeated")
    cube = b.op(
        "add", b.op("add", b.rand([64, 1, 1], -1, 1), b.rand([64, 1], -1, 1)), b.rand([64], -1, 1)
    )
    grid = b.op("reshape", cube, shape=[4096, 64])
    idx = b.concat([_idx(b, [512], 97)] * 8, 0)
    b.out(b.op("index_add", b.full([97, 64], 0.0), idx, grid, axis=0), "y")
    cases.append(b.case("index_add"))
    b = Builder("concat/large_pad_262144")
    grid = b.op("add", b.rand([256, 1], -1, 1), b.rand([512], -1, 1))
    b.out(b.op("pad", b.concat([grid, grid], 0), widths=[[0, 0], [3, 0]], value=1.0), "y")
    cases.append(b.case("pad"))
    return cases


# ---- protocol v6: the window ops (conv2d, max_pool2d, avg_pool2d, resize) -----------------


def conv(b: Builder, x: int, w: int, bias: int | None = None, **attrs: object) -> int:
    """conv2d's node: its bias is the variadic list field (0 or 1 ids)."""
    return b._add({"op": "conv2d", "a": x, "w": w, "bias": [] if bias is None else [bias], **attrs})


def _plane(b: Builder, a: Shape, lo: float = -2.0) -> int:
    """An input [N, C, H, W]: random data, or for a large plane (over 2048 elements) the sum
    of a random [N, C, H, 1] and a random [W] made in the graph (short JSON)."""
    if math.prod(a) <= 2048:
        return b.rand(a, lo, 2)
    return b.op("add", b.rand([*a[:3], 1], lo / 2, 1), b.rand([a[3]], lo / 2, 1))


def _conv_case(
    name: str, a: Shape, w: Shape, bias: bool = True, lo: float = -2.0, **attrs: object
) -> dict:
    b = Builder(f"conv2d/{name}")
    x, k = _plane(b, a, lo), b.rand(w, -1, 1)
    b.out(conv(b, x, k, b.rand([w[0]], -1, 1) if bias else None, **attrs), "y")
    return b.case("conv2d")


def conv2d_cases() -> list[dict]:
    """conv2d: bias or none, strides, asymmetric padding (ONNX pads), dilations, 1x1, groups
    (2, depthwise, depthwise with a multiplier), a window that is all padding (bias only), a
    kernel as big as the padded input, K = 576, a 64x64 plane, non-finite inputs."""
    cases = [
        _conv_case("basic_3x3_bias", [1, 3, 7, 6], [4, 3, 3, 3]),
        _conv_case("no_bias", [1, 3, 7, 6], [4, 3, 3, 3], bias=False),
        _conv_case(
            "stride2_pad1", [2, 3, 9, 8], [5, 3, 3, 3], strides=[2, 2], padding=[1, 1, 1, 1]
        ),
        _conv_case("asymmetric_padding", [1, 2, 6, 7], [3, 2, 3, 2], padding=[0, 1, 2, 3]),
        _conv_case("dilation2", [1, 2, 9, 9], [3, 2, 3, 3], dilations=[2, 2]),
        _conv_case(
            "stride_dilation_mixed",
            [1, 3, 11, 10],
            [2, 3, 2, 3],
            strides=[2, 1],
            dilations=[1, 3],
            padding=[1, 2, 0, 1],
        ),
        _conv_case("pointwise_1x1", [2, 8, 5, 5], [4, 8, 1, 1]),
        _conv_case("pointwise_1x1_stride2", [1, 6, 7, 7], [3, 6, 1, 1], bias=False, strides=[2, 2]),
        _conv_case("depthwise", [1, 6, 8, 8], [6, 1, 3, 3], groups=6, padding=[1, 1, 1, 1]),
        _conv_case("depthwise_multiplier2", [2, 4, 6, 5], [8, 1, 3, 3], groups=4, strides=[1, 2]),
        _conv_case("groups2", [2, 4, 6, 6], [6, 2, 3, 3], groups=2),
        _conv_case(
            "groups3_no_bias",
            [1, 6, 5, 5],
            [3, 2, 2, 2],
            bias=False,
            groups=3,
            padding=[1, 0, 0, 1],
        ),
        _conv_case("kernel_fills_padded_input", [1, 2, 3, 4], [2, 2, 5, 5], padding=[1, 0, 1, 1]),
        _conv_case("rect_kernel_1x5", [1, 2, 4, 9], [3, 2, 1, 5], padding=[0, 2, 0, 2]),
        _conv_case(
            "windows_in_padding", [1, 1, 2, 2], [2, 1, 1, 1], strides=[2, 2], padding=[2, 2, 2, 2]
        ),
        _conv_case("k576", [1, 64, 3, 3], [2, 64, 3, 3], lo=0.0, padding=[1, 1, 1, 1]),
        _conv_case(
            "plane_64x64", [1, 2, 64, 64], [4, 2, 3, 3], strides=[1, 1], padding=[1, 1, 1, 1]
        ),
    ]
    # over 32 output channels per group and pixels: on a software adapter (any workgroup
    # count) the GPU lanes plan im2col + the 64x64 tiled matmul (v4 and scalar loads)
    cases += [
        _conv_case("gemm_im2col_bias", [1, 4, 8, 8], [40, 4, 3, 3], padding=[1, 1, 1, 1]),
        _conv_case(
            "gemm_groups2_strided",
            [1, 4, 13, 11],
            [80, 2, 3, 2],
            groups=2,
            strides=[1, 1],
            dilations=[1, 2],
            padding=[0, 1, 2, 1],
        ),
        _conv_case("gemm_pointwise", [1, 8, 8, 8], [40, 8, 1, 1]),
        _conv_case("gemm_pointwise_no_bias", [2, 6, 7, 7], [36, 6, 1, 1], bias=False),
    ]
    # padding taps read zeros: an infinite weight meets them as inf * 0 = NaN (as torch)
    b = Builder("conv2d/inf_weight_meets_padding")
    w = b.input([1, 1, 2, 2], [math.inf, 1, 1, 1])
    b.out(conv(b, b.rand([1, 1, 3, 3], 0.5, 1), w, padding=[1, 1, 0, 0]), "y")
    cases.append(b.case("conv2d"))
    b = Builder("conv2d/nonfinite_input")
    x = b.input(
        [1, 1, 4, 4],
        [1, 2, math.inf, 0.5, -1, math.nan, 2, 0, 1, -0.0, 3, -math.inf, 0.25, 1, 1, 2],
    )
    b.out(conv(b, x, b.rand([2, 1, 2, 2], 0.5, 1), b.rand([2], -1, 1)), "y")
    cases.append(b.case("conv2d"))
    return cases


def _pool(b: Builder, op: str, x: int, **attrs: object) -> int:
    return b._add({"op": op, "a": x, **attrs})


def _pool_case(
    op: str, name: str, a: Shape, data: np.ndarray | None = None, **attrs: object
) -> dict:
    b = Builder(f"{op}/{name}")
    x = b.rand(a) if data is None else b.input(a, data)
    b.out(_pool(b, op, x, **attrs), "y")
    return b.case(op)


def pool2d_cases() -> list[dict]:
    """max_pool2d and avg_pool2d: kernels and strides, padding (asymmetric too) that never
    wins the max, dilation, ceil_mode (with the torch rule dropping a last window), global
    pooling, avg with count_include_pad both ways, and special values (NaN, -0) for max."""
    cases = []
    for op in ("max_pool2d", "avg_pool2d"):
        shapes = {
            "2x2_stride2": ([2, 3, 6, 8], {"kernel": [2, 2], "strides": [2, 2]}),
            "3x3_stride1": ([1, 2, 5, 6], {"kernel": [3, 3]}),
            "3x3_stride2_pad1": (
                [1, 3, 7, 7],
                {"kernel": [3, 3], "strides": [2, 2], "padding": [1, 1, 1, 1]},
            ),
            "asymmetric_padding": (
                [1, 2, 5, 6],
                {"kernel": [2, 3], "strides": [2, 1], "padding": [1, 0, 0, 2]},
            ),
            "dilation2": (
                [1, 2, 8, 7],
                {"kernel": [2, 2], "dilations": [2, 2], "padding": [1, 1, 1, 1]},
            ),
            "ceil_mode": (
                [1, 2, 7, 6],
                {"kernel": [3, 2], "strides": [2, 2], "padding": [1, 0, 1, 0], "ceil_mode": True},
            ),
            "ceil_mode_drops_last": (
                [1, 1, 5, 5],
                {"kernel": [2, 2], "strides": [2, 2], "padding": [1, 1, 1, 1], "ceil_mode": True},
            ),
            "global": ([2, 4, 5, 3], {"kernel": [5, 3]}),
        }
        for name, (shape, attrs) in shapes.items():
            if op == "avg_pool2d" and any(attrs.get("padding", [0])):
                for include in (False, True):
                    cases.append(
                        _pool_case(
                            op,
                            f"{name}_{'include' if include else 'exclude'}_pad",
                            shape,
                            count_include_pad=include,
                            **attrs,
                        )
                    )
            else:
                cases.append(_pool_case(op, name, shape, **attrs))
    special = np.array(
        [-0.0, 0.0, -1, -2, math.nan, 3, -math.inf, -5, 0.0, -0.0, -0.0, -0.0, -3, -4, -6, -7],
        dtype=np.float64,
    )
    cases.append(
        _pool_case(
            "max_pool2d",
            "nan_and_signed_zeros",
            [1, 1, 4, 4],
            special,
            kernel=[2, 2],
            strides=[2, 2],
        )
    )
    cases.append(
        _pool_case(
            "max_pool2d",
            "negative_with_padding",
            [1, 1, 3, 3],
            -np.arange(1, 10, dtype=np.float64),
            kernel=[3, 3],
            padding=[1, 1, 1, 1],
        )
    )
    return cases


def _resize_case(name: str, a: Shape, size: Shape, **attrs: object) -> dict:
    b = Builder(f"resize/{name}")
    b.out(b._add({"op": "resize", "a": _plane(b, a), "size": list(size), **attrs}), "y")
    return b.case("resize")


def resize_cases() -> list[dict]:
    """resize: nearest in each nearest_mode and coordinate_transformation_mode (torch's
    nearest = asymmetric + floor, nearest-exact = half_pixel + round_prefer_ceil, ONNX's
    default half_pixel + round_prefer_floor), up, down and to 1; linear (bilinear) in the four
    coordinate modes, up and down; a 100x100 plane."""
    nearest = [
        ("nearest_asymmetric_floor_up2", [1, 2, 3, 4], [6, 8], "asymmetric", "floor"),
        ("nearest_asymmetric_ceil_down", [1, 1, 7, 9], [3, 4], "asymmetric", "ceil"),
        (
            "nearest_half_pixel_prefer_floor",
            [2, 2, 4, 3],
            [6, 7],
            "half_pixel",
            "round_prefer_floor",
        ),
        (
            "nearest_half_pixel_prefer_ceil_down",
            [1, 2, 9, 7],
            [4, 5],
            "half_pixel",
            "round_prefer_ceil",
        ),
        ("nearest_align_corners", [1, 1, 4, 5], [7, 3], "align_corners", "round_prefer_floor"),
        (
            "nearest_pytorch_half_pixel_to_1",
            [1, 2, 5, 4],
            [1, 6],
            "pytorch_half_pixel",
            "round_prefer_ceil",
        ),
    ]
    cases = [
        _resize_case(n, a, s, coordinate_transformation_mode=c, nearest_mode=r)
        for n, a, s, c, r in nearest
    ]
    linear = [
        ("linear_half_pixel_up", [1, 2, 3, 4], [7, 9], "half_pixel"),
        ("linear_half_pixel_down", [2, 1, 9, 8], [4, 3], "half_pixel"),
        ("linear_align_corners", [1, 2, 4, 5], [7, 3], "align_corners"),
        ("linear_asymmetric", [1, 1, 5, 3], [8, 6], "asymmetric"),
        ("linear_pytorch_half_pixel_to_1", [1, 2, 4, 6], [1, 5], "pytorch_half_pixel"),
        ("linear_same_size", [1, 1, 3, 3], [3, 3], "half_pixel"),
    ]
    cases += [
        _resize_case(n, a, s, mode="linear", coordinate_transformation_mode=c)
        for n, a, s, c in linear
    ]
    cases.append(_resize_case("linear_plane_100x100", [1, 1, 100, 100], [150, 130], mode="linear"))
    return cases


def window_chain_cases() -> list[dict]:
    """A small CNN's forward pass: conv2d -> relu -> max_pool2d -> depthwise conv2d ->
    avg_pool2d -> resize (every node checked from the backend's own operands)."""
    b = Builder("chain/v6_cnn")
    x = b.rand([1, 2, 10, 10])
    c1 = conv(b, x, b.rand([4, 2, 3, 3], -1, 1), b.rand([4], -1, 1), padding=[1, 1, 1, 1])
    r = b.op("relu", c1)
    p = _pool(b, "max_pool2d", r, kernel=[2, 2], strides=[2, 2])
    d = conv(b, p, b.rand([4, 1, 3, 3], -1, 1), groups=4, padding=[1, 1, 1, 1])
    a = _pool(b, "avg_pool2d", d, kernel=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1])
    z = b._add({"op": "resize", "a": a, "size": [5, 5], "mode": "linear"})
    for node in (c1, r, p, d, a, z):
        b.out(node)
    return [b.case("chain")]


# ---- q4_k / q6_k weights decoded in matmul_q and dequantize; matmul_fixed -----------------

QUANT_KINDS = ("q4_k", "q6_k")
# f16 bit patterns for scales: extreme, subnormal, signed zeros, negative, ordinary
F16_SPECIAL = [
    0x7BFF,
    0xFBFF,
    0x0001,
    0x03FF,
    0x8001,
    0x0000,
    0x8000,
    0x3C00,
    0xBC00,
    0x0400,
    0x2E66,
    0x5A00,
]


# bytes and values of a block, and where its f16 fields are
BLOCK_LAYOUT = {
    "q4_k": (144, 256, [0, 2]),
    "q6_k": (210, 256, [208]),
    "q8_0": (34, 32, [0]),
    "q4_0": (18, 32, [0]),
}


def random_blocks(b: Builder, kind: str, n: int, k: int, special: bool = False) -> bytes:
    """Random block bytes whose f16 fields are finite (ggml never writes inf/NaN scales);
    `special` draws them from F16_SPECIAL (65504, subnormals, -0, ...)."""
    size, values, fields = BLOCK_LAYOUT[kind]
    blocks = b.rng.integers(0, 256, size=(n * k // values, size), dtype=np.uint8)
    for at in fields:
        if special:
            bits = np.array(F16_SPECIAL, np.uint16)[
                b.rng.integers(0, len(F16_SPECIAL), blocks.shape[0])
            ]
        else:  # exponent 0..30: a finite f16 of either sign, up to 65504
            bits = b.rng.integers(0, 0x7C00, blocks.shape[0]).astype(np.uint16)
            bits |= (b.rng.integers(0, 2, blocks.shape[0]) << 15).astype(np.uint16)
        blocks[:, at] = bits & 0xFF
        blocks[:, at + 1] = bits >> 8
    return blocks.tobytes()


def quantized_weight(b: Builder, kind: str, n: int, k: int) -> int:
    """A weight quantized from random floats by ggml's reference quantizer: gpulab.quant's
    ports (q4_k, q6_k) or gguf-py's (q8_0, q4_0)."""
    from gpulab import quant

    w = b.rng.standard_normal((n, k)).astype(np.float32) * 0.5
    if kind in quant.QUANTIZERS:
        return b.quantized(kind, [n, k], quant.quantize(w, kind))
    import gguf  # gguf-py: a test dependency, as the generator is

    raw = gguf.quants.quantize(w, gguf.GGMLQuantizationType[kind.upper()])
    return b.quantized(kind, [n, k], raw.tobytes())


def small_ints(b: Builder, shape: Shape) -> int:
    """A float32 input of integers in -9..9 (two characters a value in JSON)."""
    return b.input(shape, b.rng.integers(-9, 10, math.prod(shape)))


def quant_cases() -> list[dict]:
    cases = []
    for kind in QUANT_KINDS:
        for n, k in ((1, 256), (3, 512), (9, 256)):
            cases.append(
                single(
                    f"dequantize/{kind}_random_{n}x{k}",
                    "dequantize",
                    lambda b, n=n, k=k, kind=kind: [
                        b.quantized(kind, [n, k], random_blocks(b, kind, n, k))
                    ],
                )
            )
        cases.append(
            single(
                f"dequantize/{kind}_special_scales",
                "dequantize",
                lambda b, kind=kind: [
                    b.quantized(kind, [24, 256], random_blocks(b, kind, 24, 256, True))
                ],
            )
        )
        cases.append(
            single(
                f"dequantize/{kind}_quantized",
                "dequantize",
                lambda b, kind=kind: [quantized_weight(b, kind, 4, 512)],
            )
        )
        # x of small integers keeps the corpus short (the weights carry the variety); more
        # than 8 rows (one workgroup's) and N not a multiple of 8 on the GPUs; batched x
        # K of 1, 2 and 5 blocks (the GPU kernel's k-split 2 with an odd count)
        shapes = [
            ([1, 256], 1),
            ([1, 512], 5),
            ([3, 256], 8),
            ([9, 256], 17),
            ([2, 3, 256], 7),
            ([2, 1, 5, 256], 3),
            ([2, 1280], 3),
        ]
        # the GEMV kernels (x of at most 4 rows): 4 rows, 3 blocks (an odd count)
        shapes.append(([4, 768], 3))
        for sa, n in shapes:
            name = f"matmul_q/{kind}_{'x'.join(map(str, sa))}_n{n}"
            cases.append(
                single(
                    name,
                    "matmul_q",
                    lambda b, sa=sa, n=n, kind=kind: [
                        small_ints(b, sa),
                        quantized_weight(b, kind, n, sa[-1]),
                    ],
                )
            )
        cases.append(
            single(
                f"matmul_q/{kind}_random_bytes",
                "matmul_q",
                lambda b, kind=kind: [
                    b.rand([2, 512], -2.0, 2.0, 2),
                    b.quantized(kind, [6, 512], random_blocks(b, kind, 6, 512)),
                ],
            )
        )
        cases.append(
            single(
                f"matmul_q/{kind}_special_scales",
                "matmul_q",
                lambda b, kind=kind: [
                    small_ints(b, [2, 256]),
                    b.quantized(kind, [8, 256], random_blocks(b, kind, 8, 256, True)),
                ],
            )
        )
    return cases


def quant32_cases() -> list[dict]:
    """q8_0 and q4_0 (32-value blocks): dequantize, dequantize_rows and matmul_q (quant.wgsl
    matmul_q32: rows past one workgroup's 8, each of its QL widths 8, 16 and 32)."""
    cases = []
    for kind in ("q8_0", "q4_0"):
        for n, k in ((1, 32), (5, 96)):
            cases.append(
                single(
                    f"dequantize/{kind}_random_{n}x{k}",
                    "dequantize",
                    lambda b, n=n, k=k, kind=kind: [
                        b.quantized(kind, [n, k], random_blocks(b, kind, n, k))
                    ],
                )
            )
        cases.append(
            single(
                f"dequantize/{kind}_special_scales",
                "dequantize",
                lambda b, kind=kind: [
                    b.quantized(kind, [12, 64], random_blocks(b, kind, 12, 64, True))
                ],
            )
        )
        cases.append(
            single(
                f"dequantize_rows/{kind}_rows",
                "dequantize_rows",
                lambda b, kind=kind: [
                    b.quantized(kind, [7, 64], random_blocks(b, kind, 7, 64)),
                    b.ints([5], [6, 0, 3, 3, 6]),
                ],
            )
        )
        shapes = [([1, 32], 1), ([1, 576], 5), ([3, 64], 9), ([9, 32], 17), ([2, 3, 64], 7)]
        shapes.append(([2, 1280], 3))
        for sa, n in shapes:
            name = f"matmul_q/{kind}_{'x'.join(map(str, sa))}_n{n}"
            cases.append(
                single(
                    name,
                    "matmul_q",
                    lambda b, sa=sa, n=n, kind=kind: [
                        small_ints(b, sa),
                        quantized_weight(b, kind, n, sa[-1]),
                    ],
                )
            )
        cases.append(
            single(
                f"matmul_q/{kind}_special_scales",
                "matmul_q",
                lambda b, kind=kind: [
                    small_ints(b, [2, 64]),
                    b.quantized(kind, [8, 64], random_blocks(b, kind, 8, 64, True)),
                ],
            )
        )
    for kind in ("q4_k", "q6_k"):
        cases.append(
            single(
                f"dequantize_rows/{kind}_rows",
                "dequantize_rows",
                lambda b, kind=kind: [
                    b.quantized(kind, [3, 256], random_blocks(b, kind, 3, 256)),
                    b.ints([2], [2, 0]),
                ],
            )
        )
    return cases


def matmul_fixed_cases() -> list[dict]:
    cases = []
    shapes: list[tuple[Shape, Shape]] = [
        ([1, 1], [1, 1]),
        ([2, 3], [3, 4]),
        ([17, 33], [33, 9]),
        ([1, 300], [300, 2]),
        ([2, 3, 4], [2, 4, 5]),
        ([2, 1, 3, 4], [1, 5, 4, 2]),
        ([2, 3, 4], [4, 5]),
    ]
    for frac in (0, 16, 30):
        for sa, sb in shapes:
            name = f"matmul_fixed/f{frac}_{'x'.join(map(str, sa))}_{'x'.join(map(str, sb))}"
            cases.append(
                single(
                    name,
                    "matmul_fixed",
                    lambda b, sa=sa, sb=sb, frac=frac: [
                        b.rand(sa, -2.0, 2.0, 5),
                        b.rand(sb, -2.0, 2.0, 5),
                    ],
                    frac_bits=frac,
                )
            )
    # halves round to even (f 0: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, -0.5 -> -0, -2.5 -> -2)
    cases.append(
        single(
            "matmul_fixed/ties_to_even",
            "matmul_fixed",
            lambda b: [
                b.input([1, 8], [0.5, 1.5, 2.5, -0.5, -2.5, 3.5, -0.0, 1e-40]),
                b.input([8, 1], [1, 10, 100, 1000, 10000, 100000, 7, 9]),
            ],
            frac_bits=0,
        )
    )
    # saturation, NaN -> 0, infinities saturate; sums past 2^32 and 2^63 (int64 wraps)
    cases.append(
        single(
            "matmul_fixed/saturate_nan_inf",
            "matmul_fixed",
            lambda b: [
                b.input(
                    [2, 4], [3e9, -3e9, math.nan, math.inf, -math.inf, 1e20, 2.0**31, -(2.0**31)]
                ),
                b.input([4, 2], [1, 2, 3, 4, 5, 6, 7, 8]),
            ],
            frac_bits=0,
        )
    )
    cases.append(
        single(
            "matmul_fixed/sums_past_2^32",
            "matmul_fixed",
            lambda b: [
                b.input([2, 5], [30000.0] * 5 + [-46341.0] * 5),
                b.input([5, 3], [30000.0, 46341.0, -12345.678] * 5),
            ],
            frac_bits=0,
        )
    )
    cases.append(
        single(
            "matmul_fixed/wraps_past_2^63",
            "matmul_fixed",
            lambda b: [
                b.input([3, 4], [1e10] * 4 + [1e10] * 3 + [-1e10] + [1e10] * 2 + [0.0] * 2),
                b.input([4, 1], [1e10] * 4),
            ],
            frac_bits=0,
        )
    )
    cases.append(
        single(
            "matmul_fixed/long_k_1024",
            "matmul_fixed",
            lambda b: [
                b.input([1, 1024], b.rng.integers(-99, 100, 1024) / 4),
                b.input([1024, 2], b.rng.integers(-99, 100, 2048) / 8),
            ],
            frac_bits=16,
        )
    )
    return cases


# ---- gradient graphs from gpulab.autograd (every lane runs what g.grad records) ------------


def _autograd_case(
    name: str, build: Callable[[Graph, Builder], tuple[Tensor, list[Tensor]]]
) -> dict:
    """A chain case of a gradient graph: `build(g, b)` records a scalar loss on a gpulab Graph
    (inputs of short decimals drawn by the Builder's seeded rng) and names the tensors to
    differentiate; every computed node of the forward and gradient graph is an output."""
    b = Builder(name)
    g = Graph()
    loss, params = build(g, b)
    grads = g.grad(loss, params)
    graph = g.to_dict(loss=loss, **{f"d{i}": t for i, t in enumerate(grads)})
    for node in graph["nodes"]:  # the shortest JSON of each float32 (to_dict writes float64's)
        if "data" in node and node.get("dtype", "float32") == "float32":
            node["data"] = values(node["data"])
    computed = [n["id"] for n in graph["nodes"] if n["op"] not in ("input", "full")]
    graph["outputs"] = [{"name": f"n{i}", "id": i} for i in computed]
    graph["version"] = required_version(graph)
    return {"name": name, "op": "chain", "tolerance": "per-node", "graph": graph}


def _autograd_mlp(g: Graph, b: Builder) -> tuple[Tensor, list[Tensor]]:
    """Embedding + layer norm + linear + gelu + dropout + linear + cross entropy."""

    def rand(shape: Shape, lo: float = -1.0, hi: float = 1.0) -> Tensor:
        return g.tensor(b.uniform(shape, lo, hi).reshape(shape).astype(np.float32))

    table, x = rand([10, 8]), rand([6, 8])
    w1, b1, w2, b2 = rand([16, 8], -0.4, 0.4), rand([16], -0.1, 0.1), rand([5, 16]), rand([5])
    tokens = g.tensor([3, 1, 3, 7, 0, 9], dtype="int32")
    h = F.layer_norm(F.embedding(tokens, table) + x)
    h = F.linear(h, w1, b1).gelu().dropout(0.25, seed=3, counter=1)
    target = g.tensor(np.eye(5, dtype=np.float32)[[0, 4, 2, 2, 1, 3]])
    return F.linear(h, w2, b2).cross_entropy(target), [table, x, w1, b1, w2, b2]


def _autograd_select(g: Graph, b: Builder) -> tuple[Tensor, list[Tensor]]:
    """Selection, extremes, the softmax family and a batched broadcast matmul."""

    def rand(shape: Shape, lo: float = -2.0, hi: float = 2.0) -> Tensor:
        return g.tensor(b.uniform(shape, lo, hi).reshape(shape).astype(np.float32))

    a, w, c = rand([2, 1, 4, 6]), rand([3, 6, 4]), rand([4, 6])
    y = (a @ w).permute(0, 1, 3, 2).reshape(6, 4, 4)  # [2, 3, 4, 4] -> [6, 4, 4]
    s = y.softmax(axis=0).sum(axis=0)[1:, ::-1]  # [3, 4]
    m = g.where(c[:3, :4] > 0.0, c[:3, :4].sigmoid(), c[:3, :4].tanh().abs())
    z = g.concat([s, m.maximum(s), s.clamp(-0.5, 0.5)], 1).pad([[1, 0], [0, 2]], value=0.5)
    z = z.log_softmax(axis=-1).gather(1, g.tensor([[0, 3]] * 4, dtype="int32"))
    return (z.sum() + c.max(axis=1).mean() + c.square().sqrt().exp().log().min()), [a, w, c]


def autograd_cases() -> list[dict]:
    return [
        _autograd_case("chain/autograd_mlp_embedding_layernorm_dropout", _autograd_mlp),
        _autograd_case("chain/autograd_select_softmax_batched_matmul", _autograd_select),
    ]


def shape_cases() -> list[dict]:
    """The version-7 tensor features: cases_shapes.py (it builds on this module's Builder)."""
    from gpulab.conformance.cases_shapes import shape_cases as build

    return build()


def rank_cases() -> list[dict]:
    """Rank 5 to 8: cases_rank.py (it builds on this module's Builder)."""
    from gpulab.conformance.cases_rank import rank_cases as build

    return build()


FAMILIES: list[Callable[[], list[dict]]] = [
    source_cases,
    binary_cases,
    unary_cases,
    layout_cases,
    reduction_cases,
    softmax_cases,
    cross_entropy_cases,
    matmul_cases,
    optimizer_cases,
    life_cases,
    chain_cases,
    large_cases,
    map1_v3_cases,
    clamp_cases,
    reduce_v3_cases,
    v3_chain_cases,
    large_v3_cases,
    nonfinite_cases,
    select_binary_cases,
    where_cases,
    cast_cases,
    hash_cases,
    dropout_cases,
    select_chain_cases,
    large_select_cases,
    slice_v4_cases,
    index_v4_cases,
    accumulate_v4_cases,
    concat_pad_v4_cases,
    v4_chain_cases,
    large_v4_cases,
    quant_cases,
    quant32_cases,
    matmul_fixed_cases,
    autograd_cases,
    conv2d_cases,
    pool2d_cases,
    resize_cases,
    window_chain_cases,
    shape_cases,
    rank_cases,
]


def build_cases() -> list[dict]:
    """Every case, in a fixed order; names are unique."""
    cases = [case for family in FAMILIES for case in family()]
    names = [c["name"] for c in cases]
    dupes = {n for n in names if names.count(n) > 1}
    assert not dupes, f"duplicate case names: {sorted(dupes)}"
    return cases


def render(cases: list[dict]) -> str:
    """One case per line: small diffs, still plain JSON."""
    lines = [json.dumps(c, separators=(",", ":"), allow_nan=False) for c in cases]
    return "[\n" + ",\n".join(lines) + "\n]\n"


def outputs() -> dict[Path, str]:
    """Every generated file and its text."""
    return {CASES_PATH: render(build_cases()), BAD_GRAPHS_PATH: render(build_bad_graphs())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a file is stale")
    args = parser.parse_args(argv)
    stale = []
    for path, text in outputs().items():
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(path.name)
            continue
        path.write_text(text)
        print(f"wrote {path} ({len(text)} bytes)")
    if stale:
        print(f"stale: {', '.join(stale)}: run python -m gpulab.conformance.generate")
    elif args.check:
        print("cases.json and bad_graphs.json are up to date")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
