"""Train a small CNN on scikit-learn's digits (8x8) with torch on the CPU and export it to ONNX.

    PYTHONPATH=pylib .venv/bin/python scripts/train_digits.py

Writes pylib/gpulab/onnx/data/digits.onnx (the model, opset 13: Conv, Relu, MaxPool, Reshape,
Gemm, Softmax) and digits_samples.json (six test images, 0..1 floats, with their labels) that
the example cell and the tests read. Deterministic: fixed seeds, one CPU thread.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper
from sklearn.datasets import load_digits

OUT = Path(__file__).resolve().parents[1] / "pylib" / "gpulab" / "onnx" / "data"
SAMPLES = 6


class DigitsCNN(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(8, 16, 3, padding=1)
        self.fc = torch.nn.Linear(16 * 2 * 2, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.nn.functional.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = torch.nn.functional.max_pool2d(torch.relu(self.conv2(x)), 2)
        return self.fc(x.reshape(x.shape[0], -1))


def train() -> tuple[DigitsCNN, np.ndarray, np.ndarray, float]:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[:, None]
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(0).permutation(len(x))
    train_idx, test_idx = order[:1500], order[1500:]
    model = DigitsCNN()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    xt, yt = torch.from_numpy(x[train_idx]), torch.from_numpy(y[train_idx])
    for _epoch in range(30):
        perm = torch.randperm(len(xt))
        for i in range(0, len(xt), 64):
            batch = perm[i : i + 64]
            loss = torch.nn.functional.cross_entropy(model(xt[batch]), yt[batch])
            opt.zero_grad()
            loss.backward()
            opt.step()
    with torch.no_grad():
        pred = model(torch.from_numpy(x[test_idx])).argmax(1).numpy()
    accuracy = float((pred == y[test_idx]).mean())
    return model, x[test_idx], y[test_idx], accuracy


def export(model: DigitsCNN) -> onnx.ModelProto:
    """The trained weights as an ONNX graph written with onnx.helper (the torch exporter needs
    onnxscript, which is not installed here): NCHW input [1, 1, 8, 8], outputs the logits and
    their softmax."""
    w = {k: v.detach().numpy().astype(np.float32) for k, v in model.state_dict().items()}
    inits = [numpy_helper.from_array(v, name=k) for k, v in w.items()]
    inits.append(numpy_helper.from_array(np.array([1, 64], dtype=np.int64), "flat_shape"))
    nodes = [
        helper.make_node(
            "Conv",
            ["image", "conv1.weight", "conv1.bias"],
            ["c1"],
            kernel_shape=[3, 3],
            pads=[1, 1, 1, 1],
        ),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node(
            "Conv",
            ["p1", "conv2.weight", "conv2.bias"],
            ["c2"],
            kernel_shape=[3, 3],
            pads=[1, 1, 1, 1],
        ),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("MaxPool", ["r2"], ["p2"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Reshape", ["p2", "flat_shape"], ["flat"]),
        helper.make_node("Gemm", ["flat", "fc.weight", "fc.bias"], ["logits"], transB=1),
        helper.make_node("Softmax", ["logits"], ["probabilities"], axis=-1),
    ]
    graph = helper.make_graph(
        nodes,
        "digits_cnn",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 1, 8, 8])],
        [
            helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10]),
            helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [1, 10]),
        ],
        inits,
    )
    m = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 13)],
        producer_name="gpulab scripts/train_digits.py",
    )
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def main() -> None:
    model, x_test, y_test, accuracy = train()
    m = export(model)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "digits.onnx").write_bytes(m.SerializeToString())
    picks = [int(np.flatnonzero(y_test == d)[0]) for d in range(SAMPLES)]
    samples = [
        {"label": int(y_test[i]), "pixels": [round(float(v), 4) for v in x_test[i].ravel()]}
        for i in picks
    ]
    (OUT / "digits_samples.json").write_text(
        json.dumps(
            {
                "doc": "scikit-learn digits test images (8x8, values/16), not used in training",
                "test_accuracy": accuracy,
                "samples": samples,
            },
            indent=1,
        )
        + "\n"
    )
    size = (OUT / "digits.onnx").stat().st_size
    print(f"test accuracy {accuracy:.3f} on {len(y_test)} images; digits.onnx {size} bytes")


if __name__ == "__main__":
    main()
