"""display.plot through the vendored uPlot: several series with a legend, axes,
values under the cursor, updates in place and appends, the theme, and the .ipynb picture.

Driven in headless Chromium on the page `gpulab serve` serves (helpers of test_playground).
"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import numpy as np
import pytest
from playwright.sync_api import Page, expect

from e2e.test_playground import (
    decode_png,
    end_leftover_run,
    new_notebook,
    open_notebook,
    playground_url,  # noqa: F401 (the fixture: one server for this module)
    run_program,
    save_shot,
    shot_dir,  # noqa: F401 (fixture)
)

TRAIN = [3.0, 2.1, 1.6, 1.3, 1.1, 1.0]
VAL = [3.2, 2.6, 2.2, 2.0, 2.05, 2.1]
TWO_SERIES = f"""import display
display.plot({{"train": {TRAIN}, "val": {VAL}}}, name="loss", title="loss per epoch",
             xlabel="epoch", ylabel="loss")
"""
BLUE = (0x1F, 0x6F, 0xEB)  # web/plot.mjs SERIES_COLOURS[0] and [1]
ORANGE = (0xE8, 0x59, 0x0C)


@pytest.fixture(scope="module")
def plots_page(browser, playground_url: str):  # noqa: F811
    ctx = browser.new_context(viewport={"width": 1100, "height": 900})
    page = ctx.new_page()
    page.set_default_timeout(120_000)
    open_notebook(page, playground_url, backend="cpu")
    yield page
    ctx.close()


@pytest.fixture()
def notebook(plots_page: Page) -> Page:
    end_leftover_run(plots_page)
    new_notebook(plots_page)
    return plots_page


def colour_count(pixels: np.ndarray, rgb: tuple[int, int, int], tol: int = 40) -> int:
    diff = np.abs(pixels[..., :3].astype(int) - np.array(rgb)).max(axis=-1)
    return int((diff <= tol).sum())


def test_two_series_render_with_legend_and_axes(notebook: Page, shot_dir: Path) -> None:  # noqa: F811
    out = run_program(notebook, TWO_SERIES)
    plot = out.get_by_role("img")
    expect(plot).to_have_attribute("data-series", "2")
    expect(plot).to_have_attribute("data-points", str(len(TRAIN)))
    legend = plot.locator(".u-legend")
    expect(legend).to_contain_text("train")
    expect(legend).to_contain_text("val")
    expect(plot.locator(".u-title")).to_have_text("loss per epoch")
    expect(out.locator("figcaption")).to_have_text(
        "loss per epoch: 6 points, last train 1, val 2.1"
    )
    pixels = save_shot(plot, shot_dir / "plot-two-series.png")
    assert colour_count(pixels, BLUE) > 150, "the first series (blue) is not drawn"
    assert colour_count(pixels, ORANGE) > 150, "the second series (orange) is not drawn"
    # two axes (uPlot draws their ticks and labels on the canvas)
    expect(plot.locator(".u-axis")).to_have_count(2)


def test_hover_shows_the_values_under_the_cursor(notebook: Page) -> None:
    out = run_program(notebook, TWO_SERIES)
    over = out.locator(".u-over")
    box = over.bounding_box()
    assert box is not None
    values = out.locator(".u-legend .u-series .u-value")
    for frac in (0.0, 0.4, 1.0):
        notebook.mouse.move(
            box["x"] + frac * box["width"] + (1 if frac == 0 else -1), box["y"] + box["height"] / 2
        )
        expect(values.first).not_to_have_text("—")
        index = int(float(values.nth(0).inner_text()))
        assert 0 <= index < len(TRAIN), index
        assert index == round(frac * (len(TRAIN) - 1)), (frac, index)
        expect(values.nth(1)).to_have_text(f"{TRAIN[index]:g}")
        expect(values.nth(2)).to_have_text(f"{VAL[index]:g}")


def test_calling_again_updates_and_append_adds_points(notebook: Page) -> None:
    out = run_program(
        notebook,
        """import display
for n in range(1, 6):
    display.plot([1 / k for k in range(1, n + 1)], name="p", title="decay")
display.plot([0.1, 0.05], name="p", title="decay", append=True)
display.plot({"a": [1, 2], "b": [2, 1]}, name="q")
display.plot({"a": [3], "b": [0]}, name="q", append=True)
""",
    )
    expect(out.locator("figure.plot")).to_have_count(2)
    first, second = out.get_by_role("img").all()
    expect(first).to_have_attribute("data-points", "7")
    expect(out.locator("figcaption").first).to_have_text("decay: 7 points, last p 0.05")
    expect(second).to_have_attribute("data-points", "3")
    expect(out.locator("figcaption").nth(1)).to_have_text("q: 3 points, last a 3, b 0")
    # the chart's element is the same one: updated in place, not drawn again beside it
    assert out.locator(".uplot").count() == 2


def test_plot_refuses_mismatched_xs(notebook: Page) -> None:
    out = run_program(
        notebook, "import display\ndisplay.plot({'a': [1, 2, 3]}, xs=[0, 1], name='bad')\n"
    )
    expect(out.get_by_role("alert")).to_contain_text(
        "ValueError (line 2): display.plot: series 'a' has 3 values for 2 x values"
    )


def test_plot_survives_reload_and_exports_as_png(notebook: Page, tmp_path: Path) -> None:
    page = notebook
    run_program(page, TWO_SERIES)
    with page.expect_download() as info:
        page.get_by_role("button", name="Export .ipynb").click()
    path = tmp_path / "plot.ipynb"
    info.value.save_as(path)
    nb = json.loads(path.read_text())
    pictures = [o for o in nb["cells"][0]["outputs"] if "image/png" in o.get("data", {})]
    assert len(pictures) == 1, nb["cells"][0]["outputs"]
    assert pictures[0]["data"]["text/plain"] == "plot loss: loss per epoch"
    pixels = decode_png(base64.b64decode(pictures[0]["data"]["image/png"]))
    assert pixels.shape[1] >= 240 and pixels.shape[0] >= 200, pixels.shape
    assert colour_count(pixels, BLUE) > 150 and colour_count(pixels, ORANGE) > 150
    page.reload()
    expect(page.locator("body")).to_have_attribute("data-ready", "true", timeout=120_000)
    plot = page.get_by_role("region", name="Output of cell 1", exact=True).get_by_role("img")
    expect(plot).to_have_attribute("data-series", "2")
    expect(plot.locator(".u-legend")).to_contain_text("val")


def test_plot_in_dark_mode_reads_the_theme(browser, playground_url: str) -> None:  # noqa: F811
    ctx = browser.new_context(color_scheme="dark", viewport={"width": 1100, "height": 900})
    try:
        page = ctx.new_page()
        page.set_default_timeout(120_000)
        open_notebook(page, playground_url, backend="cpu")
        out = run_program(page, TWO_SERIES)
        legend_ink = out.locator(".u-legend").evaluate("(el) => getComputedStyle(el).color")
        r, g, b = (int(v) for v in re.findall(r"\d+", legend_ink)[:3])
        assert min(r, g, b) > 180, legend_ink
    finally:
        ctx.close()


def test_edge_cases_draw_without_errors(notebook: Page) -> None:
    """No points, one point, non-finite values (gaps), a 0-d output entry, xs given."""
    out = run_program(
        notebook,
        """import display
from gpulab import Graph
display.plot([], name="empty")
display.plot([5], name="one")
display.plot([1.0, float("nan"), 3.0, float("inf"), 2.0], name="gaps")
g = Graph()
r = await g.run_async(v=g.tensor([1.0, 2.0, 3.0]) * 3)
display.plot(r["outputs"]["v"], xs=[0.5, 1.0, 1.5], name="entry")
print("ok")""",
    )
    expect(out.locator(".stream.stdout")).to_have_text("ok\n")
    expect(out.get_by_role("alert")).to_have_count(0)
    captions = out.locator("figcaption")
    expect(captions).to_have_text(
        [
            "empty: 0 points, last empty —",
            "one: 1 point, last one 5",
            "gaps: 5 points, last gaps 2",
            "entry: 3 points, last entry 9",
        ]
    )


def test_imported_ipynb_shows_its_pictures(notebook: Page, tmp_path: Path) -> None:
    """An .ipynb's image/png outputs come back as pictures (the plot exported above, and a
    picture in another notebook's file), and go out again on the next export."""
    page = notebook
    run_program(page, TWO_SERIES)
    with page.expect_download() as info:
        page.get_by_role("button", name="Export .ipynb").click()
    path = tmp_path / "with_plot.ipynb"
    info.value.save_as(path)
    exported = json.loads(path.read_text())
    page.get_by_label("Import .ipynb").set_input_files(str(path))
    expect(page.get_by_label("Notebook status")).to_contain_text("Imported with_plot.ipynb")
    img = page.get_by_role("region", name="Output of cell 1", exact=True).get_by_role("img")
    expect(img).to_have_attribute("alt", "plot loss: loss per epoch")
    page.wait_for_function("(el) => el.complete && el.naturalWidth > 200", arg=img.element_handle())
    with page.expect_download() as again:
        page.get_by_role("button", name="Export .ipynb").click()
    second = json.loads(Path(again.value.path()).read_text())
    png = [
        o["data"]["image/png"] for o in second["cells"][0]["outputs"] if "image/png" in o["data"]
    ]
    first = [
        o["data"]["image/png"] for o in exported["cells"][0]["outputs"] if "image/png" in o["data"]
    ]
    assert png == first, "the imported picture did not go out unchanged"
    # a picture whose base64 is not base64 stays a caption (never markup)
    bad = {**exported}
    bad["cells"] = [
        {
            **exported["cells"][0],
            "outputs": [
                {
                    "output_type": "display_data",
                    "metadata": {},
                    "data": {"text/plain": "a caption", "image/png": "<b>x</b>"},
                }
            ],
        }
    ]
    bad_path = tmp_path / "bad.ipynb"
    bad_path.write_text(json.dumps(bad))
    page.get_by_label("Import .ipynb").set_input_files(str(bad_path))
    expect(page.get_by_label("Notebook status")).to_contain_text("Imported bad.ipynb")
    out = page.get_by_role("region", name="Output of cell 1", exact=True)
    expect(out).to_contain_text("a caption")
    expect(out.get_by_role("img")).to_have_count(0)
