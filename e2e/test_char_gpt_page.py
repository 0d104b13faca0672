"""The notebook's character-level GPT (web/examples-torch.mjs "char-gpt"), in Chromium on the
wasm lane: `import torch` (gpulab.torch in the page) builds a one-block GPT over the characters
of the pasted text, trains it with Adam (each step one graph run), and samples from it. Checked:
every cell runs to the end, the loss falls (its last value at most 85% of its first: the
character entropy of the text is well below a uniform guess), the loss plot is drawn, and the
sample continues the text's first characters with about 120 of the text's characters.
"""

from __future__ import annotations

import ast
import re

import pytest
from playwright.sync_api import Page, expect

from e2e.test_playground import (
    open_notebook,
    playground_url,  # noqa: F401 (the fixture: one server for this module)
)

pytestmark = pytest.mark.slow


def test_the_char_gpt_example_trains_and_samples(
    page: Page,
    playground_url: str,  # noqa: F811
) -> None:
    open_notebook(page, playground_url, backend="wasm")
    page.get_by_label("Examples").select_option("char-gpt")
    cells = page.locator("section.cell")
    expect(cells).to_have_count(4)
    page.get_by_role("button", name="Run all").click()
    expect(cells.nth(3)).to_have_attribute("data-status", "done", timeout=600_000)
    for n in range(4):
        expect(cells.nth(n)).to_have_attribute("data-status", "done")
    head = cells.nth(0).locator(".stream.stdout").inner_text()
    vocab = re.search(r"\d+ characters, \d+ distinct: (.*)$", head, re.MULTILINE)
    assert vocab, head
    chars = set(ast.literal_eval(vocab[1]))
    trained = cells.nth(2).locator(".stream.stdout").inner_text()
    print("\n" + trained.strip())
    found = re.search(r"loss (\d+\.\d+) -> (\d+\.\d+) after (\d+) steps", trained)
    assert found, trained
    first, last = float(found[1]), float(found[2])
    assert last <= 0.85 * first, (first, last)
    expect(cells.nth(2).locator("canvas")).not_to_have_count(0)  # the loss plot
    sample = cells.nth(3).locator(".stream.stdout").inner_text()
    print(sample)
    assert sample.startswith("First Citizen: B"), sample  # the first T characters of the text
    # 120 sampled characters (a sampled newline at the end may not survive inner_text)
    assert 16 + 120 - 2 <= len(sample.rstrip("\n")) <= 16 + 120, repr(sample)
    assert set(sample) <= chars | {"\n"}, set(sample) - chars
