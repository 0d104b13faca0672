"""gpulab.autograd: every op row with a `grad` field, checked two ways.

1. Finite differences in float64: the forward graph and the gradient graph are both evaluated
   with the float64 reference kernels (pylib/gpulab/conformance/reference.py, no float32 rounding between
   nodes), the gradient against central differences of the forward value.
2. PyTorch CPU: the gradient graph run on cpu-python (float32) against torch.autograd.grad of
   the same function, to float32 rounding.

CASES has at least one case per differentiable op; test_every_differentiable_op_has_a_case fails
when a row gains `grad` without one. Inputs are drawn away from kinks (relu/abs at 0, clamp
bounds, maximum ties) for (1); the tie rules are tested against torch separately.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
import torch  # a test dependency (pyproject [test]): the oracle
from gpulab import Graph, Tensor, host, optable
from gpulab import functional as F
from gpulab.autograd import CREATE_GRAPH_REFUSED
from gpulab.conformance import reference as R
from gpulab.errors import GpuLabError
from gpulab.grad_rules import RULES
from gpulab.quant import quantize

TF = torch.nn.functional
RNG = np.random.default_rng(16)

# -- input domains (float64 values that are exact float32 values) ------------------------------

Domain = Callable[[np.random.Generator, tuple[int, ...]], np.ndarray]


def _f32(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.float32).astype(np.float64)


def normal(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return _f32(rng.standard_normal(shape))


def positive(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return _f32(rng.uniform(0.5, 2.0, shape))


def away(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """|x| in [0.2, 1.5]: away from the kink at 0."""
    return _f32(rng.choice([-1.0, 1.0], shape) * rng.uniform(0.2, 1.5, shape))


def off_bounds(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Values at least 0.15 from the clamp bounds -0.5 and 0.5 used below."""
    grid = rng.choice([-0.9, -0.7, -0.3, -0.1, 0.1, 0.3, 0.7, 0.9], shape)
    return _f32(grid + rng.uniform(-0.05, 0.05, shape))


def distinct(offset: float) -> Domain:
    """Shuffled grid k * 0.3 + offset: two such inputs with offsets 0 and 0.15 never tie (nor
    do two elements of one input)."""

    def draw(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        n = math.prod(shape)
        return _f32((rng.permutation(n) - n / 2) * 0.3 + offset).reshape(shape)

    return draw


# -- cases --------------------------------------------------------------------------------------


@dataclass
class Case:
    """A function of float inputs (shapes) in gpulab (`build`) and in torch (`ref`)."""

    shapes: list[tuple[int, ...]]
    build: Callable[..., Tensor]
    ref: Callable[..., torch.Tensor]
    domains: list[Domain] = field(default_factory=list)

    def domain(self, k: int) -> Domain:
        return self.domains[k] if k < len(self.domains) else normal


IDX_ROWS = np.array([2, 0, 2])  # repeated index: gradients accumulate
IDX_GATHER = np.array([[0, 3], [1, 1], [2, 0]])
COND = RNG.random((3, 4)) > 0.5
SOFT = _f32(RNG.uniform(0.1, 1.0, (3, 4)))  # soft targets of any row sum
W_Q = RNG.standard_normal((2, 256)).astype(np.float32)
W_Q_RAW = quantize(W_Q, "q4_k")


def _i(g: Graph, v: np.ndarray) -> Tensor:
    return g.tensor(v.tolist(), dtype="int32")


def _t(v: np.ndarray) -> torch.Tensor:
    return torch.tensor(v, dtype=torch.int64)


def _drop_mask() -> torch.Tensor:
    """dropout(ones) in gpulab: the mask times 1 / (1 - p) that torch multiplies by."""
    g = Graph()
    out = g.run(backend="cpu-python", m=g.full([3, 4], 1.0).dropout(0.3, seed=5, counter=2))
    return torch.tensor(out["outputs"]["m"]["array"])


def _deq() -> torch.Tensor:
    g = Graph()
    w = g.quantized(W_Q_RAW, "q4_k", [2, 256])
    return torch.tensor(g.run(backend="cpu-python", w=w.dequantize())["outputs"]["w"]["array"])


def _cases() -> dict[str, list[Case]]:
    s34, s4 = (3, 4), (4,)
    mat = [
        Case([(3, 4), (4, 2)], lambda a, b: a @ b, lambda a, b: a @ b),
        Case([(2, 3, 4), (2, 4, 5)], lambda a, b: a @ b, lambda a, b: a @ b),
        Case([(2, 1, 3, 4), (3, 4, 2)], lambda a, b: a @ b, lambda a, b: a @ b),
        Case([(1, 3, 4), (2, 4, 2)], lambda a, b: a @ b, lambda a, b: a @ b),
    ]
    red = [
        ((None, False), {}),
        ((1, False), {"dim": 1}),
        ((0, True), {"dim": 0, "keepdim": True}),
        ((-1, True), {"dim": -1, "keepdim": True}),
    ]

    def reductions(op: str, tfn: Callable[..., torch.Tensor], dom: Domain = normal) -> list[Case]:
        return [
            Case(
                [s34],
                lambda a, ax=ax, k=k: a.graph.op(op, a=a, axis=ax, keepdim=k),
                lambda a, kw=kw: tfn(a, **kw),
                [dom],
            )
            for (ax, k), kw in red
        ]

    def unary(
        fn: Callable[[Tensor], Tensor], tfn: Callable[..., torch.Tensor], dom: Domain = normal
    ) -> list[Case]:
        return [Case([s34], fn, tfn, [dom])]

    def pair(
        op: str, tfn: Callable[..., torch.Tensor], da: Domain = normal, db: Domain = normal
    ) -> list[Case]:
        fn = lambda a, b: a.graph.op(op, a=a, b=b)
        return [
            Case([s34, s34], fn, tfn, [da, db]),
            Case([s34, s4], fn, tfn, [da, db]),
            Case([(1, 4), (3, 1)], fn, tfn, [da, db]),
            Case([(), s34], fn, tfn, [da, db]),
        ]

    return {
        "add": pair("add", torch.add),
        "sub": pair("sub", torch.sub),
        "mul": pair("mul", torch.mul),
        "div": pair("div", torch.div, normal, positive),
        "maximum": pair("maximum", torch.maximum, distinct(0.0), distinct(0.15)),
        "minimum": pair("minimum", torch.minimum, distinct(0.0), distinct(0.15)),
        "matmul": mat,
        "matmul_q": [
            Case(
                [(1, 256)],
                lambda a: a @ a.graph.quantized(W_Q_RAW, "q4_k", [2, 256]).T,
                lambda a: a @ _deq().T,
            )
        ],
        "sum": reductions("sum", lambda a, **kw: a.sum(**kw)),
        "mean": reductions("mean", lambda a, **kw: a.mean(**kw)),
        "reduce_max": reductions("reduce_max", lambda a, **kw: torch.amax(a, **kw), distinct(0.0)),
        "reduce_min": reductions("reduce_min", lambda a, **kw: torch.amin(a, **kw), distinct(0.0)),
        "neg": unary(lambda a: -a, torch.neg),
        "relu": unary(lambda a: a.relu(), torch.relu, away),
        "positive": unary(lambda a: a.positive(), lambda a: torch.sign(torch.relu(a)), away),
        "exp": unary(lambda a: a.exp(), torch.exp),
        "log": unary(lambda a: a.log(), torch.log, positive),
        "sqrt": unary(lambda a: a.sqrt(), torch.sqrt, positive),
        "tanh": unary(lambda a: a.tanh(), torch.tanh),
        "sigmoid": unary(lambda a: a.sigmoid(), torch.sigmoid),
        "gelu": unary(lambda a: a.gelu(), TF.gelu),
        "abs": unary(lambda a: abs(a), torch.abs, away),
        "square": unary(lambda a: a.square(), torch.square),
        "clamp": [
            Case([s34], lambda a: a.clamp(-0.5, 0.5), lambda a: a.clamp(-0.5, 0.5), [off_bounds]),
            Case([s34], lambda a: a.clamp(min=-0.5), lambda a: a.clamp(min=-0.5), [off_bounds]),
            Case([s34], lambda a: a.clamp(max=0.5), lambda a: a.clamp(max=0.5), [off_bounds]),
        ],
        "gelu_grad": [
            Case(
                [s34, s34],
                lambda a, b: a.gelu_grad(b),
                lambda a, b: torch.ops.aten.gelu_backward(b, a),
            )
        ],
        "softmax": [
            Case([s34], lambda a: a.softmax(axis=-1), lambda a: a.softmax(-1)),
            Case([s34], lambda a: a.softmax(axis=0), lambda a: a.softmax(0)),
            Case([(2, 3, 4)], lambda a: a.softmax(axis=1), lambda a: a.softmax(1)),
        ],
        "log_softmax": [
            Case([s34], lambda a: a.log_softmax(axis=-1), lambda a: a.log_softmax(-1)),
            Case([(2, 3, 4)], lambda a: a.log_softmax(axis=0), lambda a: a.log_softmax(0)),
        ],
        "cross_entropy": [
            Case(
                [s34, s34],
                lambda a, b: a.cross_entropy(b),
                lambda a, b: TF.cross_entropy(a, b),
                [normal, positive],
            ),
            Case(
                [s34],
                lambda a: a.cross_entropy(a.graph.tensor(SOFT.tolist())),
                lambda a: TF.cross_entropy(a, torch.tensor(SOFT, dtype=torch.float32)),
            ),
        ],
        "cross_entropy_grad": [
            Case(
                [s34, s34],
                lambda a, b: a.cross_entropy_grad(b),
                lambda a, b: (a.softmax(1) - b) / 3,
            )
        ],
        "where": [
            Case(
                [s34, s4],
                lambda a, b: a.graph.where(a.graph.tensor(COND.tolist(), dtype="bool"), a, b),
                lambda a, b: torch.where(torch.tensor(COND), a, b),
            )
        ],
        "dropout": [
            Case([s34], lambda a: a.dropout(0.3, seed=5, counter=2), lambda a: a * _drop_mask())
        ],
        "reshape": unary(lambda a: a.reshape(2, 6), lambda a: a.reshape(2, 6)),
        "transpose": [Case([(2, 3, 4)], lambda a: a.transpose(), lambda a: a.transpose(-2, -1))],
        "permute": [Case([(2, 3, 4)], lambda a: a.permute(2, 0, 1), lambda a: a.permute(2, 0, 1))],
        "slice": [
            Case([(4, 5)], lambda a: a[1:4, ::-2], lambda a: a[1:4].flip(1)[:, ::2]),
            Case([(4, 5)], lambda a: a[::2, 1:3], lambda a: a[::2, 1:3]),
        ],
        "slice_scatter": [
            Case(
                [(4, 5), (2, 5)],
                lambda a, s: a.slice_scatter(s, (slice(1, 3),)),
                lambda a, s: torch.slice_scatter(a, s, 0, 1, 3),
            )
        ],
        "index_select": [
            Case(
                [(4, 3)],
                lambda a: a.index_select(0, _i(a.graph, IDX_ROWS)),
                lambda a: a.index_select(0, _t(IDX_ROWS)),
            )
        ],
        "gather": [
            Case(
                [(3, 4)],
                lambda a: a.gather(1, _i(a.graph, IDX_GATHER)),
                lambda a: a.gather(1, _t(IDX_GATHER)),
            )
        ],
        "index_add": [
            Case(
                [(4, 3), (3, 3)],
                lambda a, s: a.index_add(0, _i(a.graph, IDX_ROWS), s),
                lambda a, s: a.index_add(0, _t(IDX_ROWS), s),
            )
        ],
        "scatter_add": [
            Case(
                [(3, 4), (3, 2)],
                lambda a, s: a.scatter_add(1, _i(a.graph, IDX_GATHER), s),
                lambda a, s: a.scatter_add(1, _t(IDX_GATHER), s),
            )
        ],
        "concat": [
            Case(
                [(2, 3), (1, 3), (2, 3)],
                lambda a, b, c: a.graph.concat([a, b, c], 0),
                lambda a, b, c: torch.cat([a, b, c], 0),
            ),
            Case(
                [(2, 3), (2, 1)],
                lambda a, b: a.graph.concat([a, b], -1),
                lambda a, b: torch.cat([a, b], -1),
            ),
        ],
        "pad": [
            Case(
                [(2, 3)],
                lambda a: a.pad([[1, 0], [2, 1]], value=0.5),
                lambda a: TF.pad(a, (2, 1, 1, 0), value=0.5),
            )
        ],
        **_window_cases(),
    }


def _window_cases() -> dict[str, list[Case]]:
    """The v6 window ops (torch's conv2d / max_pool2d / avg_pool2d / interpolate)."""
    conv = [
        Case([(2, 3, 5, 6), (4, 3, 3, 3)], lambda a, w: a.conv2d(w), TF.conv2d),
        Case(
            [(2, 4, 7, 6), (6, 2, 3, 2), (6,)],
            lambda a, w, b: a.conv2d(
                w, b, stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2
            ),
            lambda a, w, b: TF.conv2d(
                a, w, b, stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2
            ),
        ),
        Case(
            [(1, 2, 5, 5), (3, 2, 2, 3)],
            lambda a, w: a.conv2d(
                w, stride=2, padding=(1, 0, 0, 2)
            ),  # ONNX top, left, bottom, right
            lambda a, w: TF.conv2d(TF.pad(a, (0, 2, 1, 0)), w, stride=2),
        ),
    ]
    pools = [
        ((2, 3, 4, 6), {"kernel_size": 2}),
        ((1, 2, 7, 6), {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}),
        ((1, 2, 6, 7), {"kernel_size": (2, 3), "stride": 1, "dilation": (2, 1)}),
    ]
    avg = [
        ((2, 3, 4, 6), {"kernel_size": 2}),
        (
            (1, 2, 7, 6),
            {
                "kernel_size": 3,
                "stride": 2,
                "padding": 1,
                "ceil_mode": True,
                "count_include_pad": False,
            },
        ),
        ((1, 2, 5, 7), {"kernel_size": (3, 2), "stride": (1, 2), "padding": (1, 1)}),
    ]
    sizes = [
        ((1, 2, 4, 3), (7, 5), ("nearest", "asymmetric", "floor"), {"mode": "nearest"}),
        (
            (1, 2, 4, 3),
            (7, 5),
            ("linear", "half_pixel", "round_prefer_floor"),
            {"mode": "bilinear", "align_corners": False},
        ),
        (
            (2, 1, 5, 6),
            (3, 4),
            ("linear", "align_corners", "round_prefer_floor"),
            {"mode": "bilinear", "align_corners": True},
        ),
    ]
    return {
        "conv2d": conv,
        "max_pool2d": [
            Case(
                [shape],
                lambda a, kw=kw: a.max_pool2d(**kw),
                lambda a, kw=kw: TF.max_pool2d(a, **kw),
                [distinct(0.0)],
            )
            for shape, kw in pools
        ],
        "avg_pool2d": [
            Case(
                [shape],
                lambda a, kw=kw: a.avg_pool2d(**kw),
                lambda a, kw=kw: TF.avg_pool2d(a, **kw),
            )
            for shape, kw in avg
        ],
        "resize": [
            Case(
                [shape],
                lambda a, size=size, m=m: a.resize(size, *m),
                lambda a, size=size, kw=kw: TF.interpolate(a, size=size, **kw),
            )
            for shape, size, m, kw in sizes
        ],
    }


CASES = _cases()
CASE_IDS = [(op, k) for op, cases in CASES.items() for k in range(len(cases))]


def _draw(case: Case, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [case.domain(k)(rng, s) for k, s in enumerate(case.shapes)]


def _record(case: Case, values: list[np.ndarray]) -> tuple[Graph, list[Tensor], Tensor, Tensor]:
    """The case's graph with a random grad_output (so every output element counts)."""
    g = Graph()
    xs = [g.tensor(v.astype(np.float32)) for v in values]
    out = case.build(*xs)
    dy = g.tensor(_f32(np.random.default_rng(99).standard_normal(out.shape)).astype(np.float32))
    return g, xs, out, dy


# -- a float64 evaluator over the reference kernels ----------------------------------------------


def _adds64(node: Mapping[str, Any], ops: list[np.ndarray]) -> tuple[np.ndarray, None]:
    """index_add / scatter_add without the reference's float32 rounding of each addition
    (that rounding is the protocol's order, which float64 differences must not see)."""
    a, idx, src = ops
    axis = int(node["axis"]) % a.ndim
    out = a.astype(np.float64).copy()
    for p in np.ndindex(*src.shape):
        q = list(p)
        q[axis] = int(idx[p[axis]] if node["op"] == "index_add" else idx[p])
        out[tuple(q)] += src[p]
    return out, None


FLOAT64_KERNELS = {**R.KERNELS, "index_add": _adds64, "scatter_add": _adds64}


def eval64(graph: Mapping[str, Any], feeds: Mapping[int, np.ndarray]) -> dict[str, np.ndarray]:
    """The graph's outputs computed in float64 throughout (reference kernels, no rounding to
    float32 between nodes); `feeds` replaces input nodes' values with float64 arrays."""
    values: dict[int, np.ndarray] = {}
    for node in R.needed_order(graph):
        if node["id"] in feeds:
            values[node["id"]] = np.asarray(feeds[node["id"]], dtype=np.float64)
            continue
        operands = [values[i] for i in R.operand_ids(node)]
        with np.errstate(all="ignore"):
            value, _ = FLOAT64_KERNELS[node["op"]](node, operands)
        values[node["id"]] = np.asarray(value)
    return {o["name"]: values[o["id"]] for o in graph["outputs"]}


@pytest.mark.parametrize(("op", "k"), CASE_IDS, ids=[f"{op}-{k}" for op, k in CASE_IDS])
def test_gradient_matches_finite_differences_in_float64(op: str, k: int) -> None:
    case = CASES[op][k]
    values = _draw(case, 1000 + k)
    g, xs, out, dy = _record(case, values)
    grads = g.grad(out, xs, grad_output=dy)
    graph = g.to_dict(out=out, **{f"g{i}": t for i, t in enumerate(grads)})
    dy64 = _f32(np.asarray(g.run(backend="cpu-python", dy=dy)["outputs"]["dy"]["array"]))
    feeds = {x.id: v for x, v in zip(xs, values)}
    got = eval64(graph, feeds)
    forward = g.to_dict(out=out)  # the differences need the forward nodes only
    h = 1e-6
    for i, (x, v) in enumerate(zip(xs, values)):
        numeric = np.zeros(v.size)
        for j in range(v.size):
            step = np.zeros(v.size)
            step[j] = h
            up = eval64(forward, {**feeds, x.id: v + step.reshape(v.shape)})["out"]
            down = eval64(forward, {**feeds, x.id: v - step.reshape(v.shape)})["out"]
            numeric[j] = np.sum((up - down) * dy64) / (2 * h)
        scale = max(1.0, float(np.abs(numeric).max()))
        np.testing.assert_allclose(
            got[f"g{i}"].reshape(-1),
            numeric,
            rtol=1e-6,
            atol=1e-6 * scale,
            err_msg=f"{op} case {k} input {i}",
        )


@pytest.mark.parametrize(("op", "k"), CASE_IDS, ids=[f"{op}-{k}" for op, k in CASE_IDS])
def test_gradient_matches_torch_in_float32(op: str, k: int) -> None:
    case = CASES[op][k]
    values = _draw(case, 2000 + k)
    g, xs, out, dy = _record(case, values)
    grads = g.grad(out, xs, grad_output=dy)
    run = g.run(backend="cpu-python", dy=dy, **{f"g{i}": t for i, t in enumerate(grads)})
    tx = [torch.tensor(v, dtype=torch.float32, requires_grad=True) for v in values]
    tout = case.ref(*tx)
    want = torch.autograd.grad(tout, tx, torch.tensor(run["outputs"]["dy"]["array"]))
    for i, w in enumerate(want):
        w = w.numpy()
        got = run["outputs"][f"g{i}"]["array"].reshape(w.shape)
        scale = max(1.0, float(np.abs(w).max()))
        np.testing.assert_allclose(
            got, w, rtol=1e-5, atol=1e-6 * scale, err_msg=f"{op} case {k} input {i}"
        )


def test_every_differentiable_op_has_a_case() -> None:
    graded = {op for op, row in optable.ops().items() if row.get("grad") is not None}
    assert graded - set(CASES) == set(), "differentiable ops without a test case"
    assert set(CASES) - graded == set(), "test cases for ops without a grad field"
    named = {row["grad"] for row in optable.ops().values() if row.get("grad") is not None}
    assert named - set(RULES) == set(), "grad fields naming no rule"
    assert set(RULES) - named == set(), "rules no op row names"


# -- tie rules and kinks, against torch ---------------------------------------------------------


def _torch_grads(fn: Callable[..., torch.Tensor], values: list[np.ndarray]) -> list[np.ndarray]:
    tx = [torch.tensor(v, dtype=torch.float32, requires_grad=True) for v in values]
    return [t.numpy() for t in torch.autograd.grad(fn(*tx).sum(), tx)]


def _ours(fn: Callable[..., Tensor], values: list[np.ndarray]) -> list[np.ndarray]:
    g = Graph()
    xs = [g.tensor(np.asarray(v, dtype=np.float32)) for v in values]
    grads = g.grad(fn(*xs).sum(), xs)
    run = g.run(backend="cpu-python", **{f"g{i}": t for i, t in enumerate(grads)})
    return [run["outputs"][f"g{i}"]["array"].reshape(np.shape(v)) for i, v in enumerate(values)]


TIES = [
    (
        "maximum ties: half each",
        lambda a, b: a.maximum(b),
        torch.maximum,
        [[1.0, 2.0, 3.0, -1.0], [1.0, 0.0, 3.0, 2.0]],
    ),
    (
        "minimum ties: half each",
        lambda a, b: a.minimum(b),
        torch.minimum,
        [[1.0, 2.0, 3.0, -1.0], [1.0, 0.0, 3.0, 2.0]],
    ),
    (
        "full max: shared among ties",
        lambda a: a.max(),
        torch.amax,
        [[[3.0, 1.0, 3.0], [3.0, 0.0, 2.0]]],
    ),
    (
        "max over an axis: shared (amax)",
        lambda a: a.max(axis=1),
        lambda a: torch.amax(a, 1),
        [[[3.0, 1.0, 3.0], [2.0, 0.0, 2.0]]],
    ),
    (
        "min over an axis, keepdim",
        lambda a: a.min(axis=0, keepdim=True),
        lambda a: torch.amin(a, 0, keepdim=True),
        [[[1.0, 1.0, 3.0], [1.0, 0.0, 2.0]]],
    ),
    (
        "full max with NaN: the NaNs share it (torch's max())",
        lambda a: a.max(),
        torch.max,
        [[[1.0, math.nan, 3.0], [math.nan, 5.0, 5.0]]],
    ),
    (
        "max over an axis with NaN: the row is NaN (torch's amax)",
        lambda a: a.max(axis=1),
        lambda a: torch.amax(a, 1),
        [[[1.0, math.nan, 3.0], [2.0, 5.0, 5.0]]],
    ),
    ("relu at 0: gradient 0", lambda a: a.relu(), torch.relu, [[-1.0, 0.0, 2.0]]),
    ("abs at 0: gradient 0", lambda a: abs(a), torch.abs, [[-1.0, 0.0, 2.0]]),
    (
        "clamp on the bounds: passes",
        lambda a: a.clamp(-1.0, 1.0),
        lambda a: a.clamp(-1.0, 1.0),
        [[-2.0, -1.0, 0.0, 1.0, 2.0]],
    ),
]


@pytest.mark.parametrize(("what", "ours", "theirs", "values"), TIES, ids=[t[0] for t in TIES])
def test_tie_and_kink_rules_are_torchs(
    what: str, ours: Callable, theirs: Callable, values: list
) -> None:
    arrays = [np.asarray(v, dtype=np.float32) for v in values]
    for got, want in zip(_ours(ours, arrays), _torch_grads(theirs, arrays)):
        np.testing.assert_array_equal(got, want, err_msg=what)


# -- the API: fan-out, unused inputs, refusals ---------------------------------------------------


def test_fan_out_adds_in_consumer_order_and_unused_inputs_get_zeros() -> None:
    g = Graph()
    x = g.tensor([1.0, 2.0, 3.0])
    unused = g.tensor([[5.0, 6.0]])
    y = x * x + x.exp() * 2.0 + x
    dx, dz = g.grad(y.sum(), [x, unused])
    out = g.run(backend="cpu-python", dx=dx, dz=dz)["outputs"]
    v = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    np.testing.assert_allclose(out["dx"]["array"], 2 * v + 2 * np.exp(v) + 1, rtol=1e-6)
    assert out["dz"]["shape"] == [1, 2] and out["dz"]["data"] == [0.0, 0.0]

    # the same recording gives the same gradient graph: three contributions added in
    # ascending consumer order: 4 contributions (x * x twice, exp, the add), 3 adds
    def record() -> dict:
        h = Graph()
        x2 = h.tensor([1.0, 2.0, 3.0])
        (d,) = h.grad((x2 * x2 + x2.exp() * 2.0 + x2).sum(), [x2])
        return h.to_dict(d=d)

    first = record()
    assert first == record()
    last = first["nodes"][-1]
    assert last["op"] == "add" and [n["op"] for n in first["nodes"]].count("add") == 3


def test_gradient_wrt_an_intermediate_and_through_integer_paths() -> None:
    g = Graph()
    x = g.tensor([[-1.0, 2.0], [3.0, -4.0]])
    h = x * 3.0
    mask = h > 0.0  # a bool path from x: no gradient flows along it (torch: no grad)
    y = (g.where(mask, h, h * 0.5) + mask.cast("float32") * x).sum()
    dh, dx = g.grad(y, [h, x])
    only_int = g.grad(x.argmax().cast("float32") * 2.0, [x])[0]  # argmax: a constant
    out = g.run(backend="cpu-python", dh=dh, dx=dx, z=only_int)["outputs"]
    assert out["dh"]["data"] == [0.5, 1.0, 1.0, 0.5]
    assert out["dx"]["data"] == [1.5, 4.0, 4.0, 1.5]
    assert out["z"]["data"] == [0.0] * 4


@pytest.mark.parametrize(
    ("make", "named"),
    [
        (lambda g, x: x.cast("float32"), "node 1 (cast)"),
        (lambda g, x: x.matmul_fixed(g.tensor([[1.0], [2.0]])), "(matmul_fixed)"),
        (lambda g, x: g.op("adam_m", a=x, b=x), "(adam_m)"),
        (lambda g, x: x.life(), "(life)"),
        (
            lambda g, x: g.wgsl(
                "@group(0) @binding(0) var<storage, read> a: array<f32>;\n"
                "@group(0) @binding(1) var<storage, read_write> o: array<f32>;\n"
                "@compute @workgroup_size(1) fn main() { o[0] = a[0]; }",
                [x],
                outputs={"o": ([1], "float32")},
            ),
            "(wgsl)",
        ),
    ],
)
def test_non_differentiable_ops_are_refused_by_name(make: Callable, named: str) -> None:
    g = Graph()
    x = g.tensor([[1.0, 2.0], [3.0, 4.0]])
    out = make(g, x)
    with pytest.raises(GpuLabError, match="is not differentiable") as err:
        g.grad(out.sum(), [x])
    assert named in err.value.message and out.graph is g


def test_refusals_name_what_is_refused() -> None:
    g = Graph()
    x = g.tensor([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(GpuLabError, match=r"shape \[2, 2\].*scalar output"):
        g.grad(x * 2.0, [x])
    with pytest.raises(GpuLabError, match="create_graph=True") as err:
        g.grad((x * 2.0).sum(), [x], create_graph=True)
    assert CREATE_GRAPH_REFUSED in err.value.message
    with pytest.raises(GpuLabError, match="int32: only float32"):
        g.grad(x.sum(), [g.tensor([1, 2], dtype="int32")])
    with pytest.raises(GpuLabError, match=r"grad_output has shape \[2\]"):
        g.grad(x * 2.0, [x], grad_output=g.tensor([1.0, 1.0]))
    w = g.quantized(W_Q_RAW, "q4_k", [2, 256])
    with pytest.raises(GpuLabError, match="q4_k: only float32.*matmul_q and dequantize are not"):
        g.grad((g.full([1, 256], 1.0) @ w.T).sum(), [w])
    other = Graph()
    with pytest.raises(GpuLabError, match="belongs to another graph"):
        g.grad(x.sum(), [other.tensor([1.0])])


# -- the gradient graph on wgpu (lavapipe here: software) ----------------------------------------


def _mlp_step(g: Graph) -> dict[str, Tensor]:
    rng = np.random.default_rng(7)
    x = g.tensor(rng.standard_normal((8, 5)).astype(np.float32))
    w1 = g.tensor(rng.standard_normal((5, 16)).astype(np.float32) * 0.5)
    b1 = g.tensor(np.zeros(16, np.float32))
    w2 = g.tensor(rng.standard_normal((16, 3)).astype(np.float32) * 0.5)
    target = g.tensor(np.eye(3, dtype=np.float32)[rng.integers(0, 3, 8)])
    loss = ((x @ w1 + b1).gelu() @ w2).cross_entropy(target)
    dw1, db1, dw2 = g.grad(loss, [w1, b1, w2])
    return {"loss": loss, "dw1": dw1, "db1": db1, "dw2": dw2}


def test_gradient_graph_runs_on_wgpu_software_and_matches_cpu_python() -> None:
    g = Graph()
    outputs = _mlp_step(g)
    graph = g._graph_dict(outputs)
    cpu = host.execute(graph, backend="cpu-python")
    gpu = host.execute(graph, backend="wgpu", allow_software=True, strict=True)
    assert gpu["backend"] == "wgpu" and gpu["stats"]["software"] is True  # lavapipe, labelled
    for name in outputs:
        want = cpu["outputs"][name]["array"]
        np.testing.assert_allclose(
            gpu["outputs"][name]["array"],
            want,
            rtol=1e-5,
            atol=1e-6 * max(1.0, float(np.abs(want).max())),
            err_msg=name,
        )


# -- the shared composites differentiate through their protocol ops ----------------------------


def test_functional_composites_gradients_match_torch() -> None:
    """gpulab.functional's layers need no rule of their own: their gradients (through the ops
    they are made of) match torch's layers'."""
    rng = np.random.default_rng(5)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((2, 3, 8), (5, 8), (5,)))
    lw, lb, table = (rng.standard_normal(s).astype(np.float32) for s in ((8,), (8,), (6, 8)))
    q = rng.standard_normal((2, 2, 3, 8)).astype(np.float32)
    keep = np.array([[True, True, False]] * 3)
    idx = np.array([[0, 5, 5], [2, 1, 0]])
    values = [x, w, b, lw, lb, table, q]

    def ours(
        x: Tensor, w: Tensor, b: Tensor, lw: Tensor, lb: Tensor, table: Tensor, q: Tensor
    ) -> Tensor:
        g = x.graph
        return (
            F.linear(x, w, b).tanh().sum()
            + F.layer_norm(x, lw, lb).square().mean()
            + (F.embedding(g.tensor(idx.tolist(), dtype="int32"), table) * x).sum()
            + F.attention(q, q, q, g.tensor(keep.tolist(), dtype="bool")).sum()
            + F.l2_normalize(x).sum()
            + F.mse_loss(x, x * 0.5 + 1.0)
        )

    def theirs(*t: torch.Tensor) -> torch.Tensor:
        x, w, b, lw, lb, table, q = t
        return (
            TF.linear(x, w, b).tanh().sum()
            + TF.layer_norm(x, (8,), lw, lb).square().mean()
            + (TF.embedding(torch.tensor(idx), table) * x).sum()
            + TF.scaled_dot_product_attention(q, q, q, torch.tensor(keep)).sum()
            + TF.normalize(x, dim=-1).sum()
            + TF.mse_loss(x, x * 0.5 + 1.0)
        )

    g = Graph()
    xs = [g.tensor(v) for v in values]
    grads = g.grad(ours(*xs), xs)
    run = g.run(backend="cpu-python", **{f"g{i}": t for i, t in enumerate(grads)})["outputs"]
    tx = [torch.tensor(v, requires_grad=True) for v in values]
    for i, want in enumerate(torch.autograd.grad(theirs(*tx), tx)):
        got = run[f"g{i}"]["array"].reshape(want.shape)
        scale = max(1.0, float(want.abs().max()))
        np.testing.assert_allclose(
            got, want.numpy(), rtol=1e-5, atol=2e-6 * scale, err_msg=f"input {i}"
        )
