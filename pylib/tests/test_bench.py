"""`gpulab bench` (native): the table and JSON it produces, and its exit status."""

from __future__ import annotations

import json
import math

import pytest
from gpulab import bench


@pytest.mark.slow  # an MLP trained end to end by the bench command
def test_bench_rows_have_timings_and_decreasing_losses(tmp_path, capsys):
    out = tmp_path / "bench.json"
    rc = bench.main(
        ["--runs", "2", "--torch-device", "none", "--backends", "cpu-python", "--json", str(out)]
    )
    assert rc == 0
    result = json.loads(out.read_text())
    (row,) = result["rows"]
    assert row["backend"] == "cpu-python"
    for mode in ("execute", "run_1", "run_8"):
        assert row[mode]["n"] == 2 and 0 < row[mode]["min_ms"] <= row[mode]["median_ms"]
    losses = row["losses"]
    assert len(losses) == bench.LOSS_STEPS and all(math.isfinite(x) for x in losses)
    assert losses[-1] < losses[0]  # Adam is training
    assert "| cpu-python |" in capsys.readouterr().out


def test_a_backend_asked_for_by_name_that_cannot_run_fails_the_run(capsys):
    rc = bench.main(["--runs", "1", "--torch-device", "none", "--backends", "no-such-backend"])
    assert rc == 1
    assert "not run" in capsys.readouterr().out


def test_loss_agreement_column_compares_with_the_peer():
    rows = [
        {"backend": "cpu-python", "losses": [1.0, 0.5], "run_1": {"median_ms": 1.0, "min_ms": 1.0}}
    ]
    text = bench.table(rows, [1.0, 0.5 + 3e-7])
    assert "3.00e-07" in text
