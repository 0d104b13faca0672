"""Smoke test of the browser benchmark (bench/browser/, gpulab.benchmarks.browser).

One page run with 2 timed runs per mode and no warm-up: every gpu-lab backend and every TF.js
backend must give a row with numbers, and the first losses of every lane must agree with the
gpu-lab cpu backend's (and PyTorch CPU's, when torch is installed) within 1e-4. WebGL2 and
WebGPU here are SwiftShader: software, and the rows must say so. The page's own refusals (no
fixture, unknown lanes) and the agreement check are tested to fail when they should.
"""

from __future__ import annotations

import math
import subprocess
from pathlib import Path

import pytest
from gpulab.benchmarks import browser as bb
from gpulab.static_server import start_server

ROOT = Path(__file__).resolve().parents[1]

TOLERANCE = 1e-4


@pytest.fixture(scope="module")
def result(browser):
    return bb.run(runs=2, warmup=0, browser=browser, timeout_s=600)


def _finite_positive(stats: dict) -> bool:
    return all(math.isfinite(stats[k]) and stats[k] > 0 for k in ("median", "min"))


def test_every_backend_has_a_row_with_numbers(result):
    assert "fatal" not in result, result.get("fatal")
    assert not result.get("pageErrors"), result["pageErrors"]
    lanes = {(r["lib"], r["backend"]): r for r in result["rows"]}
    expected = [("gpu-lab", b) for b in bb.GPULAB_BACKENDS] + [
        ("tfjs", b) for b in bb.TFJS_BACKENDS
    ]
    assert sorted(lanes) == sorted(expected)
    for key, row in lanes.items():
        assert not row.get("error"), f"{key}: {row['error']}"
        modes = bb.MODES if key[0] == "gpu-lab" else ("run1", "run8")
        for mode in modes:
            stats = row[mode]
            assert stats["n"] == 2 and len(stats["samples"]) == 2, (key, mode, stats)
            assert _finite_positive(stats), (key, mode, stats)
            assert stats["min"] <= stats["median"]
        if key[0] == "tfjs":
            assert row["execute"] is None  # TF.js has no execute-a-graph mode
            assert row["info"]["leakedTensors"] == 0, key
        assert len(row["losses"]) == bb.LOSS_STEPS and all(map(math.isfinite, row["losses"]))


def test_losses_agree_across_backends(result):
    cpu = next(r for r in result["rows"] if (r["lib"], r["backend"]) == ("gpu-lab", "cpu"))
    # the step trains: five different, falling losses from about ln(10)
    assert 1.5 < cpu["losses"][0] < 3.5 and cpu["losses"][-1] < cpu["losses"][0]
    for row in result["rows"]:
        diffs = [abs(a - b) for a, b in zip(row["losses"], cpu["losses"], strict=True)]
        assert max(diffs) <= TOLERANCE, (row["lib"], row["backend"], row["losses"], cpu["losses"])
        assert row["maxLossDiffVsCpu"] == pytest.approx(max(diffs))
    torch_ref = result["torch"]
    if "losses" in torch_ref:  # torch is optional in .venv
        for row in result["rows"]:
            assert row["maxLossDiffVsTorch"] <= TOLERANCE, (row["lib"], row["backend"])
    assert bb.failures(result) == []


def test_software_renderers_are_labelled(result):
    for row in result["rows"]:
        soft_words = ("swiftshader", "llvmpipe", "lavapipe", "softpipe")
        if any(w in row["adapter"].lower() for w in soft_words):
            assert row["software"] is True, row
            assert f"{row['adapter']} (software)" in bb.table(result)
        if row["backend"] in ("cpu", "wasm"):
            assert row["software"] is False, row


def test_disagreeing_losses_and_missing_lanes_are_reported(result):
    bad = {**result, "rows": [dict(r) for r in result["rows"]]}
    bad["rows"][-1]["losses"] = [v + 1e-3 for v in bad["rows"][-1]["losses"]]
    bb.add_agreement(bad, result["torch"])
    problems = bb.failures(bad)
    last = bad["rows"][-1]
    assert any(f"{last['lib']} {last['backend']}: maxLossDiffVsCpu" in p for p in problems)
    bad["rows"][0] = {"lib": "gpu-lab", "backend": "cpu", "error": "UNAVAILABLE: gone"}
    assert any("gpu-lab cpu: UNAVAILABLE: gone" in p for p in bb.failures(bad))


def test_unknown_lanes_become_rows_with_their_reason(browser):
    res = bb.run(runs=1, gpulab=("nosuch",), tfjs=("nosuch",), browser=browser, torch=False)
    rows = {r["lib"]: r for r in res["rows"]}
    assert 'unknown backend "nosuch"' in rows["gpu-lab"]["error"]
    assert "UNAVAILABLE" in rows["gpu-lab"]["error"]
    assert 'TF.js backend "nosuch" is not registered' in rows["tfjs"]["error"]
    assert "not run: " in bb.table(res)


def test_page_without_fixture_fails_naming_it(page, server_url):
    # the plain repo server has no fixture route: the page must refuse, not time nothing
    res = bb.run_page(page, server_url, bb.page_query(1), timeout_s=60)
    assert "fixture" in res["fatal"] and "HTTP 404" in res["fatal"]


def test_timing_helper_node_tests():
    # bench/browser/timing.mjs (warm-up, median/min, the budget's minimum runs) under node
    proc = subprocess.run(
        ["node", "--test", "bench/browser/test/"],
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "# pass 3" in proc.stdout and "# fail 0" in proc.stdout


def test_page_whose_module_fails_to_load_reports_it_at_once(page):
    # index.html with its module renamed: the result must say so, not leave the driver waiting
    html = (ROOT / "bench/browser/index.html").read_text().replace("./bench.mjs", "./gone.mjs")
    assert "./gone.mjs" in html
    route = bb.payload_route("/bench/browser/broken.html", html.encode(), "text/html")
    srv = start_server(ROOT, port=0, routes=[route])
    try:
        res = bb.run_page(
            page,
            f"http://127.0.0.1:{srv.server_address[1]}",
            "",
            timeout_s=30,
            path="/bench/browser/broken.html",
        )
    finally:
        srv.shutdown()
    assert "cannot load" in res["fatal"] and "gone.mjs" in res["fatal"]
