"""Refresh docs/screenshots/ (the README's and docs/playground.md's pictures) in one command:

    XDG_RUNTIME_DIR=/tmp .venv/bin/python -m e2e.screenshots [--out docs/screenshots] [--only NAME]

Starts `gpulab serve`'s server on a free port, drives the playground in headless Chromium as a
person would (the same helpers as e2e/test_playground.py) and writes one PNG per view: the
editor, a completion list, markdown, the plots (two series with the hover legend, the MLP
loss), Life, the compare view, dark mode and a phone's width. Each stays under 300 KB.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gpulab.conformance.browser import launch
from playwright.sync_api import Browser, Locator, Page, expect, sync_playwright

from e2e.test_playground import (
    cell,
    open_notebook,
    output,
    run_cell,
    run_program,
    set_code,
)
from e2e.test_playground import save_shot as _save_shot

TWO_SERIES = """import display
# several series in one plot: a dict of name -> values; hover shows each value
train = [2.3 * 0.8 ** k + 0.2 for k in range(20)]
val = [2.4 * 0.83 ** k + 0.35 + 0.004 * k * k for k in range(20)]
display.plot({"train": train, "val": val}, name="loss", title="loss per epoch",
             xlabel="epoch", ylabel="cross-entropy")"""

COMPARE = """from gpulab import Graph
g = Graph()
x = g.tensor([[0.5, -1.25, 2.0], [3.0, 0.1, -0.7]])
w = g.tensor([[0.3, 0.2], [-0.4, 1.5], [0.25, -0.6]])
r = g.run(h=(x @ w).tanh(), p=(x @ w).softmax())
r"""

MARKDOWN = """# Broadcasting

A `[2, 3]` tensor plus a `[3]` row adds the row to **every** row, as numpy does.
Shapes that do not line up are refused *before* anything runs, naming the line.

- `a + b` with `a: [2, 3]`, `b: [3]` gives `[2, 3]`
- `a @ b` needs the inner sizes to agree"""


def save_shot(locator: Locator, path: Path) -> None:
    """The test suite's element screenshot, after closing a completion list left open by
    filling an editor (it would cover the output)."""
    page = locator.page
    if page.locator(".cm-tooltip-autocomplete").count():
        page.locator(".cm-tooltip-autocomplete").evaluate("(el) => el.remove()")
    _save_shot(locator, path)


def new_page(browser: Browser, url: str, backend: str = "wasm", **ctx: object) -> Page:
    context = browser.new_context(viewport={"width": 1100, "height": 900}, **ctx)
    page = context.new_page()
    page.set_default_timeout(120_000)
    open_notebook(page, url, backend=backend)
    return page


def first_example(browser: Browser, url: str, out: Path) -> None:
    page = new_page(browser, url)
    page.get_by_label("Examples").select_option("first")
    for n in (1, 2, 3):
        run_cell(page, n)
    save_shot(page.locator("main"), out / "notebook-first-example.png")


def editor_completion(browser: Browser, url: str, out: Path) -> None:
    page = new_page(browser, url)
    set_code(
        page,
        1,
        "from gpulab import Graph\n\ng = Graph()\nx = g.tensor([[1.0, -2.0], [3.0, 4.0]])\n"
        "for row in range(2):\n    print(row)\n",
    )
    editor = cell(page, 1).get_by_role("textbox")
    editor.press("Control+End")
    editor.press_sequentially("y = x.so")
    expect(page.locator(".cm-tooltip-autocomplete")).to_be_visible()
    _save_shot(cell(page, 1), out / "editor-completion.png")  # with its completion list


def markdown(browser: Browser, url: str, out: Path) -> None:
    page = new_page(browser, url)
    set_code(page, 1, MARKDOWN)
    page.get_by_role("button", name="Cell 1 type").click()
    cell(page, 1).get_by_role("button", name="Render").click()
    expect(page.get_by_role("region", name="Text of cell 1").get_by_role("heading")).to_be_visible()
    page.get_by_role("button", name="+ Add cell").click()
    run_program(
        page,
        "from gpulab import Graph\ng = Graph()\na = g.tensor([[1.0, 2.0, 3.0], "
        "[4.0, 5.0, 6.0]])\ng.run(sum=a + g.tensor([10.0, 20.0, 30.0]))",
        n=2,
    )
    save_shot(page.locator("main"), out / "markdown-cell.png")


def plots(browser: Browser, url: str, out: Path) -> None:
    page = new_page(browser, url)
    result = run_program(page, TWO_SERIES)
    over = result.locator(".u-over")
    box = over.bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] * 0.55, box["y"] + box["height"] / 2)
    expect(result.locator(".u-legend .u-value").first).not_to_have_text("—")
    # a clip of the page (not an element screenshot) keeps the hover cursor and legend values
    save_shot(result.get_by_role("img"), out / "plot-two-series.png")
    page.get_by_label("Examples").select_option("mlp")
    for n in (1, 2):
        run_cell(page, n)
    run_cell(page, 3, timeout=170_000)
    save_shot(output(page, 3).get_by_role("img"), out / "mlp-loss-plot.png")
    run_cell(page, 4)
    save_shot(cell(page, 4), out / "mlp-decision-map.png")


def life(browser: Browser, url: str, out: Path) -> None:
    page = new_page(browser, url)
    page.get_by_label("Examples").select_option("life")
    run_cell(page, 1)
    run_cell(page, 2)
    expect(output(page, 2).locator("figcaption")).to_have_text("generation 60")
    save_shot(cell(page, 2), out / "life-cell.png")


def compare_view(browser: Browser, url: str, out: Path) -> None:
    page = new_page(browser, url)
    run_program(page, COMPARE)
    cell(page, 1).get_by_role("button", name="Compare with native").click()
    view = page.get_by_role("region", name="Comparison of cell 1", exact=True)
    expect(view.locator("p.verdict")).to_contain_text(
        "within the protocol tolerance", timeout=60_000
    )
    save_shot(cell(page, 1), out / "compare-view.png")


def dark(browser: Browser, url: str, out: Path) -> None:
    page = new_page(browser, url, color_scheme="dark")
    run_program(page, TWO_SERIES + "\nprint('dark mode follows the system')\n1 / 0")
    save_shot(page.locator("main"), out / "notebook-dark.png")


def phone(browser: Browser, url: str, out: Path) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=1)
    page = context.new_page()
    page.set_default_timeout(120_000)
    open_notebook(page, url, backend="wasm")
    page.get_by_label("Examples").select_option("mlp")
    run_cell(page, 1)
    page.evaluate("scrollTo(0, 0)")
    page.screenshot(path=str(out / "notebook-390px.png"))


SHOTS: dict[str, Callable[[Browser, str, Path], None]] = {
    "first": first_example,
    "editor": editor_completion,
    "markdown": markdown,
    "plots": plots,
    "life": life,
    "compare": compare_view,
    "dark": dark,
    "phone": phone,
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "screenshots"))
    parser.add_argument(
        "--only", action="append", choices=sorted(SHOTS), help="one view (repeatable)"
    )
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
    from gpulab.server import start, stop

    srv = start("127.0.0.1", 0)
    url = f"http://127.0.0.1:{srv.server_address[1]}"
    try:
        with sync_playwright() as pw:
            browser = launch(pw)
            for name in args.only or SHOTS:
                SHOTS[name](browser, url, out)
                for context in browser.contexts:  # each view had its own page and Python
                    context.close()
                print(f"{name}: done")
            browser.close()
    finally:
        stop(srv)


if __name__ == "__main__":
    main()
