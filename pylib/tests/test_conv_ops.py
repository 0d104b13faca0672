"""The protocol-v6 window ops (conv2d, max_pool2d, avg_pool2d, resize) against the
field's implementations, not only our own float64 reference: every corpus case of these ops
runs on cpu-python and is compared with onnxruntime (one ONNX node: Conv, MaxPool,
AveragePool, Resize with sizes; every attribute variant the protocol has) and, where torch
expresses it, with torch.nn.functional (conv2d, max_pool2d, avg_pool2d, interpolate). Also
the reference itself against torch, the Tensor methods' argument forms, the MAC limit and the
cost model before any work."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
import torch
import torch.nn.functional as F
from gpulab import Graph, host
from gpulab.conformance.reference import evaluate
from gpulab.errors import GpuLabError
from gpulab.protocol import validate
from gpulab.quotas import graph_cost_s
from onnx import TensorProto, helper

ROOT = Path(__file__).resolve().parents[2]
OPS = ("conv2d", "max_pool2d", "avg_pool2d", "resize")
# the zero-size cases (empty/...: several outputs, no element) are the corpus's own business
CASES = [
    c
    for c in json.loads((ROOT / "pylib/gpulab/conformance/cases.json").read_text())
    if c["op"] in OPS and not c["name"].startswith("empty/")
]
ONNX_OP = {
    "conv2d": "Conv",
    "max_pool2d": "MaxPool",
    "avg_pool2d": "AveragePool",
    "resize": "Resize",
}


def _case_arrays(case: dict) -> tuple[dict, list[np.ndarray], dict]:
    """The case's op node, its operands' values (float32, the reference's) and the attrs
    with the op table's defaults (validated)."""
    graph = case["graph"]
    checked = validate(graph)
    node = checked.by_id[graph["outputs"][0]["id"]]
    refs = evaluate(graph)
    operands = [refs[i].value.astype(np.float32) for i in node.operands]
    return node, operands, node.attrs


def _onnx_run(op: str, attrs: dict, operands: list[np.ndarray], out_shape: tuple) -> np.ndarray:
    """One ONNX node of the protocol op's attributes, run by onnxruntime (opset 19)."""
    names = [f"in{i}" for i in range(len(operands))]
    kw: dict = {}
    if op == "conv2d":
        bias = operands[0] if len(operands) == 3 else None
        operands = operands[1:] + [bias] if bias is not None else operands
        kw = {
            "strides": attrs["strides"],
            "pads": attrs["padding"],
            "dilations": attrs["dilations"],
            "group": attrs["groups"],
        }
    elif op in ("max_pool2d", "avg_pool2d"):
        kw = {
            "kernel_shape": attrs["kernel"],
            "strides": attrs["strides"],
            "pads": attrs["padding"],
            "dilations": attrs["dilations"],
            "ceil_mode": int(attrs["ceil_mode"]),
        }
        if op == "avg_pool2d":
            kw["count_include_pad"] = int(attrs["count_include_pad"])
    else:
        kw = {
            "mode": attrs["mode"],
            "coordinate_transformation_mode": attrs["coordinate_transformation_mode"],
            "nearest_mode": attrs["nearest_mode"],
        }
        sizes = np.array([*operands[0].shape[:2], *attrs["size"]], dtype=np.int64)
        names = ["in0", "", "", "sizes"]
    inputs = [
        helper.make_tensor_value_info(n, TensorProto.FLOAT, list(a.shape))
        for n, a in zip([n for n in names if n.startswith("in")], operands)
    ]
    inits = (
        [helper.make_tensor("sizes", TensorProto.INT64, [4], sizes.tolist())]
        if op == "resize"
        else []
    )
    node = helper.make_node(ONNX_OP[op], names, ["y"], **kw)
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, list(out_shape))
    model = helper.make_model(
        helper.make_graph([node], "g", inputs, [out], inits),
        opset_imports=[helper.make_opsetid("", 19)],
    )
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = {n: a for n, a in zip([n for n in names if n.startswith("in")], operands)}
    return session.run(None, feeds)[0]


def _torch_run(op: str, attrs: dict, operands: list[np.ndarray]) -> np.ndarray | None:
    """torch.nn.functional's answer where torch expresses the case (None where it does not)."""
    t = [torch.from_numpy(a) for a in operands]
    pt, pl, pb, pr = attrs.get("padding", [0, 0, 0, 0])
    if op == "conv2d":
        bias = t[0] if len(t) == 3 else None
        x, w = t[-2], t[-1]
        return F.conv2d(
            F.pad(x, (pl, pr, pt, pb)),
            w,
            bias,
            attrs["strides"],
            0,
            attrs["dilations"],
            attrs["groups"],
        ).numpy()
    symmetric = (
        pt == pb
        and pl == pr
        and 2 * pt <= attrs.get("kernel", [0])[0]
        and (2 * pl <= attrs.get("kernel", [0, 0])[1])
    )
    if op == "max_pool2d" and symmetric:
        return F.max_pool2d(
            t[0],
            attrs["kernel"],
            attrs["strides"],
            (pt, pl),
            attrs["dilations"],
            attrs["ceil_mode"],
        ).numpy()
    if op == "avg_pool2d" and symmetric and attrs["dilations"] == [1, 1]:
        return F.avg_pool2d(
            t[0],
            attrs["kernel"],
            attrs["strides"],
            (pt, pl),
            attrs["ceil_mode"],
            attrs["count_include_pad"],
        ).numpy()
    if op != "resize":
        return None
    mode = (attrs["mode"], attrs["coordinate_transformation_mode"], attrs["nearest_mode"])
    size = attrs["size"]
    if mode[:2] == ("nearest", "asymmetric") and mode[2] == "floor":
        return F.interpolate(t[0], size=size, mode="nearest").numpy()
    if mode[:2] == ("nearest", "half_pixel") and mode[2] == "round_prefer_ceil":
        return F.interpolate(t[0], size=size, mode="nearest-exact").numpy()
    if mode[:2] in (("linear", "half_pixel"), ("linear", "align_corners")):
        return F.interpolate(
            t[0], size=size, mode="bilinear", align_corners=mode[1] == "align_corners"
        ).numpy()
    return None


def _cpu_python(case: dict) -> np.ndarray:
    return np.asarray(host.execute(case["graph"], backend="cpu-python")["outputs"]["y"]["array"])


def _close(op: str, attrs: dict, got: np.ndarray, want: np.ndarray, what: str) -> None:
    assert got.shape == want.shape, (what, got.shape, want.shape)
    if op == "max_pool2d" or (op == "resize" and attrs["mode"] == "nearest"):
        # one input element's value, both ways (NaN where NaN)
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5, err_msg=what)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_case_matches_onnxruntime_and_torch(case: dict) -> None:
    node, operands, attrs = _case_arrays(case)
    got = _cpu_python(case)
    ref = evaluate(case["graph"])[node.id].value
    want = _torch_run(node.op, attrs, operands)
    if not (node.op == "max_pool2d" and any(np.isnan(a).any() for a in operands)):
        # onnxruntime's MaxPool drops NaN (a > comparison); torch and the protocol propagate it
        _close(
            node.op,
            attrs,
            got,
            _onnx_run(node.op, attrs, operands, node.shape),
            f"{case['name']}: cpu-python vs onnxruntime",
        )
    else:
        assert want is not None, "torch checks the NaN case"
    if want is not None:
        _close(node.op, attrs, got, want, f"{case['name']}: cpu-python vs torch")
        _close(node.op, attrs, ref.astype(np.float32), want, f"{case['name']}: reference vs torch")


def test_torch_covers_most_cases() -> None:
    """The torch comparison is not vacuous: it expresses most of the corpus's cases."""
    covered = sum(
        _torch_run(n.op, a, ops) is not None for n, ops, a in (_case_arrays(c) for c in CASES)
    )
    assert len(CASES) >= 50 and covered >= 35, (len(CASES), covered)


def test_tensor_methods_take_torch_argument_forms() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 4, 7, 6)).astype(np.float32)
    w = rng.standard_normal((4, 1, 3, 3)).astype(np.float32)
    g = Graph()
    t = g.tensor(x)
    outs = {
        "c": t.conv2d(g.tensor(w), [0.5, 0, 0, -1], stride=2, padding=1, groups=4),
        "m": t.max_pool2d(2),
        "a": t.avg_pool2d(3, stride=1, padding=(1, 0)),
        "r": t.resize((14, 3), mode="linear"),
    }
    got = g.run(backend="cpu-python", **outs)["outputs"]
    tx = torch.from_numpy(x)
    want = {
        "c": F.conv2d(tx, torch.from_numpy(w), torch.tensor([0.5, 0, 0, -1]), 2, 1, groups=4),
        "m": F.max_pool2d(tx, 2),
        "a": F.avg_pool2d(tx, 3, 1, (1, 0)),
        "r": F.interpolate(tx, size=(14, 3), mode="bilinear", align_corners=False),
    }
    for name, value in want.items():
        np.testing.assert_allclose(
            got[name]["array"], value.numpy(), rtol=1e-5, atol=1e-5, err_msg=name
        )


def test_giant_conv_is_refused_before_any_work() -> None:
    """A conv past max_macs_per_node is LIMIT at the builder's line, naming the node; one
    within it but past the cpu-python cost model is refused by the cost model (the window
    ops' K is their taps)."""
    g = Graph()
    x = g.full([1, 1024, 128, 128], 1.0)
    with pytest.raises(GpuLabError) as info:
        x.conv2d(g.full([1024, 1024, 3, 3], 1.0), padding=1)
    assert info.value.code == "LIMIT" and "max_macs_per_node" in info.value.message
    y = g.full([1, 256, 64, 64], 1.0).conv2d(g.full([256, 256, 3, 3], 1.0), padding=1)
    checked = validate(g._graph_dict({"y": y}))
    seconds = graph_cost_s(checked)
    assert seconds is not None and seconds > 0.4, seconds  # 2 x 1M x 2304 flops x 0.1 ns


def test_bad_modes_are_refused_by_name() -> None:
    g = Graph()
    x = g.full([1, 1, 2, 2], 1.0)
    for kw, word in (
        ({"mode": "cubic"}, "cubic"),
        ({"coordinate_transformation_mode": "tf_crop_and_resize"}, "tf_crop_and_resize"),
    ):
        with pytest.raises(GpuLabError) as info:
            x.resize((4, 4), **kw)
        assert info.value.code == "VALIDATION" and word in info.value.message


def test_functional_interpolate_and_adaptive_pool_match_torch() -> None:
    from gpulab import functional as gf

    x = np.random.default_rng(2).standard_normal((2, 3, 6, 4)).astype(np.float32)
    tx = torch.from_numpy(x)
    g = Graph()
    t = g.tensor(x)
    outs = {
        "nearest": gf.interpolate(t, (9, 7)),
        "exact": gf.interpolate(t, (4, 3), mode="nearest-exact"),
        "bilinear": gf.interpolate(t, (11, 5), mode="bilinear"),
        "corners": gf.interpolate(t, (11, 5), mode="bilinear", align_corners=True),
        "pool": gf.adaptive_avg_pool2d(t, (3, 2)),
    }
    got = g.run(backend="cpu-python", **outs)["outputs"]
    want = {
        "nearest": F.interpolate(tx, size=(9, 7)),
        "exact": F.interpolate(tx, size=(4, 3), mode="nearest-exact"),
        "bilinear": F.interpolate(tx, size=(11, 5), mode="bilinear", align_corners=False),
        "corners": F.interpolate(tx, size=(11, 5), mode="bilinear", align_corners=True),
        "pool": F.adaptive_avg_pool2d(tx, (3, 2)),
    }
    for name, value in want.items():
        np.testing.assert_allclose(
            got[name]["array"], value.numpy(), rtol=1e-6, atol=1e-6, err_msg=name
        )
    with pytest.raises(GpuLabError, match="bicubic"):
        gf.interpolate(t, (4, 4), mode="bicubic")
    with pytest.raises(GpuLabError, match="must divide"):
        gf.adaptive_avg_pool2d(t, (4, 3))
