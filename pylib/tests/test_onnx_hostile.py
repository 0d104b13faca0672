"""gpulab.onnx against hostile models: sizes a model of a hundred bytes can ask for are refused
(LIMIT, naming the node and the attribute or input) before anything of that size is allocated,
and attributes of the wrong type or range are refused by name (VALIDATION) instead of crashing a
lowering. Each hostile load runs in a memory-capped child (hostile.bounded), so a regression
fails the test with MemoryError instead of exhausting the machine.

The attribute fuzzer over every operator is test_onnx_fuzz.py."""

from __future__ import annotations

import math

import gpulab.onnx as gonnx
import numpy as np
import pytest
from gpulab.errors import GpuLabError
from gpulab.onnx import limits as limits_mod
from hostile.bounded import run_bounded
from onnx import TensorProto, helper, numpy_helper

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def _model(nodes, inputs, outputs, inits=(), opset=13) -> bytes:
    graph = helper.make_graph(nodes, "t", inputs, outputs, list(inits))
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)]
    ).SerializeToString()


def _vi(name, shape, elem=F):
    return helper.make_tensor_value_info(name, elem, shape)


def _const(name, values, dtype=np.int64):
    return numpy_helper.from_array(np.asarray(values, dtype), name)


def _one(op, inputs, shape, inits=(), outputs=("y",), opset=13, **attrs) -> bytes:
    node = helper.make_node(op, inputs, list(outputs), **attrs)
    return _model([node], [_vi("x", shape)], [_vi(o, None) for o in outputs], inits, opset=opset)


# -- sizes ------------------------------------------------------------------------------------


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _packed_int64_model(values: int) -> bytes:
    """A model whose one initializer packs `values` one-byte varints into int64_data (field 7):
    60 MB of them says 60 million values before any is decoded."""
    tensor = (
        _varint(1 << 3)
        + _varint(values)  # dims
        + _varint(2 << 3)
        + _varint(7)  # data_type INT64
        + _field(7, b"\x01" * values)  # int64_data, packed
        + _field(8, b"w")  # name
    )
    graph = _field(5, tensor)
    opset = _varint(2 << 3) + _varint(13)
    return _varint(1 << 3) + _varint(7) + _field(7, graph) + _field(8, opset)


HOSTILE_SIZES = {
    "OneHot depth 1e9": (
        _model(
            [helper.make_node("OneHot", ["i", "d", "v"], ["y"])],
            [_vi("i", [2], I64)],
            [_vi("y", None)],
            [_const("d", 10**9), _const("v", [0, 1], np.float32)],
        ),
        ["node 0 (OneHot)", "depth"],
    ),
    "CumSum over 65536": (
        _one("CumSum", ["x", "a"], [65536], [_const("a", 0)]),
        ["node 0 (CumSum)", "65536"],
    ),
    "ConvTranspose strides 2^40": (
        _one(
            "ConvTranspose",
            ["x", "w"],
            [1, 1, 2, 2],
            [_const("w", np.ones((1, 1, 1, 1)), np.float32)],
            strides=[2**40, 1],
        ),
        ["node 0 (ConvTranspose)", "strides"],
    ),
    "Tile repeats 2^30": (
        _one("Tile", ["x", "r"], [2], [_const("r", [2**30])]),
        ["node 0 (Tile)", "repeats"],
    ),
    "Resize scales 1e9": (
        _one("Resize", ["x", "", "s"], [1, 1, 2, 2], [_const("s", [1, 1, 1e9, 1], np.float32)]),
        ["node 0 (Resize)", "scales"],
    ),
    "Upsample scales 1e9": (
        _one("Upsample", ["x", "s"], [2, 2], [_const("s", [1, 1e9], np.float32)], opset=9),
        ["node 0 (Upsample)", "scales"],
    ),
    "Split num_outputs 2^62": (
        _one("Split", ["x"], [4], outputs=("y", "z"), opset=18, num_outputs=2**62),
        ["node 0 (Split)", "num_outputs"],
    ),
    "Range of 2^40 steps": (
        _model(
            [helper.make_node("Range", ["s", "l", "d"], ["y"])],
            [],
            [_vi("y", None)],
            [_const("s", 0), _const("l", 2**40), _const("d", 1)],
        ),
        ["node 0 (Range)", "1099511627776"],
    ),
    "ConstantOfShape of 1e12 elements": (
        _model(
            [helper.make_node("ConstantOfShape", ["s"], ["y"])],
            [],
            [_vi("y", None)],
            [_const("s", [10**6, 10**6])],
        ),
        ["node 0 (ConstantOfShape)", "1000000000000"],
    ),
    "Reshape to a shape of 300000 entries": (
        _one("Reshape", ["x", "s"], [2], [_const("s", [1] * 300_000)]),
        ["node 0 (Reshape)", "shape"],
    ),
    "TopK of 2^20 rounds": (
        _one("TopK", ["x", "k"], [1 << 20], [_const("k", [1 << 20])], outputs=("v", "i")),
        ["node 0 (TopK)"],
    ),
    "a 60 MB packed int64 field": (
        _packed_int64_model(60_000_000),
        ["initializer 0 int64_data", "listed values"],
    ),
}


@pytest.mark.parametrize("name", list(HOSTILE_SIZES))
def test_hostile_sizes_are_refused_before_they_allocate(name: str) -> None:
    raw, words = HOSTILE_SIZES[name]
    # 256 MiB more than the test process maps: far below what any of these asks for
    outcome = run_bounded(lambda: gonnx.load(raw), memory=256 << 20)
    assert outcome.kind == "error", str(outcome)
    assert outcome.code == "LIMIT" or (name.startswith("Split") and outcome.code == "VALIDATION"), (
        str(outcome)
    )
    for word in words:
        assert word in outcome.message, str(outcome)


def test_eye_like_past_max_fold_elements_is_built_on_the_device() -> None:
    raw = _one("EyeLike", ["x"], [8192, 8192])
    outcome = run_bounded(lambda: gonnx.load(raw).shapes, memory=256 << 20)
    assert outcome.kind == "ok" and "(8192, 8192)" in outcome.message, str(outcome)


@pytest.mark.parametrize("k", [-2, 0, 3])
def test_eye_like_and_trilu_on_the_device_match_numpy(
    k: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(limits_mod.LIMITS, "max_fold_elements", 0)  # nothing folds
    eye = gonnx.load(_one("EyeLike", ["x"], [4, 6], k=k))
    out = eye.run({"x": np.zeros((4, 6), np.float32)}, backend="cpu-python")["y"]
    assert np.array_equal(np.asarray(out["data"]).reshape(4, 6), np.eye(4, 6, k))
    x = np.arange(24, dtype=np.float32).reshape(4, 6) + 1
    for upper in (0, 1):
        tri = gonnx.load(_one("Trilu", ["x", "k"], [4, 6], [_const("k", k)], upper=upper))
        got = np.asarray(tri.run({"x": x}, backend="cpu-python")["y"]["data"]).reshape(4, 6)
        want = np.triu(x, k) if upper else np.tril(x, k)
        assert np.array_equal(got, want), (k, upper)


def test_folding_refuses_a_broadcast_past_max_fold_elements() -> None:
    # two constants of 65536 elements broadcast to 2^32: computed on the device (and refused
    # there for its size), never as a Python list
    a, b = (
        _const("a", np.ones((65536, 1)), np.float32),
        _const("b", np.ones((1, 65536)), np.float32),
    )
    raw = _model([helper.make_node("Add", ["a", "b"], ["y"])], [], [_vi("y", None)], [a, b])
    outcome = run_bounded(lambda: gonnx.load(raw), memory=256 << 20)
    assert outcome.kind == "error" and outcome.code == "LIMIT", str(outcome)
    assert "node 0 (Add)" in outcome.message, str(outcome)


# -- attributes of the wrong type or range ----------------------------------------------------

CONV_W = _const("w", np.ones((2, 1, 1, 1)), np.float32)
WRONG_ATTRIBUTES = {
    "axis as a string": (_one("Softmax", ["x"], [2, 3], axis="x"), "Softmax", "axis"),
    "kernel_shape as one int 0": (
        _one("Conv", ["x", "w"], [1, 2, 3, 3], [CONV_W], kernel_shape=0),
        "Conv",
        "kernel_shape",
    ),
    "kernel_shape 0": (
        _one("MaxPool", ["x"], [1, 1, 3, 3], kernel_shape=[0, 2]),
        "MaxPool",
        "kernel_shape",
    ),
    "blocksize 0": (
        _one("DepthToSpace", ["x"], [1, 4, 2, 2], blocksize=0),
        "DepthToSpace",
        "blocksize",
    ),
    "group 0": (_one("Conv", ["x", "w"], [1, 2, 3, 3], [CONV_W], group=0), "Conv", "group"),
    "ConvTranspose group 0": (
        _one("ConvTranspose", ["x", "w"], [1, 2, 3, 3], [CONV_W], group=0),
        "ConvTranspose",
        "group",
    ),
    "ConvTranspose strides 0": (
        _one("ConvTranspose", ["x", "w"], [1, 2, 3, 3], [CONV_W], strides=[0, 1]),
        "ConvTranspose",
        "strides",
    ),
    "ConstantOfShape value 5": (
        _model(
            [helper.make_node("ConstantOfShape", ["s"], ["y"], value=5)],
            [],
            [_vi("y", None)],
            [_const("s", [2])],
        ),
        "ConstantOfShape",
        "value",
    ),
    "ConstantOfShape value of two elements": (
        _model(
            [
                helper.make_node(
                    "ConstantOfShape",
                    ["s"],
                    ["y"],
                    value=helper.make_tensor("v", F, [2], [1.0, 2.0]),
                )
            ],
            [],
            [_vi("y", None)],
            [_const("s", [2])],
        ),
        "ConstantOfShape",
        "value",
    ),
    "Attention heads 0": (
        _model(
            [helper.make_node("Attention", ["q", "k", "v"], ["y"], q_num_heads=0, kv_num_heads=0)],
            [_vi("q", [1, 2, 4]), _vi("k", [1, 2, 4]), _vi("v", [1, 2, 4])],
            [_vi("y", None)],
            opset=23,
        ),
        "Attention",
        "q_num_heads",
    ),
    "NLL ignore_index as a string": (
        _model(
            [helper.make_node("NegativeLogLikelihoodLoss", ["x", "t"], ["y"], ignore_index="a")],
            [_vi("x", [2, 3]), _vi("t", [2], I64)],
            [_vi("y", None)],
        ),
        "NegativeLogLikelihoodLoss",
        "ignore_index",
    ),
}


@pytest.mark.parametrize("name", list(WRONG_ATTRIBUTES))
def test_attributes_of_the_wrong_type_or_range_are_refused_by_name(name: str) -> None:
    raw, op, attr = WRONG_ATTRIBUTES[name]
    with pytest.raises(GpuLabError) as info:
        gonnx.load(raw)
    assert info.value.code == "VALIDATION", info.value
    assert f"node 0 ({op})" in info.value.message and f"'{attr}'" in info.value.message, (
        info.value.message
    )


@pytest.mark.parametrize("limit", [math.inf, -math.inf, math.nan])
def test_a_range_to_a_non_finite_limit_is_refused_naming_the_input(limit: float) -> None:
    raw = _model(
        [helper.make_node("Range", ["s", "l", "d"], ["y"])],
        [],
        [_vi("y", None)],
        [
            _const("s", 0.0, np.float32),
            _const("l", limit, np.float32),
            _const("d", 1.0, np.float32),
        ],
    )
    with pytest.raises(GpuLabError) as info:
        gonnx.load(raw)
    assert info.value.code == "VALIDATION"
    assert "node 0 (Range)" in info.value.message and "limit" in info.value.message


def test_an_int_attribute_where_a_float_is_expected_is_taken_as_that_float() -> None:
    # onnx.helper writes alpha=2 as an INT attribute
    model = gonnx.load(_one("LeakyRelu", ["x"], [3], alpha=2))
    out = model.run({"x": np.array([-1.0, 0.5, 2.0], np.float32)}, backend="cpu-python")
    assert out["y"]["data"] == [-2.0, 0.5, 2.0]
