"""Copy the shared sources into the Python package: the op table and the WGSL kernels.

The canonical op table is backends-js/src/ops.json and the canonical kernels are kernels/wgsl/;
pylib/gpulab ships byte copies (package data). Tests check the copies are identical; run
`make sync` after editing either source.
"""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    shutil.copyfile(ROOT / "backends-js/src/ops.json", ROOT / "pylib/gpulab/ops.json")
    src = ROOT / "kernels/wgsl"
    dst = ROOT / "pylib/gpulab/kernels/wgsl"
    dst.mkdir(parents=True, exist_ok=True)
    for old in dst.glob("*.wgsl"):
        if not (src / old.name).exists():
            old.unlink()
    for f in sorted(src.glob("*.wgsl")):
        shutil.copyfile(f, dst / f.name)


if __name__ == "__main__":
    main()
