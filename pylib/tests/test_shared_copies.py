"""The package ships byte copies of the shared sources: run `make sync` (scripts/sync.py) after
editing backends-js/src/ops.json or kernels/wgsl/."""

from __future__ import annotations

from pathlib import Path

from gpulab import optable

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "pylib/gpulab"


def test_ops_json_is_a_byte_copy():
    assert (PKG / "ops.json").read_bytes() == (ROOT / "backends-js/src/ops.json").read_bytes(), \
        "pylib/gpulab/ops.json differs from backends-js/src/ops.json: run `make sync`"


def test_the_loaded_table_is_the_shared_one():
    import json

    assert optable.load() == json.loads((ROOT / "backends-js/src/ops.json").read_text())


def test_wgsl_kernels_are_byte_copies():
    src = {p.name: p.read_bytes() for p in (ROOT / "kernels/wgsl").glob("*.wgsl")}
    dst = {p.name: p.read_bytes() for p in (PKG / "kernels/wgsl").glob("*.wgsl")}
    assert sorted(dst) == sorted(src), "pylib/gpulab/kernels/wgsl is out of date: run `make sync`"
    for name, content in src.items():
        assert dst[name] == content, f"{name} differs: run `make sync`"
