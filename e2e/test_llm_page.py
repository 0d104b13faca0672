"""A llama-family GGUF model in the page: `gpulab serve --model PATH` serves a tiny file that
gguf-py's writer made (gpulab.models.llm.synthetic: random Q4_0 matrices, a Q8_0 embedding, an
untied Q4_0 output, grouped-query attention, q/k rows permuted as llama.cpp's converter does),
a notebook cell loads it with `llm.load_async(URL)` (a progress bar while it streams), and on
each page lane (wasm, webgpu and webgl2 on software adapters, labelled; cpu) the page's
`gpulab.models.llm`, in Pyodide, gives:

- prompt logits within float32 rounding of transformers' LlamaForCausalLM holding the file's
  dequantized values (gpulab.models.llm.oracle, run here in the test process);
- a 16-token greedy generation equal to transformers' greedy tokens (computed here, with the
  reference's top-two margin clear at every step), streamed through `on_token`;
- a seeded sample (temperature, top-k) equal to the same call natively on cpu-python;
- after a backend switch, the model's decode session of the lane before is never run on the
  new lane's runtime (whose session ids start again at 1): the first generation there prepares
  its own.

Then the notebook example (web/examples-llm.mjs, "llm") finds the served model, loads it and
streams a seeded sample into the cell output, the text equal to the same sample decoded
natively; and a file chosen in `display.pick_file`'s picker loads the same model (read in
chunks, a progress bar) under the page runtime's device memory quota, which the page reports.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from gpulab.models import llm
from gpulab.models.llm import synthetic
from gpulab.models.llm.oracle import greedy_reference, reference_logits, reference_model
from gpulab.models.llm.synthetic import ModelSpec
from playwright.sync_api import Page, expect

from e2e.test_playground import DONE, cell, open_notebook, output, run_program, set_code

torch = pytest.importorskip("torch")  # the oracle's
transformers = pytest.importorskip("transformers")

pytestmark = pytest.mark.slow

PROMPT = [5, 77, 130, 9, 200, 41, 3, 88]
# Untied output rows of N(0, 1 / n_embd): logits of scale ~1, so greedy tokens vary and a
# sample has choices (a tied N(0, 1) embedding repeats one token).
SPEC = ModelSpec(weight_type="Q4_0", embd_type="Q8_0", tied=False, seed=6)
SAMPLING = {"temperature": 0.9, "top_k": 8, "seed": 7}
LANES = ["wasm", "webgpu", "webgl2", "cpu"]

LOAD = """import json
from gpulab.models import llm
model = await llm.load_async("/models/llm/model.gguf")
print(model)
"""
GENERATE = """streamed = []
logits = await model.logits_async({prompt})
greedy = await model.generate_async({prompt}, max_new_tokens=16, on_token=streamed.append)
sample = await model.generate_async({prompt}, max_new_tokens=12, **{sampling})
# greedy again: its session is the one the next lane's cell finds first (after the switch)
again = await model.generate_async({prompt}, max_new_tokens=16)
print("RESULT " + json.dumps({{"logits": logits, "greedy": greedy, "streamed": streamed,
                              "sample": sample, "again": again}}))
"""


@pytest.fixture(scope="module")
def model_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("llm-page") / "tiny.gguf"
    synthetic.write_llama_gguf(path, SPEC)
    return path


@pytest.fixture(scope="module")
def model_url(model_path: Path):
    """`gpulab serve --model PATH` on a free loopback port (the CLI's code path)."""
    from gpulab.server import start, stop

    srv = start("127.0.0.1", 0, model=model_path)
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    stop(srv)


@pytest.fixture(scope="module")
def expected(model_path: Path) -> dict:
    """What the page must give, computed here: transformers' logits and greedy tokens (with its
    margins) and gpulab's own seeded sample natively on cpu-python."""
    ref = reference_model(model_path)
    greedy, margins = greedy_reference(ref, PROMPT, 16)
    sample = llm.load(model_path).generate(
        PROMPT, max_new_tokens=12, backend="cpu-python", **SAMPLING
    )
    return {
        "logits": reference_logits(ref, PROMPT),
        "greedy": greedy,
        "margins": margins,
        "sample": sample,
    }


def _result(out) -> dict:
    text = out.inner_text()
    line = next((x for x in text.splitlines() if x.startswith("RESULT ")), None)
    assert line is not None, f"the cell printed no result:\n{text}"
    return json.loads(line[len("RESULT ") :])


def test_the_model_in_the_page_matches_transformers_on_every_lane(
    page: Page, model_url: str, model_path: Path, expected: dict
) -> None:
    # the margins make "equal to the reference's greedy tokens" a fair test of float32 rounding
    assert min(expected["margins"]) > 1e-2, expected["margins"]
    assert len(set(expected["greedy"])) > 4, f"too few distinct tokens: {expected['greedy']}"
    assert len(set(expected["sample"])) > 3, f"the sample is not random: {expected['sample']}"
    open_notebook(page, model_url, backend="wasm", software=True)
    out = run_program(page, LOAD, timeout=170_000)
    expect(out.locator(".stream.stdout")).to_contain_text("LLM(llama: 2 layers")
    bar = out.locator(".progress-output progress")
    expect(bar).to_have_count(1)  # the download's bar, finished
    size = str(model_path.stat().st_size)
    assert bar.get_attribute("value") == bar.get_attribute("max") == size
    status = page.get_by_role("status", name="Backend in use")
    scale = float(np.abs(expected["logits"]).max())
    for n, lane in enumerate(LANES, start=2):
        if lane != "wasm":
            page.get_by_label("Backend", exact=True).select_option(lane)
        expect(status).to_contain_text(f"Backend in use: {lane}")
        shown = status.inner_text().strip()
        print(f"\n{lane}: {shown}")
        if lane in ("webgpu", "webgl2"):  # SwiftShader here: results say so
            assert "software adapter" in shown, shown
        page.get_by_role("button", name="+ Add cell").click()
        code = GENERATE.format(prompt=PROMPT, sampling=SAMPLING)
        got = _result(run_program(page, code, n=n, timeout=170_000))
        err = float(np.abs(np.asarray(got["logits"], np.float64) - expected["logits"]).max())
        print(f"{lane}: logits max |error| {err:.3g} (scale {scale:.3g}); greedy {got['greedy']}")
        assert err <= 2e-4 * scale, (lane, err, scale)
        assert got["greedy"] == expected["greedy"], lane
        assert got["streamed"] == got["greedy"], lane
        assert got["sample"] == expected["sample"], lane
        assert got["again"] == expected["greedy"], lane


EXAMPLE_PROMPT = "Once upon a time"
EXAMPLE_SAMPLING = {"max_new_tokens": 48, "temperature": 0.8, "top_k": 40, "seed": 1}
PICK = """import json
import display
from gpulab import pyodide_bridge
file = await display.pick_file(".gguf", label="Open a GGUF model file")
picked = await llm.load_async(file, label="picked model")
print("QUOTA", pyodide_bridge.memory_quota())
print("PICKED " + json.dumps(await picked.generate_async({prompt}, max_new_tokens=16)))
"""


def test_the_notebook_example_streams_text_and_a_picked_file_loads(
    page: Page, model_url: str, model_path: Path, expected: dict
) -> None:
    native = llm.load(model_path)
    ids = native.tokenizer.encode(EXAMPLE_PROMPT)
    sample = native.generate(ids, backend="cpu-python", **EXAMPLE_SAMPLING)
    text = EXAMPLE_PROMPT + native.tokenizer.decode(sample)
    assert len(set(sample)) > 8, sample
    open_notebook(page, model_url, backend="wasm")
    page.get_by_label("Examples").select_option("llm")
    cells = page.locator("section.cell")
    expect(cells).to_have_count(2)
    page.get_by_role("button", name="Run all").click()
    expect(cells.nth(1)).to_have_attribute("data-status", "done", timeout=170_000)
    expect(cells.first).to_have_attribute("data-status", "done")
    expect(cells.first.locator(".stream.stdout")).to_contain_text("LLM(llama: 2 layers")
    bar = cells.first.locator(".progress-output progress")
    size = str(model_path.stat().st_size)
    assert bar.get_attribute("value") == bar.get_attribute("max") == size
    written = "".join(cells.nth(1).locator(".stream.stdout").all_inner_texts())
    print(f"\nthe example wrote: {written!r}")
    assert written.startswith(text), (written, text)
    assert f"[{len(sample)} new tokens]" in written
    # the picker: a cell waits on it; the chosen file is read in chunks with a progress bar
    page.get_by_role("button", name="+ Add cell").click()
    set_code(page, 3, PICK.format(prompt=PROMPT))
    cell(page, 3).get_by_role("button", name="Run", exact=True).click()
    picker = output(page, 3).get_by_label("Open a GGUF model file")
    picker.set_input_files(str(model_path))
    expect(cell(page, 3).locator(".prompt")).to_have_text(DONE, timeout=170_000)
    out = output(page, 3).inner_text()
    assert f"QUOTA {256 * 2**20}" in out, out
    line = next((x for x in out.splitlines() if x.startswith("PICKED ")), None)
    assert line is not None, out
    assert json.loads(line[len("PICKED ") :]) == expected["greedy"]
    bar = output(page, 3).get_by_label("picked model")
    assert bar.get_attribute("value") == bar.get_attribute("max") == size
    expect(picker).to_be_disabled()
