"""`gpulab bench --sweep`: a tiny sweep on cpu-python against PyTorch CPU.

Checks the JSON a sweep writes, that gpulab and PyTorch measured the same training step (their
losses after 8 steps from the same weights agree, at 2 and 4 layers), that the PNG is a PNG,
and that the loss check and the FLOP count would catch a wrong step.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Iterator

import pytest
from gpulab import bench, host
from gpulab.benchmarks import sweep, torch_peer
from gpulab.models import mlp

pytestmark = pytest.mark.slow  # the sweep benchmark end to end

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
LOSS_TOL = 1e-4  # float32 over 8 Adam steps of a 784-16-10 net: ~1e-6 measured


@pytest.fixture(autouse=True)
def _host_defaults() -> Iterator[None]:
    """The sweep configures the host (GPU, software admission); later tests get the defaults."""
    yield
    host.configure()


def _tiny_sweep(tmp_path, capsys):
    out, png = tmp_path / "sweep.json", tmp_path / "sweep.png"
    argv = ["--sweep", "--sizes", "16", "--batches", "8", "--layers", "2,4"]
    argv += ["--backends", "cpu-python", "--torch-device", "cpu", "--json", str(out)]
    argv += ["--budget-s", "0.02"]  # the fewest runs: the fields are what is tested
    rc = bench.main(argv + ["--png", str(png)])
    return rc, json.loads(out.read_text()), png.read_bytes(), capsys.readouterr().out


def test_tiny_sweep_writes_every_field_and_the_losses_agree(tmp_path, capsys):
    rc, result, png, text = _tiny_sweep(tmp_path, capsys)
    assert rc == 0
    assert result["steps_per_run"] == 8 and result["backends"] == ["cpu-python"]
    assert "allow_tf32 = False" in result["precision"] and "no tensor cores" in result["precision"]
    assert "2*batch*in*out" in result["flops_rule"]
    assert [(p["layers"], p["hidden"], p["batch"]) for p in result["points"]] == [
        (2, 16, 8),
        (4, 16, 8),
    ]
    assert [p["shape"] for p in result["points"]] == ["784-16-10", "784-16-16-16-10"]
    for point in result["points"]:
        ours, eager = point["results"]["cpu-python"], point["results"]["torch-cpu-eager"]
        for r in (ours, eager):
            assert sweep.MIN_RUNS <= r["n"] <= sweep.MAX_RUNS
            assert 0 < r["min_ms"] <= r["median_ms"]
            assert r["adapter"] and isinstance(r["software"], bool)
        assert ours["loss_step"] == eager["loss_step"] == 8
        # the same step from the same weights: a wrong step (a layer missing, Adam off) is
        # off by far more than float32 rounding
        assert abs(ours["loss"] - eager["loss"]) < LOSS_TOL
        assert point["loss_diff"] == abs(ours["loss"] - eager["loss"])
    assert "no tensor cores" in text and "The cost-curve target" in text
    assert "| 784-16-16-16-10 | 8 |" in text
    assert png.startswith(PNG_MAGIC) and len(png) > 5000
    # --report re-draws the table and the plot from the JSON alone
    again = tmp_path / "again.png"
    assert (
        bench.main(["--sweep", "--report", str(tmp_path / "sweep.json"), "--png", str(again)]) == 0
    )
    assert "| 784-16-16-16-10 | 8 |" in capsys.readouterr().out
    assert again.read_bytes().startswith(PNG_MAGIC)


def test_the_wgpu_path_measures_the_same_step_on_lavapipe(tmp_path, capsys):
    """The H200's path (wgpu, a prepared session) on lavapipe: software, labelled, same loss."""
    out = tmp_path / "sweep.json"
    rc = bench.main(
        ["--sweep", "--sizes", "8", "--batches", "4", "--layers", "4", "--backends", "wgpu"]
        + ["--allow-software", "--torch-device", "cpu", "--json", str(out), "--budget-s", "0.02"]
    )
    assert rc == 0
    (point,) = json.loads(out.read_text())["points"]
    ours = point["results"]["wgpu"]
    assert ours["software"] is True and "llvmpipe" in ours["adapter"]
    assert abs(ours["loss"] - point["results"]["torch-cpu-eager"]["loss"]) < LOSS_TOL
    assert "(software)" in capsys.readouterr().out


def test_flops_are_counted_from_the_shapes():
    # 784-256-10 at batch 64: forward 2*64*(784*256 + 256*10); dW the same; dX only for layer 2
    assert sweep.Point(2, 256, 64).flops == 2 * 64 * (784 * 256 * 2 + 256 * 10 * 3)
    deep = sweep.Point(4, 32, 4)
    assert deep.flops == 2 * 4 * (784 * 32 * 2 + 32 * 32 * 3 * 2 + 32 * 10 * 3)
    assert deep.shape == "784-32-32-32-10"


def test_the_loss_check_catches_a_different_step():
    """The torch peer from weights one bias off the ones gpulab got: the losses part."""
    values = mlp.init(0, hidden=16, batch=8, layers=2)
    few = functools.partial(sweep.runs_for, budget_s=0.0)  # MIN_RUNS: only the loss matters
    ours = sweep.gpulab_point(values, "cpu-python", few)
    other = {k: v.copy() for k, v in values.items()}
    other["b2"][0] += 0.5  # class 0 logit: every sample sees it
    theirs = torch_peer.steps_bench(other, "cpu", False, sweep.STEPS, few)
    assert abs(ours["loss"] - theirs["loss"]) > LOSS_TOL


def test_the_flop_rule_matches_the_recorded_graph():
    """Point.flops against the matmuls the step graph really holds (2*M*N*K each)."""
    from gpulab.protocol import validate

    for layers, hidden, batch in ((2, 24, 5), (4, 12, 3)):
        st = mlp.step_graph(mlp.init(0, hidden=hidden, batch=batch, layers=layers))
        checked = validate(st.graph.to_dict(**st.outputs()))
        total = 0
        for node in checked.by_id.values():
            if node.op == "matmul":
                a, b = (checked.by_id[ref].shape for ref in node.operands)
                total += 2 * a[-2] * a[-1] * b[-1]
        assert total == sweep.Point(layers, hidden, batch).flops


def test_default_mlp_is_the_784_256_10_step():
    values = mlp.init(0)
    assert mlp.param_names(mlp.layer_count(values)) == mlp.PARAMS
    assert values["w1"].shape == (784, 256) and values["w2"].shape == (256, 10)
    deep = mlp.init(0, hidden=8, batch=2, layers=4)
    assert [deep[f"w{i}"].shape for i in range(1, 5)] == [(784, 8), (8, 8), (8, 8), (8, 10)]


def test_a_point_past_the_protocol_limit_is_reported_not_fatal(tmp_path, capsys):
    """784-4096-4096-4096-10 holds more than max_total_elements: LIMIT before device work."""
    rc = bench.main(
        ["--sweep", "--sizes", "4096", "--batches", "2", "--layers", "4"]
        + ["--backends", "cpu-python", "--torch-device", "none"]
    )
    text = capsys.readouterr().out
    assert rc == 0
    assert "not run: LIMIT" in text and "max_total_elements" in text


def test_a_backend_that_cannot_run_fails_the_sweep(capsys):
    rc = bench.main(
        ["--sweep", "--sizes", "8", "--batches", "2", "--layers", "2"]
        + ["--backends", "no-such-backend", "--torch-device", "none"]
    )
    assert rc == 1


def test_png_without_matplotlib_is_refused_before_the_sweep(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    monkeypatch.setattr(sweep, "sweep", lambda *a, **k: pytest.fail("the sweep ran"))
    rc = bench.main(["--sweep", "--png", str(tmp_path / "x.png"), "--torch-device", "none"])
    assert rc == 2 and "pip install matplotlib" in capsys.readouterr().out
