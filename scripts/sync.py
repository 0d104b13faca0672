"""Kept for old habits and helpers: the package-copy step of `make gen` (scripts/gen.py --copies).

Copies backends-js/src/ops.json, kernels/ops.json and kernels/wgsl/*.wgsl into pylib/gpulab.
`make gen` writes these and every other generated file; prefer it.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen import main

if __name__ == "__main__":
    sys.exit(main(["--copies", *sys.argv[1:]]))
