"""torch.cumsum / Tensor.cumsum against PyTorch: values, dtypes and gradients (the op
library's running sum; refused before it existed)."""

from __future__ import annotations

from collections.abc import Iterator

import gpulab.torch as gt
import pytest
import torch


@pytest.fixture(autouse=True)
def cpu() -> Iterator[None]:
    gt.set_backend("cpu-python")
    yield
    gt.set_backend(None)


def _as_torch(t: gt.Tensor) -> torch.Tensor:
    dtype = {gt.float32: torch.float32, gt.int64: torch.int64}[t.dtype]
    return torch.tensor(t.tolist(), dtype=dtype).reshape(tuple(t.shape))


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
def test_cumsum_like_torch(dim: int) -> None:
    """Float running sums along every axis: torch's values (the same ascending order of
    additions) and the gradient of sum(out * g) (the reverse running sum)."""
    x = torch.randn(3, 4, 5, generator=torch.Generator().manual_seed(dim + 7)) * 4.0
    g = torch.linspace(-1.0, 2.0, x.numel()).reshape(x.shape)
    ref = x.clone().requires_grad_(True)
    want = torch.cumsum(ref, dim)
    (want * g).sum().backward()
    ours = gt.tensor(x.tolist(), requires_grad=True)
    for got in (gt.cumsum(ours, dim), ours.cumsum(dim), ours.cumsum(dim=dim)):
        torch.testing.assert_close(_as_torch(got), want.detach(), atol=1e-6, rtol=1e-6)
    (gt.cumsum(ours, dim) * gt.tensor(g.tolist())).sum().backward()
    torch.testing.assert_close(_as_torch(ours.grad), ref.grad, atol=1e-6, rtol=1e-6)


def test_cumsum_dtypes_and_shapes_like_torch() -> None:
    """Integer and bool inputs sum to int64; dtype= casts first (float64 refused by name); a
    0-dim tensor and an empty axis as torch."""
    ints = torch.tensor([[3, -1, 4], [1, 5, -9]])
    for got, want in [
        (gt.cumsum(gt.tensor(ints.tolist()), 1), torch.cumsum(ints, 1)),
        (gt.tensor([True, False, True]).cumsum(0), torch.tensor([True, False, True]).cumsum(0)),
        (
            gt.cumsum(gt.tensor(ints.tolist()), 0, dtype=gt.float32),
            ints.cumsum(0, dtype=torch.float32),
        ),
        (gt.tensor(2.5).cumsum(0), torch.tensor(2.5).cumsum(0)),
        (gt.zeros(2, 0).cumsum(1), torch.zeros(2, 0).cumsum(1)),
    ]:
        assert _as_torch(got).dtype == want.dtype and tuple(got.shape) == tuple(want.shape)
        assert torch.equal(_as_torch(got), want)
    with pytest.raises(gt.Unsupported, match="float64"):
        gt.ones(3).cumsum(0, dtype=torch.float64)
    with pytest.raises(IndexError):
        gt.ones(3).cumsum(1)
