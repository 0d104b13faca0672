"""Model-class gradients through torch.compile(backend="gpulab") against PyTorch in float64
(`model.double()`, the oracle): a ResNet-style stem + three stages in training mode
(BatchNorm), MobileNet-V2-style inverted residual blocks (depthwise convolutions, ReLU6) and a
GPT-style two-block language model (causal scaled_dot_product_attention). Each gradient must be
within a small multiple of eager float32's own distance from float64. Before the training
region rule (torch_backend/region.py) and the fused attention lowering, every gradient upstream
of an attention layer was wrong, the ResNet's by 4e-2 relative, the MobileNet's on wgpu.
Slow (model-sized graphs); wgpu runs on lavapipe here (software, admitted)."""

from __future__ import annotations

import copy
from collections.abc import Iterator

import gpulab.torch_backend as tb
import pytest
import torch
import torch.nn.functional as TF
from torch import nn

pytestmark = pytest.mark.slow

LANES = [
    pytest.param({"backend": "cpu-python", "verbose": False}, id="cpu-python"),
    pytest.param({"backend": "wgpu", "verbose": False}, id="wgpu"),
]


@pytest.fixture(autouse=True)
def _software_and_fresh_dynamo(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("GPULAB_ALLOW_SOFTWARE", "1")
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.down = (
            nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
            if stride != 1 or cin != cout
            else nn.Identity()
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.b1(self.c1(x)))
        return torch.relu(self.b2(self.c2(y)) + self.down(x))


class SmallResNet(nn.Module):
    """ResNet-18's shape in miniature: stem (conv 7x7/2, BN, ReLU, max pool 3x3/2), three
    stages of basic blocks, global average pool, linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 8, 7, 2, 3, bias=False),
            nn.BatchNorm2d(8),
            nn.ReLU(),
            nn.MaxPool2d(3, 2, 1),
        )
        self.stages = nn.Sequential(
            BasicBlock(8, 8, 1), BasicBlock(8, 16, 2), BasicBlock(16, 32, 2)
        )
        self.head = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.stages(self.stem(x))
        return self.head(TF.adaptive_avg_pool2d(y, 1).flatten(1))


class InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand: int) -> None:
        super().__init__()
        mid = cin * expand
        self.use_res = stride == 1 and cin == cout
        self.body = nn.Sequential(
            nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.ReLU6(),
            nn.Conv2d(mid, mid, 3, stride, 1, groups=mid, bias=False), nn.BatchNorm2d(mid),
            nn.ReLU6(),
            nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout),
        )  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.body(x) if self.use_res else self.body(x)


class SmallMobileNetV2(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8), nn.ReLU6()
        )
        self.blocks = nn.Sequential(
            InvertedResidual(8, 8, 1, 1),
            InvertedResidual(8, 12, 2, 4),
            InvertedResidual(12, 12, 1, 4),
        )
        self.head = nn.Linear(12, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.blocks(self.stem(x)).mean((2, 3)))


class Block(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = TF.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


class SmallGPT(nn.Module):
    def __init__(self, vocab: int = 17, d: int = 16, heads: int = 2, ctx: int = 8) -> None:
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.blocks = nn.Sequential(Block(d, heads), Block(d, heads))
        self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        return self.head(self.ln(self.blocks(x)))


def _gradients_vs_float64(
    model: nn.Module, x: torch.Tensor, options: dict, loss: str = "sum"
) -> tuple[dict[str, float], dict[str, float], list[tb.Record]]:
    """Per parameter: max |grad - float64 grad| / max |float64 grad| for the compiled model and
    for eager float32; and the records compiled. Training mode throughout."""
    ours, eager, wide = model, copy.deepcopy(model), copy.deepcopy(model).double()
    for m in (ours, eager, wide):
        m.train()
    since = len(tb.RECORDS)
    compiled = torch.compile(ours, backend="gpulab", options=options, dynamic=False)
    xin = x if not x.is_floating_point() else x.clone()
    out = compiled(xin)
    out64 = wide(x if not x.is_floating_point() else x.double())
    cot = torch.randn(out64.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    (out * cot.float()).sum().backward()
    (eager(xin) * cot.float()).sum().backward()
    (out64 * cot).sum().backward()
    mine, theirs = {}, {}
    for (name, p), q, w in zip(
        ours.named_parameters(), eager.parameters(), wide.parameters(), strict=True
    ):
        scale = w.grad.abs().max().item() or 1.0
        mine[name] = (p.grad.double() - w.grad).abs().max().item() / scale
        theirs[name] = (q.grad.double() - w.grad).abs().max().item() / scale
    return mine, theirs, tb.RECORDS[since:]


def _check(mine: dict[str, float], theirs: dict[str, float], records: list, lane: str) -> None:
    if any(r.backend is None and "UNAVAILABLE" in r.reason for r in records):
        pytest.skip(f"{lane}: no adapter")
    bad = {n: (mine[n], theirs[n]) for n in mine if mine[n] > max(8 * theirs[n], 1e-4)}
    assert not bad, bad
    assert records and all(r.backend == lane for r in records), [
        (r.label, r.backend, r.reason[:200]) for r in records
    ]


@pytest.mark.parametrize("options", LANES)
def test_resnet_stem_and_three_stages_train_mode_gradients(options: dict) -> None:
    torch.manual_seed(0)
    mine, theirs, records = _gradients_vs_float64(SmallResNet(), torch.randn(4, 3, 32, 32), options)
    _check(mine, theirs, records, options["backend"])


@pytest.mark.parametrize("options", LANES)
def test_mobilenet_v2_blocks_train_mode_gradients(options: dict) -> None:
    torch.manual_seed(1)
    mine, theirs, records = _gradients_vs_float64(
        SmallMobileNetV2(), torch.randn(4, 3, 16, 16), options
    )
    _check(mine, theirs, records, options["backend"])


@pytest.mark.parametrize("options", LANES)
def test_gpt_two_blocks_gradients_upstream_of_attention(options: dict) -> None:
    torch.manual_seed(2)
    idx = torch.randint(0, 17, (3, 8), generator=torch.Generator().manual_seed(3))
    mine, theirs, records = _gradients_vs_float64(SmallGPT(), idx, options)
    _check(mine, theirs, records, options["backend"])
    assert mine["tok.weight"] <= max(8 * theirs["tok.weight"], 1e-4)  # upstream of both
