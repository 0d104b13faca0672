"""The protocol-v3 ops through the Python layer (Tensor methods) on cpu-python: abs, square,
clamp, max/min (reduce_max/reduce_min), argmax/argmin; the graph they build and the values.
The corpus (pylib/gpulab/conformance) checks every lane against the float64 reference; this checks the
methods: names, defaults, dim= alias, and that results come back with their dtype."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from gpulab import Graph
from gpulab.errors import GpuLabError

X = [[1.5, -2.0, 7.0, 7.0], [-0.0, math.nan, 3.0, -4.5]]


def run(t: object, backend: str = "cpu-python") -> np.ndarray:
    """The value of t, with the output's dtype checked against the array's."""
    result = t.graph.run(backend=backend, y=t)  # type: ignore[attr-defined]
    assert result["backend"] == backend, result.get("stats")  # no fallback
    out = result["outputs"]["y"]
    arr = np.asarray(out["array"]).reshape(out["shape"])
    assert arr.dtype == np.dtype(out["dtype"]), (arr.dtype, out["dtype"])
    return arr


def test_methods_build_v3_nodes_with_their_attrs() -> None:
    g = Graph()
    x = g.tensor(X)
    nodes = {
        name: t
        for name, t in {
            "abs": abs(x),
            "square": x.square(),
            "clamp": x.clamp(min=-1, max=2),
            "reduce_max": x.max(dim=1),
            "reduce_min": x.min(),
            "argmax": x.argmax(1, keepdim=True),
            "argmin": x.argmin(),
        }.items()
    }
    graph = g.to_dict(**nodes)
    by_id = {n["id"]: n for n in graph["nodes"]}
    ops = {o["name"]: by_id[o["id"]] for o in graph["outputs"]}
    assert graph["version"] == 3
    assert {k: v["op"] for k, v in ops.items()} == {k: k for k in ops}
    assert (ops["clamp"]["min"], ops["clamp"]["max"]) == (-1, 2)
    assert ops["reduce_max"]["axis"] == 1 and "keepdim" not in ops["reduce_max"]
    assert "axis" not in ops["argmin"], "axis None (the flattened tensor) is the default"
    assert ops["argmax"]["keepdim"] is True
    assert "min" not in g.to_dict(y=x.clamp(max=0))["nodes"][-1], "no bound: left out"


def test_values_on_cpu_python() -> None:
    g = Graph()
    x = g.tensor(X)
    assert run(x.abs()).tolist()[0] == [1.5, 2.0, 7.0, 7.0]
    assert not np.signbit(run(x.abs())[1, 0]), "abs(-0) = +0"
    assert run(x.clamp(min=0))[1, 0] == 0 and np.signbit(run(x.clamp(min=0))[1, 0]), (
        "-0 equals the bound: kept"
    )
    assert np.isnan(run(x.clamp(-1, 1))[1, 1])
    np.testing.assert_array_equal(run(x.max(axis=1)), [7.0, math.nan])
    np.testing.assert_array_equal(run(x.min(axis=0)), [-0.0, math.nan, 3.0, -4.5])
    arg = run(x.argmax(axis=1))
    assert arg.dtype == np.int32
    assert arg.tolist() == [2, 1], "first index on ties; the first NaN wins"
    assert run(x.argmin()).tolist() == 5, "axis None: an index into the flattened tensor"
    assert run(x.argmax(dim=0, keepdim=True)).shape == (1, 4)


def test_axis_and_dim_together_are_refused() -> None:
    with pytest.raises(GpuLabError) as err:
        Graph().tensor([1.0, 2.0]).argmax(0, dim=0)
    assert err.value.code == "VALIDATION"


INT_MIN, INT_MAX = -(2**31), 2**31 - 1


@pytest.mark.parametrize("backend", ["cpu-python", "wgpu"])
def test_int32_in_int32_out(backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """g.tensor(..., dtype="int32") through the new ops: int32 results, two's complement (wgpu
    on a software adapter too: lavapipe here)."""
    monkeypatch.setenv("GPULAB_ALLOW_SOFTWARE", "1")
    g = Graph()
    x = g.tensor([[INT_MIN, 5, -7], [3, 3, INT_MAX]], dtype="int32")
    try:
        got = {
            k: run(t, backend)
            for k, t in {
                "abs": abs(x),
                "square": x.square(),
                "clamp": x.clamp(-5.5, 4),
                "max": x.max(1),
                "min": x.min(0, keepdim=True),
                "argmax": x.argmax(1),
                "argmin": x.argmin(),
            }.items()
        }
    except GpuLabError as err:
        if err.code == "UNAVAILABLE":
            pytest.skip(f"{backend}: {err}")  # no adapter at all: reported, never a pass
        raise
    assert all(v.dtype == np.int32 for v in got.values())
    assert got["abs"].tolist() == [[INT_MIN, 5, 7], [3, 3, INT_MAX]]
    assert got["square"].tolist() == [[0, 25, 49], [9, 9, 1]]
    assert got["clamp"].tolist() == [[-5, 4, -5], [3, 3, 4]]
    assert got["max"].tolist() == [5, INT_MAX]
    assert got["min"].tolist() == [[INT_MIN, 3, -7]]
    assert got["argmax"].tolist() == [1, 2]
    assert got["argmin"].tolist() == 0


# ---- the v3 select ops: maximum, minimum, masks, where, cast, rand, dropout --------------------


def _ops(graph: dict) -> dict[str, dict]:
    by_id = {n["id"]: n for n in graph["nodes"]}
    return {o["name"]: by_id[o["id"]] for o in graph["outputs"]}


def test_select_methods_and_operators_build_their_nodes() -> None:
    g = Graph()
    x, i = g.tensor([1.5, -2.0]), g.tensor([1, 2], dtype="int32")
    made = {
        "maximum": x.maximum(0),
        "minimum": i.minimum(1),
        "lt": x < 1,
        "le": x <= g.tensor([0.0]),
        "gt": 2 < x,
        "ge": i >= 0,
        "eq": i.eq(2),
        "ne": x.ne(x),
        "cast": x.cast("uint32"),
        "where": g.where(x > 0, x, -1.0),
        "hash_uniform": g.rand([2, 3], seed=5, counter=9),
        "dropout": x.dropout(0.25, seed=3, counter=2**32 - 1),
    }
    graph = g.to_dict(**made)
    nodes = {n["id"]: n for n in graph["nodes"]}
    ops = _ops(graph)
    assert graph["version"] == 3
    assert {k: v["op"] for k, v in ops.items()} == {k: k for k in made}
    assert ops["gt"]["op"] == "gt" and nodes[ops["gt"]["a"]]["op"] == "input"  # 2 < x: x > 2
    assert nodes[ops["minimum"]["b"]]["dtype"] == "int32"  # a scalar takes the tensor's dtype
    assert made["lt"].dtype == "bool" and made["cast"].dtype == "uint32"
    assert made["where"].dtype == "float32" and made["minimum"].dtype == "int32"
    counter = nodes[ops["dropout"]["counter"]]
    assert (counter["dtype"], counter["shape"], list(counter["data"])) == (
        "uint32",
        [],
        [2**32 - 1],
    )
    assert (ops["dropout"]["p"], ops["dropout"]["seed"]) == (0.25, 3)
    assert ops["hash_uniform"]["shape"] == [2, 3] and made["hash_uniform"].shape == (2, 3)
    same = x
    assert (x == same) is True and (x == g.tensor([1.5, -2.0])) is False  # == is identity
    assert len({x: 1, i: 2}) == 2


def value(t: object) -> np.ndarray:
    """As run(), where a bool output's array is uint8 0/1 (docs/protocol.md "Outputs")."""
    out = t.graph.run(backend="cpu-python", y=t)["outputs"]["y"]  # type: ignore[attr-defined]
    arr = np.asarray(out["array"]).reshape(out["shape"])
    assert arr.dtype == (np.uint8 if out["dtype"] == "bool" else np.dtype(out["dtype"]))
    return arr


def test_select_values_on_cpu_python() -> None:
    g = Graph()
    x = g.tensor([-0.0, 0.0, math.nan, 2.5, -3.7])
    y = g.tensor([0.0, -0.0, 1.0, math.nan, -3.7])
    assert np.signbit(value(x.maximum(y))).tolist() == [False, False, False, False, True]
    assert np.signbit(value(x.minimum(y))).tolist() == [True, True, False, False, True]
    assert value(x.eq(y)).tolist() == [1, 1, 0, 0, 1] and value(x.ne(y)).tolist() == [0, 0, 1, 1, 0]
    assert value(x < y).dtype == np.uint8
    assert value(x.cast("int32")).tolist() == [0, 0, 0, 2, -3]
    assert value(g.where(x.ne(x), 7.0, x)).tolist()[2] == 7.0
    u = value(g.rand([1000], seed=1, counter=0))
    assert u.dtype == np.float32 and 0 <= u.min() and u.max() < 1
    assert (u * 2**24 == np.round(u * 2**24)).all()  # top 24 bits times 2^-24


@pytest.mark.parametrize(
    ("build", "says"),
    [
        (lambda g: g.tensor([1.0]).cast("float64"), "dtype"),
        (lambda g: g.tensor([1], dtype="int32").maximum(2.5), "is not an int32"),
        (lambda g: g.tensor([1.0]).dropout(1.0), "[0, 1)"),
        (lambda g: g.tensor([1.0]).dropout(0.5, seed=-1), "0..4294967295"),
        (lambda g: g.where(g.tensor([1.0]), 1.0, 2.0), "operand cond must be bool, got float32"),
        (
            lambda g: g.tensor([1.0]) < g.tensor([1], dtype="int32"),
            "operand b must be float32 like operand a, got int32",
        ),
        (lambda g: g.rand([2], counter=g.tensor([1, 2], dtype="uint32")), "counter"),
        (lambda g: g.tensor([1.0, 2.0]).maximum(g.tensor([1.0, 2.0, 3.0])), "broadcast"),
    ],
)
def test_select_refusals_name_the_node(build: object, says: str) -> None:
    with pytest.raises(GpuLabError) as err:
        build(Graph())  # type: ignore[operator]
    assert err.value.code == "VALIDATION" and err.value.node is not None, err.value
    assert says in str(err.value) and f"node {err.value.node} (" in str(err.value)


def _dropout_step_graph(g: Graph, w: object, counter: object) -> object:
    """One step of a carried state through dropout: w' = dropout(w) + 0.5 * w."""
    return w.dropout(0.25, seed=11, counter=counter) + w * 0.5  # type: ignore[attr-defined]


@pytest.mark.parametrize("backend", ["cpu-python", "wgpu"])
def test_dropout_session_equals_chained_executes(
    backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """5 session steps feeding counters 0..4 equal 5 chained executes bit for bit; steps with
    different counters drop different elements."""
    monkeypatch.setenv("GPULAB_ALLOW_SOFTWARE", "1")
    w0 = np.linspace(-2, 2, 4096, dtype=np.float32) + np.float32(0.001)
    g = Graph()
    w, counter = g.tensor(w0), g.input([], name="counter", dtype="uint32")
    nxt = _dropout_step_graph(g, w, counter)
    try:
        session = g.prepare(feeds=[counter], carry={w: nxt}, backend=backend, y=nxt)
    except GpuLabError as err:
        if err.code == "UNAVAILABLE":
            pytest.skip(f"{backend}: {err}")  # no adapter at all: reported, never a pass
        raise
    assert session.backend == backend
    out = session.run_steps([{counter: [k]} for k in range(5)])
    got = np.asarray(out["outputs"]["y"]["array"])
    session.dispose()
    state, masks = w0, []
    for k in range(5):
        h = Graph()
        t = h.tensor(state)
        r = h.run(
            backend=backend,
            y=_dropout_step_graph(h, t, k),
            m=t.dropout(0.25, seed=11, counter=k).ne(0),
        )
        assert r["backend"] == backend
        state = np.asarray(r["outputs"]["y"]["array"])
        masks.append(np.asarray(r["outputs"]["m"]["array"]))
    assert got.view(np.uint32).tolist() == state.view(np.uint32).tolist()
    for a, b in itertools.pairwise(masks):
        assert (a != b).sum() > 500  # a fresh mask every step (about 3/8 of 4096 differ)
    assert 0.70 < masks[0].mean() < 0.80  # p = 0.25 keeps about 3/4
