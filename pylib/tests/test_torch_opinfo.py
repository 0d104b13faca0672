"""PyTorch's OpInfo database as a lane of gpulab.torch (gpulab/conformance/torch_opinfo.py): every
float32 sample of every OpInfo gpulab.torch claims, forward and gradient, against PyTorch CPU
and a float64 oracle. A wrong value fails; a refusal is counted, never passed.

The full run on cpu-python (~1 min), the op library's ops and a documented sample on wgpu
(lavapipe) are `slow`; the lane's own judging and the claim list run in `make test-fast`."""

from __future__ import annotations

from collections.abc import Iterator

import gpulab.torch as gt
import pytest
import torch
from gpulab.conformance import torch_opinfo as lane

# the sample the wgpu lane runs in `make test` (lavapipe is slow): the op library's declared
# activations, a reduction, a loss and the layout/selection ops the models use most
WGPU_SAMPLE = (
    "nn.functional.relu",
    "nn.functional.gelu",
    "nn.functional.silu",
    "nn.functional.softplus",
    "sigmoid",
    "tanh",
    "softmax",
    "sum",
    "nn.functional.nll_loss",
    "gather",
    "transpose",
    "cat",
)


@pytest.fixture
def cpu_python() -> Iterator[None]:
    gt.set_backend("cpu-python")
    yield
    gt.set_backend(None)


def _ops(names: set[str]) -> list[tuple[object, bool]]:
    return [(op, d) for op, d in lane.claimed() if op.name in names or lane.full_name(op) in names]


def test_claims_come_from_the_surface() -> None:
    """The claimed OpInfos are those gpulab.torch names: every op-library declaration with an
    OpInfo is there and marked declared; a name gpulab.torch refuses (torch.cumprod) is not."""
    claimed = {lane.full_name(op): declared for op, declared in lane.claimed()}
    for name in ("nn.functional.relu", "nn.functional.softplus", "sigmoid", "log1p"):
        assert claimed[name] is True, name
    assert claimed["add"] is False
    assert "cumprod" not in claimed
    assert not any(n.split(".")[0] in lane.RANDOM for n in claimed)


def test_a_wrong_value_is_judged_wrong(cpu_python: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lane can fail: an op whose result is off by 1e-3 gives `wrong` on every sample, and
    a wrong gradient alone (the forward right) gives `wrong` too."""
    ((op, _),) = _ops({"nn.functional.relu"})
    monkeypatch.setitem(lane.ADAPTERS, "nn.functional.relu", lambda x: x.relu() + 1e-3)
    verdicts = [lane.run_sample(op, s, True)[0] for s in lane.samples(op)]
    assert verdicts and set(verdicts) == {"wrong"}
    # forward exact, gradient doubled: relu(2x) - relu(x) has relu's values, twice its slope
    # (where some x > 0: a sample of negatives has gradient 0 either way)
    monkeypatch.setitem(
        lane.ADAPTERS, "nn.functional.relu", lambda x: (x * 2).relu() - x.relu().detach()
    )
    positive = [s for s in lane.samples(op) if bool((s.input > 0).any())]
    results = [lane.run_sample(op, s, True) for s in positive]
    assert results and all(v == "wrong" and w.startswith("gradient") for v, w in results)


def test_refusals_and_errors_are_not_passes(
    cpu_python: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Unsupported is `refused` (its message kept, naming what), any other exception `error`."""
    ((op, _),) = _ops({"nn.functional.relu"})
    sample = next(iter(lane.samples(op)))

    def refuses(x: object) -> object:
        raise gt.Unsupported("gpulab.torch does not implement relu(x=...); supported: relu")

    monkeypatch.setitem(lane.ADAPTERS, "nn.functional.relu", refuses)
    assert lane.run_sample(op, sample, True) == (
        "refused",
        "gpulab.torch does not implement relu(x=...)",
    )
    monkeypatch.setitem(lane.ADAPTERS, "nn.functional.relu", lambda x: x.reshape(7, 11, 13))
    verdict, why = lane.run_sample(op, sample, True)
    assert verdict == "error" and "reshape" in why, why


def test_a_float64_sample_is_out_of_subset_not_pass(
    cpu_python: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sample asking for float64 is `out of subset` (gpulab.torch refuses it by name), never
    `pass`; if gpulab.torch computed a result for it instead (the dtype ignored), the verdict is
    `wrong`. A float64 tensor in the sample, and SDPA with dropout_p > 0, are out of subset."""
    ((op, _),) = _ops({"softmax.with_dtype"})
    verdicts = [lane.run_sample(op, s, True) for s in lane.samples(op)]
    assert verdicts and set(verdicts) == {(lane.OUT, "float64 (a dtype gpulab.torch lacks)")}
    monkeypatch.setitem(lane.ADAPTERS, "softmax", lambda x, dim, dtype=None: x.softmax(dim))
    verdicts = [lane.run_sample(op, s, True)[0] for s in lane.samples(op)]
    assert set(verdicts) == {"wrong"}
    ((to, _),) = _ops({"to"})
    tensor_samples = [s for s in lane.samples(to) if isinstance(s.args[0], torch.Tensor)]
    assert tensor_samples
    assert {lane.run_sample(to, s, True)[0] for s in tensor_samples} == {lane.OUT}
    ((sdpa, _),) = _ops({"nn.functional.scaled_dot_product_attention"})
    by_dropout = {
        s.kwargs["dropout_p"] > 0: lane.run_sample(sdpa, s, True) for s in lane.samples(sdpa)
    }
    assert by_dropout[True] == (lane.OUT, "random: dropout_p > 0")
    assert by_dropout[False][0] == "pass"


def test_the_rate_leaves_out_of_subset_samples_out() -> None:
    """pass / in-subset: 9 passes of 10 in-subset samples is 90% however many samples are
    out of subset, and the summary names each reason with its count."""
    tally = lane.Tally("x", False)
    for _ in range(9):
        tally.add("pass")
    tally.add("refused", "no")
    for _ in range(5):
        tally.add(lane.OUT, "float64 (a dtype gpulab.torch lacks)")
    assert tally.in_subset == 10
    line = lane.summary([tally])
    assert line.startswith("9 of 10 in-subset samples pass (90.0%)"), line
    assert "5 of 15 samples out of subset (float64 (a dtype gpulab.torch lacks): 5)" in line
    assert "9 (90.0% of 10 in subset)" in lane.table([tally])


def test_samples_stay_on_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a CUDA machine OpInfo adds a device='cuda' sample to the *_like ops: the lane's
    samples are made as on a machine without CUDA."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    ((op, _),) = _ops({"zeros_like"})
    made = list(lane.samples(op))
    assert made and all(str(s.kwargs.get("device", "cpu")) == "cpu" for s in made)
    assert torch.cuda.is_available()  # restored after the samples are made


def test_judge_tolerance_is_float32_rounding() -> None:
    """A float output passes within 8x PyTorch's own float32 error + 1e-5 slack of the float64
    oracle, and fails 1e-4 relative off; integer outputs must be equal."""
    exact = torch.tensor([1.0, 100.0], dtype=torch.float64)
    ref32 = exact.float()
    assert lane.judge(ref32.clone(), ref32, exact, "x") is None
    assert lane.judge(ref32 * (1 + 1e-4), ref32, exact, "x") is not None
    ints = torch.tensor([1, 2])
    assert lane.judge(torch.tensor([1, 3]), ints, ints, "i") is not None
    assert lane.judge(ref32.reshape(2, 1), ref32, exact, "x").startswith("x: shape")


@pytest.mark.slow
def test_the_op_library_ops_pass(cpu_python: None) -> None:
    """Every OpInfo of an op the op library declares: every float32 sample passes forward and
    backward on cpu-python (about 7 s of CPU: in make test)."""
    tallies = [lane.run_op(op, d) for op, d in lane.claimed() if d]
    assert len(tallies) >= 20
    bad = {
        t.name: (dict(t.counts), t.first)
        for t in tallies
        if t.counts["pass"] != sum(t.counts.values())
    }
    assert bad == {}


@pytest.mark.slow
def test_opinfo_lane_cpu_python(cpu_python: None) -> None:
    """Every claimed OpInfo on cpu-python: zero wrong values, and at least 97% of the
    in-subset samples pass (docs/torch.md has the counts per op)."""
    tallies = lane.run()
    wrong = {t.name: t.first["wrong"] for t in tallies if t.counts["wrong"]}
    assert wrong == {}
    total, _, inside = lane.totals(tallies)
    assert total["pass"] >= 0.97 * inside, lane.summary(tallies)


@pytest.mark.slow
def test_opinfo_lane_wgpu_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    """The documented sample (WGPU_SAMPLE) on wgpu (lavapipe here: admitted for the test):
    zero wrong values and every sample that passes on cpu-python passes here."""
    monkeypatch.setenv("GPULAB_ALLOW_SOFTWARE", "1")
    ops = _ops(set(WGPU_SAMPLE))
    assert {op.name for op, _ in ops} == set(WGPU_SAMPLE)
    gt.set_backend("cpu-python")
    try:
        cpu = {t.name: t.counts for t in (lane.run_op(op, d) for op, d in ops)}
        gt.set_backend("wgpu")
        gpu = {t.name: t.counts for t in (lane.run_op(op, d) for op, d in ops)}
    finally:
        gt.set_backend(None)
    assert {n: c["wrong"] for n, c in gpu.items() if c["wrong"]} == {}
    assert {n: c["pass"] for n, c in gpu.items()} == {n: c["pass"] for n, c in cpu.items()}
