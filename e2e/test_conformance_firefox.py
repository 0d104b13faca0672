"""`gpulab conformance --lane firefox-*`: the system's Firefox ESR runs selected corpus
cases on wasm and webgl2 through the command, with the same reports as every other lane; WebGPU,
which Linux Firefox does not offer, is UNAVAILABLE with the browser's reason (exit 2), and a
broken kernel on a Firefox lane fails the run naming op and lane."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from gpulab.conformance.cli import main

CASES = "relu,neg,add,sum/*,argmax,where"


def _run(tmp_path: Path, lanes: str, monkeypatch, broken: str | None = None) -> tuple[int, dict]:
    if broken:
        monkeypatch.setenv("GPULAB_CONFORMANCE_BREAK", broken)
    else:
        monkeypatch.delenv("GPULAB_CONFORMANCE_BREAK", raising=False)
    code = main(["--lane", lanes, "--allow-software", "--cases", CASES, "--report", str(tmp_path)])
    return code, json.loads((tmp_path / "conformance.json").read_text())


@pytest.fixture(scope="module")
def passing(tmp_path_factory) -> tuple[int, dict, Path]:
    out = tmp_path_factory.mktemp("firefox")
    with pytest.MonkeyPatch.context() as mp:
        code, report = _run(out, "firefox-wasm,firefox-webgl2,cpu-python", mp)
    return code, report, out


def test_firefox_lanes_pass_with_software_labels(passing) -> None:
    code, report, out = passing
    lanes = {r["lane"]["executor"]: r["lane"] for r in report["lanes"]}
    assert code == 0, (out / "conformance.md").read_text()
    assert lanes["firefox-webgl2"]["backend"] == "webgl2"
    assert lanes["firefox-webgl2"]["software"] is True  # llvmpipe: labelled
    assert lanes["firefox-wasm"]["backend"] == "wasm"
    md = (out / "conformance.md").read_text()
    assert "Mozilla Firefox" in md and "firefox-webgl2" in md
    cases = ET.parse(out / "conformance.xml").getroot().iter("testcase")
    assert any(
        "firefox-webgl2" in (c.get("classname") or "") + (c.get("name") or "") for c in cases
    )


def test_firefox_webgpu_is_unavailable_with_the_reason(tmp_path, monkeypatch) -> None:
    code, report = _run(tmp_path, "firefox-webgpu", monkeypatch)
    (lane,) = (r["lane"] for r in report["lanes"])
    assert code == 2 and lane["available"] is False
    assert "navigator.gpu" in lane["reason"]


def test_a_broken_kernel_on_firefox_fails_naming_op_and_lane(tmp_path, monkeypatch) -> None:
    code, report = _run(tmp_path, "firefox-webgl2", monkeypatch, broken="firefox-webgl2:neg")
    failed = {(c["executor"], c["op"]) for c in report["cells"] if c["failed"]}
    assert code == 1
    assert failed == {("firefox-webgl2", "neg")}, failed
    assert "## Failures: firefox-webgl2" in (tmp_path / "conformance.md").read_text()
