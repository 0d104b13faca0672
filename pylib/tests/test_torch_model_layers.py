"""The layers public model files use that gpulab.torch lacked, each against real PyTorch
(CPU): nn.BatchNorm1d/2d (training statistics, running statistics and their momentum, eval),
F.batch_norm, a buffer reassigned by attribute, nn.Embedding's padding_idx, the legacy
constructors (torch.FloatTensor, ...), and `t[bool mask] = value` (nanoGPT's top-k filter)."""

from __future__ import annotations

from typing import Any

import gpulab.torch as gt
import pytest
import torch


def _close(ours: Any, ref: torch.Tensor, tol: float = 1e-5) -> bool:
    return torch.allclose(
        torch.tensor(ours.tolist()).to(ref.dtype), ref.detach(), atol=tol, rtol=tol
    )


@pytest.mark.parametrize(
    "cls, shape, momentum",
    [
        ("BatchNorm2d", (3, 4, 5, 5), 0.1),
        ("BatchNorm1d", (6, 4), 0.3),
        ("BatchNorm1d", (3, 4, 7), None),
    ],
)
def test_batch_norm_trains_and_tracks_running_statistics_as_torch(
    cls: str, shape: tuple, momentum: float | None
) -> None:
    ref = getattr(torch.nn, cls)(4, momentum=momentum)
    ours = getattr(gt.nn, cls)(4, momentum=momentum)
    ref.weight.data = torch.tensor([0.5, 1.0, 1.5, 2.0])
    ref.bias.data = torch.tensor([0.1, -0.2, 0.3, 0.0])
    ours.load_state_dict({k: v.tolist() for k, v in ref.state_dict().items()})
    g = torch.Generator().manual_seed(0)
    for _ in range(2):  # two batches: the running statistics move twice
        x = torch.randn(*shape, generator=g) * 3 + 1
        cot = torch.randn(*shape, generator=g)
        ref_x, our_x = x.clone().requires_grad_(), gt.tensor(x.tolist(), requires_grad=True)
        (ref(ref_x) * cot).sum().backward()
        (ours(our_x) * gt.tensor(cot.tolist())).sum().backward()
        assert _close(our_x.grad, ref_x.grad, 1e-4)
    assert _close(ours.weight.grad, ref.weight.grad, 1e-4)
    assert _close(ours.bias.grad, ref.bias.grad, 1e-4)
    state = ours.state_dict()
    assert list(state) == list(ref.state_dict())
    for name, value in ref.state_dict().items():
        assert _close(state[name], value), name
    ref.eval()
    ours.eval()
    x = torch.randn(*shape, generator=g)
    assert _close(ours(gt.tensor(x.tolist())), ref(x))


def test_functional_batch_norm_updates_the_running_tensors_in_place() -> None:
    x = torch.randn(5, 3, 4, generator=torch.Generator().manual_seed(1))
    rm, rv = torch.zeros(3), torch.ones(3)
    orm, orv = gt.zeros(3), gt.ones(3)
    y = torch.nn.functional.batch_norm(x, rm, rv, training=True, momentum=0.2)
    oy = gt.nn.functional.batch_norm(gt.tensor(x.tolist()), orm, orv, training=True, momentum=0.2)
    assert _close(oy, y) and _close(orm, rm) and _close(orv, rv)
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        gt.nn.functional.batch_norm(gt.ones(1, 3), orm, orv, training=True)


def test_a_buffer_assigned_by_attribute_stays_a_buffer() -> None:
    m = gt.nn.Module()
    m.register_buffer("scale", gt.ones(2))
    m.scale = gt.tensor([2.0, 3.0])
    assert [n for n, _ in m.named_buffers()] == ["scale"]
    assert m.state_dict()["scale"].tolist() == [2.0, 3.0]


def test_embedding_padding_row_is_zero_and_gets_no_gradient() -> None:
    ours = gt.nn.Embedding(5, 3, padding_idx=-1)  # torch's negative index: row 4
    assert ours.weight.tolist()[4] == [0.0, 0.0, 0.0]
    ref = torch.nn.Embedding(5, 3, padding_idx=4)
    ours.load_state_dict({"weight": ref.weight.tolist()})
    idx = torch.tensor([[4, 1, 4], [2, 4, 1]])
    cot = torch.randn(2, 3, 3, generator=torch.Generator().manual_seed(2))
    (ref(idx) * cot).sum().backward()
    (ours(gt.tensor(idx.tolist())) * gt.tensor(cot.tolist())).sum().backward()
    assert _close(ours.weight.grad, ref.weight.grad)
    assert ours.weight.grad.tolist()[4] == [0.0, 0.0, 0.0]


def test_legacy_constructors() -> None:
    assert gt.FloatTensor([[1, 2]]).dtype is gt.float32
    assert gt.FloatTensor([[1, 2]]).tolist() == [[1.0, 2.0]]
    assert gt.LongTensor([3, 4]).dtype is gt.int64
    assert list(gt.FloatTensor(2, 3).shape) == [2, 3]


def test_setting_through_a_bool_mask_fills() -> None:
    x = torch.tensor([[1.0, 5.0, 3.0], [4.0, 0.0, 6.0]])
    ours = gt.tensor(x.tolist())
    x[x < 3.5] = -float("inf")
    ours[ours < 3.5] = -float("inf")
    assert ours.tolist() == x.tolist()
