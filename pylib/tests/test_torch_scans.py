"""torch.cumsum, sort, argsort and topk against PyTorch: values, indices, dtypes and
gradients (the op library's running sum and stable ranks; each refused before it existed)."""

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


_TIES = torch.tensor(
    [
        [3.0, 1.0, 3.0, -0.0, float("nan"), 0.0, 1.0, float("-inf"), 3.0],
        [2.0, float("nan"), 2.0, 2.0, float("inf"), -5.0, float("nan"), 0.5, 2.0],
    ]
)


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("dim", [1, 0, -1])
def test_sort_and_argsort_are_torchs_stable_sort(dim: int, descending: bool) -> None:
    """Ties keep their order, NaN goes last ascending and first descending, -0 and 0 tie:
    values and indices equal to torch.sort(stable=True) / torch.argsort(stable=True)."""
    want = torch.sort(_TIES, dim=dim, descending=descending, stable=True)
    ours = gt.tensor(_TIES.tolist())
    for values, indices in (
        gt.sort(ours, dim, descending),
        ours.sort(dim, descending, stable=True),
    ):
        assert torch.equal(_as_torch(indices), want.indices)
        torch.testing.assert_close(_as_torch(values), want.values, equal_nan=True)
    got = ours.argsort(dim, descending=descending)
    assert torch.equal(
        _as_torch(got), torch.argsort(_TIES, dim=dim, descending=descending, stable=True)
    )


def test_sort_and_topk_gradients_like_torch() -> None:
    """The values' gradient goes back to the positions they came from (gather's rule), as
    torch's sort and topk backward."""
    x = torch.randn(4, 6, generator=torch.Generator().manual_seed(3))
    g = torch.linspace(-1.0, 1.0, 24).reshape(4, 6)
    for call in (
        lambda T, t: T.sort(t, 1, True).values,
        lambda T, t: t.sort(0).values,
        lambda T, t: T.topk(t, 3, 1).values * 1.0,
        lambda T, t: t.topk(2, 0, largest=False).values,
    ):
        ref = x.clone().requires_grad_(True)
        want = call(torch, ref)
        (want * g[: want.shape[0], : want.shape[1]]).sum().backward()
        ours = gt.tensor(x.tolist(), requires_grad=True)
        got = call(gt, ours)
        torch.testing.assert_close(_as_torch(got), want.detach())
        (got * gt.tensor(g[: want.shape[0], : want.shape[1]].tolist())).sum().backward()
        torch.testing.assert_close(_as_torch(ours.grad), ref.grad)


def test_topk_and_sort_edges_like_torch() -> None:
    """topk's indices, k = 0 and k = n, a 0-dim tensor, an empty axis; k past the size and a
    sort too large for the comparison matrices are refused by name. Among equal values torch's
    topk leaves the order of indices open (its selection gives [1, 0] here); ours is the
    stable order, the same set."""
    x = torch.tensor([[0.5, 2.0, -1.0, 7.0], [3.5, 3.0, 1.0, -2.0]])
    ours = gt.tensor(x.tolist())
    for k in (0, 2, 4):
        for largest in (True, False):
            want = torch.topk(x, k, largest=largest)
            got = gt.topk(ours, k, largest=largest)
            assert torch.equal(_as_torch(got.indices), want.indices)
            assert torch.equal(_as_torch(got.values), want.values)
    ties = torch.tensor([3.0, 3.0, 1.0])
    got, want = gt.tensor(ties.tolist()).topk(2), ties.topk(2)
    assert torch.equal(_as_torch(got.values), want.values)
    assert _as_torch(got.indices).tolist() == [0, 1]
    assert sorted(want.indices.tolist()) == [0, 1]
    assert _as_torch(gt.tensor(2.5).sort().indices).tolist() == 0
    assert tuple(gt.zeros(0).sort().values.shape) == (0,)
    assert gt.zeros(0).argsort().dtype is gt.int64
    with pytest.raises(RuntimeError, match="k out of range"):
        ours.topk(5)
    with pytest.raises(gt.Unsupported, match="Tensor.sort over 8000 elements"):
        gt.zeros(8000).sort()
