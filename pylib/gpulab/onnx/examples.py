"""The digits CNN (scripts/train_digits.py) shipped as package data, for the page's example and
the tests: `digits_model()` is the .onnx bytes, `digits_samples()` six held-out test images."""

from __future__ import annotations

import json
from importlib import resources


def digits_model() -> bytes:
    """The trained digits CNN (input image [1, 1, 8, 8] in 0..1; outputs logits and
    probabilities [1, 10])."""
    return resources.files("gpulab.onnx").joinpath("data/digits.onnx").read_bytes()


def digits_samples() -> list[dict]:
    """[{"label": int, "pixels": 64 floats, row-major 8x8}] (scikit-learn digits test split)."""
    text = resources.files("gpulab.onnx").joinpath("data/digits_samples.json").read_text()
    return json.loads(text)["samples"]
