"""gpulab.torch against real PyTorch (CPU): the 12 fixtures of torch_fixtures/fixtures.py, 5
eager steps each, loss and every parameter after every step within fixtures.RTOL/ATOL; on
cpu-python, and one fixture on wgpu (lavapipe here: a software adapter)."""

from __future__ import annotations

from collections.abc import Iterator

import gpulab.torch as gt
import pytest
from gpulab import graph
from torch_fixtures import fixtures as fx


@pytest.fixture
def backend_cpu() -> Iterator[None]:
    gt.set_backend("cpu-python")
    yield
    gt.set_backend(None)


@pytest.mark.parametrize("name", sorted(fx.FIXTURES))
def test_fixture_matches_torch(name: str, backend_cpu: None) -> None:
    spec = fx.FIXTURES[name]
    ours, ref = fx.run(spec, gt), fx.reference(spec)
    assert fx.compare(ours, ref) == []
    assert ref[0]["loss"] != ref[-1]["loss"], "the fixture trains (the loss moves)"


def test_fixture_on_wgpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """The attention block on wgpu (lavapipe is software: admitted for the test)."""
    monkeypatch.setenv("GPULAB_ALLOW_SOFTWARE", "1")
    gt.set_backend("wgpu")
    try:
        spec = fx.FIXTURES["tiny_attention"]
        assert fx.compare(fx.run(spec, gt), fx.reference(spec)) == []
    finally:
        gt.set_backend(None)


def test_comparison_can_fail(backend_cpu: None) -> None:
    """A learning rate 0.1% off is caught at the first step (the tolerance is not loose)."""
    spec = fx.FIXTURES["mlp_adam_mse"]
    other = {**spec, "optim": {**spec["optim"], "lr": spec["optim"]["lr"] * 1.001}}
    problems = fx.compare(fx.run(other, gt), fx.reference(spec))
    assert problems and problems[0].startswith("step 0: ")


def test_dropout_masks_drop_and_change(backend_cpu: None) -> None:
    """The dropout fixture's masks drop about p of the units and differ per step."""
    spec = fx.FIXTURES["mlp_dropout"]
    masks = fx._HashMask(spec["seed"])
    m0, m1 = masks.mask(256, 0.25), masks.mask(256, 0.25)
    assert 0.15 < m0.count(0.0) / 256 < 0.35 and m0 != m1
    with_p = fx.run(spec, gt, steps=1)[0]["loss"]
    without = fx.run({**spec, "model": {**spec["model"], "dropout": 0.0}}, gt, steps=1)
    assert with_p != without[0]["loss"]


def test_one_graph_run_per_step(backend_cpu: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """An eager step (zero_grad, forward, backward, step) runs one graph; loss.item() after
    step() reads the value that run brought back."""
    runs = []
    real = graph.Graph.run
    monkeypatch.setattr(
        graph.Graph, "run", lambda self, *a, **k: runs.append(1) or real(self, *a, **k)
    )
    spec = fx.FIXTURES["mlp_sgd_momentum"]
    b = fx.build(spec, gt)
    runs.clear()
    losses = []
    for x, y in b.batches:
        loss = b.train_step(*b.tensors(x, y))
        losses.append(loss.item())
    assert len(runs) == len(b.batches)
    assert losses == [s["loss"] for s in fx.run(spec, gt)]


def test_reading_the_loss_before_step_changes_nothing(backend_cpu: None) -> None:
    """loss.item() before backward/step (an extra run of the same graph) gives the same
    training; each step starts a new record, so a long loop keeps small graphs."""
    from gpulab.torch import _tape

    spec = fx.FIXTURES["embed_layernorm"]
    b = fx.build(spec, gt)
    losses, sizes = [], []
    for x, y in b.batches:
        xt, yt = b.tensors(x, y)
        b.optimizer.zero_grad()
        loss = b.loss_fn(b.model(xt), yt)
        losses.append(loss.item())
        loss.backward()
        b.optimizer.step()
        sizes.append(_tape.current().last_id)
    ref = fx.reference(spec)
    assert (
        fx.compare(
            [{"loss": v, "params": {}} for v in losses],
            [{"loss": s["loss"], "params": {}} for s in ref],
        )
        == []
    )
    assert fx.compare([{"loss": ref[-1]["loss"], "params": b.params()}], [ref[-1]]) == []
    assert sizes == [-1] * len(sizes), "a fresh record after every step"


def test_gradient_accumulation_over_micro_batches(backend_cpu: None) -> None:
    """Two forwards and two backward() calls into the same .grad, then one step (a micro-batch
    loop), as PyTorch does it."""
    import torch

    spec = fx.FIXTURES["mlp_adamw_probs"]
    traces = []
    for T in (gt, torch):
        b = fx.build(spec, T)
        trace = []
        for x, y in b.batches:
            xt, yt = b.tensors(x, y)
            b.optimizer.zero_grad()
            for half in (slice(0, 4), slice(4, 8)):
                (b.loss_fn(b.model(xt[half]), yt[half]) * 0.5).backward()
            b.optimizer.step()
            trace.append({"loss": 0.0, "params": b.params()})
        traces.append(trace)
    assert fx.compare(*traces) == []
