"""torch.compile(backend="gpulab") training regions: a backward is our graph, derived from the
same forward graph, or the whole region runs in eager PyTorch; never an eager backward op over
values our forward computed (torch_backend/region.py). Fused attention forward and backward as
our graph, against PyTorch in float64 (the oracle); the guard that sends a mixed region to
eager PyTorch (or refuses it, strict); tensor constants; hardtanh; grouped and dilated
convolution gradients."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator

import gpulab.torch_backend as tb
import pytest
import torch
import torch.nn.functional as TF
from gpulab.torch_backend import region, table
from torch import nn

aten = torch.ops.aten
CPU = {"backend": "cpu-python", "verbose": False}


@pytest.fixture(scope="module", autouse=True)
def _dynamo_room() -> Iterator[None]:
    """Room for this module's recompiles; on leaving, dynamo's caches are cleared: the shapes
    seen here (the same nn.Conv2d / nn.Sequential code) would otherwise make a later module's
    first compile of that code symbolic (automatic dynamic)."""
    limit = torch._dynamo.config.recompile_limit
    torch._dynamo.config.recompile_limit = 64
    yield
    torch._dynamo.config.recompile_limit = limit
    torch._dynamo.reset()


def _grads_vs_float64(
    fn: Callable[..., torch.Tensor], *inputs: torch.Tensor, options: dict = CPU
) -> tuple[list[float], list[float], list[tb.Record]]:
    """Per input, the max |grad - float64 grad| / max |float64 grad| of fn compiled on gpulab
    and of eager float32 (the bound a float32 result deserves), and the records made."""
    leaves = [x.detach().clone().requires_grad_(True) for x in inputs]
    eager = [x.detach().clone().requires_grad_(True) for x in inputs]
    wide = [x.detach().double().requires_grad_(True) for x in inputs]
    since = len(tb.RECORDS)
    compiled = torch.compile(fn, backend="gpulab", options=options, dynamic=False)
    out = compiled(*leaves)
    want = fn(*wide)
    cot = torch.randn(want.shape, dtype=torch.float64)
    (out * cot.float()).sum().backward()
    (fn(*eager) * cot.float()).sum().backward()
    (want * cot).sum().backward()
    ours, theirs = [], []
    for a, b, w in zip(leaves, eager, wide, strict=True):
        scale = w.grad.abs().max().item()
        ours.append((a.grad.double() - w.grad).abs().max().item() / scale)
        theirs.append((b.grad.double() - w.grad).abs().max().item() / scale)
    return ours, theirs, tb.RECORDS[since:]


def _functional(model: nn.Module) -> Callable[..., torch.Tensor]:
    """model as fn(x, *parameters): the float64 oracle passes its own parameters."""
    names = [n for n, _ in model.named_parameters()]

    def fn(x: torch.Tensor, *params: torch.Tensor) -> torch.Tensor:
        return torch.func.functional_call(model, dict(zip(names, params, strict=True)), (x,))

    return fn


def _on_gpulab(records: list[tb.Record]) -> bool:
    return bool(records) and all(r.backend == "cpu-python" for r in records)


# -- fused attention ------------------------------------------------------------------------


def _qkv(seed: int, heads: int = 4, lq: int = 8, lk: int = 8) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    shapes = [(2, heads, lq, 16), (2, heads, lk, 16), (2, heads, lk, 16)]
    return [torch.randn(s, generator=gen) for s in shapes]


def _causal(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return TF.scaled_dot_product_attention(q * 2.0, k, v, is_causal=True) ** 2


def _float_mask(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    bias = torch.linspace(-1.0, 1.0, q.shape[-2] * k.shape[-2], dtype=q.dtype)
    return TF.scaled_dot_product_attention(q, k, v, attn_mask=bias.reshape(q.shape[-2], -1))


def _bool_mask_scale(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    rows, cols = torch.arange(q.shape[-2])[:, None], torch.arange(k.shape[-2])[None, :]
    # the last two keys masked, and row 1 everywhere: 0 output and 0 gradient, as torch's kernel
    keep = (cols < k.shape[-2] - 2) & (rows != 1)
    return TF.scaled_dot_product_attention(q, k, v, attn_mask=keep, scale=0.3).tanh()


@pytest.mark.parametrize("fn", [_causal, _float_mask, _bool_mask_scale])
def test_attention_gradients_match_float64(fn: Callable[..., torch.Tensor]) -> None:
    """Before: the forward went through PyTorch's CPU attention decomposition (it saves the
    attention weights where the fused backward expects the logsumexp) and the fused backward
    ran eagerly over them: q/k/v gradients off by up to 38. Now forward and backward are one
    gpulab graph each, within float32's own distance from float64."""
    ours, eager, records = _grads_vs_float64(fn, *_qkv(0))
    assert _on_gpulab(records), records
    labels = [r.label.split("#")[0] for r in records]
    assert labels == ["forward", "backward"]
    for mine, theirs in zip(ours, eager, strict=True):
        assert mine <= max(4 * theirs, 2e-5), (ours, eager)


def test_attention_lowered_whole_forward_and_backward() -> None:
    """The fused CPU attention is one aten op each way in the aot graphs (not decomposed),
    and both are in the table."""
    found = tb.explain(_causal, *(t.requires_grad_() for t in _qkv(1)), show=False)
    forward, backward = found.graphs
    assert forward.ops["aten._scaled_dot_product_flash_attention_for_cpu.default"] == 1
    assert backward.ops["aten._scaled_dot_product_flash_attention_for_cpu_backward.default"] == 1
    assert forward.unmapped == {} and backward.unmapped == {}
    assert aten._scaled_dot_product_flash_attention_for_cpu.default not in tb.DECOMPOSITIONS


def test_attention_with_dropout_is_not_lowered() -> None:
    """dropout_p > 0 draws from torch's generator: neither direction is lowered, so both run
    eagerly (never one of them alone)."""
    g = torch.fx.Graph()
    forward = g.call_function(
        aten._scaled_dot_product_flash_attention_for_cpu.default, (None, None, None, 0.1)
    )
    backward = g.call_function(
        aten._scaled_dot_product_flash_attention_for_cpu_backward.default,
        (None,) * 6 + (0.1, False),
    )
    plain = g.call_function(
        aten._scaled_dot_product_flash_attention_for_cpu.default, (None, None, None, 0.0)
    )
    assert table.refusal(forward) == table.refusal(backward) == "dropout_p=0.1"
    assert table.refusal(plain) == ""


# -- the rule: never an eager backward over our forward's values -----------------------------


class ConvRelu(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.c1, self.c2 = nn.Conv2d(2, 3, 3), nn.Conv2d(3, 2, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c2(torch.relu(self.c1(x)))


@pytest.fixture
def conv_backward_unmapped(monkeypatch: pytest.MonkeyPatch) -> None:
    """convolution_backward as if it had no lowering: it runs eagerly and reads the saved
    relu output, which our forward computed."""
    monkeypatch.setitem(
        table.CONDITIONS, aten.convolution_backward.default, lambda node: "test: no lowering"
    )


def test_mixed_region_runs_whole_in_eager_pytorch(conv_backward_unmapped: None) -> None:
    torch.manual_seed(3)
    model, x = ConvRelu(), torch.randn(2, 2, 8, 8)
    ref = copy.deepcopy(model)
    since = len(tb.RECORDS)
    out = torch.compile(model, backend="gpulab", options=CPU)(x)
    want = ref(x)
    torch.testing.assert_close(out, want)
    out.sum().backward()
    want.sum().backward()
    for p, q in zip(model.parameters(), ref.parameters(), strict=True):
        torch.testing.assert_close(p.grad, q.grad)
    (record,) = tb.RECORDS[since:]
    assert record.label.startswith("region#") and record.backend is None and record.calls == 1
    assert "aten.convolution_backward.default reads relu" in record.reason


def test_mixed_region_is_refused_when_strict(conv_backward_unmapped: None) -> None:
    compiled = torch.compile(ConvRelu(), backend="gpulab", options={**CPU, "strict": True})
    with pytest.raises(Exception, match="UNSUPPORTED.*convolution_backward.*reads relu"):
        compiled(torch.randn(2, 2, 8, 8))


def test_mixed_region_without_partitioning(monkeypatch: pytest.MonkeyPatch) -> None:
    """partition=False runs a backward holding an unmapped op eagerly as a whole: over a
    gpulab forward that is the same mix, so the region goes to eager PyTorch."""
    model = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 4))
    monkeypatch.setitem(table.CONDITIONS, aten.mm.default, lambda node: "test: no lowering")
    since = len(tb.RECORDS)
    compiled = torch.compile(model, backend="gpulab", options={**CPU, "partition": False})
    compiled(torch.randn(3, 4)).sum().backward()
    (record,) = tb.RECORDS[since:]
    assert record.label.startswith("region#") and "aten.mm.default reads" in record.reason


def test_eager_op_over_gradients_only_keeps_the_partitions() -> None:
    """cumsum's backward (flip, cumsum, flip) reads only the incoming gradient: not a mix, so
    forward and backward stay split around it with the partitions on gpulab."""
    torch.manual_seed(6)
    model = nn.Sequential(nn.Linear(8, 8), nn.Tanh())
    layer = _functional(model)
    since = len(tb.RECORDS)

    def fn(x: torch.Tensor, *params: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(layer(x, *params), dim=-1).relu()

    ours, eager, _ = _grads_vs_float64(fn, torch.randn(2, 8), *model.parameters())
    for mine, theirs in zip(ours, eager, strict=True):
        assert mine <= max(4 * theirs, 2e-5), (ours, eager)
    outer = [r for r in tb.RECORDS[since:] if "." not in r.label]
    assert [r.label.split("#")[0] for r in outer] == ["forward", "backward"]
    assert all(r.extra["partitions"] for r in outer), outer


def test_context_reads_follow_saved_values_not_gradients() -> None:
    """The rule's reading: a backward op's non-gradient arguments, traced back to the saved
    values they come from (through view ops), never through the incoming gradient."""
    g = torch.fx.Graph()
    saved, other, tangent = g.placeholder("relu"), g.placeholder("t_1"), g.placeholder("tangents_1")
    viewed = g.call_function(aten.view.default, (saved, [4]))
    grad = g.call_function(aten.mul.Tensor, (tangent, other))
    use = g.call_function(aten.cumsum.default, (grad, 0))
    both = g.call_function(aten.mul.Tensor, (use, viewed))
    g.output((both,))
    reads = region.context_reads(torch.fx.GraphModule({}, g))
    assert reads[use.name] == set()  # the gradient path only
    assert reads[both.name] == {"relu"}  # relu, through a view
    assert reads[grad.name] == {"t_1"}  # what the gradient is multiplied by: context


# -- tensor constants, hardtanh, grouped / dilated convolutions ------------------------------


def test_tensor_constants_in_the_graph() -> None:
    """torch.tensor(...) in the model's code is a get_attr constant of the aot graph: it is
    data of the protocol graph (before: a FakeTensor assertion at compile time)."""

    class WithConstants(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            scale = torch.tensor([1.0, 2.0, 3.0])
            ids = torch.tensor([2, 0, 1])
            return self.lin(x)[:, ids] * scale + torch.tensor(0.5)

    torch.manual_seed(4)
    model, x = WithConstants(), torch.randn(2, 3)
    since = len(tb.RECORDS)
    compiled = torch.compile(model, backend="gpulab", options=CPU)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x))
    ours, eager, _ = _grads_vs_float64(_functional(model), x, *model.parameters())
    for mine, theirs in zip(ours, eager, strict=True):
        assert mine <= max(4 * theirs, 2e-5), (ours, eager)
    assert _on_gpulab(tb.RECORDS[since:]), tb.RECORDS[since:]


def test_hardtanh_and_relu6_forward_and_backward_on_gpulab() -> None:
    """ReLU6 / Hardtanh are aten.hardtanh (a graph break per use before): clamp forward;
    backward the gradient where lo < x < hi (none at the bounds, as torch)."""

    def fn(x: torch.Tensor) -> torch.Tensor:
        return TF.relu6(x * 4.0) + TF.hardtanh(x, -0.5, 0.25) * 3.0

    x = torch.tensor([[-2.0, -0.5, -0.1, 0.0, 0.25, 0.3, 1.5, 2.0]], requires_grad=True)
    eager = x.detach().clone().requires_grad_(True)
    since = len(tb.RECORDS)
    out = torch.compile(fn, backend="gpulab", options=CPU)(x)
    want = fn(eager)
    assert torch.equal(out, want)
    cot = torch.arange(1.0, 9.0)[None]
    (out * cot).sum().backward()
    (want * cot).sum().backward()
    assert torch.equal(x.grad, eager.grad), (x.grad, eager.grad)
    records = tb.RECORDS[since:]
    assert _on_gpulab(records) and all(r.reason == "" for r in records), records


@pytest.mark.parametrize(
    ("cin", "cout", "kernel", "stride", "padding", "dilation", "groups"),
    [
        (6, 6, 3, 2, 1, 1, 6),  # depthwise, strided (MobileNet)
        (4, 4, 3, 1, 2, 2, 1),  # dilated
        (4, 8, 3, 2, 2, 2, 4),  # grouped, strided and dilated
    ],
)
def test_grouped_and_dilated_convolution_gradients(
    cin: int, cout: int, kernel: int, stride: int, padding: int, dilation: int, groups: int
) -> None:
    """convolution_backward with groups and dilation as conv2d's (before: unmapped, an eager
    backward over our forward's values)."""
    torch.manual_seed(5)
    conv = nn.Conv2d(cin, cout, kernel, stride, padding, dilation, groups)
    model = nn.Sequential(nn.Conv2d(2, cin, 1), nn.Tanh(), conv)
    x = torch.randn(2, 2, 11, 10)
    ours, eager, records = _grads_vs_float64(_functional(model), x, *model.parameters())
    for mine, theirs in zip(ours, eager, strict=True):
        assert mine <= max(4 * theirs, 2e-5), (ours, eager)
    assert _on_gpulab(records) and all(r.reason == "" for r in records), records
