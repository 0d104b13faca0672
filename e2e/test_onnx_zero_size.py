"""Zero-size tensors through gpulab.onnx: the protocol (version 8) takes them on every lane, so
the loader lets an empty input or an empty intermediate through where the ops' meaning is the
protocol's, and the results match ONNX Runtime (shape included)."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
from gpulab import onnx as gonnx
from onnx import TensorProto, helper


def _model(nodes, inputs, outputs, initializers=()) -> bytes:
    graph = helper.make_graph(nodes, "zero_size", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return model.SerializeToString()


def _run(raw: bytes, feeds: dict) -> tuple[dict, dict]:
    want = dict(
        zip(
            [o.name for o in ort.InferenceSession(raw).get_outputs()],
            ort.InferenceSession(raw).run(None, feeds),
        )
    )
    out = gonnx.load(raw).run(feeds, backend="cpu-python")
    got = {k: np.asarray(e["data"]).reshape(e["shape"]) for k, e in out.items()}
    return got, want


def test_an_empty_input_flows_through_elementwise_ops_and_a_matmul() -> None:
    w = helper.make_tensor("w", TensorProto.FLOAT, [3, 2], [1, 2, 3, 4, 5, 6])
    raw = _model(
        [
            helper.make_node("Relu", ["x"], ["r"]),
            helper.make_node("MatMul", ["r", "w"], ["y"]),
            helper.make_node("ReduceSum", ["x"], ["total"], keepdims=0),
        ],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [0, 3])],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("total", TensorProto.FLOAT, None),
        ],
        [w],
    )
    got, want = _run(raw, {"x": np.zeros((0, 3), np.float32)})
    assert got["y"].shape == want["y"].shape == (0, 2)
    assert got["total"].shape == want["total"].shape == ()
    assert float(got["total"]) == float(want["total"]) == 0.0  # the sum over no element


def test_a_slice_that_selects_nothing_is_an_empty_result() -> None:
    starts = helper.make_tensor("starts", TensorProto.INT64, [1], [5])
    ends = helper.make_tensor("ends", TensorProto.INT64, [1], [9])
    axes = helper.make_tensor("axes", TensorProto.INT64, [1], [1])
    raw = _model(
        [
            helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["s"]),
            helper.make_node("Shape", ["s"], ["shape"]),
            helper.make_node("Concat", ["s", "x"], ["y"], axis=1),  # the empty operand left out
        ],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [
            helper.make_tensor_value_info("s", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("shape", TensorProto.INT64, None),
            helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
        ],
        [starts, ends, axes],
    )
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    got, want = _run(raw, {"x": x})
    assert got["s"].shape == want["s"].shape == (2, 0)
    np.testing.assert_array_equal(got["shape"], want["shape"])
    np.testing.assert_array_equal(got["y"], want["y"])
