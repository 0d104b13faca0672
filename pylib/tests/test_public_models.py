"""Public PyTorch model files, kept unchanged with their licences (public_models/SOURCES.md),
run as their authors wrote them: with gpulab.torch behind their `import torch`
(public_model_files.load) and, the same file with the real PyTorch, through
torch.compile(backend="gpulab"). Each is checked against PyTorch: the loss, every parameter's
gradient against a float64 oracle (`model.double()`; within 8x eager float32's own distance
from it, or 1e-4 of the gradient's scale), the parameters after a few optimizer steps, and
nanoGPT's `generate`. Three families: a GPT language model (nanoGPT), CIFAR CNNs
(pytorch-cifar's ResNet and MobileNetV2 blocks) and the encoder-decoder Transformer of
"Attention Is All You Need" (jadore801120's). Slow: model-sized graphs on the CPU lanes."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

import gpulab.torch as gt
import gpulab.torch_backend as tb
import pytest
import torch
from public_model_files import load

pytestmark = pytest.mark.slow


BACKENDS = ["cpu-python", "wgpu"]  # wgpu: lavapipe here (a software adapter, admitted)


@pytest.fixture(autouse=True)
def _fresh_dynamo(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("GPULAB_ALLOW_SOFTWARE", "1")
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """gpulab.torch's backend for the test (set, then put back)."""
    before = gt.get_backend()
    gt.set_backend(request.param)
    yield request.param
    gt.set_backend(before)


def _ours(value: Any) -> Any:
    """A torch tensor as a gpulab.torch one (same dtype family)."""
    dt = gt.int64 if not value.is_floating_point() else gt.float32
    return gt.tensor(value.tolist(), dtype=dt)


def _copy_into(ours: Any, ref: torch.nn.Module) -> None:
    ours.load_state_dict({k: v.tolist() for k, v in ref.state_dict().items()})


def _no_dropout(*models: Any) -> None:
    """Dropout off (p = 0) in training mode: torch's masks can not be ours (docs/torch.md)."""
    for m in models:
        for sub in m.modules():
            if type(sub).__name__ == "Dropout":
                sub.p = 0.0


def _within_float32(
    named_grads: dict[str, Any], eager: torch.nn.Module, wide: torch.nn.Module
) -> dict[str, tuple[float, float]]:
    """Parameters whose gradient is further from float64 than 8x eager float32's distance
    (or 1e-4 of the gradient's scale): {name: (ours, eager float32)} relative errors."""
    bad = {}
    for (name, q), w in zip(eager.named_parameters(), wide.parameters(), strict=True):
        scale = w.grad.abs().max().item() or 1.0
        mine = (named_grads[name].double() - w.grad).abs().max().item() / scale
        theirs = (q.grad.double() - w.grad).abs().max().item() / scale
        if mine > max(8 * theirs, 1e-4):
            bad[name] = (mine, theirs)
    return bad


def _eager_lane(
    module: Any, make: Callable[[Any], Any], loss: Callable[[Any, Any, Any], Any], inputs: tuple
) -> tuple[torch.nn.Module, Any]:
    """Build the model from the file with both torches (ours loads torch's weights), run one
    training-mode loss and backward on each and on a float64 copy; assert the loss and the
    gradients; return (torch model, our model)."""
    ref_file, our_file = module
    torch.manual_seed(0)
    ref = make(ref_file)
    ours = make(our_file)
    _copy_into(ours, ref)
    _no_dropout(ref, ours)
    wide = copy.deepcopy(ref).double()
    for m in (ref, ours, wide):
        m.train()
    ref_loss = loss(ref_file, ref, inputs)
    ref_loss.backward()
    loss(
        ref_file, wide, tuple(x.double() if x.is_floating_point() else x for x in inputs)
    ).backward()
    our_loss = loss(our_file, ours, tuple(_ours(x) for x in inputs))
    assert our_loss.item() == pytest.approx(ref_loss.item(), rel=1e-5, abs=1e-6)
    our_loss.backward()
    grads = {n: torch.tensor(p.grad.tolist()) for n, p in ours.named_parameters()}
    assert set(grads) == {n for n, _ in ref.named_parameters()}
    assert not _within_float32(grads, ref, wide)
    return ref, ours


def _compiled_lane(
    ref_file: Any, make: Callable[[Any], Any], loss: Callable[[Any, Any, Any], Any], inputs: tuple
) -> None:
    """The torch model compiled with backend="gpulab" (cpu-python): gradients against the
    float64 oracle, every region run by gpulab."""
    torch.manual_seed(0)
    model = make(ref_file)
    _no_dropout(model)
    eager, wide = copy.deepcopy(model), copy.deepcopy(model).double()
    since = len(tb.RECORDS)
    compiled = torch.compile(
        model, backend="gpulab", options={"backend": "cpu-python", "verbose": False}
    )
    for m in (model, eager, wide):
        m.train()
    ours = loss(ref_file, compiled, inputs)
    ours.backward()
    ref = loss(ref_file, eager, inputs)
    ref.backward()
    loss(
        ref_file, wide, tuple(x.double() if x.is_floating_point() else x for x in inputs)
    ).backward()
    assert ours.item() == pytest.approx(ref.item(), rel=1e-5, abs=1e-6)
    grads = {n: p.grad for n, p in model.named_parameters()}
    assert not _within_float32(grads, eager, wide)
    records = tb.RECORDS[since:]
    assert records and all(r.backend == "cpu-python" for r in records), [
        (r.label, r.backend, r.reason[:200]) for r in records
    ]


# -- nanoGPT (karpathy/nanoGPT model.py) --------------------------------------------------------

GPT_CONFIG: dict[str, Any] = {
    "block_size": 16,
    "vocab_size": 37,
    "n_layer": 2,
    "n_head": 2,
    "n_embd": 32,
    "dropout": 0.0,
    "bias": True,
}


@pytest.fixture(scope="module")
def nanogpt() -> tuple[Any, Any]:
    return load("nanoGPT", "model", gpulab=False), load("nanoGPT", "model", gpulab=True)


def _gpt(file: Any) -> Any:
    return file.GPT(file.GPTConfig(**GPT_CONFIG))


def _gpt_loss(file: Any, model: Any, inputs: tuple) -> Any:
    return model(*inputs)[1]


def _tokens(seed: int, shape: tuple[int, int]) -> torch.Tensor:
    return torch.randint(
        0, GPT_CONFIG["vocab_size"], shape, generator=torch.Generator().manual_seed(seed)
    )


def test_nanogpt_trains_with_its_adamw_groups_and_generates_as_torch(
    nanogpt: tuple, backend: str
) -> None:
    ref, ours = _eager_lane(nanogpt, _gpt, _gpt_loss, (_tokens(1, (2, 12)), _tokens(2, (2, 12))))
    ref_opt = ref.configure_optimizers(0.1, 1e-3, (0.9, 0.95), "cpu")
    our_opt = ours.configure_optimizers(0.1, 1e-3, (0.9, 0.95), "cpu")
    for step in range(3):
        idx, tgt = _tokens(10 + step, (2, 12)), _tokens(20 + step, (2, 12))
        ref_opt.zero_grad()
        ref(idx, tgt)[1].backward()
        ref_opt.step()
        our_opt.zero_grad()
        ours(_ours(idx), _ours(tgt))[1].backward()
        our_opt.step()
    for (name, p), q in zip(ref.named_parameters(), ours.parameters(), strict=True):
        assert torch.allclose(torch.tensor(q.tolist()), p.detach(), atol=2e-5), name
    ref.eval()
    ours.eval()
    start = _tokens(3, (1, 4))
    # top_k=1 leaves one token with probability 1: torch's sampler and ours must agree
    greedy = ours.generate(_ours(start), 10, top_k=1).tolist()
    assert greedy == ref.generate(start, 10, top_k=1).tolist()
    sampled = ours.generate(_ours(start), 10, temperature=0.8).tolist()  # our stream's draws
    assert len(sampled[0]) == 14 and sampled[0][:4] == start[0].tolist()
    assert all(0 <= t < GPT_CONFIG["vocab_size"] for t in sampled[0])


def test_nanogpt_compiled_gradients(nanogpt: tuple) -> None:
    _compiled_lane(nanogpt[0], _gpt, _gpt_loss, (_tokens(4, (2, 12)), _tokens(5, (2, 12))))


# -- pytorch-cifar (kuangliu/pytorch-cifar models/resnet.py, models/mobilenetv2.py) -----------


@pytest.fixture(scope="module")
def resnet() -> tuple[Any, Any]:
    return (
        load("pytorch-cifar", "models.resnet", gpulab=False),
        load("pytorch-cifar", "models.resnet", gpulab=True),
    )


def _resnet(file: Any) -> Any:
    # the file's ResNet with one BasicBlock per stage (ResNet18 has two): the same layers and
    # widths (64..512), half the depth, so the CPU lanes finish in seconds
    return file.ResNet(file.BasicBlock, [1, 1, 1, 1])


def _classify(file: Any, model: Any, inputs: tuple) -> Any:
    x, y = inputs
    nnf = torch.nn.functional if file.torch is torch else gt.nn.functional
    return nnf.cross_entropy(model(x), y)


def _images(seed: int, n: int = 2) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 3, 32, 32, generator=g), torch.randint(0, 10, (n,), generator=g)


@pytest.mark.parametrize("backend", ["cpu-python"], indirect=True)  # lavapipe: 230 s here
def test_cifar_resnet_trains_with_batch_norm_as_torch(resnet: tuple, backend: str) -> None:
    # ReLU's derivative jumps at 0: a pre-activation within float32 rounding of 0 (backends
    # round the conv sums differently) flips one mask element and moves every gradient upstream
    # by percents, on any pair of float32 implementations. Images 10 keep every pre-activation
    # at least 7.8e-6 from 0 (float64; images 1 have one at 6.6e-7, which wgpu flips).
    ref, ours = _eager_lane(resnet, _resnet, _classify, _images(10))
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.05, momentum=0.9)
    our_opt = gt.optim.SGD(ours.parameters(), lr=0.05, momentum=0.9)
    for seed in (24, 37):  # the next widest margins from 0 (6.1e-6, 5.9e-6)
        x, y = _images(seed)
        ref_opt.zero_grad()
        _classify(resnet[0], ref, (x, y)).backward()
        ref_opt.step()
        our_opt.zero_grad()
        _classify(resnet[1], ours, (_ours(x), _ours(y))).backward()
        our_opt.step()
    ours_state = ours.state_dict()
    for name, value in ref.state_dict().items():  # parameters and BatchNorm's running stats
        assert torch.allclose(
            torch.tensor(ours_state[name].tolist()).to(value.dtype), value, atol=1e-4, rtol=1e-4
        ), name
    ref.eval()
    ours.eval()
    x, _ = _images(20)
    assert torch.allclose(
        torch.tensor(ours(_ours(x)).tolist()), ref(x).detach(), atol=1e-4, rtol=1e-4
    )


def test_cifar_resnet_compiled_gradients(resnet: tuple) -> None:
    _compiled_lane(resnet[0], _resnet, _classify, _images(2))


@pytest.fixture(scope="module")
def mobilenet() -> tuple[Any, Any]:
    return (
        load("pytorch-cifar", "models.mobilenetv2", gpulab=False),
        load("pytorch-cifar", "models.mobilenetv2", gpulab=True),
    )


@pytest.mark.parametrize("block", [(16, 24, 6, 1), (24, 24, 6, 1), (24, 32, 6, 2)])
def test_cifar_mobilenet_v2_blocks_train_as_torch(
    mobilenet: tuple, block: tuple, backend: str
) -> None:
    """The file's inverted residual Block (expand, depthwise 3x3, project; shortcut), as the
    network's stages configure it; the whole network needs 32x32 inputs through 17 blocks,
    minutes on the pure-Python lane."""

    def make(file: Any) -> Any:
        return file.Block(*block)

    def loss(file: Any, model: Any, inputs: tuple) -> Any:
        (x, w) = inputs
        return (model(x) * w).sum()

    g = torch.Generator().manual_seed(7)
    x = torch.randn(2, block[0], 8, 8, generator=g)
    side = 8 // block[3]
    w = torch.randn(2, block[1], side, side, generator=g)
    _eager_lane(mobilenet, make, loss, (x, w))


# -- Attention Is All You Need (jadore801120/attention-is-all-you-need-pytorch transformer/) ----

SEQ2SEQ: dict[str, Any] = {
    "n_src_vocab": 29,
    "n_trg_vocab": 29,
    "src_pad_idx": 0,
    "trg_pad_idx": 0,
    "d_word_vec": 16,
    "d_model": 16,
    "d_inner": 32,
    "n_layers": 2,
    "n_head": 2,
    "d_k": 8,
    "d_v": 8,
    "dropout": 0.0,
    "n_position": 20,
}


@pytest.fixture(scope="module")
def seq2seq() -> tuple[Any, Any]:
    return (
        load("attention-is-all-you-need-pytorch", "transformer.Models", gpulab=False),
        load("attention-is-all-you-need-pytorch", "transformer.Models", gpulab=True),
    )


def _transformer(file: Any) -> Any:
    return file.Transformer(**SEQ2SEQ)


def _translation_loss(file: Any, model: Any, inputs: tuple) -> Any:
    src, trg, gold = inputs
    nnf = torch.nn.functional if file.torch is torch else gt.nn.functional
    return nnf.cross_entropy(model(src, trg), gold.view(-1), ignore_index=0)


def _sentences(seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(1, 29, (2, 7), generator=g)
    trg = torch.randint(1, 29, (2, 6), generator=g)
    src[0, 5:] = 0  # padding: masked keys, and the padding row's embedding gets no gradient
    trg[1, 4:] = 0
    gold = torch.roll(trg, -1, 1)
    return src, trg, gold


def test_seq2seq_transformer_trains_as_torch(seq2seq: tuple, backend: str) -> None:
    ref, ours = _eager_lane(seq2seq, _transformer, _translation_loss, _sentences(1))
    ref_opt = torch.optim.Adam(ref.parameters(), lr=1e-3, betas=(0.9, 0.98), eps=1e-9)
    our_opt = gt.optim.Adam(ours.parameters(), lr=1e-3, betas=(0.9, 0.98), eps=1e-9)
    for step in range(3):
        batch = _sentences(10 + step)
        ref_opt.zero_grad()
        _translation_loss(seq2seq[0], ref, batch).backward()
        ref_opt.step()
        our_opt.zero_grad()
        _translation_loss(seq2seq[1], ours, tuple(_ours(t) for t in batch)).backward()
        our_opt.step()
    for (name, p), q in zip(ref.named_parameters(), ours.parameters(), strict=True):
        assert torch.allclose(torch.tensor(q.tolist()), p.detach(), atol=2e-5), name


def test_seq2seq_transformer_compiled_gradients(seq2seq: tuple) -> None:
    _compiled_lane(seq2seq[0], _transformer, _translation_loss, _sentences(2))
