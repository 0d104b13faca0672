"""gpulab.torch's fixtures in Pyodide (node), on the JS runtime's wasm and cpu backends: the
page's Python path (PageHost -> pyodide_bridge -> python-adapter -> runtime) without a browser,
eager steps through `optimizer.step_async()`, against PyTorch computed here (CPU)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "pylib" / "tests"))
from torch_fixtures import fixtures as fx

# every fixture on wasm; the JS cpu backend (and webgpu, webgl2) run them in the page
# (e2e/test_torch_page.py): a second node run here would cost ~20 s of Pyodide start-up
LANES = {"wasm": sorted(fx.FIXTURES)}


@pytest.mark.parametrize("backend", sorted(LANES))
def test_fixtures_in_pyodide_match_torch(backend: str) -> None:
    node = shutil.which("node")
    assert node, "node is needed (it runs the JS runtime and Pyodide)"
    out = subprocess.run(
        [node, str(ROOT / "e2e" / "torch_pyodide.mjs"), backend, *LANES[backend]],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["backend"] == backend and result["numpy"] is False
    for name in LANES[backend]:
        assert fx.compare(result["traces"][name], fx.reference(fx.FIXTURES[name])) == [], name
