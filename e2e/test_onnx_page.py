"""The digits CNN in the page: gpulab.onnx loads the shipped .onnx bytes in Pyodide
(the same protobuf reader and lowering as natively) and classifies the test images on every
backend, matching onnxruntime (run here natively) within 1e-5; the example cell draws each digit
and prints its class and probabilities."""

from __future__ import annotations

import json

import numpy as np
import onnxruntime as ort
import pytest
from gpulab.onnx.examples import digits_model, digits_samples
from playwright.sync_api import Page, expect

from e2e.test_playground import (
    open_notebook,
    playground_url,  # noqa: F401 (the fixture: one server for this module)
    run_program,
)

CLASSIFY = """import json
import gpulab.onnx
from gpulab.onnx.examples import digits_model, digits_samples
model = gpulab.onnx.load(digits_model())
rows = []
for s in digits_samples():
    out = await model.run_async({"image": s["pixels"]})
    rows.append({"label": s["label"], "probabilities": list(out["probabilities"]["data"]),
                 "logits": list(out["logits"]["data"])})
print(json.dumps(rows))
"""


def reference() -> list[dict]:
    sess = ort.InferenceSession(digits_model())
    rows = []
    for s in digits_samples():
        x = np.asarray(s["pixels"], np.float32).reshape(1, 1, 8, 8)
        logits, probs = sess.run(["logits", "probabilities"], {"image": x})
        rows.append({"label": s["label"], "logits": logits.ravel(), "probabilities": probs.ravel()})
    return rows


@pytest.mark.parametrize("backend", ["webgpu", "webgl2", "wasm", "cpu"])
def test_digits_cnn_in_the_page(
    page: Page,
    playground_url: str,  # noqa: F811
    backend: str,
) -> None:
    open_notebook(page, playground_url, backend=backend, software=True)
    out = run_program(page, CLASSIFY, timeout=170_000)
    expect(out).to_contain_text(f"on {backend}")
    got = json.loads(out.locator(".stream.stdout").inner_text())
    want = reference()
    assert len(got) == len(want) == 6
    for g, w in zip(got, want):
        assert int(np.argmax(g["probabilities"])) == g["label"] == w["label"]
        assert np.abs(np.asarray(g["logits"]) - w["logits"]).max() <= 1e-5, (backend, g["label"])
        assert np.abs(np.asarray(g["probabilities"]) - w["probabilities"]).max() <= 1e-5


def test_digits_example_draws_and_prints(page: Page, playground_url: str) -> None:  # noqa: F811
    open_notebook(page, playground_url, backend="wasm")
    page.get_by_label("Examples").select_option("onnx")
    cells = page.locator("section.cell")
    expect(cells).to_have_count(1)
    page.get_by_role("button", name="Run all").click()
    expect(cells.first).to_have_attribute("data-status", "done", timeout=170_000)
    text = "".join(cells.first.locator(".stream.stdout").all_inner_texts())
    for s in digits_samples():
        assert f"label {s['label']}: class {s['label']} (p = " in text, text
    expect(cells.first.locator("canvas")).to_have_count(len(digits_samples()))
