"""gpulab.onnx: the digits CNN against onnxruntime, refusals at load, limits. The node-test
suite is e2e/test_onnx_nodes.py; hostile models: test_onnx_hostile.py; the fuzz lanes of the
protobuf reader and of the attributes: test_loader_fuzz.py, test_onnx_fuzz.py."""

from __future__ import annotations

import gpulab.onnx as gonnx
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from gpulab.errors import GpuLabError
from gpulab.onnx import limits as limits_mod
from gpulab.onnx.examples import digits_model, digits_samples
from onnx import TensorProto, helper, numpy_helper


def _model(nodes, inputs, outputs, inits=(), opset=13) -> bytes:
    graph = helper.make_graph(nodes, "t", inputs, outputs, list(inits))
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)]
    ).SerializeToString()


def _vi(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


# -- the digits CNN ---------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["cpu-python", "wgpu"])
def test_digits_match_onnxruntime(backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPULAB_ALLOW_SOFTWARE", "1")  # lavapipe here
    raw = digits_model()
    assert len(raw) < 200 * 1024
    model = gonnx.load(raw)
    sess = ort.InferenceSession(raw)
    for s in digits_samples():
        x = np.asarray(s["pixels"], np.float32).reshape(1, 1, 8, 8)
        logits, probs = sess.run(["logits", "probabilities"], {"image": x})
        out = model.run({"image": x}, backend=backend)
        got = np.asarray(out["probabilities"]["array"]).reshape(1, 10)
        assert int(got.argmax()) == s["label"]
        assert np.abs(got - probs).max() <= 1e-5
        assert np.abs(np.asarray(out["logits"]["array"]).reshape(1, 10) - logits).max() <= 1e-5


def test_prepared_session_runs_every_image() -> None:
    model = gonnx.load(digits_model())
    session = model.prepare(backend="cpu-python")
    try:
        for s in digits_samples():
            out = session.run({"image": s["pixels"]})["outputs"]
            assert int(np.argmax(out["probabilities"]["data"])) == s["label"]
    finally:
        session.dispose()


def test_model_shapes_are_static_at_load() -> None:
    model = gonnx.load(digits_model())
    assert model.shapes == {"logits": (1, 10), "probabilities": (1, 10)}
    assert [(i.name, i.shape, i.dtype) for i in model.inputs] == [
        ("image", (1, 1, 8, 8), "float32")
    ]


# -- refusals at load -------------------------------------------------------------------------


def test_unsupported_operators_are_listed_with_counts() -> None:
    nodes = [
        helper.make_node("LSTM", ["x", "w", "r"], ["y1"]),
        helper.make_node("LSTM", ["x", "w", "r"], ["y2"]),
        helper.make_node("Foo", ["x"], ["y3"], domain="com.example"),
        helper.make_node("Relu", ["x"], ["y"]),
    ]
    raw = _model(nodes, [_vi("x", [2]), _vi("w", [2]), _vi("r", [2])], [_vi("y", [2])])
    with pytest.raises(GpuLabError) as info:
        gonnx.load(raw)
    assert info.value.code == "UNSUPPORTED"
    assert info.value.message == (
        "onnx: unsupported operators: LSTM (2 nodes), com.example:Foo (1 node); supported: "
        + ", ".join(gonnx.supported_ops())
    )
    seed = (
        "Add",
        "AveragePool",
        "Concat",
        "Constant",
        "Conv",
        "Div",
        "Dropout",
        "Flatten",
        "Gemm",
        "Identity",
        "MatMul",
        "MaxPool",
        "Mul",
        "Relu",
        "Reshape",
        "Softmax",
        "Sub",
        "Transpose",
    )  # seed 004's 18
    assert set(seed) <= set(gonnx.supported_ops())


@pytest.mark.parametrize(
    "node, inputs, outputs, words",
    [
        (
            helper.make_node("MaxPool", ["x"], ["y", "idx"], kernel_shape=[2, 2]),
            [_vi("x", [1, 1, 4, 4])],
            [_vi("y", [1, 1, 2, 2]), _vi("idx", [1, 1, 2, 2], 7)],
            "node 0 (MaxPool): the Indices output is not supported",
        ),
        (
            helper.make_node("Dropout", ["x", "r", "t"], ["y"]),
            [_vi("x", [4])],
            [_vi("y", [4])],
            "node 0 (Dropout): training mode",
        ),
        (
            helper.make_node("Relu", ["x"], ["y"]),
            [_vi("x", [4], TensorProto.DOUBLE)],
            [_vi("y", [4], TensorProto.DOUBLE)],
            "input 'x' has element type DOUBLE",
        ),
        (
            helper.make_node("Conv", ["x", "w"], ["y"], auto_pad="FOO"),
            [_vi("x", [1, 1, 4, 4]), _vi("w", [1, 1, 2, 2])],
            [_vi("y", [1, 1, 3, 3])],
            "node 0 (Conv): attribute 'auto_pad' = 'FOO' is not supported",
        ),
        (
            helper.make_node("Relu", ["x"], ["y"], foo=1),
            [_vi("x", [4])],
            [_vi("y", [4])],
            "node 0 (Relu): attribute 'foo' is not supported",
        ),
        (
            helper.make_node("Relu", ["x"], ["y"]),
            [_vi("x", ["batch", 4])],
            [_vi("y", [4])],
            "input 'x' has a dynamic shape ['batch', 4] (dimension 'batch')",
        ),
    ],
)
def test_variants_are_refused_at_load_naming_node_or_tensor(node, inputs, outputs, words) -> None:
    inits = []
    if node.op_type == "Dropout":
        inits = [
            numpy_helper.from_array(np.array(0.5, np.float32), "r"),
            numpy_helper.from_array(np.array(True), "t"),
        ]
    with pytest.raises(GpuLabError) as info:
        gonnx.load(_model([node], inputs, outputs, inits))
    assert words in info.value.message, info.value.message
    assert info.value.code in ("UNSUPPORTED", "VALIDATION")


def test_dynamic_shapes_resolve_from_input_shapes() -> None:
    raw = _model(
        [helper.make_node("Relu", ["x"], ["y"])], [_vi("x", ["batch", 4])], [_vi("y", ["batch", 4])]
    )
    model = gonnx.load(raw, input_shapes={"x": [3, 4]})
    out = model.run({"x": np.full((3, 4), -1.0, np.float32)}, backend="cpu-python")
    assert out["y"]["shape"] == [3, 4] and set(out["y"]["data"]) == {0.0}


def test_int64_outside_int32_is_refused_naming_the_tensor() -> None:
    big = numpy_helper.from_array(np.array([2**40], np.int64), "huge")
    raw = _model(
        [helper.make_node("Add", ["x", "huge"], ["y"])],
        [_vi("x", [1], TensorProto.INT64)],
        [_vi("y", [1], TensorProto.INT64)],
        [big],
    )
    with pytest.raises(GpuLabError) as info:
        gonnx.load(raw)
    assert (
        "initializer 'huge' holds the int64 value 1099511627776, outside int32"
        in info.value.message
    )


# -- limits -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "limit, value, words",
    [
        ("max_model_bytes", 1000, "the model is 8384 bytes > 1000"),
        ("max_nodes", 5, "the graph has more than 5 nodes"),
        ("max_macs", 10_000, "more than 10000 multiply-accumulates per inference"),
        ("max_elements", 100, "initializer 'conv2.weight' has 1152 elements > 100"),
        ("max_total_elements", 1000, "the model's tensors hold more than 1000 elements"),
    ],
)
def test_limits_refuse_at_load(
    limit: str, value: int, words: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(limits_mod.LIMITS, limit, value)
    with pytest.raises(GpuLabError) as info:
        gonnx.load(digits_model())
    assert info.value.code == "LIMIT"
    assert words in info.value.message, info.value.message


def test_rank_limit_names_the_tensor() -> None:
    raw = _model(
        [helper.make_node("Relu", ["x"], ["y"])],
        [_vi("x", [1] * 8 + [2])],
        [_vi("y", [1] * 8 + [2])],
    )
    with pytest.raises(GpuLabError) as info:
        gonnx.load(raw)
    assert info.value.code == "LIMIT" and "input 'x' has rank 9 > 8" in info.value.message


def test_limits_are_documented() -> None:
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "onnx.md").read_text()
    for name in limits_mod.LIMITS:
        assert f"`{name}`" in text, name


# -- the protobuf reader against hostile bytes: the fuzz lane is test_loader_fuzz.py ----------


def test_a_pooling_window_without_taps_is_refused_naming_the_attributes() -> None:
    raw = bytearray(digits_model())
    raw[176] = 0
    with pytest.raises(GpuLabError, match="attribute 'kernel_shape' must be >= 1, holds 0"):
        gonnx.load(bytes(raw))


def test_reader_decodes_what_onnx_writes() -> None:
    from gpulab.onnx.proto import read_model

    m = read_model(digits_model())
    ref = onnx.load_from_string(digits_model())
    assert [n.op_type for n in m.graph.nodes] == [n.op_type for n in ref.graph.node]
    assert [t.name for t in m.graph.initializers] == [t.name for t in ref.graph.initializer]
    assert m.opsets == {"ai.onnx": 13}


def test_hold_32bit_computes_double_in_float32_and_refuses_narrow_arithmetic() -> None:
    raw = _model(
        [helper.make_node("Relu", ["x"], ["y"])],
        [_vi("x", [3], TensorProto.DOUBLE)],
        [_vi("y", [3], TensorProto.DOUBLE)],
    )
    with pytest.raises(GpuLabError, match="hold_32bit=True"):
        gonnx.load(raw)
    model = gonnx.load(raw, hold_32bit=True)
    out = model.run({"x": np.array([-1.5, 0.25, 2.0])}, backend="cpu-python")
    assert out["y"]["dtype"] == "float32" and out["y"]["data"] == [0.0, 0.25, 2.0]
    add = _model(
        [helper.make_node("Add", ["a", "b"], ["y"])],
        [_vi("a", [2], TensorProto.UINT8), _vi("b", [2], TensorProto.UINT8)],
        [_vi("y", [2], TensorProto.UINT8)],
    )
    with pytest.raises(GpuLabError) as info:
        gonnx.load(add, hold_32bit=True)
    assert (
        "node 0 (Add): input 'a' is UINT8: held as int32 (hold_32bit), its arithmetic "
        "would not wrap as UINT8 does" in info.value.message
    )
    same = _model(
        [helper.make_node("Max", ["a", "b"], ["y"])],
        [_vi("a", [2], TensorProto.UINT8), _vi("b", [2], TensorProto.UINT8)],
        [_vi("y", [2], TensorProto.UINT8)],
    )
    out = gonnx.load(same, hold_32bit=True).run(
        {"a": np.array([1, 250], np.uint8), "b": np.array([3, 7], np.uint8)}, backend="cpu-python"
    )
    assert out["y"]["data"] == [3, 250]


# -- inverse trigonometry, ReverseSequence, Upsample, SwiGLU (the node tests pin the rest) -----


def _run_one(node, x: np.ndarray, backend: str = "cpu-python", opset: int = 13, **extra):
    names = list(node.input)
    feeds = {names[0]: x, **extra}
    elem = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int32): TensorProto.INT32}
    ins = [_vi(n, list(v.shape), elem.get(v.dtype, TensorProto.INT64)) for n, v in feeds.items()]
    raw = _model([node], ins, [_vi("y", None, elem[x.dtype])], opset=opset)
    out = gonnx.load(raw).run(feeds, backend=backend)["y"]
    return np.array(out["data"]).reshape(out["shape"])


@pytest.mark.parametrize("backend", ["cpu-python", "wgpu"])
def test_inverse_trig_at_the_edges_matches_numpy(
    backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPULAB_ALLOW_SOFTWARE", "1")  # lavapipe here
    unit = np.array([-1, -0.99999994, -0.5, -1e-6, 0, 0.41421357, 0.9999, 1], np.float32)
    wide = np.concatenate([unit, np.array([-7, 1e30, np.inf, -np.inf], np.float32)])
    for op, x, ref in (
        ("Atan", wide, np.arctan),
        ("Asin", unit, np.arcsin),
        ("Acos", unit, np.arccos),
    ):
        got = _run_one(helper.make_node(op, ["x"], ["y"]), x, backend)
        np.testing.assert_allclose(got, ref(x.astype(np.float64)), rtol=1e-6, atol=1e-7)
    outside = np.array([1.5, -1.0000001], np.float32)
    for op in ("Asin", "Acos"):
        assert np.isnan(_run_one(helper.make_node(op, ["x"], ["y"]), outside, backend)).all()


def test_reverse_sequence_reverses_each_prefix_of_int_data_of_rank_3() -> None:
    from onnx.reference import ReferenceEvaluator

    x = np.arange(24, dtype=np.int32).reshape(4, 3, 2)  # time, batch, features
    lens = np.array([4, 1, 2], np.int64)
    node = helper.make_node("ReverseSequence", ["x", "lens"], ["y"], batch_axis=1, time_axis=0)
    got = _run_one(node, x, opset=10, lens=lens)
    raw = _model(
        [node], [_vi("x", [4, 3, 2], 6), _vi("lens", [3], 7)], [_vi("y", None, 6)], opset=10
    )
    want = ReferenceEvaluator(onnx.load_from_string(raw)).run(None, {"x": x, "lens": lens})[0]
    np.testing.assert_array_equal(got, want)


def test_upsample_repeats_by_whole_scales_and_refuses_the_rest() -> None:
    x = np.arange(6, dtype=np.float32).reshape(1, 2, 3)
    node = helper.make_node("Upsample", ["x"], ["y"], scales=[1.0, 2.0, 3.0])  # opset 7 form
    want = np.repeat(np.repeat(x, 2, axis=1), 3, axis=2)
    np.testing.assert_array_equal(_run_one(node, x, opset=7), want)
    for attrs, words in (
        ({"mode": "linear", "scales": [1.0, 2.0, 2.0]}, "attribute 'mode' = 'linear'"),
        ({"scales": [1.0, 1.5, 2.0]}, "only whole numbers >= 1 are supported"),
    ):
        bad = helper.make_node("Upsample", ["x"], ["y"], **attrs)
        with pytest.raises(GpuLabError, match=words):
            gonnx.load(_model([bad], [_vi("x", [1, 2, 3])], [_vi("y", None)], opset=7))


def test_swiglu_refuses_inputs_of_different_shapes() -> None:
    node = helper.make_node("SwiGLU", ["a", "b"], ["y"])
    raw = _model([node], [_vi("a", [2, 4]), _vi("b", [1, 4])], [_vi("y", None)], opset=24)
    with pytest.raises(GpuLabError, match=r"A \[2, 4\] and B \[1, 4\] differ in shape"):
        gonnx.load(raw)
