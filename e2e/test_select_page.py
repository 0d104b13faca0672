"""The v3 select ops' Python API in the page: the same program (graph.py's maximum, minimum, the
comparison operators, eq/ne, cast, where, rand, dropout, and a dropout session fed a uint32
counter per step) prints the same values in Pyodide, on each page backend, as natively on
cpu-python. Value reprs are exact (float32 values held as Python floats), so equal text is
equal bits (NaN aside: every NaN prints as nan)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from playwright.sync_api import Page

from e2e.test_playground import open_notebook, playground_url, run_program  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = """from gpulab import Graph
g = Graph()
x = g.tensor([-0.0, 0.0, float("nan"), 2.5, -3.7, 1e30])
y = g.tensor([0.0, -0.0, 1.0, float("nan"), -3.7, -1e30])
i = g.tensor([1, -2, 3, -2147483648], dtype="int32")
w = g.tensor([0.5 * k - 3.75 for k in range(16)])
r = g.run(mx=x.maximum(y), mn=x.minimum(y), lt=x < y, ge=0 <= x, eq=i.eq(3), ne=x.ne(y),
          ci=x.cast("int32"), cu=i.cast("uint32"), cf=i.cast("float32"), cb=x.cast("bool"),
          wh=g.where(i > 0, i, 7), u=g.rand([6], seed=3, counter=2**32 - 1),
          d=w.dropout(0.5, seed=1, counter=7))
for name in sorted(r["outputs"]):
    print("SEL", name, r["outputs"][name]["dtype"], repr(r["outputs"][name]["data"]))
c = g.input([], name="step", dtype="uint32")
nxt = w.dropout(0.25, seed=2, counter=c) + w * 0.5
s = g.prepare(feeds=[c], carry={w: nxt}, y=nxt)
print("SEL session", repr(s.run_steps([{c: [k]} for k in range(5)])["outputs"]["y"]["data"]))
s.dispose()
"""


def native_lines() -> list[str]:
    env = {**os.environ, "GPULAB_GPU": "0", "PYTHONPATH": f"{ROOT / 'pylib'}:{ROOT}"}
    out = subprocess.run(
        [sys.executable, "-c", PROGRAM],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    return [line for line in out.splitlines() if line.startswith("SEL")]


@pytest.mark.parametrize("backend", ["wasm", "cpu", "webgl2", "webgpu"])
def test_select_api_in_the_page_equals_native(
    page: Page,
    playground_url: str,  # noqa: F811
    backend: str,
) -> None:
    want = native_lines()
    assert len(want) == 14, want
    open_notebook(page, playground_url, backend=backend, software=True)
    out = run_program(page, PROGRAM)
    got = [
        line
        for line in out.locator(".stream.stdout").inner_text().splitlines()
        if line.startswith("SEL")
    ]
    assert got == want
