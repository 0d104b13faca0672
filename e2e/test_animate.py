"""Live views (display.animate), driven in headless Chromium at the page: frames in
order, the pixels of a known pattern (a glider after N steps), frames that keep coming and
change, back-pressure, input (clicks toggle the expected cells, a key pauses), the end of a view
(Stop, a re-run, a lost device) and, on WebGPU, frames that make no buffer map (counted in the
worker by a test hook, backends-js/src/present/map-counter.mjs).

The tests wait on the page's state (the frame log, the canvas) and count frames; they time
nothing. The pacing itself is checked in virtual time by backends-js/test/present.test.mjs;
the frame rate and latency on a real page are measured by bench/archive/live_views.py.

WebGPU is SwiftShader and WebGL2 ANGLE on SwiftShader here (software adapters, allowed and
labelled); a WebGPU canvas needs pylib/gpulab/conformance/browser.py's Vulkan flags (docs/playground.md).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from playwright.sync_api import Page, expect

from e2e.test_playground import (
    DONE,
    cell,
    decode_png,
    new_notebook,
    open_notebook,
    output,
    run_program,
    save_shot,
    shot_dir,  # noqa: F401 - the fixture
)

BACKENDS = ["webgpu", "webgl2", "wasm", "cpu"]
PALETTE = {0: (16, 20, 28), 1: (96, 220, 168)}  # backends-js/src/present/colors.mjs
N, SCALE = 16, 10
GLIDER = [(1, 2), (2, 3), (3, 1), (3, 2), (3, 3)]


@pytest.fixture(scope="session")
def playground_url():
    from gpulab.server import start, stop

    srv = start("127.0.0.1", 0)
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    stop(srv)


@pytest.fixture(scope="module", params=BACKENDS)
def backend_page(request, browser, playground_url: str):
    """One notebook page per backend (Pyodide loads once per backend)."""
    ctx = browser.new_context(viewport={"width": 1100, "height": 900}, device_scale_factor=1)
    pg = ctx.new_page()
    pg.set_default_timeout(120_000)
    open_notebook(pg, playground_url, backend=request.param, software=True)
    expect(pg.get_by_role("status", name="Backend in use")).to_contain_text(
        f"Backend in use: {request.param}"
    )
    yield request.param, pg
    ctx.close()


@pytest.fixture()
def live(backend_page):
    backend, page = backend_page
    stop = page.get_by_role("button", name="Stop")
    if stop.is_enabled():
        stop.click()
        expect(stop).to_be_disabled()
    new_notebook(page)
    return backend, page


def life_reference(board: np.ndarray, steps: int) -> np.ndarray:
    """Conway's rule on a torus, in numpy (the op table's life: alive when > 0.5)."""
    b = board.copy()
    for _ in range(steps):
        n = sum(
            np.roll(np.roll(b, dy, 0), dx, 1)
            for dy in (-1, 0, 1)
            for dx in (-1, 0, 1)
            if (dy, dx) != (0, 0)
        )
        b = ((n == 3) | ((b > 0.5) & (n == 2))).astype(np.float32)
    return b


def glider_board() -> np.ndarray:
    b = np.zeros((N, N), np.float32)
    for r, c in GLIDER:
        b[r, c] = 1
    return b


def life_program(frames: str, fps: int = 30, toggle: bool = False, extra: str = "") -> str:
    """A glider on a 16x16 torus; with toggle, a fed mask XORs cells before each step."""
    start = glider_board().tolist()
    feed = (
        "t = g.input([16, 16])\nnext_board = (board + t - 2 * board * t)"
        if toggle
        else "next_board = board"
    )
    life = "" if "nolife" in extra else ".life()"
    feeds = "feeds={t: display.toggles()}, " if toggle else ""
    prep_feeds = "feeds=[t], " if toggle else ""
    return f"""import display
from gpulab import Graph
g = Graph()
board = g.tensor({start})
{feed}
s = await g.prepare_async({prep_feeds}carry={{board: "board"}}, board=next_board{life})
view = display.animate(s, "board", {feeds}fps={fps}, frames={frames}, palette=True,
                       scale={SCALE}, title="glider")
print("started", s.backend)
"""


def view(page: Page, n: int = 1):
    return output(page, n).locator("figure.live-view")


def frame_log(page: Page, n: int = 1) -> dict:
    anim_id = int(view(page, n).get_attribute("data-anim-id"))
    return page.evaluate("(id) => globalThis.gpulabAnimations.log(id)", anim_id)


def cells_of(page: Page, n: int = 1) -> np.ndarray:
    """The canvas at the page (a screenshot): 1 where a cell shows the palette's colour 1."""
    canvas = view(page, n).locator("canvas")
    canvas.scroll_into_view_if_needed()
    px = decode_png(canvas.screenshot())[..., :3].astype(int)
    border = (px.shape[0] - N * SCALE) // 2
    centres = px[border + SCALE // 2 :: SCALE, border + SCALE // 2 :: SCALE][:N, :N]
    dead = np.abs(centres - PALETTE[0]).max(axis=2) <= 6
    alive = np.abs(centres - PALETTE[1]).max(axis=2) <= 6
    assert (dead | alive).all(), f"cells of neither palette colour: {centres[~(dead | alive)][:4]}"
    return alive.astype(np.float32)


def wait_ended(page: Page, n: int = 1, timeout: float = 60_000) -> None:
    expect(view(page, n)).to_have_attribute("data-state", "ended", timeout=timeout)


def animation_frames(page: Page, count: int = 2) -> None:
    """Wait for `count` of the page's animation frames (the compositor shows a canvas' new
    frame by then)."""
    page.evaluate(
        """(count) => new Promise((resolve) => {
        const tick = () => (--count > 0 ? requestAnimationFrame(tick) : resolve());
        requestAnimationFrame(tick);
    })""",
        count,
    )


def wait_for_cells(page: Page, want: np.ndarray, timeout_s: float = 30, n: int = 1) -> np.ndarray:
    """The canvas' cells once they equal `want` (checked after each pair of animation frames),
    or what they show at the timeout."""
    deadline = time.monotonic() + timeout_s
    got = cells_of(page, n)
    while not (got == want).all() and time.monotonic() < deadline:
        animation_frames(page)
        got = cells_of(page, n)
    return got


def anim_id(page: Page, n: int = 1) -> int:
    return int(view(page, n).get_attribute("data-anim-id"))


def wait_for_frames(page: Page, more: int, key: str = "received", n: int = 1) -> int:
    """Wait until the frame log's `key` (frames "received", or the last "shown" seq) grew by
    `more`; returns the new value."""
    expr = "log.received" if key == "received" else "(log.seqs.at(-1) ?? 0)"
    read = f"(id) => {{ const log = globalThis.gpulabAnimations.log(id); return {expr}; }}"
    start = page.evaluate(read, anim_id(page, n))
    page.wait_for_function(
        f"([id, n]) => {{ const log = globalThis.gpulabAnimations.log(id); return {expr} >= n; }}",
        arg=[anim_id(page, n), start + more],
    )
    return page.evaluate(read, anim_id(page, n))


def test_glider_after_n_steps_in_order(live) -> None:
    backend, page = live
    run_program(page, life_program(frames=8))
    expect(output(page, 1)).to_contain_text(f"started {backend}")
    wait_ended(page)
    expect(view(page)).to_have_attribute("data-reason", "done")
    log = frame_log(page)
    assert log["seqs"] == list(range(1, 9)), log["seqs"]  # every frame, in order
    assert log["outOfOrder"] == 0
    assert log["maxUnacked"] <= 2
    want = life_reference(glider_board(), 8)
    got = wait_for_cells(page, want)  # the compositor may show the last frame a moment later
    assert (got == want).all(), (
        f"alive at {np.argwhere(got).tolist()}, want {np.argwhere(want).tolist()}"
    )
    assert want.sum() == 5 and not (want == glider_board()).all()  # it moved


def test_frames_keep_coming_and_change(live) -> None:
    _, page = live
    run_program(page, life_program(frames="None", fps=20))
    expect(view(page)).not_to_have_attribute("data-frames", "0")
    first = cells_of(page)
    wait_for_frames(page, 8, key="shown")  # the glider moves a cell every 4 steps
    animation_frames(page)
    second = cells_of(page)
    assert not (first == second).all(), "the frames did not change"
    log = frame_log(page)
    assert log["maxUnacked"] <= 2
    seqs = log["seqs"]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
    page.get_by_role("button", name="Stop").click()
    wait_ended(page)
    expect(view(page)).to_have_attribute("data-reason", "stopped")
    expect(page.get_by_role("button", name="Stop")).to_be_disabled()
    # the view owned the session: it is disposed
    page.get_by_role("button", name="+ Add cell").click()
    out = run_program(
        page,
        "try:\n    await s.run_async()\nexcept Exception as e:\n    print(type(e).__name__, e)\n",
        n=2,
    )
    expect(out).to_contain_text("disposed")


def test_clicks_toggle_cells_and_a_key_pauses(live) -> None:
    _, page = live
    # no life step: each frame is board XOR the clicked cells, so the board shows the clicks
    run_program(page, life_program(frames="None", fps=30, toggle=True, extra="nolife"))
    expect(view(page)).not_to_have_attribute("data-frames", "0")
    canvas = view(page).locator("canvas")
    clicks = [(5, 7), (10, 2), (1, 2)]  # (1, 2) is a glider cell: toggled off
    for r, c in clicks:
        canvas.click(position={"x": 1 + c * SCALE + 5, "y": 1 + r * SCALE + 5})
    want = glider_board()
    for r, c in clicks:
        want[r, c] = 1 - want[r, c]
    got = wait_for_cells(page, want)
    assert (got == want).all(), (
        f"alive at {np.argwhere(got).tolist()}, want {np.argwhere(want).tolist()}"
    )
    # Space pauses: the worker makes no frame while paused (the one in flight at most), though
    # the page runs its animation frames and a click waits for the next step; again resumes
    canvas.focus()
    page.keyboard.press(" ")
    expect(view(page)).to_have_attribute("data-paused", "true")
    expect(view(page).locator("figcaption")).to_contain_text("paused")
    canvas.click(position={"x": 1 + 12 * SCALE + 5, "y": 1 + 12 * SCALE + 5})
    animation_frames(page, 30)  # at 30 fps, some 15 frames' time for a loop that did not pause
    canvas.focus()
    page.keyboard.press(" ")
    expect(view(page)).to_have_attribute("data-paused", "false")
    paused, resumed = frame_log(page)["states"][-2:]
    assert paused["paused"] and not resumed["paused"], frame_log(page)["states"]
    assert resumed["seq"] - paused["seq"] <= 1, f"frames while paused: {paused} -> {resumed}"
    want[12, 12] = 1 - want[12, 12]  # the click made while paused is the next step's
    got = wait_for_cells(page, want)
    assert (got == want).all(), (
        f"alive at {np.argwhere(got).tolist()}, want {np.argwhere(want).tolist()}"
    )
    wait_for_frames(page, 3, key="shown")  # frames keep coming


def test_rerun_ends_the_view(live) -> None:
    _, page = live
    run_program(page, life_program(frames="None", fps=30))
    first_id = view(page).get_attribute("data-anim-id")
    expect(view(page)).not_to_have_attribute("data-frames", "0")
    old = frame_log(page)
    run_program(page, life_program(frames=4, fps=30))
    assert view(page).get_attribute("data-anim-id") != first_id
    ended = page.evaluate("(id) => globalThis.gpulabAnimations.log(id).ended", int(first_id))
    assert ended and ended["reason"] == "stopped", ended
    assert old["seqs"]
    wait_ended(page)
    expect(cell(page, 1).locator(".prompt")).to_have_text(DONE)


@pytest.mark.parametrize("backend_page", ["webgpu"], indirect=True)
def test_webgpu_frames_make_no_buffer_map(live) -> None:
    _, page = live
    [worker] = page.workers
    base = worker.evaluate("() => self.gpulabTestHooks.countMaps()")
    run_program(page, life_program(frames=30, fps=60))
    wait_ended(page)
    after = worker.evaluate("() => self.gpulabTestHooks.countMaps()")
    assert frame_log(page)["seqs"][-1] == 30
    assert after == base, f"WebGPU frames mapped buffers: {base} -> {after}"
    # the counter counts: a download maps once
    page.get_by_role("button", name="+ Add cell").click()
    run_program(
        page,
        """g2 = Graph()
b2 = g2.tensor([[1.0, 0.0], [0.0, 1.0]])
s2 = await g2.prepare_async(carry={b2: "b"}, b=b2.life())
await s2.run_async()
print((await s2.download_async("b"))["shape"])
""",
        n=2,
    )
    mapped = worker.evaluate("() => self.gpulabTestHooks.countMaps()")
    assert mapped["mapAsync"] >= after["mapAsync"] + 2, mapped


@pytest.mark.parametrize(
    ("backend_page", "lose"),
    [("webgpu", "loseDevice"), ("webgl2", "loseContext")],
    indirect=["backend_page"],
)
def test_lost_device_ends_the_view_with_a_message(live, lose: str) -> None:
    """The backends' loss hooks (hooks.loseDevice, hooks.loseContext) in the worker."""
    _, page = live
    run_program(page, life_program(frames="None", fps=30))
    expect(view(page)).not_to_have_attribute("data-frames", "0")
    [worker] = page.workers
    worker.evaluate(f"() => self.gpulabTestHooks.runtime.{lose}()")
    wait_ended(page, timeout=20_000)
    expect(view(page)).to_have_attribute("data-reason", "error")
    expect(view(page).get_by_role("alert")).to_contain_text("lost")
    # the runtime stays on the lost device: a fresh worker for the tests after this one
    page.get_by_role("button", name="Restart Python").click()
    expect(page.locator("body")).to_have_attribute("data-ready", "true", timeout=120_000)


VIRIDIS_LOW = (68, 1, 84)  # colors.mjs COLOUR_MAP[0]: the heat map at vmin


def test_live_example_life_and_heat_brush(live, shot_dir: Path) -> None:  # noqa: F811
    """The Examples menu's live notebook: Life drawn with the mouse, heat painted with a brush
    (a stencil of matmuls with a shift matrix: slices have not landed yet)."""
    backend, page = live
    page.get_by_label("Examples").select_option("live")
    expect(page.locator("section.cell")).to_have_count(2)
    page.get_by_role("button", name="Run all").click()
    for n in (1, 2):
        expect(cell(page, n).locator(".prompt")).to_have_text(DONE, timeout=120_000)
        expect(output(page, n)).to_contain_text(f"live on {backend}")
        expect(view(page, n)).not_to_have_attribute("data-frames", "0")
    canvas = view(page, 2).locator("canvas")
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    before = decode_png(canvas.screenshot())[2:-2, 2:-2, :3].astype(int)  # inside the border
    assert (np.abs(before - VIRIDIS_LOW).max(axis=2) <= 6).mean() > 0.95  # cold everywhere
    # press and drag across the middle row: the brush paints heat there
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + box["width"] * 0.3, y)
    page.mouse.down()
    for i in range(10):
        page.mouse.move(box["x"] + box["width"] * (0.3 + 0.04 * i), y)
        wait_for_frames(page, 1, key="shown", n=2)  # a step paints where the brush is now
    page.mouse.up()
    deadline = time.monotonic() + 30  # the frames that show the heat

    def warm_now() -> np.ndarray:
        animation_frames(page)
        after = decode_png(canvas.screenshot())[2:-2, 2:-2, :3].astype(int)
        return np.abs(after - VIRIDIS_LOW).max(axis=2) > 30

    warm = warm_now()
    h, w = warm.shape
    while not warm[h // 2, int(w * 0.45)] and time.monotonic() < deadline:
        warm = warm_now()
    assert warm[h // 2, int(w * 0.45)], "no heat where the brush went"
    assert not warm[h // 8].any(), "heat far from the brush"
    if backend == "webgpu":
        save_shot(page.locator("main"), shot_dir / "live-views.png")
    page.get_by_role("button", name="Stop").click()
    for n in (1, 2):
        expect(view(page, n)).to_have_attribute("data-state", "ended")


def test_unacknowledged_frames_slow_the_loop_and_errors_are_clear(live) -> None:
    """A page that stops acknowledging (the test hook holds the acks, as a hidden tab would):
    the worker never runs more than 2 frames ahead of the acknowledgements (it waits, then sends
    one more: about one a second, backends-js/test/present.test.mjs) and the page holds at most 4
    (it drops the oldest); acknowledging again resumes. view.stop() ends the view and disposes
    its session; bad arguments are refused clearly."""
    _, page = live
    run_program(page, life_program(frames="None", fps=60))
    expect(view(page)).not_to_have_attribute("data-frames", "0")
    page.evaluate("() => { globalThis.gpulabAnimations.holdAcks = true; }")
    wait_for_frames(page, 6)  # past 2 unacknowledged: each later one after an ack wait
    log = frame_log(page)
    assert log["maxUnacked"] <= 2, f"the worker ran {log['maxUnacked']} frames ahead"
    assert log["droppedFrames"] >= 1, "the page kept every unacknowledged frame"
    page.evaluate("() => { globalThis.gpulabAnimations.holdAcks = false; }")
    wait_for_frames(page, 10, key="shown")  # resumed: frames shown again
    assert frame_log(page)["maxUnacked"] <= 2
    page.get_by_role("button", name="+ Add cell").click()
    out = run_program(page, "view.stop()\nprint('disposed', s.disposed)", n=2)
    expect(out).to_contain_text("disposed True")
    expect(view(page)).to_have_attribute("data-reason", "stopped")
    expect(page.get_by_role("button", name="Stop")).to_be_disabled()
    page.get_by_role("button", name="+ Add cell").click()
    bad = """g3 = Graph()
b3 = g3.tensor([[1.0, 0.0], [0.0, 1.0]])
s3 = await g3.prepare_async(carry={b3: "b"}, b=b3.life(), total=b3.sum())
display.animate(s3, "total")
"""
    out = run_program(page, bad, n=3)
    alert = out.get_by_role("alert")
    expect(alert).to_contain_text("VALIDATION")
    expect(alert).to_contain_text('output "total" is not resident')
    expect(alert).to_contain_text("line 4")
