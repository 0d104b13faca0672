"""The protocol-v4 selection ops from Python: basic indexing, the Tensor methods, g.concat, and
the PyTorch-order note of docs/protocol.md: index_add / scatter_add equal a sequential float32
accumulation in index order (numpy's np.add.at, applied in that order), which a reordered
accumulation does not give for the data here. Run on cpu-python (the evaluator of every native
fallback); the corpus runs the same ops on every lane."""

from __future__ import annotations

import numpy as np
import pytest
from gpulab.errors import GpuLabError
from gpulab.graph import Graph


def values(t):
    out = t.graph.run(backend="cpu-python", y=t)["outputs"]["y"]
    return np.asarray(out["array"]).reshape(out["shape"])


X = np.arange(60, dtype=np.float32).reshape(3, 4, 5)


@pytest.mark.parametrize(
    "key",
    [
        (slice(1, 3), slice(None, None, 2), -1),
        (Ellipsis, 0),
        (None,),
        (1,),
        (slice(None, None, -1),),
        (slice(-100, 100), slice(3, 0, -2), slice(None, None, -3)),
        (None, 2, Ellipsis, None, 1),
        (-1, -1, -1),
        (slice(2, -5, -1),),
        (slice(2, 2),),  # an empty selection (version 8)
        (slice(None), slice(3, 1)),
    ],
)
def test_basic_indexing_matches_numpy(key):
    g = Graph()
    got = values(g.tensor(X)[key])
    want = X[key]
    assert got.shape == want.shape and np.array_equal(got, want)


def test_indexing_int32_data_keeps_its_dtype():
    g = Graph()
    t = g.tensor(np.arange(12, dtype=np.int32).reshape(3, 4), dtype="int32")
    y = t[::-1, 1::2]
    assert y.dtype == "int32" and y.graph.to_dict(y=y)["version"] == 4
    assert values(y).tolist() == [[9, 11], [5, 7], [1, 3]]


@pytest.mark.parametrize(
    "key, words",
    [
        ((slice(None, None, 0),), "step not 0"),
        ((0, 0, 0, 0), "too many indices"),
        ((5,), "out of range"),
        ((Ellipsis, Ellipsis), "ellipsis"),
        ((1.5,), "only basic indexing"),
    ],
)
def test_bad_indexing_is_refused(key, words):
    g = Graph()
    with pytest.raises(GpuLabError, match=words) as info:
        g.tensor(X)[key]
    assert info.value.code == "VALIDATION"


def test_methods_and_concat_match_numpy():
    g = Graph()
    t = g.tensor(X)
    idx = np.array([3, 0, 3], dtype=np.int32)
    assert np.array_equal(values(t.index_select(1, idx)), X[:, idx])
    gidx = np.array([[[4, 0]] * 4] * 2, dtype=np.int32)
    assert np.array_equal(values(t.gather(-1, gidx)), np.take_along_axis(X[:2], gidx, axis=-1))
    assert np.array_equal(values(g.concat([t, t[:, :1]], axis=1)), np.concatenate([X, X[:, :1]], 1))
    assert np.array_equal(
        values(t.pad([(0, 0), (1, 0), (0, 2)], value=-1.5)),
        np.pad(X, [(0, 0), (1, 0), (0, 2)], constant_values=-1.5),
    )
    src = -np.ones((3, 2), np.float32)
    want = X.copy()
    want[:, 1:3, 4] = src
    assert np.array_equal(values(t.slice_scatter(src, (slice(None), slice(1, 3), 4))), want)


def test_bad_operands_name_the_node_and_operand():
    g = Graph()
    t = g.tensor(X)
    with pytest.raises(GpuLabError, match=r"node \d+ \(index_select\): operand idx must be int32"):
        t.index_select(0, g.tensor([0.0]))
    with pytest.raises(
        GpuLabError, match=r"\(gather\): operand idx holds idx\[1\] = 9, out of range"
    ):
        t.gather(2, np.array([[[0, 9]]], np.int32))
    with pytest.raises(GpuLabError, match=r"\(concat\): operand tensors\[1\]"):
        g.concat([t, t[0]], 0)
    with pytest.raises(GpuLabError, match="2 to 8"):
        g.concat([t] * 9, 0)


# Float32 values whose sum depends on the order: 2^24 + 1 + 1 = 2^24 step by step, 2^24 + 2
# when the ones are added first.
ORDERED = np.array([2.0**24, 1, 1, -(2.0**24), 3e38, 3e38, -3e38, 0.5], np.float32)


def _sequential(out: np.ndarray, idx: np.ndarray, src: np.ndarray) -> np.ndarray:
    """np.add.at in index order, float32 step by step (numpy's add.at is unbuffered: it applies
    the pairs in the order given)."""
    out = out.copy()
    with np.errstate(over="ignore"):  # 3e38 + 3e38 is inf in float32, as on every backend
        for j in range(len(idx)):
            np.add.at(out, idx[j : j + 1], src[j : j + 1])
    return out


def test_index_add_is_the_sequential_accumulation_in_index_order():
    rng = np.random.default_rng(7)
    idx = np.array([1, 0, 1, 1, 0, 1, 1, 0], np.int32)
    src = np.stack([ORDERED, ORDERED[::-1], rng.standard_normal(8).astype(np.float32)], 1)
    a = np.zeros((2, 3), np.float32)
    g = Graph()
    got = values(g.tensor(a).index_add(0, idx, src))
    want = _sequential(a, idx, src)
    assert got.tobytes() == want.tobytes()
    # the test can fail: another order (PyTorch's CUDA index_add_ makes no promise) differs
    shuffled = _sequential(a, idx[::-1].copy(), src[::-1].copy())
    assert shuffled.tobytes() != want.tobytes()


def test_scatter_add_is_the_sequential_accumulation_in_row_major_order():
    idx = np.array([[0, 0, 0, 0, 1, 1, 1, 1]], np.int32)
    src = ORDERED.reshape(1, 8)
    a = np.zeros((1, 2), np.float32)
    got = values(Graph().tensor(a).scatter_add(1, idx, src))
    want = a.copy()
    with np.errstate(over="ignore"):
        for p in range(8):  # row-major over idx
            np.add.at(want, (np.array([0]), idx[0, p : p + 1]), src[0, p : p + 1])
    assert got.tobytes() == want.tobytes()
    assert want[0, 0] == np.float32(0.0)  # 2^24 + 1 + 1 - 2^24 in this order


def test_a_fed_index_out_of_range_is_backend_and_poisons_the_session():
    g = Graph()
    t = g.tensor(X)
    i = g.input([2], name="i", dtype="int32")
    s = g.prepare(feeds=[i], backend="cpu-python", y=t.index_select(0, i))
    assert s.run({i: np.array([2, 0], np.int32)})["outputs"]["y"]["shape"] == [2, 4, 5]
    with pytest.raises(GpuLabError, match=r"operand idx holds idx\[0\] = -1, out of range") as info:
        s.run({i: np.array([-1, 0], np.int32)})
    assert info.value.code == "BACKEND"
    with pytest.raises(GpuLabError) as again:
        s.run({i: np.array([0, 0], np.int32)})
    assert again.value.code == "STATE"


FLAT_IDX = ("index_select", "index_add")  # idx of rank 1; gather / scatter_add: a's rank


def _fed_index_graph(op: str) -> tuple[dict, list[int]]:
    """x [3, 4] and a fed int32 index operand of `op` along axis 0 (src ones for the adds)."""
    nodes: list[dict] = [
        {"id": 0, "op": "input", "shape": [3, 4], "data": [float(v) for v in range(12)]},
        {"id": 1, "op": "input", "shape": [2] if op in FLAT_IDX else [2, 4], "dtype": "int32"},
    ]
    node = {"id": 3, "op": op, "a": 0, "idx": 1, "axis": 0}
    if op in ("index_add", "scatter_add"):
        nodes.append({"id": 2, "op": "full", "shape": [2, 4], "value": 1.0})
        node["src"] = 2
    return {"version": 4, "nodes": [*nodes, node], "outputs": [{"name": "y", "id": 3}]}, [1]


@pytest.mark.parametrize("backend", ["cpu-python", "wgpu"])
@pytest.mark.parametrize("op", ["index_select", "gather", "index_add", "scatter_add"])
def test_a_fed_index_out_of_range_is_backend_on_every_native_executor(backend, op):
    """In range: the reference's values; out of range: BACKEND naming the node and the
    first bad position (the GPU's check word, never a silent wrong read), then STATE."""
    if backend == "wgpu":
        pytest.importorskip("wgpu", reason="wgpu-py is not installed")
    from gpulab import host

    graph, feeds = _fed_index_graph(op)
    count = 2 if op in FLAT_IDX else 8
    session = host.prepare(graph, feeds=feeds, backend=backend, allow_software=True, strict=True)
    try:
        good = np.array([2, 0] * (count // 2), np.int32)
        out = session.run({1: good})["outputs"]["y"]
        assert out["shape"] == ([2, 4] if op in ("index_select", "gather") else [3, 4])
        bad = good.copy()
        bad[1] = 3
        bad[count - 1] = -5
        with pytest.raises(
            GpuLabError,
            match=rf"node 3 \({op}\): operand idx holds .*idx\[1\]"
            r".*out of range for axis 0 of a \[3, 4\]",
        ) as info:
            session.run({1: bad})
        assert info.value.code == "BACKEND"
        with pytest.raises(GpuLabError) as again:
            session.run({1: good})
        assert again.value.code == "STATE"
    finally:
        session.dispose()


def test_integer_indexing_of_int32_data_drops_the_axis():
    """t[..., 0] on int32 data: a slice and an int32 reshape (reshape takes int32 too)."""
    g = Graph()
    data = np.arange(24, dtype=np.int32).reshape(2, 3, 4) - 12
    t = g.tensor(data, dtype="int32")
    y = t[..., 0]
    assert y.dtype == "int32" and values(y).tolist() == data[..., 0].tolist()
    assert values(t[1, ::-1, None, 2]).tolist() == data[1, ::-1, None, 2].tolist()


SLICE_TWIN_JS = """
import { sliceIndices } from './backends-js/src/shapes-select.mjs';
let text = '';
for await (const chunk of process.stdin) text += chunk;
const out = JSON.parse(text).map(([e, n]) => Object.values(sliceIndices(e, n)));
process.stdout.write(JSON.stringify(out));
"""


def test_slice_rule_twins_agree_with_python_slices():
    """The slice shape rule's normalization, shapes-select.mjs sliceIndices and its twin
    shapes_select.slice_indices, equal Python's own slice.indices(n) and len(range(...)) on
    every start/stop in -7..7 (and None), step in -3..3 but 0, n in 1..5."""
    import itertools
    import json
    import subprocess
    from pathlib import Path

    from gpulab.shapes_select import slice_indices

    ends = [None, *range(-7, 8)]
    grid = [
        ([a, b, s], n)
        for a, b, s, n in itertools.product(ends, ends, [-3, -2, -1, 1, 2, 3], range(1, 6))
    ]
    root = Path(__file__).resolve().parents[2]
    js = subprocess.run(
        ["node", "--input-type=module", "-e", SLICE_TWIN_JS],
        cwd=root,
        input=json.dumps(grid),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    for (entry, n), got in zip(grid, json.loads(js.stdout), strict=True):
        start, stop, step = slice(*entry).indices(n)
        want = [start, stop, step, len(range(start, stop, step))]
        assert list(slice_indices(entry, n)) == want, (entry, n)
        assert got == want, (entry, n, got)
    assert len(grid) == 16 * 16 * 6 * 5
