"""The Graph/Tensor API: operators and scalars, argument conventions, data forms, eager shape
errors, to_dict, run/submit and the optimizer helpers."""

from __future__ import annotations

import array
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from gpulab import GpuLabError, Graph, Tensor
from gpulab.protocol import validate


def run1(t: Tensor) -> np.ndarray:
    return t.graph.run(backend="cpu-python", out=t)["outputs"]["out"]["array"]


def ops_of(g: Graph, t: Tensor) -> list[str]:
    return [n["op"] for n in g.to_dict(out=t)["nodes"]]


def test_seed_example_result_shape():
    g = Graph()
    a, b = g.tensor([-2, 3, 4]), g.tensor([10, 20, 30])
    result = g.run(backend="cpu-python", values=(a * b).relu())
    assert result["backend"] == "cpu-python"
    values = result["outputs"]["values"]
    assert values["data"] == [0.0, 60.0, 120.0] and str(values["data"]) == "[0.0, 60.0, 120.0]"
    assert values["shape"] == [3] and values["dtype"] == "float32"
    assert isinstance(values["array"], np.ndarray) and values["array"].dtype == np.float32
    assert g.to_dict(values=(a * b).relu())["version"] == 1


def test_scalars_on_either_side_become_full_nodes():
    g = Graph()
    t = g.tensor([1.0, 2.0, 4.0])
    cases = {
        "2 * t": (2 * t, [2, 4, 8]),
        "t * 2": (t * 2, [2, 4, 8]),
        "t - 1.5": (t - 1.5, [-0.5, 0.5, 2.5]),
        "1.5 - t": (1.5 - t, [0.5, -0.5, -2.5]),
        "1 / t": (1 / t, [1, 0.5, 0.25]),
        "t / 2": (t / 2, [0.5, 1, 2]),
        "3 + t": (3 + t, [4, 5, 7]),
        "-t": (-t, [-1, -2, -4]),
        "t + t": (t + t, [2, 4, 8]),
    }
    for name, (expr, want) in cases.items():
        assert run1(expr).tolist() == want, name
    d = g.to_dict(out=1 / t)
    full = next(n for n in d["nodes"] if n["op"] == "full")
    assert full["shape"] == [] and full["value"] == 1.0
    div = next(n for n in d["nodes"] if n["op"] == "div")
    assert div["a"] == full["id"] and div["b"] == t.id
    assert ops_of(g, -t) == ["input", "neg"]


def test_broadcasting_and_matmul_shapes():
    g = Graph()
    a = g.tensor(np.ones((2, 1, 3), np.float32))
    b = g.tensor(np.ones((4, 3), np.float32))
    assert (a + b).shape == (2, 4, 3)
    m = g.tensor(np.ones((5, 3, 2), np.float32)) @ g.tensor(np.ones((2, 7), np.float32))
    assert m.shape == (5, 3, 7) and isinstance(m.shape, tuple)
    assert run1(m)[0, 0, 0] == 2.0


def test_numpy_array_on_the_left():
    g = Graph()
    t = g.tensor([1.0, 2.0])
    assert run1(np.array([10.0, 20.0]) + t).tolist() == [11.0, 22.0]
    assert run1(np.float32(3) * t).tolist() == [3.0, 6.0]


def test_reductions_axis_dim_alias_negative_axes():
    g = Graph()
    x = g.tensor([[1, 2, 3], [4, 5, 6]])
    assert x.sum().shape == () and run1(x.sum()).tolist() == 21.0
    assert x.sum(axis=-1).shape == (2,) and run1(x.sum(dim=-1)).tolist() == [6.0, 15.0]
    assert x.mean(dim=0, keepdim=True).shape == (1, 3)
    assert run1(x.mean(0)).tolist() == [2.5, 3.5, 4.5]
    assert x.sum(keepdim=True).shape == (1, 1)
    assert x.softmax().shape == (2, 3) and x.log_softmax(axis=0).shape == (2, 3)
    assert np.allclose(run1(x.softmax(dim=-1)).sum(axis=-1), 1.0)
    with pytest.raises(GpuLabError) as info:
        x.sum(axis=0, dim=1)
    assert info.value.code == "VALIDATION"
    with pytest.raises(GpuLabError) as info:
        x.sum(axis=2)
    assert info.value.code == "VALIDATION" and "axis 2" in info.value.message


def test_layout_ops_accept_varargs_or_one_sequence():
    g = Graph()
    x = g.tensor(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    assert x.permute(2, 0, 1).shape == x.permute([2, 0, 1]).shape == (4, 2, 3)
    assert x.reshape(6, -1).shape == x.reshape((6, -1)).shape == (6, 4)
    assert x.transpose().shape == (2, 4, 3) and x.T.shape == (2, 4, 3)
    assert run1(x.permute(2, 0, 1))[3, 1, 2] == 23.0
    assert run1(x.reshape([4, 6]))[3, 5] == 23.0


def test_unary_methods_record_their_ops():
    g = Graph()
    x = g.tensor([0.5, 1.0])
    for name in ["relu", "gelu", "sigmoid", "tanh", "exp", "log", "sqrt", "positive"]:
        t = getattr(x, name)()
        assert ops_of(g, t)[-1] == name and t.shape == (2,)
    grid = g.tensor([[1.0 if c == 2 and 1 <= r <= 3 else 0.0 for c in range(5)] for r in range(5)])
    assert run1(grid.life())[2].tolist() == [0, 1, 1, 1, 0]
    dy = g.tensor([1.0, 1.0])
    assert ops_of(g, x.gelu_grad(dy))[-1] == "gelu_grad"


def test_losses():
    g = Graph()
    logits = g.tensor([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0]])
    target = [[0, 0, 1], [1, 0, 0]]
    loss = logits.cross_entropy(target)
    assert loss.shape == ()
    ref = ((-(3 - math.log(math.exp(1) + math.exp(2) + math.exp(3)))) + math.log(3)) / 2
    assert abs(run1(loss) - ref) < 1e-6
    grad = logits.cross_entropy_grad(g.tensor(target))
    assert grad.shape == (2, 3) and abs(run1(grad).sum()) < 1e-6


# ------------------------------------------------------------------------------ data forms


def test_nested_lists_infer_shape_and_ragged_is_refused():
    g = Graph()
    assert g.tensor([[[1], [2]], [[3], [4]]]).shape == (2, 2, 1)
    assert g.tensor(3.5).shape == ()
    assert g.tensor([1, 2, 3, 4], shape=[2, 2]).shape == (2, 2)
    for ragged in ([[1, 2], [3]], [[1, 2], 3], [1, [2, 3]], [[[1]], [2]]):
        with pytest.raises(GpuLabError) as info:
            g.tensor(ragged)
        assert info.value.code == "VALIDATION" and "ragged" in info.value.message
    with pytest.raises(GpuLabError) as info:
        g.tensor([1, 2, 3], shape=[2, 2])
    assert info.value.code == "VALIDATION" and "3 values" in info.value.message
    assert g.tensor([]).shape == (0,) and g.tensor([[], []]).shape == (2, 0)  # zero-size
    assert g.tensor([[[[[1]]]]]).shape == (1, 1, 1, 1, 1)  # rank 5 (version 8)
    with pytest.raises(GpuLabError) as info:
        g.tensor([[[[[[[[[1]]]]]]]]])
    assert info.value.code == "LIMIT"
    with pytest.raises(GpuLabError):
        g.tensor(["a", "b"])


@pytest.mark.parametrize(
    "data, shape",
    [
        (array.array("f", [1, 2, 3, 4]), (4,)),
        (array.array("d", [1, 2, 3, 4]), (4,)),
        (memoryview(array.array("f", [1, 2, 3, 4])), (4,)),
        (memoryview(np.arange(1, 5, dtype=np.float32).reshape(2, 2)), (2, 2)),
        (np.arange(1, 5, dtype=np.float64).reshape(2, 2), (2, 2)),
        (np.arange(1, 5, dtype=np.int32), (4,)),
        ((1, 2, 3, 4), (4,)),
    ],
)
def test_data_forms(data, shape):
    g = Graph()
    t = g.tensor(data)
    assert t.shape == shape
    assert run1(t).reshape(-1).tolist() == [1.0, 2.0, 3.0, 4.0]


def test_to_dict_is_plain_json_with_non_finite_strings():
    g = Graph()
    t = g.tensor([math.nan, math.inf, -math.inf, 1.0]) + g.full([4], math.nan)
    d = g.to_dict(out=t)
    text = json.dumps(d, allow_nan=False)
    assert '"nan"' in text and '"-inf"' in text
    assert validate(json.loads(text)).required_version == 1
    assert d["outputs"] == [{"name": "out", "id": t.id}]


def test_to_dict_keeps_only_needed_nodes_and_the_lowest_version():
    g = Graph()
    a = g.tensor([1.0, 2.0])
    unused = a.exp()  # noqa: F841 - recorded, not needed by the output
    b = a.relu()
    d = g.to_dict(b=b)
    assert [n["op"] for n in d["nodes"]] == ["input", "relu"] and d["version"] == 1
    x = g.tensor([[1.0, 2.0]])
    assert g.to_dict(s=x.sum(axis=0))["version"] == 2
    assert g.to_dict(s=x.sum())["version"] == 1


def test_eager_shape_errors_name_the_node():
    g = Graph()
    a, b = g.tensor([[1, 2, 3]]), g.tensor([[1, 2]])
    with pytest.raises(GpuLabError) as info:
        a + b
    assert info.value.code == "VALIDATION"
    assert f"node {info.value.node} (add)" in info.value.message and "[1, 3]" in info.value.message
    with pytest.raises(GpuLabError) as info:
        a @ b
    assert "matmul" in info.value.message


def test_tensors_of_another_graph_are_refused():
    g1, g2 = Graph(), Graph()
    with pytest.raises(GpuLabError) as info:
        g1.tensor([1.0]) + g2.tensor([1.0])
    assert info.value.code == "VALIDATION" and "another graph" in info.value.message


def test_bool_of_a_tensor_is_an_error():
    g = Graph()
    with pytest.raises(TypeError):
        bool(g.tensor([1.0]))


# ------------------------------------------------------------------------------ running


def test_submit_calls_back_before_returning_and_routes_errors():
    g = Graph()
    x = g.tensor([1.0, -1.0])
    got = []
    g.submit(got.append, values=x.relu())
    assert got and got[0]["outputs"]["values"]["data"] == [1.0, 0.0]
    errors = []
    g.submit(got.append, on_error=errors.append, values=g.input([2]).relu())
    assert len(got) == 1 and errors[0].code == "VALIDATION" and "feed" in errors[0].message
    with pytest.raises(GpuLabError):
        g.submit(got.append, values=g.input([2]))
    with pytest.raises(GpuLabError) as info:
        g.run()
    assert "output" in info.value.message


def test_optimizer_helpers_record_the_documented_ops():
    g = Graph()
    p, grad = g.tensor([1.0, 2.0]), g.tensor([0.5, -0.5])
    assert run1(g.sgd(p, grad, lr=0.1)).tolist() == [np.float32(0.95), np.float32(2.05)]
    new_p, new_v = g.momentum(p, g.tensor([1.0, 1.0]), grad, lr=0.1, momentum=0.5)
    assert ops_of(g, new_p)[-2:] == ["momentum_update", "sgd_update"]
    assert run1(new_v).tolist() == [1.0, 0.0]
    m, v = g.tensor([0.0, 0.0]), g.tensor([0.0, 0.0])
    new_p, new_m, new_v = g.adam(p, m, v, grad, step=1, lr=0.1)
    recorded = [n["op"] for n in g.to_dict(out=new_p)["nodes"]]
    assert [op for op in recorded if op.startswith("adam")] == ["adam_m", "adam_v", "adam_update"]
    # the first Adam step moves each weight by lr against the gradient's sign
    assert np.allclose(run1(new_p), [0.9, 2.1], atol=1e-6)
    assert np.allclose(run1(new_m), [0.05, -0.05]) and np.allclose(run1(new_v), [2.5e-4] * 2)


def test_the_package_records_graphs_without_numpy():
    code = (
        "import sys; sys.modules['numpy'] = None\n"
        "from gpulab import Graph, GpuLabError\n"
        "import array\n"
        "g = Graph(); a = g.tensor([[1, 2], [3, 4]]); b = g.tensor(array.array('f', [1, 2]))\n"
        "d = g.to_dict(out=(a * b).sum(axis=0))\n"
        "assert d['version'] == 2 and len(d['nodes']) == 4, d\n"
        "try:\n"
        "    g.run(backend='cpu-python', out=a)\n"
        "except GpuLabError as e:\n"
        "    print(e.code, e.message)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "GPULAB_GPU": "0"},
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "UNAVAILABLE cpu-python needs numpy: pip install gpulab[native]"
