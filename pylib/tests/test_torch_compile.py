"""torch.compile of gpulab.torch, natively on cpu-python against real
PyTorch (CPU): prepared sessions of the torch fixtures (torch_fixtures/fixtures.py) match
torch per step after sync(), and all steps in one submission; a direct compiled call equals
the eager step bit for bit; torch.compile(model)(x) equals model(x); dropout in a prepared
session consumes the random stream as eager steps do; the refusals name what is refused."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import gpulab.torch as gt
import pytest
from gpulab.errors import GpuLabError
from gpulab.torch import _random
from gpulab.torch.compile import LIVE, MAX_STEPS
from torch_fixtures import fixtures as fx

# The prepared-session fixtures: SGD's first momentum step (fed, not recorded), dampening,
# Nesterov + weight decay, parameter groups, Adam with groups, AdamW, dropout, embedding +
# layernorm, the attention block.
PREPARED = [
    "mlp_sgd_dampening",
    "mlp_sgd_nesterov_wd",
    "mlp_sgd_groups",
    "mlp_adam_wd_groups",
    "mlp_dropout",
    "embed_layernorm",
    "tiny_attention",
]


@pytest.fixture(autouse=True)
def backend_cpu() -> Iterator[None]:
    gt.set_backend("cpu-python")
    yield
    gt.set_backend(None)
    LIVE.clear()


def prepared_trace(spec: dict[str, Any], sync_every_step: bool = True) -> list[dict[str, Any]]:
    """The fixture's 5 steps through one prepared session, state read after sync()."""
    b = fx.build(spec, gt)
    prep = gt.compile(b.train_step, training=True).prepare(*b.tensors(*b.batches[0]))
    trace = []
    try:
        for x, y in b.batches:
            got: list[Any] = []
            prep.step(got.append, *b.tensors(x, y))
            prep.sync()
            trace.append({"loss": float(got[0].item()), "params": b.params()})
    finally:
        prep.dispose()
    return trace


@pytest.mark.parametrize("name", PREPARED)
def test_prepared_session_matches_torch_per_step(name: str) -> None:
    spec = fx.FIXTURES[name]
    assert fx.compare(prepared_trace(spec), fx.reference(spec)) == []


@pytest.mark.parametrize("name", ["mlp_sgd_momentum", "mlp_adamw_probs", "mlp_dropout"])
def test_all_steps_in_one_submission_match_torch(name: str) -> None:
    """steps() with the 5 batches: the last loss, parameters and optimizer state as torch's."""
    spec = fx.FIXTURES[name]
    ref = fx.reference(spec)
    b = fx.build(spec, gt)
    prep = gt.compile(b.train_step, training=True).prepare(*b.tensors(*b.batches[0]))
    got: list[Any] = []
    prep.steps(got.append, [b.tensors(x, y) for x, y in b.batches])
    prep.sync()
    assert prep.steps_run == len(b.batches)
    assert fx.compare([{"loss": float(got[0].item()), "params": b.params()}], ref[-1:]) == []
    eager = fx.build(spec, gt)
    for x, y in eager.batches:
        eager.train_step(*eager.tensors(x, y))
    for p, q in zip(
        b.optimizer.param_groups[0]["params"],
        eager.optimizer.param_groups[0]["params"],
        strict=True,
    ):
        mine, theirs = b.optimizer.state[p], eager.optimizer.state[q]
        assert sorted(mine) == sorted(theirs)
        for key in theirs:
            assert mine[key].tolist() == theirs[key].tolist(), key
        assert p.grad.tolist() == q.grad.tolist()
    prep.dispose()


def test_without_sync_the_model_keeps_its_values() -> None:
    """State stays on the device until sync(): the model still holds its initial weights."""
    spec = fx.FIXTURES["mlp_sgd"]
    b = fx.build(spec, gt)
    before = b.params()
    prep = gt.compile(b.train_step, training=True).prepare(*b.tensors(*b.batches[0]))
    prep.steps(None, [b.tensors(x, y) for x, y in b.batches])
    assert b.params() == before
    prep.sync()
    assert b.params() != before
    prep.dispose()


@pytest.mark.parametrize("name", ["mlp_sgd_nesterov_wd", "mlp_adam_wd_groups", "mlp_dropout"])
def test_compiled_call_equals_eager_step(name: str) -> None:
    """Called directly, the compiled step is the eager step: same losses, parameters,
    gradients, optimizer state and random stream, bit for bit (one graph each, the same
    nodes)."""
    spec = fx.FIXTURES[name]
    eager = fx.build(spec, gt)  # build() seeds the default generator
    want = []
    for x, y in eager.batches:
        want.append((eager.train_step(*eager.tensors(x, y)).item(), eager.params()))
    eager_stream = _random.default_generator.get_state()
    comp = fx.build(spec, gt)
    step = gt.compile(comp.train_step, training=True)
    for (x, y), (loss, params) in zip(comp.batches, want, strict=True):
        pending = step(*comp.tensors(x, y))
        assert pending.done  # natively it ran before returning
        assert pending.result().item() == loss
        assert comp.params() == params
    assert _random.default_generator.get_state() == eager_stream
    for p, q in zip(comp.model.parameters(), eager.model.parameters(), strict=True):
        assert p.grad.tolist() == q.grad.tolist()
    for p, q in zip(comp.model.parameters(), eager.model.parameters(), strict=True):
        mine, theirs = comp.optimizer.state[p], eager.optimizer.state[q]
        assert {k: v.tolist() for k, v in mine.items()} == {
            k: v.tolist() for k, v in theirs.items()
        }


def test_compiled_model_equals_eager_forward() -> None:
    spec = fx.FIXTURES["tiny_attention"]
    b = fx.build(spec, gt)
    x = gt.tensor(b.batches[0][0])
    want = b.model(x).tolist()
    compiled = gt.compile(b.model)
    pending = compiled(x)
    assert pending.result().tolist() == want
    got: list[Any] = []
    pending.submit(got.append)
    assert got[0].tolist() == want and not got[0].requires_grad
    assert compiled.training is b.model.training  # attributes pass through to the module


def test_dropout_session_consumes_the_stream_as_eager_steps() -> None:
    """Each prepared step draws its dropout counter from the generator when called, so after
    k steps the generator is where k eager steps leave it, and each step's mask is new."""
    spec = fx.FIXTURES["mlp_dropout"]
    eager, comp = fx.build(spec, gt), fx.build(spec, gt)
    gen = _random.default_generator
    gen.manual_seed(spec["seed"])
    eager_losses = [eager.train_step(*eager.tensors(x, y)).item() for x, y in eager.batches]
    after_eager = gen.get_state()
    gen.manual_seed(spec["seed"])
    prep = gt.compile(comp.train_step, training=True).prepare(*comp.tensors(*comp.batches[0]))
    assert gen.get_state() == (spec["seed"], 0)  # recording drew nothing
    losses: list[float] = []
    for x, y in comp.batches:
        prep.step(lambda loss: losses.append(loss.item()), *comp.tensors(x, y))
    assert gen.get_state() == after_eager
    assert losses == eager_losses
    prep.sync()
    assert comp.params() == eager.params()
    prep.dispose()


def test_pending_result_callbacks_and_errors() -> None:
    """Natively a step calls back before returning; a failure in the run (an embedding index
    past the vocabulary, fed per step) goes to on_error, or raises without one."""
    spec = fx.FIXTURES["embed_layernorm"]
    b = fx.build(spec, gt)
    prep = gt.compile(b.train_step, training=True).prepare(*b.tensors(*b.batches[0]))
    seen: list[Any] = []
    pending = prep.step(seen.append, *b.tensors(*b.batches[1]))
    assert pending.done and len(seen) == 1
    assert pending.result() is seen[0]
    x, y = b.batches[2]
    bad = [[row[0], spec["model"]["vocab"]] for row in x]
    errors: list[GpuLabError] = []
    prep.step(seen.append, *b.tensors(bad, y), on_error=errors.append)
    assert len(seen) == 1 and len(errors) == 1 and errors[0].code == "BACKEND"
    with pytest.raises(GpuLabError) as err:
        prep.step(seen.append, *b.tensors(*b.batches[3]))
    assert err.value.code == "STATE"  # the failed run poisoned the session
    prep.dispose()
    with pytest.raises(GpuLabError) as err:
        prep.step(None, *b.tensors(*b.batches[1]))
    assert err.value.code == "DISPOSED"


def test_steps_limit_and_shapes_are_checked() -> None:
    spec = fx.FIXTURES["mlp_sgd"]
    b = fx.build(spec, gt)
    prep = gt.compile(b.train_step, training=True).prepare(*b.tensors(*b.batches[0]))
    x, y = b.tensors(*b.batches[0])
    with pytest.raises(GpuLabError) as err:
        prep.steps(None, [(x, y)] * (MAX_STEPS + 1))
    assert err.value.code == "LIMIT" and "65 batches" in str(err.value)
    with pytest.raises(gt.Unsupported, match=r"argument 0 has shape \[4, 6\].*\[8, 6\]"):
        prep.step(None, x[:4], y[:4])
    prep.dispose()


def test_live_session_refusals() -> None:
    spec = fx.FIXTURES["mlp_adam_mse"]
    b = fx.build(spec, gt)
    step = gt.compile(b.train_step, training=True)
    x, y = b.tensors(*b.batches[0])
    prep = step.prepare(x, y)
    with pytest.raises(gt.Unsupported, match=r"resident in a live prepared session .*prepare"):
        step(x, y)
    with pytest.raises(gt.Unsupported, match=r"optimizer\.step\(\): its parameters are resident"):
        b.train_step(x, y)
    with pytest.raises(gt.Unsupported, match="live prepared session"):
        step.prepare(x, y)
    with pytest.raises(gt.Unsupported, match="live prepared session"):
        gt.compile(b.model)(x)
    prep.sync()
    prep.dispose()
    step(x, y).result()  # after dispose, compiled calls and eager steps work again
    b.train_step(x, y)


def _model_and_data() -> tuple[Any, Any, Any, Any]:
    model = gt.nn.Linear(3, 2)
    opt = gt.optim.SGD(model.parameters(), lr=0.1)
    x, y = gt.tensor([[1.0, 2.0, 3.0]]), gt.tensor([1])
    return model, opt, x, y


def test_refusals_of_malformed_steps() -> None:
    model, opt, x, y = _model_and_data()
    F = gt.nn.functional

    def no_zero_grad(x: Any, y: Any) -> Any:
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    def two_backwards(x: Any, y: Any) -> Any:
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward(retain_graph=True)
        loss.backward()
        opt.step()
        return loss

    def no_step(x: Any, y: Any) -> Any:
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        return loss

    def zero_grad_last(x: Any, y: Any) -> Any:
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    def non_scalar(x: Any, y: Any) -> Any:
        opt.zero_grad()
        out = model(x)
        out.backward(gt.ones_like(out))
        opt.step()
        return out

    def reads_a_value(x: Any, y: Any) -> Any:
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        print(loss.item())
        loss.backward()
        opt.step()
        return loss

    def eager_update(x: Any, y: Any) -> Any:
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        with gt.no_grad():
            model.weight.mul_(0.5)
        return loss

    cases = [
        (no_zero_grad, r"exactly one zero_grad\(\).*called zero_grad\(\) 0 times"),
        (two_backwards, r"called loss\.backward\(\) 2 times"),
        (no_step, r"called optimizer\.step\(\) 0 times"),
        (zero_grad_last, r"in that order; zero_grad_last called backward\(\), step\(\), zero_"),
        (non_scalar, r"backward\(\) of a scalar loss only.*shape \[1, 2\]"),
        (reads_a_value, r"torch\.compile\(reads_a_value\): a tensor's value was asked for"),
        (eager_update, r"parameter 0 of group 0 \(shape \[2, 3\]\) was changed in place"),
    ]
    for fn, message in cases:
        with pytest.raises(gt.Unsupported, match=message):
            gt.compile(fn, training=True)(x, y)
    assert model.weight.grad is None and model.weight._value is not None  # as before
    with pytest.raises(gt.Unsupported, match=r"records inference only, and backward\(\)"):
        gt.compile(lambda t: F.cross_entropy(model(t), y).backward())(x)
    with pytest.raises(gt.Unsupported, match="backend='tvm'"):
        gt.compile(model, backend="tvm")


def test_host_random_draws_become_per_step_feeds() -> None:
    """torch.randn inside a prepared step (with dropout between draws) is drawn again each
    step from the generator, in its place among the dropout counters: the prepared steps give
    the eager steps' losses and parameters and leave the generator where they do."""
    noise = gt.randn  # bound before prepare(): its draws cannot be replayed

    def build() -> tuple[Any, Any, Any, Any]:
        gt.manual_seed(3)
        model = gt.nn.Sequential(
            gt.nn.Linear(3, 8), gt.nn.ReLU(), gt.nn.Dropout(0.3), gt.nn.Linear(8, 2)
        )
        opt = gt.optim.SGD(model.parameters(), lr=0.1, momentum=0.5)

        def noisy(x: Any, y: Any) -> Any:
            opt.zero_grad()
            h = model(x + 0.1 * gt.randn(4, 3))
            loss = gt.nn.functional.cross_entropy(h + 0.01 * gt.rand(4, 2), y)
            loss.backward()
            opt.step()
            return loss

        return model, opt, noisy, gt.tensor([0, 1, 1, 0])

    x = gt.tensor([[0.5, -1.0, 2.0], [1.0, 0.0, -0.5], [0.25, 0.75, -1.5], [2.0, 1.0, 0.0]])
    model, opt, noisy, y = build()
    eager = [noisy(x, y).item() for _ in range(4)]
    eager_params = [p.tolist() for p in model.parameters()]
    eager_stream = _random.default_generator.get_state()
    model, opt, noisy, y = build()
    prep = gt.compile(noisy, training=True).prepare(x, y)
    got: list[float] = []
    for _ in range(4):
        prep.step(lambda loss: got.append(loss.item()), x, y)
    prep.sync()
    assert got == eager
    assert [p.tolist() for p in model.parameters()] == eager_params
    assert _random.default_generator.get_state() == eager_stream
    prep.dispose()

    def by_name(x: Any, y: Any) -> Any:
        opt.zero_grad()
        loss = gt.nn.functional.cross_entropy(model(x + noise(4, 3)), y)
        loss.backward()
        opt.step()
        return loss

    step = gt.compile(by_name, training=True)
    with pytest.raises(gt.Unsupported, match=r"a random draw inside the step .*imported by name"):
        step.prepare(x, y)
    assert not LIVE
    step(x, y).result()  # called directly it is one eager step: the draw is fresh each call


def test_prepared_session_on_wgpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """The attention block through a prepared session on wgpu (lavapipe is software: admitted
    for the test), all 5 steps in one submission, against torch."""
    monkeypatch.setenv("GPULAB_ALLOW_SOFTWARE", "1")
    gt.set_backend("wgpu")
    spec = fx.FIXTURES["tiny_attention"]
    b = fx.build(spec, gt)
    prep = gt.compile(b.train_step, training=True).prepare(*b.tensors(*b.batches[0]))
    got: list[Any] = []
    prep.steps(got.append, [b.tensors(x, y) for x, y in b.batches])
    prep.sync()
    assert prep.backend == "wgpu"
    last = {"loss": float(got[0].item()), "params": b.params()}
    assert fx.compare([last], fx.reference(spec)[-1:]) == []
    prep.dispose()
