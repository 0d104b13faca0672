"""torch.compile(model, backend="gpulab") against eager PyTorch (CPU): the MLP and a MiniLM-style
encoder block (layernorm, multi-head attention with a padding mask, gelu), inference and
gradients; compile_step with SGD and Adam over 5 steps; explain and the eager fallback for an
unmapped op. cpu-python for the bulk, one test on wgpu (lavapipe here). Compiled models are
shared per module: dynamo tracing is the slow part."""

from __future__ import annotations

import copy
import math
from collections.abc import Iterator
from pathlib import Path

import gpulab.torch_backend as tb
import pytest
import torch  # a test dependency (pyproject [test]): the oracle
import torch.nn.functional as TF
from gpulab import GpuLabError
from gpulab.torch_backend.table import name as op_name
from torch import nn

CPU = {"backend": "cpu-python"}
TOL = {"rtol": 1e-5, "atol": 1e-5}


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.l1, self.l2 = nn.Linear(16, 32), nn.Linear(32, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.l2(torch.relu(self.l1(x)))


class EncoderBlock(nn.Module):
    """One MiniLM-style post-norm transformer layer."""

    def __init__(self, d: int = 32, heads: int = 4, ff: int = 64) -> None:
        super().__init__()
        self.heads = heads
        self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.ff1, self.ff2 = nn.Linear(d, ff), nn.Linear(ff, d)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape

        def split(t: torch.Tensor) -> torch.Tensor:
            return t.view(b, s, self.heads, d // self.heads).transpose(1, 2)

        q, k, v = (split(t) for t in self.qkv(x).chunk(3, dim=-1))
        scores = q @ k.transpose(-2, -1) / math.sqrt(d // self.heads)
        scores = scores.masked_fill(~mask[:, None, None, :], float("-inf"))
        att = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(b, s, d)
        x = self.ln1(x + self.out(att))
        return self.ln2(x + self.ff2(TF.gelu(self.ff1(x))))


class CNN(nn.Module):
    """Conv2d (padded; strided), ReLU, max and average pooling, Linear (protocol v6 windows)."""

    def __init__(self) -> None:
        super().__init__()
        self.c1, self.c2 = nn.Conv2d(1, 4, 3, padding=1), nn.Conv2d(4, 8, 3, stride=2)
        self.fc = nn.Linear(8 * 3 * 3, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.max_pool2d(torch.relu(self.c1(x)), 2)
        x = TF.avg_pool2d(torch.relu(self.c2(x)), 1)
        return self.fc(torch.flatten(x, 1))


class Normed(nn.Module):
    """Conv2d, BatchNorm2d, ReLU, Linear."""

    def __init__(self) -> None:
        super().__init__()
        self.conv, self.bn, self.fc = nn.Conv2d(2, 4, 3), nn.BatchNorm2d(4), nn.Linear(64, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.flatten(torch.relu(self.bn(self.conv(x))), 1))


class Pooled(nn.Module):
    """Overlapping max and average pooling with padding and ceil_mode."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = TF.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True).tanh()
        return y + TF.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)


class Unmapped(nn.Module):
    """cumsum has no protocol op: the graphs break around it (cumsum eager, the linears on
    gpulab)."""

    def __init__(self) -> None:
        super().__init__()
        self.l1, self.l2 = nn.Linear(8, 8), nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.l2(torch.cumsum(self.l1(x), dim=-1).relu())


class Misc(nn.Module):
    """Table entries the two models do not reach: an embedding (int64 ids, padding row), erf,
    tanh-gelu, rsqrt, pow, clamp, amax, log_softmax, slicing, cat, arange, x[idx], an int64
    expand, any, where on a comparison."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(10, 6, padding_idx=0)

    def forward(self, x: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        x = x + self.emb(ids)
        a = torch.erf(x) + TF.gelu(x, approximate="tanh") + torch.rsqrt(x * x + 1.0)
        b = (x.clamp(-0.5, 0.7) ** 3) - x.amax(dim=-1, keepdim=True) + x.exp().sigmoid()
        c = torch.cat([a[:, :3], b[:, 3:]], dim=1).log_softmax(dim=-1)
        c = c + torch.arange(x.shape[1]) * 0.1 + x[ids.clamp(max=3)]  # arange, index.Tensor
        ids_wide = ids[:, None].expand(ids.shape[0], x.shape[1])  # an int64 expand
        c = torch.where((x > 1.0).any(dim=-1, keepdim=True), c, c * ids_wide)
        return torch.where(x > 0, c, c.tanh() * 2.0) + torch.sqrt(x.abs()) / (1.0 + x * x)


def _mask() -> torch.Tensor:
    return torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], dtype=torch.bool)


@pytest.fixture(scope="module", autouse=True)
def _dynamo_room() -> Iterator[None]:
    """Each compile of the same forward (models, backends, explain) is a dynamo cache entry:
    room for all of this module's, then the defaults back."""
    limit = torch._dynamo.config.recompile_limit
    torch._dynamo.config.recompile_limit = 64
    yield
    torch._dynamo.config.recompile_limit = limit


def _records(since: int) -> list[tb.Record]:
    """The records of the graphs compiled since `since` (live: they count later calls)."""
    return tb.RECORDS[since:]


def _grads(model: nn.Module) -> dict[str, torch.Tensor]:
    return {n: p.grad.clone() for n, p in model.named_parameters()}


def _train_compare(model: nn.Module, *inputs: torch.Tensor) -> tuple[list[tb.Record], dict, dict]:
    """Forward and backward (a random cotangent) through the compiled copy and eager."""
    ref = copy.deepcopy(model)
    since = len(tb.RECORDS)
    compiled = torch.compile(model, backend="gpulab", options=CPU)
    out = compiled(*inputs)
    want = ref(*inputs)
    torch.testing.assert_close(out, want, **TOL)
    cot = torch.randn_like(want)
    (out * cot).sum().backward()
    (want * cot).sum().backward()
    return _records(since), _grads(model), _grads(ref)


@pytest.fixture(scope="module")
def mlp_inference() -> tuple[nn.Module, object, list[tb.Record]]:
    torch.manual_seed(0)
    model = MLP()
    since = len(tb.RECORDS)
    compiled = torch.compile(model, backend="gpulab", options=CPU)
    with torch.no_grad():
        compiled(torch.randn(8, 16))
    return model, compiled, _records(since)


def test_mlp_inference_one_session_parameters_once(mlp_inference) -> None:
    model, compiled, records = mlp_inference
    assert [r.label.split("#")[0] for r in records] == ["inference"]
    record = records[0]
    with torch.no_grad():
        for _ in range(3):
            x = torch.randn(8, 16)
            torch.testing.assert_close(compiled(x), model(x), **TOL)
    assert record.backend == "cpu-python" and record.calls == 4
    assert record.prepares == 1, "same shapes, same parameters: the prepared session is reused"
    assert record.nodes > 0 and record.reason == ""


def test_mlp_inference_follows_an_in_place_weight_change(mlp_inference) -> None:
    model, compiled, records = mlp_inference
    before = records[0].prepares
    x = torch.randn(8, 16)
    with torch.no_grad():
        model.l2.bias.add_(1.0)  # bumps the version counter: the constants are uploaded again
        torch.testing.assert_close(compiled(x), model(x), **TOL)
        compiled(x)
    assert records[0].prepares == before + 1


def test_mlp_gradients_equal_eager() -> None:
    torch.manual_seed(1)
    records, got, want = _train_compare(MLP(), torch.randn(8, 16))
    assert [r.label.split("#")[0] for r in records] == ["forward", "backward"]
    assert all(r.backend == "cpu-python" and r.calls == 1 for r in records)
    for name in want:
        torch.testing.assert_close(got[name], want[name], **TOL, msg=name)


@pytest.fixture(scope="module")
def encoder_training() -> tuple[list[tb.Record], dict, dict]:
    torch.manual_seed(2)
    return _train_compare(EncoderBlock(), torch.randn(2, 5, 32), _mask())


@pytest.mark.slow  # a transformer block trained both ways
def test_encoder_block_forward_and_gradients_equal_eager(encoder_training) -> None:
    records, got, want = encoder_training
    assert [r.label.split("#")[0] for r in records] == ["forward", "backward"]
    assert all(r.backend == "cpu-python" for r in records), records
    for name in want:
        torch.testing.assert_close(got[name], want[name], **TOL, msg=name)


def test_encoder_block_on_wgpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same block's inference graph on wgpu (lavapipe here: software, admitted)."""
    monkeypatch.setenv("GPULAB_ALLOW_SOFTWARE", "1")
    torch.manual_seed(3)
    model, x = EncoderBlock(), torch.randn(2, 5, 32)
    since = len(tb.RECORDS)
    compiled = torch.compile(model, backend="gpulab", options={"backend": "wgpu"})
    with torch.no_grad():
        try:
            out = compiled(x, _mask())
        except Exception as err:  # dynamo wraps it; no adapter at all is a reported skip
            if "UNAVAILABLE" in str(err):
                pytest.skip(f"wgpu: {err}")
            raise
        torch.testing.assert_close(out, model(x, _mask()), **TOL)
        compiled(x, _mask())
    (record,) = _records(since)
    assert record.backend == "wgpu" and record.prepares == 1 and record.calls == 2


def test_cnn_inference_and_training_equal_eager() -> None:
    """Inference, the training forward and backward each one gpulab graph: conv2d, max_pool2d
    (indices from a window argmax), avg_pool2d; convolution_backward as conv2d's (strided
    too), max_pool2d's as a scatter_add, avg_pool2d's as index_adds: values and gradients
    equal eager."""
    torch.manual_seed(7)
    model, x = CNN(), torch.randn(2, 1, 16, 16)
    since = len(tb.RECORDS)
    with torch.no_grad():
        out = torch.compile(copy.deepcopy(model), backend="gpulab", options=CPU)(x)
        torch.testing.assert_close(out, model(x), **TOL)
    (inference,) = _records(since)
    assert inference.backend == "cpu-python" and inference.calls == 1
    since = len(tb.RECORDS)
    records, got, want = _train_compare(model, x)
    for key in want:
        torch.testing.assert_close(got[key], want[key], **TOL, msg=key)
    assert [r.label.split("#")[0] for r in records] == ["forward", "backward"]
    assert all(r.backend == "cpu-python" and r.calls == 1 for r in records), records


def test_overlapping_pool_gradients_equal_eager() -> None:
    """Overlapping, padded, ceil-mode windows: max_pool2d's indices (first maximum, padding
    never wins) and backward (scatter_add of overlapping windows), avg_pool2d's backward with
    torch's divisors (count_include_pad False, a ceil-mode overhang) equal torch's."""
    torch.manual_seed(11)
    pool = Pooled()
    x = torch.randn(2, 3, 8, 9, requires_grad=True)
    x.data[0, 0, :2, :2] = 5.0  # a tie inside one window: the first index wins, as in torch
    ref_x = x.detach().clone().requires_grad_(True)
    since = len(tb.RECORDS)
    out, want = torch.compile(pool, backend="gpulab", options=CPU)(x), pool(ref_x)
    torch.testing.assert_close(out, want, **TOL)
    cot = torch.randn_like(want)
    (out * cot).sum().backward()
    (want * cot).sum().backward()
    torch.testing.assert_close(x.grad, ref_x.grad, **TOL)
    assert [r.backend for r in _records(since)] == ["cpu-python", "cpu-python"]


def test_strided_padded_conv_gradients_equal_eager() -> None:
    """convolution_backward on gpulab for a non-square kernel, unequal strides and padding
    (rows the strides never reach get zero input gradient)."""
    torch.manual_seed(8)
    conv = nn.Sequential(nn.Conv2d(3, 5, (3, 4), stride=(3, 2), padding=(2, 1)), nn.Tanh())
    x = torch.randn(2, 3, 11, 12, requires_grad=True)
    ref_x = x.detach().clone().requires_grad_(True)
    ref = copy.deepcopy(conv)
    since = len(tb.RECORDS)
    out, want = torch.compile(conv, backend="gpulab", options=CPU)(x), ref(ref_x)
    cot = torch.randn_like(want)
    (out * cot).sum().backward()
    (want * cot).sum().backward()
    torch.testing.assert_close(x.grad, ref_x.grad, **TOL)
    for key, grad in _grads(ref).items():
        torch.testing.assert_close(_grads(conv)[key], grad, **TOL, msg=key)
    assert [r.backend for r in _records(since)] == ["cpu-python", "cpu-python"]


def test_batch_norm_train_and_eval_equal_eager() -> None:
    """Training batch norm (batch statistics, running stats and the int64 step counter written
    back through aot_autograd's input mutations) and eval batch norm (running stats)."""
    torch.manual_seed(9)
    model = Normed()
    ref, x = copy.deepcopy(model), torch.randn(3, 2, 6, 6)
    since = len(tb.RECORDS)
    compiled = torch.compile(model, backend="gpulab", options=CPU)
    for _ in range(2):
        out, want = compiled(x), ref(x)
        cot = torch.randn_like(want)
        (out * cot).sum().backward()
        (want * cot).sum().backward()
    torch.testing.assert_close(out, want, **TOL)
    for key, grad in _grads(ref).items():
        torch.testing.assert_close(_grads(model)[key], grad, **TOL, msg=key)
    for key, buf in ref.bn.named_buffers():
        torch.testing.assert_close(getattr(model.bn, key), buf, **TOL, msg=key)
    model.eval(), ref.eval()
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), ref(x), **TOL)
    kinds = [r.label.split("#")[0] for r in _records(since)]
    assert kinds == ["forward", "backward", "inference"], kinds
    assert all(r.backend == "cpu-python" for r in _records(since)), _records(since)


@pytest.mark.slow  # over ~10 s of CPU: make test, not test-fast
def test_dynamic_shapes_specialize_per_call_shape() -> None:
    """dynamic=True (as dynamo's automatic dynamic after a shape change): the symbolic aten
    graphs get one gpulab specialization per input shape, each prepared once."""
    torch.manual_seed(10)
    model = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.LayerNorm(16), nn.Linear(16, 3))
    ref = copy.deepcopy(model)
    since = len(tb.RECORDS)
    compiled = torch.compile(model, backend="gpulab", options=CPU, dynamic=True)
    with torch.no_grad():
        for n in (4, 7, 4):
            x = torch.randn(n, 8)
            torch.testing.assert_close(compiled(x), ref(x), **TOL)
    x = torch.randn(5, 8)
    out, want = compiled(x), ref(x)
    (out * out).sum().backward()
    (want * want).sum().backward()
    for key, grad in _grads(ref).items():
        torch.testing.assert_close(_grads(model)[key], grad, **TOL, msg=key)
    outer = {r.label.split("#")[0]: r for r in _records(since) if "." not in r.label}
    assert outer["inference"].calls == 3 and len(outer["inference"].extra) == 2
    shapes = [r for r in _records(since) if ".shape" in r.label]
    assert all(r.backend == "cpu-python" and r.prepares == 1 for r in shapes), shapes
    assert [r.calls for r in shapes if r.label.startswith("inference")] == [2, 1]


def test_misc_table_entries_equal_eager() -> None:
    torch.manual_seed(4)
    x = torch.randn(4, 6, requires_grad=True)
    ref = x.detach().clone().requires_grad_(True)
    ids = torch.tensor([0, 3, 3, 9])  # a repeated row (index_add) and the padding row
    model = Misc()
    ref_model = copy.deepcopy(model)
    since = len(tb.RECORDS)
    out = torch.compile(model, backend="gpulab", options=CPU)(x, ids)
    want = ref_model(ref, ids)
    torch.testing.assert_close(out, want, **TOL)
    cot = torch.randn_like(want)
    (out * cot).sum().backward()
    (want * cot).sum().backward()
    torch.testing.assert_close(x.grad, ref.grad, **TOL)
    torch.testing.assert_close(model.emb.weight.grad, ref_model.emb.weight.grad, **TOL)
    assert all(r.backend == "cpu-python" for r in _records(since)), _records(since)


def _eager_steps(model: nn.Module, opt: torch.optim.Optimizer, loss_fn, batches) -> float:
    for x, y in batches:
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
    return float(loss.detach())


@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_compile_step_five_steps_equal_eager(kind: str) -> None:
    torch.manual_seed(5)
    model = MLP()
    ref = copy.deepcopy(model)
    if kind == "sgd":
        make = lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=0.01)
        loss_fn = nn.MSELoss()
        batches = [(torch.randn(8, 16), torch.randn(8, 4)) for _ in range(5)]
    else:
        make = lambda ps: torch.optim.Adam(ps, lr=0.01)
        loss_fn = nn.CrossEntropyLoss()
        batches = [(torch.randn(8, 16), torch.randint(0, 4, (8,))) for _ in range(5)]
    opt, ref_opt = make(model.parameters()), make(ref.parameters())
    step = tb.compile_step(model, opt, loss_fn, backend="cpu-python")
    first = step(*batches[0])  # one step, then four in one session run
    last = step.steps(batches[1:])
    with torch.no_grad():
        want_first = float(loss_fn(ref(batches[0][0]), batches[0][1]))
    want_last = _eager_steps(ref, ref_opt, loss_fn, batches)
    assert step.backend == "cpu-python" and step.steps_run == 5
    assert first.item() == pytest.approx(want_first, rel=1e-5)
    assert last.item() == pytest.approx(want_last, rel=1e-5)
    step.sync()
    for (name, p), q in zip(model.named_parameters(), ref.parameters(), strict=True):
        torch.testing.assert_close(p, q, **TOL, msg=name)
    state, ref_state = opt.state[model.l1.weight], ref_opt.state[ref.l1.weight]
    keys = ["momentum_buffer"] if kind == "sgd" else ["exp_avg", "exp_avg_sq"]
    for key in keys:
        torch.testing.assert_close(state[key], ref_state[key], **TOL, msg=key)
    if kind == "adam":
        assert float(state["step"]) == float(ref_state["step"]) == 5.0


def test_compile_step_refuses_what_it_cannot_do() -> None:
    model = MLP()
    with pytest.raises(GpuLabError, match="RMSprop"):
        tb.compile_step(model, torch.optim.RMSprop(model.parameters()), nn.MSELoss())
    with pytest.raises(GpuLabError, match="amsgrad"):
        tb.compile_step(model, torch.optim.Adam(model.parameters(), amsgrad=True), nn.MSELoss())


@pytest.mark.slow  # over ~10 s of CPU: make test, not test-fast
def test_explain_lists_mapped_ops_of_the_models() -> None:
    mlp = tb.explain(MLP(), torch.randn(8, 16), show=False)
    assert [g.kind for g in mlp.graphs] == ["forward", "backward"]
    assert mlp.unmapped == {} and mlp.mapped["aten.addmm.default"] == 2
    enc = tb.explain(EncoderBlock(), torch.randn(2, 5, 32), _mask(), show=False)
    assert enc.unmapped == {}
    for op in (
        "aten.native_layer_norm.default",
        "aten._softmax.default",
        "aten.gelu.default",
        "aten.where.self",
        "aten.bmm.default",
        "aten.gelu_backward.default",
    ):
        assert enc.mapped[op] >= 1, op
    assert all(g.runs_on == "gpulab" for g in enc.graphs)
    assert "mapped   aten.addmm.default x4" in str(enc)
    cnn = tb.explain(CNN(), torch.randn(2, 1, 16, 16), show=False)
    forward, backward = cnn.graphs
    assert forward.ops["aten.convolution.default"] == 2
    assert "aten.convolution.default" not in forward.unmapped
    assert forward.unmapped == {} and forward.ops["aten.max_pool2d_with_indices.default"] == 1
    assert backward.ops["aten.convolution_backward.default"] == 2
    assert backward.ops["aten.max_pool2d_with_indices_backward.default"] == 1
    assert backward.ops["aten.avg_pool2d_backward.default"] == 1 and backward.unmapped == {}


def test_unmapped_op_shows_in_explain(capsys: pytest.CaptureFixture) -> None:
    found = tb.explain(Unmapped(), torch.randn(2, 8))
    printed = capsys.readouterr().out
    assert "UNMAPPED aten.cumsum.default x1" in printed
    assert found.unmapped["aten.cumsum.default"] == 2  # forward and backward
    assert found.unmapped["aten.flip.default"] == 2  # cumsum's backward: flip, cumsum, flip
    assert [g.partitions for g in found.graphs] == [2, 2]
    assert "2 gpulab partition(s), the unmapped ops in eager PyTorch" in printed


def test_unmapped_op_breaks_the_graph_around_it(capsys: pytest.CaptureFixture) -> None:
    """Inference and gradients through the split graph equal eager; the partitions ran on
    gpulab, the cumsum between them in PyTorch."""
    torch.manual_seed(6)
    model, x = Unmapped(), torch.randn(2, 8)
    ref = copy.deepcopy(model)
    since = len(tb.RECORDS)
    compiled = torch.compile(model, backend="gpulab", options=CPU)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), ref(x), **TOL)
        compiled(x)
    out, want = compiled(x), ref(x)
    cot = torch.randn_like(want)
    (out * cot).sum().backward()
    (want * cot).sum().backward()
    for name, grad in _grads(ref).items():
        torch.testing.assert_close(_grads(model)[name], grad, **TOL, msg=name)
    outer = [r for r in _records(since) if "." not in r.label]
    assert [r.label.split("#")[0] for r in outer] == ["inference", "forward", "backward"]
    assert all(r.backend is None and "aten.cumsum.default" in r.reason for r in outer)
    assert all(len(r.extra["partitions"]) == 2 for r in outer)
    parts = [r for r in _records(since) if "." in r.label]
    assert len(parts) == 6 and all(r.backend == "cpu-python" for r in parts), parts
    inference_parts = [r for r in parts if r.label.startswith("inference")]
    assert all(r.calls == 2 and r.prepares == 1 for r in inference_parts)
    assert "breaks into 2 gpulab partition(s)" in capsys.readouterr().err


def test_partition_off_runs_the_whole_graph_eager(capsys: pytest.CaptureFixture) -> None:
    model, x = Unmapped(), torch.randn(2, 8)
    since = len(tb.RECORDS)
    with torch.no_grad():
        out = torch.compile(model, backend="gpulab", options={**CPU, "partition": False})(x)
        torch.testing.assert_close(out, model(x))
    (record,) = _records(since)
    assert record.backend is None and "aten.cumsum.default" in record.reason
    assert "runs in eager PyTorch" in capsys.readouterr().err


def test_strict_refuses_an_unmapped_op_by_name() -> None:
    compiled = torch.compile(
        Unmapped(), backend="gpulab", options={"backend": "cpu-python", "strict": True}
    )
    with pytest.raises(Exception, match="UNSUPPORTED.*aten.cumsum.default"), torch.no_grad():
        compiled(torch.randn(2, 8))


def test_unknown_option_is_refused() -> None:
    with pytest.raises(GpuLabError, match="unknown option"):
        tb.Options.parse({"device": "cuda"})


def test_one_table_and_its_decompositions() -> None:
    assert all(isinstance(op, torch._ops.OpOverload) for op in tb.ATEN_TABLE)
    assert not set(tb.ATEN_TABLE) & set(tb.DECOMPOSITIONS), "a lowered op is never decomposed"
    assert torch.ops.aten.gelu_backward.default in tb.ATEN_TABLE


def test_docs_list_every_table_entry() -> None:
    """docs/torch-backend.md's op table names every lowered aten op (one table, one list)."""
    docs = Path(__file__).resolve().parents[2] / "docs" / "torch-backend.md"
    text = docs.read_text(encoding="utf-8")
    missing = [op_name(op) for op in tb.ATEN_TABLE if f"`{op_name(op)}`" not in text]
    assert not missing, f"add to docs/torch-backend.md's op table: {missing}"
