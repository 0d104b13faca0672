"""Zero-size tensors and rank-0 axes (docs/protocol.md "Zero-size tensors", "Rank-0 axes"):
what the host lowers before an executor prepares a graph (gpulab.lowering), and its JS twin
(backends-js/src/lowering.mjs) lowering every corpus graph the same way."""

from __future__ import annotations

import base64
import json
import math
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
from gpulab import Graph, host
from gpulab.conformance.runner import load_cases
from gpulab.lowering import lower_graph, prepare_lowered
from gpulab.protocol import validate
from gpulab.support import check_kernels

ROOT = Path(__file__).resolve().parents[2]
V = 8


def _out(*ids: int) -> list[dict]:
    return [{"name": f"o{i}", "id": i} for i in ids]


class Recorder:
    """An executor that records the graphs it is given and computes nothing."""

    name = "recorder"

    def __init__(self) -> None:
        self.prepared: list[Any] = []

    def prepare(self, checked: Any, feeds: Any, carry: Any, keep: Any) -> Any:
        self.prepared.append(checked)
        return self

    def run(self, steps: list, read_ids: list[int]) -> dict[int, Any]:
        return {i: np.zeros(1, np.float32) for i in read_ids}

    def dispose(self) -> None:
        pass


def test_an_executor_is_never_given_a_zero_size_tensor() -> None:
    checked = validate(
        {
            "version": V,
            "nodes": [
                {"id": 0, "op": "input", "shape": [0, 3], "data": []},
                {"id": 1, "op": "sum", "a": 0, "axis": 0},
                {"id": 2, "op": "relu", "a": 0},
                {"id": 3, "op": "input", "shape": [2, 3], "data": [1, 2, 3, 4, 5, 6]},
                {"id": 4, "op": "concat", "tensors": [0, 3, 0], "axis": 0},
            ],
            "outputs": _out(1, 2, 4),
        }
    )
    rec = Recorder()
    program = prepare_lowered(rec, checked, feeds=[], carry={}, keep=[])
    (given,) = rec.prepared
    assert all(0 not in n.shape for n in given.nodes)
    assert [o.id for o in given.outputs] == [1, 4], "the empty output is answered by the host"
    assert given.by_id[1].op == "input" and list(given.by_id[1].data) == [0.0, 0.0, 0.0]
    assert given.by_id[4].op == "reshape", "a concat of one non-empty operand is a copy"
    values = program.run([{}], [1, 2, 4])
    assert len(values[2]) == 0 and values[2].typecode == "f"


def test_a_graph_whose_outputs_are_all_empty_prepares_nothing() -> None:
    checked = validate(
        {
            "version": V,
            "nodes": [
                {"id": 0, "op": "input", "shape": [2, 0], "dtype": "int32", "data": []},
                {"id": 1, "op": "abs", "a": 0},
            ],
            "outputs": _out(1),
        }
    )
    rec = Recorder()
    program = prepare_lowered(rec, checked, feeds=[], carry={}, keep=[])
    assert rec.prepared == []
    assert program.run([{}], [1])[1].typecode == "i"


def test_results_over_no_element_are_the_protocols() -> None:
    g = {
        "version": V,
        "nodes": [
            {"id": 0, "op": "input", "shape": [0, 3], "data": []},
            {"id": 1, "op": "sum", "a": 0, "axis": 0},
            {"id": 2, "op": "mean", "a": 0},
            {"id": 3, "op": "input", "shape": [2, 0], "data": []},
            {"id": 4, "op": "matmul", "a": 3, "b": 0},
            {"id": 5, "op": "cross_entropy", "a": 0, "b": 0},
            {"id": 6, "op": "argmax", "a": 0, "axis": 1},
            {"id": 7, "op": "pad", "a": 0, "widths": [[1, 0], [0, 0]], "value": -2},
        ],
        "outputs": _out(1, 2, 4, 5, 6, 7),
    }
    out = host.execute(g, backend="cpu-python")["outputs"]
    assert out["o1"]["array"].tolist() == [0.0, 0.0, 0.0]
    assert math.isnan(out["o2"]["array"]) and math.isnan(out["o5"]["array"])
    assert out["o4"]["array"].tolist() == [[0.0] * 3] * 2
    assert out["o6"]["shape"] == [0] and out["o6"]["array"].dtype == np.int32
    assert out["o7"]["array"].tolist() == [[-2.0] * 3]


def test_a_session_feeds_and_carries_empty_tensors() -> None:
    g = {
        "version": V,
        "nodes": [
            {"id": 0, "op": "input", "shape": [0, 2]},
            {"id": 1, "op": "input", "shape": [3, 2], "data": [0] * 6},
            {"id": 2, "op": "concat", "tensors": [0, 1], "axis": 0},
            {"id": 3, "op": "input", "shape": [3, 2]},
            {"id": 4, "op": "add", "a": 2, "b": 3},
            {"id": 5, "op": "input", "shape": [2, 0], "data": []},
            {"id": 6, "op": "neg", "a": 5},
        ],
        "outputs": [{"name": "next", "id": 4}, {"name": "empty", "id": 6}],
    }
    s = host.prepare(g, feeds=[0, 3], carry={1: "next", 5: "empty"}, backend="cpu-python")
    ones = np.ones((3, 2), np.float32)
    r = s.run_steps([{0: np.zeros((0, 2), np.float32), 3: ones}, {0: [], 3: ones}])
    assert r["stats"]["steps"] == 2
    assert s.download(1)["array"].tolist() == [[2.0, 2.0]] * 3
    assert s.download(5)["array"].shape == (2, 0)
    s.dispose()


def test_graph_tensor_keeps_a_zero_size_shape() -> None:
    g = Graph()
    empty, rows = g.tensor([]), g.tensor(np.zeros((0, 3), np.float32))
    assert empty.shape == (0,) and rows.shape == (0, 3)
    graph = g.to_dict(e=empty, r=rows.sum(axis=0))
    assert graph["version"] == V
    out = host.execute(graph, backend="cpu-python")["outputs"]
    assert out["e"]["shape"] == [0] and out["r"]["array"].tolist() == [0.0, 0.0, 0.0]


def test_a_scalar_takes_axis_0_and_minus_1() -> None:
    g = Graph()
    x = g.tensor(2.5)
    got = host.execute(
        g.to_dict(s=x.sum(axis=0), m=x.argmax(axis=-1), p=x.softmax(axis=0)), backend="cpu-python"
    )["outputs"]
    assert [got[k]["shape"] for k in "smp"] == [[], [], []]
    assert (got["s"]["array"], got["m"]["array"], got["p"]["array"]) == (2.5, 0, 1.0)


# five axes that no permute keeps adjacent: no view of rank <= 4 (lowering_rank.py)
SCATTERED = [2, 3, 2, 3, 2], [4, 2, 0, 3, 1]


def test_kernels_handle_rank_4_unless_they_say_more() -> None:
    shape, dims = SCATTERED
    checked = validate(
        {
            "version": V,
            "nodes": [
                {"id": 0, "op": "input", "shape": shape, "data": list(range(72))},
                {"id": 1, "op": "permute", "a": 0, "dims": dims},
            ],
            "outputs": _out(1),
        }
    )
    ops = {"input", "permute", "reshape"}
    answer = check_kernels(checked, ops, ranks={"reshape": 8})
    assert answer.missing == [
        {
            "id": 1,
            "op": "permute",
            "dtype": "float32",
            "reason": "has no kernel for permute at rank 5",
        }
    ]
    assert check_kernels(checked, ops, default_rank=8).ok


# ---- the JS twin ------------------------------------------------------------------------

JS = """
import { validateGraph } from './backends-js/src/validate.mjs';
import { lowerGraph } from './backends-js/src/lowering.mjs';
let text = '';
for await (const chunk of process.stdin) text += chunk;
const b64 = (d) => Buffer.from(d.buffer, d.byteOffset, d.byteLength).toString('base64');
const out = JSON.parse(text).map((g) => {
  const lowered = lowerGraph(validateGraph(g));
  if (!lowered) return null;
  const { checked, empty } = lowered;
  return { empty: [...empty].sort((x, y) => x[0] - y[0]), order: checked.order,
    outputs: checked.outputs.map((o) => o.id),
    nodes: checked.nodes.map((n) => [n.id, n.op, n.operands, n.attrs, n.shape, n.dtype,
      n.data ? b64(n.data) : null]) };
});
process.stdout.write(JSON.stringify(out));
"""


def _python_view(graph: dict) -> Any:
    lowered = lower_graph(validate(graph))
    if lowered is None:
        return None
    c = lowered.checked

    def attrs(a: dict) -> dict:
        return json.loads(
            json.dumps({k: list(v) if isinstance(v, tuple) else v for k, v in a.items()})
        )

    return {
        "empty": sorted([k, v] for k, v in lowered.empty.items()),
        "order": c.order,
        "outputs": [o.id for o in c.outputs],
        "nodes": [
            [
                n.id,
                n.op,
                list(n.operands),
                attrs(n.attrs),
                list(n.shape),
                n.dtype,
                None if n.data is None else base64.b64encode(n.data.tobytes()).decode(),
            ]
            for n in c.nodes
        ],
    }


def test_python_and_js_lower_every_corpus_graph_alike() -> None:
    graphs = [c["graph"] for c in load_cases()]
    js = subprocess.run(
        ["node", "--input-type=module", "-e", JS],
        input=json.dumps(graphs),
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    theirs = json.loads(js.stdout)
    lowered = 0
    for graph, js_view in zip(graphs, theirs, strict=True):
        mine = _python_view(graph)
        assert json.loads(json.dumps(mine)) == js_view, graph["nodes"][:3]
        lowered += mine is not None
    assert lowered >= 70, "the corpus has its zero-size and rank-0 cases"
