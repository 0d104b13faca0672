"""The Firefox lane: Debian's firefox-esr, driven without an automation protocol
(e2e/firefox_lane.py says why), runs the conformance corpus on wasm, cpu and webgl2, records that
WebGPU is not offered, and runs the playground's first example on wasm, cpu and webgl2, and the
Life and MLP examples on wasm.

One run of the lane serves every test (about 1-2 minutes here); its summary is written to
reports/firefox-lane.txt.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from e2e.firefox_lane import LaneResult, run_lane, summary

ROOT = Path(__file__).resolve().parents[1]

# Cases webgl2 may fail on Firefox + Mesa llvmpipe (GL) and not on Chromium + ANGLE/SwiftShader,
# each a defect of the webgl2 backend on this driver with its reason; a new failure and a fixed
# listed case both fail the test below. None today: the lane found two (clamp's float
# compare-and-select, and loops cut at llvmpipe's 65535 iterations in long reductions), both
# fixed in kernels/glsl.
KNOWN_WEBGL2_FAILURES: dict[str, str] = {}


@pytest.fixture(scope="module")
def lane() -> LaneResult:
    result = run_lane()
    out = ROOT / "reports"
    out.mkdir(exist_ok=True)
    (out / "firefox-lane.txt").write_text(summary(result) + "\n")
    assert result.error is None, summary(result)
    return result


def test_the_lane_runs_the_system_firefox_isolated(lane: LaneResult) -> None:
    assert lane.version.startswith("Mozilla Firefox"), lane.version
    assert "Firefox/" in lane.facts["userAgent"]
    # COOP/COEP hold in Firefox too (the playground's Stop needs a SharedArrayBuffer)
    assert lane.facts["crossOriginIsolated"] is True


@pytest.mark.parametrize("backend", ["wasm", "cpu"])
def test_corpus_passes_on_cpu_backends(lane: LaneResult, backend: str) -> None:
    report = lane.reports[backend]
    assert len(report.results) > 700
    assert report.passed, report.describe_failures()


def test_corpus_on_webgl2_fails_only_the_known_cases(lane: LaneResult) -> None:
    report = lane.reports["webgl2"]
    assert report.lane.backend == "webgl2" and report.lane.software is True, report.lane
    assert len(report.results) > 700
    failed = {r.name for r in report.failures()}
    assert failed == set(KNOWN_WEBGL2_FAILURES), report.describe_failures()


def test_webgpu_refusal_is_recorded(lane: LaneResult) -> None:
    """Linux Firefox offers no navigator.gpu: the lane records the runtime's refusal."""
    assert lane.facts["webgpu"] is False
    assert "webgpu" not in lane.reports
    assert "UNAVAILABLE" in lane.refusals["webgpu"]
    assert "navigator.gpu is missing" in lane.refusals["webgpu"]


@pytest.mark.parametrize("backend", ["wasm", "cpu", "webgl2"])
def test_first_example_runs_in_the_playground(lane: LaneResult, backend: str) -> None:
    example = next(e for e in lane.examples if (e["example"], e["backend"]) == ("first", backend))
    assert "error" not in example, example["error"]
    assert f"Backend in use: {backend}" in example["status"]
    cells = example["cells"]
    assert [c.get("status") for c in cells] == ["done", "done", "done"], cells
    assert f"{backend} [0.0, 60.0, 120.0]" in cells[0]["output"]
    assert f"{backend} [160.0]" in cells[1]["output"]
    assert "[-5.5, 4.5, 6.5]" in cells[2]["output"]


def test_life_draws_and_the_mlp_trains_and_plots_in_firefox(lane: LaneResult) -> None:
    """The canvas (display.draw) and uPlot (display.plot) paths in Firefox, on wasm."""
    life = next(e for e in lane.examples if e["example"] == "life")
    assert "error" not in life, life["error"]
    assert all(c.get("status") == "done" for c in life["cells"]), life["cells"]
    assert life["cells"][1]["figures"][0]["caption"] == "generation 60"
    mlp = next(e for e in lane.examples if e["example"] == "mlp")
    assert "error" not in mlp, mlp["error"]
    assert all(c.get("status") == "done" for c in mlp["cells"]), mlp["cells"]
    plot = mlp["cells"][2]["figures"][0]
    assert plot["key"] == "plot:loss" and plot["points"] == "40", plot
    first, last = map(
        float, re.search(r"loss ([\d.]+) -> ([\d.]+)", mlp["cells"][2]["output"]).groups()
    )
    assert last < first / 4, (first, last)
    accuracy = float(re.search(r"accuracy ([\d.]+)%", mlp["cells"][3]["output"]).group(1))
    assert accuracy > 90
