"""topk over a long axis (selection rounds, gpulab.functional.selection) and torch.multinomial
(Gumbel-max over our stream, gpulab.torch.sampling), against PyTorch where PyTorch's numbers
are defined: the values and order of topk, and the distribution and the errors of
multinomial."""

from __future__ import annotations

import math

import gpulab.torch as gt
import pytest
import torch


def _ours(x: torch.Tensor) -> gt.Tensor:
    return gt.tensor(x.tolist())


@pytest.mark.parametrize("largest", [True, False])
def test_topk_over_a_vocabulary_is_torchs_order(largest: bool) -> None:
    # 2 x 5000: the sort's comparison matrices would hold 5e7 elements (over its limit)
    x = torch.randn(2, 5000, generator=torch.Generator().manual_seed(0))
    x[0, 10] = x[0, 4000] = x[0].max() + 1  # a tie at the top: index order
    x[1, 7] = math.nan  # NaN is the largest (first when largest, never among the smallest)
    x[1, 9] = -math.inf
    values, indices = _ours(x).topk(6, largest=largest)
    ref = x.topk(6, largest=largest)
    assert torch.equal(torch.tensor(values.tolist()), ref.values) or torch.allclose(
        torch.tensor(values.tolist()), ref.values, equal_nan=True
    )
    ours_idx = torch.tensor(indices.tolist())
    assert torch.equal(x.gather(1, ours_idx).isnan(), ref.values.isnan())
    if largest:
        assert ours_idx[0, :2].tolist() == [10, 4000]
    # the same set as torch's where no values tie
    assert set(ours_idx[1].tolist()) == set(ref.indices[1].tolist())


def test_topk_over_a_vocabulary_has_gathers_gradient() -> None:
    x = torch.randn(1, 5000, generator=torch.Generator().manual_seed(1))
    ours = gt.tensor(x.tolist(), requires_grad=True)
    ours.topk(3).values.sum().backward()
    ref = x.clone().requires_grad_()
    ref.topk(3).values.sum().backward()
    assert torch.equal(torch.tensor(ours.grad.tolist()), ref.grad)


def test_multinomial_draws_follow_the_weights() -> None:
    gen = gt.Generator().manual_seed(3)
    w = gt.tensor([[1.0, 0.0, 3.0], [0.5, 0.5, 0.0]])
    counts = torch.zeros(2, 3)
    for _ in range(400):
        for row, draw in enumerate(gt.multinomial(w, 1, generator=gen).tolist()):
            counts[row, draw[0]] += 1
    assert counts[0, 1] == 0 and counts[1, 2] == 0  # a zero weight never wins
    assert abs(counts[0, 2] / 400 - 0.75) < 0.08 and abs(counts[1, 0] / 400 - 0.5) < 0.08


def test_multinomial_without_replacement_draws_distinct_categories() -> None:
    gen = gt.Generator().manual_seed(4)
    draws = gt.multinomial(gt.tensor([0.1, 0.2, 0.3, 0.4]), 4, generator=gen).tolist()
    assert sorted(draws) == [0, 1, 2, 3]
    with_replacement = gt.multinomial(gt.tensor([0.0, 1.0]), 5, True, generator=gen).tolist()
    assert with_replacement == [1] * 5


def test_multinomial_is_reproducible_from_the_generators_seed() -> None:
    w = gt.tensor([[0.2, 0.3, 0.5]] * 4)
    a = gt.multinomial(w, 2, generator=gt.Generator().manual_seed(9)).tolist()
    b = gt.multinomial(w, 2, generator=gt.Generator().manual_seed(9)).tolist()
    assert a == b


@pytest.mark.parametrize(
    "weights, samples, message",
    [
        ([0.0, 0.0], 1, "invalid multinomial distribution"),
        ([0.5, -0.1], 1, "invalid multinomial distribution"),
        ([0.5, math.inf], 1, "invalid multinomial distribution"),
        ([0.5, 0.5], 3, "without replacement"),
    ],
)
def test_multinomial_refuses_what_torch_refuses(weights: list, samples: int, message: str) -> None:
    with pytest.raises(RuntimeError, match="multinomial|replacement|probability"):
        torch.multinomial(torch.tensor(weights), samples)
    with pytest.raises(RuntimeError, match=message):
        gt.multinomial(gt.tensor(weights), samples)
