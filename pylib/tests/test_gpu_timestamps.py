"""bench/gpu_timestamps.py (the timestamp-query profiler the lead runs on the H200) works end to
end on this machine's adapter: a row per planned dispatch with a positive GPU time, the pass
totals, and a timestamp period the host clock agrees with."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a profiled MLP step on lavapipe

ROOT = Path(__file__).resolve().parents[2]


def _load() -> object:
    spec = importlib.util.spec_from_file_location(
        "gpu_timestamps", ROOT / "bench/gpu_timestamps.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_profiler_prints_every_dispatch_and_the_pass(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert _load().main(["--runs", "1", "--allow-software", "--arms", "2"]) == 0  # type: ignore[attr-defined]
    out = capsys.readouterr().out
    n = int(re.search(r"plan: (\d+) dispatches per step", out).group(1))  # type: ignore[union-attr]
    for steps in (1, 8):
        section = out.split(f"### {steps} step(s) per submission")[1].split("###")[0]
        rows = re.findall(
            r"^\| (\d+) \| (\w+)[^|]* \| ([\w:]+) \| (\d+x\d+x\d+) \| ([\d.]+) / ",
            section,
            re.MULTILINE,
        )
        assert [int(r[0]) for r in rows] == list(range(n))
        assert all(float(r[4]) > 0 for r in rows)
        assert "GPU: the pass (its begin/end timestamps), per step" in section
        assert "submit -> done" in section
    ratio = float(re.search(r"\(ratio ([\d.]+)\)", out).group(1))  # type: ignore[union-attr]
    assert 0.5 < ratio <= 1.05  # the GPU span of a long pass is (nearly) its host wall time
    assert "| 8 |" in out.split("`program.run`")[1]
    ab = out.split("A/B of the run's host-side switches")[1]
    assert re.findall(
        r"^\| (default|encode: wgpu-py methods)[^|]* \| .* \| [\d.]+ / [\d.]+ \| [\d.]+ / [\d.]+ \|$",
        ab,
        re.MULTILINE,
    ) == ["default", "encode: wgpu-py methods"]
