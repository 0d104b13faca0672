"""The matmul benchmark the lead runs on real GPUs works end to end (tiny sizes on lavapipe),
picks the planned kernel and checks its own answer."""

from __future__ import annotations

import pytest

pytest.importorskip("wgpu", reason="wgpu-py is not installed")
from gpulab.native import bench_matmul


@pytest.mark.parametrize(
    ("size", "force", "kernel"),
    [
        (132, None, "matmul_small"),
        (132, "matmul_rb_v4", "matmul_rb_v4"),
        (130, "matmul_rb_v4", "matmul_rb"),
        (130, "matmul_v4", "matmul"),
    ],
)
def test_bench_reports_the_kernel_and_a_checked_result(
    size: int, force: str | None, kernel: str
) -> None:
    r = bench_matmul.bench(size, 2, True, kernel=force)
    if force is None and r["adapter"]["software"]:  # minMatmulWorkgroups 1: 2 x 2 tiles of 128
        kernel = "matmul_rb_v4"
    assert r["kernel"] == kernel
    assert r["ms"] > 0 and r["tflops"] > 0
    assert r["max_err_over_scale"] < 1e-6
    assert r["adapter"]["backend_type"]


def test_an_unknown_kernel_is_refused() -> None:
    with pytest.raises(SystemExit):
        bench_matmul.main(["--size", "8", "--kernel", "matmul_huge", "--allow-software"])


def test_bench_main_prints_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_matmul.main(["--size", "64", "--reps", "1", "--allow-software"]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("64^3 float32 matmul on") and "GFLOP/s" in line


def test_a_non_square_shape_is_timed_and_checked(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_matmul.main(["--shape", "67,33,45", "--reps", "1", "--allow-software"]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("67x33x45 float32 matmul on") and "GFLOP/s" in line
    r = bench_matmul.bench(0, 1, True, kernel="matmul_rb_v4", shape=(130, 36, 132))
    assert r["shape"] == (130, 36, 132) and r["kernel"] == "matmul_rb_v4"
    assert r["max_err_over_scale"] < 1e-6
