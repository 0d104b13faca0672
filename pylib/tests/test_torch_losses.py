"""nll_loss and cross_entropy with class indices against PyTorch: ignore_index (was silently
ignored: the ignored rows' losses were summed in), weight=, and [C] / [N, C, H, W] inputs;
values and the input's gradient."""

from __future__ import annotations

from collections.abc import Iterator

import gpulab.torch as gt
import pytest
import torch

CASES = {
    "ignore_index": ((4, 3), [0, 2, 1, 2], {"ignore_index": 2}),
    "weight": ((4, 3), [0, 2, 1, 2], {"weight": [0.5, 2.0, 1.5]}),
    "weight_and_ignore": ((4, 3), [0, 2, 1, 2], {"weight": [0.5, 2.0, 1.5], "ignore_index": 0}),
    "one_row": ((3,), 1, {}),
    "spatial": ((2, 3, 2, 2), [[[0, 1], [2, 1]], [[1, 1], [0, 2]]], {"weight": [1.0, 0.5, 3.0]}),
}


@pytest.fixture(autouse=True)
def cpu_python() -> Iterator[None]:
    gt.set_backend("cpu-python")
    yield
    gt.set_backend(None)


@pytest.mark.parametrize("loss", ["nll_loss", "cross_entropy"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_class_index_losses_match_torch(case: str, reduction: str, loss: str) -> None:
    shape, target, kwargs = CASES[case]
    x = torch.randn(shape, generator=torch.Generator().manual_seed(1), requires_grad=True)
    ref_kwargs = {k: torch.tensor(v) if k == "weight" else v for k, v in kwargs.items()}
    ref = getattr(torch.nn.functional, loss)(
        x, torch.tensor(target), reduction=reduction, **ref_kwargs
    )
    ref.backward(torch.ones_like(ref))

    ours_x = gt.tensor(x.tolist(), requires_grad=True)
    ours_kwargs = {k: gt.tensor(v) if k == "weight" else v for k, v in kwargs.items()}
    ours = getattr(gt.nn.functional, loss)(
        ours_x, gt.tensor(target), reduction=reduction, **ours_kwargs
    )
    ours.backward(gt.ones_like(ours))
    assert tuple(ours.shape) == tuple(ref.shape)
    torch.testing.assert_close(torch.tensor(ours.tolist()), ref.detach(), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(torch.tensor(ours_x.grad.tolist()), x.grad, rtol=1e-5, atol=1e-6)


def test_target_out_of_range_is_an_error_not_a_zero() -> None:
    """A target outside [0, C) that is not ignore_index is refused by the gather (torch raises
    too), never a loss of 0 for that row."""
    x = gt.randn(2, 3)
    with pytest.raises(Exception, match="out of range"):
        gt.nn.functional.nll_loss(x, gt.tensor([0, 5])).item()
