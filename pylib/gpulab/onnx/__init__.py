"""Load ONNX models and run them on any gpulab backend (docs/onnx.md).

    model = gpulab.onnx.load(open("digits.onnx", "rb").read())
    outputs = model.run({"image": pixels}, backend="cpu-python")

A pure-Python protobuf reader (no `onnx` package, no numpy needed to load: it runs in the
page), opsets 7+ of the default domain, every refusal at load.
"""

from __future__ import annotations

from .limits import LIMITS
from .model import Model, constant_inputs, load
from .ops import OPS, supported_ops

__all__ = ["LIMITS", "OPS", "Model", "constant_inputs", "load", "supported_ops"]
