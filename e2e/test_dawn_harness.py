"""The node + Dawn harness (pylib/gpulab/conformance/dawn_setup.mjs): what it adds to node without
touching the runtime, checked here where Dawn has no GPU (it refuses lavapipe): file: fetches
of kernels, the browser pages' absolute imports, navigator.gpu from the module GPULAB_DAWN
names, and the node-webgpu conformance lane answering UNAVAILABLE (never passing) without it.
The real lane runs on the GPU machine: docs/benchmarks.md "MLP training step, the JS
WebGPU backend under node + Dawn"."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from gpulab.conformance.executors import DAWN_SETUP
from gpulab.conformance.layout import TREE_ROOT as ROOT
from gpulab.conformance.runner import load_cases, run_conformance

NODE = os.environ.get("NODE", "node")
pytestmark = pytest.mark.skipif(shutil.which(NODE) is None, reason="node is not installed")

PROBE = """
const unary = new URL('kernels/wgsl/unary.wgsl', 'ROOT');
const found = await fetch(unary);
const missing = await fetch(new URL('kernels/wgsl/no_such_kernel.wgsl', 'ROOT'));
const { time } = await import('/bench/browser/timing.mjs');
const gpu = globalThis.navigator?.gpu;
console.log(JSON.stringify({ status: found.status, text: await found.text(),
  missing: missing.status, timing: typeof time,
  gpu: gpu ? Object.keys(gpu).sort() : null,
  adapter: gpu ? await gpu.requestAdapter() : 'none' }));
"""

FAKE_DAWN = """
export const globals = { GPUBufferUsage: { MAP_READ: 1 } };
export function create(flags) { return { flags, requestAdapter: async () => null }; }
"""


def _probe(dawn: str) -> tuple[dict, str]:
    script = PROBE.replace("ROOT", ROOT.as_uri() + "/")
    proc = subprocess.run(
        [NODE, "--import", DAWN_SETUP.as_uri(), "--input-type=module", "-e", script],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={**os.environ, "GPULAB_DAWN": dawn},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), proc.stderr


def test_file_fetches_and_absolute_imports_work_and_missing_dawn_is_said(tmp_path: Path) -> None:
    answer, stderr = _probe(str(tmp_path / "nowhere" / "index.js"))
    wgsl = (ROOT / "kernels" / "wgsl" / "unary.wgsl").read_text(encoding="utf-8")
    assert answer["status"] == 200 and answer["text"] == wgsl
    assert answer["missing"] == 404
    assert answer["timing"] == "function"
    assert answer["gpu"] is None  # no Dawn: navigator.gpu stays unset, as in a page without it
    assert "Dawn (npm webgpu) not loaded" in stderr


def test_the_module_gpulab_dawn_names_becomes_navigator_gpu(tmp_path: Path) -> None:
    fake = tmp_path / "index.js"
    fake.write_text(FAKE_DAWN, encoding="utf-8")
    (tmp_path / "package.json").write_text('{"type": "module"}', encoding="utf-8")
    answer, _ = _probe(str(fake))
    assert answer["gpu"] == ["flags", "requestAdapter"]
    assert answer["adapter"] is None


def test_the_node_webgpu_lane_without_a_gpu_is_unavailable_not_passing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPULAB_DAWN", str(tmp_path / "nowhere.js"))
    report = run_conformance("node-webgpu", load_cases(ops=["abs"])[:2])
    assert not report.passed
    assert "navigator.gpu is missing" in report.lane.reason
