"""The live view's native path: a wgpu session on lavapipe drawn by the browser's
WebGPU render shader (present.wgsl, the same bytes) into an offscreen texture, read back and
written as a PNG: a glider after 8 steps at the cells numpy's Life puts it, and colours equal to
colors.mjs's tables (read from the JS module through node)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from e2e.native_present import png_bytes, render
from e2e.test_animate import glider_board, life_reference
from e2e.test_playground import decode_png

pytest.importorskip("wgpu", reason="wgpu-py is not installed (pip install gpulab[native])")
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def tables() -> dict:
    """PALETTE and COLOUR_MAP as backends-js/src/present/colors.mjs has them."""
    node = shutil.which("node")
    assert node, "node is needed to read colors.mjs"
    out = subprocess.run(
        [
            node,
            "--input-type=module",
            "-e",
            (
                "import { PALETTE, COLOUR_MAP } from './backends-js/src/present/colors.mjs';"
                "console.log(JSON.stringify({ palette: PALETTE, stops: COLOUR_MAP }))"
            ),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def _session(data: list, output_op: str | None = "life") -> object:
    from gpulab import host

    h, w = len(data), len(data[0])
    nodes = [{"id": 0, "op": "input", "shape": [h, w], "data": [v for r in data for v in r]}]
    if output_op:
        nodes.append({"id": 1, "op": output_op, "a": 0})
        graph = {"version": 2, "nodes": nodes, "outputs": [{"name": "board", "id": 1}]}
        return host.prepare(graph, carry={0: "board"}, backend="wgpu", allow_software=True)
    nodes.append({"id": 1, "op": "add", "a": 0, "b": 0})
    graph = {"version": 2, "nodes": nodes, "outputs": [{"name": "board", "id": 1}]}
    return host.prepare(graph, resident=["board"], backend="wgpu", allow_software=True)


def test_native_glider_frame_as_png(tables: dict, tmp_path: Path) -> None:
    session = _session(glider_board().tolist())
    try:
        assert session.backend == "wgpu"
        session.run_steps(8)
        rgba = render(session, "board", palette=True)
    finally:
        session.dispose()
    path = tmp_path / "glider.png"
    path.write_bytes(png_bytes(rgba))
    pixels = decode_png(path.read_bytes())
    assert pixels.shape == (16, 16, 4) and (pixels == rgba).all()
    alive = np.abs(pixels[..., :3].astype(int) - tables["palette"][1]).max(axis=2) <= 1
    dead = np.abs(pixels[..., :3].astype(int) - tables["palette"][0]).max(axis=2) <= 1
    assert (alive | dead).all()
    want = life_reference(glider_board(), 8)
    assert (alive == (want > 0)).all(), np.argwhere(alive).tolist()


def test_native_colour_map_matches_colors_mjs(tables: dict) -> None:
    # 0, 1/4, .., 1 of [vmin, vmax] = [-1, 1] land on the stops; below / above clamp; the board
    # is doubled (x + x) so the values are -2 .. 2 in the output
    values = [[-1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 0.75]]
    session = _session(values, output_op=None)
    try:
        session.run()
        rgba = render(session, "board", vmin=-1.0, vmax=1.0)
    finally:
        session.dispose()
    got = rgba[0, :, :3].astype(int)
    stops = tables["stops"]
    want = [stops[0], stops[0], stops[1], stops[2], stops[3], stops[4], stops[4]]
    assert np.abs(got - np.array(want)).max() <= 1, got.tolist()
