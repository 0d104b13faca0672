"""The protocol-v3 ops through the Python layer (Tensor methods) on cpu-python: abs, square,
clamp, max/min (reduce_max/reduce_min), argmax/argmin; the graph they build and the values.
The corpus (e2e/conformance) checks every lane against the float64 reference; this checks the
methods: names, defaults, dim= alias, and that results come back with their dtype."""

from __future__ import annotations

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
    nodes = {name: t for name, t in {
        "abs": abs(x), "square": x.square(), "clamp": x.clamp(min=-1, max=2),
        "reduce_max": x.max(dim=1), "reduce_min": x.min(), "argmax": x.argmax(1, keepdim=True),
        "argmin": x.argmin()}.items()}
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
    assert run(x.clamp(min=0))[1, 0] == 0 and np.signbit(run(x.clamp(min=0))[1, 0]), \
        "-0 equals the bound: kept"
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
        got = {k: run(t, backend) for k, t in {
            "abs": abs(x), "square": x.square(), "clamp": x.clamp(-5.5, 4),
            "max": x.max(1), "min": x.min(0, keepdim=True), "argmax": x.argmax(1),
            "argmin": x.argmin()}.items()}
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
