"""Run the browser benchmark page (bench/browser/index.html); same as `gpulab bench --browser`.

    .venv/bin/python bench/browser/run.py [--runs 20] [--budget-s 8] [--json out.json]

Every gpu-lab backend (cpu, wasm, webgl2, webgpu) and TF.js backend (cpu, wasm, webgl, webgpu)
on the MLP Adam step from gpulab.models.mlp.init(0), in one headless Chromium page; prints a
markdown table and the losses. The work is in gpulab.benchmarks.browser.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "pylib"))

from gpulab.benchmarks.browser import main

if __name__ == "__main__":
    raise SystemExit(main())
