"""F.interpolate with scale_factor as PyTorch reads it: the output size is floor(in * s) and,
unless recompute_scale_factor=True, the coordinate map steps by 1 / s (not by in / out), so a
non-integer s picks other source pixels and weights. gpulab.torch against PyTorch CPU for
every mode it supports and both recompute settings, values and gradients; through
torch.compile the result matches PyTorch too."""

from __future__ import annotations

import gpulab.torch as gt
import gpulab.torch_backend  # noqa: F401  (registers backend="gpulab")
import pytest
import torch
import torch.nn.functional as TF

MODES = [("nearest", None), ("nearest-exact", None), ("bilinear", False), ("bilinear", True)]
# non-integer factors (in / out differs from 1 / s), an integer one, a pair
SCALES = [1.7, 0.6, 2.5, 3, (1.5, 0.75)]
CPU = {"backend": "cpu-python", "verbose": False}


def _x(shape: tuple[int, ...] = (2, 3, 5, 7)) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(11))


@pytest.mark.parametrize("recompute", [None, False, True])
@pytest.mark.parametrize("scale", SCALES, ids=str)
@pytest.mark.parametrize(("mode", "align_corners"), MODES)
def test_interpolate_scale_factor_matches_torch(
    mode: str, align_corners: bool | None, scale: float | tuple, recompute: bool | None
) -> None:
    """Before: sizes-based mapping always; values off by up to 16.8 for a non-integer s."""
    x = _x()
    kw = {"mode": mode, "align_corners": align_corners, "recompute_scale_factor": recompute}
    a = x.clone().requires_grad_(True)
    b = gt.tensor(x.tolist(), requires_grad=True)
    want = TF.interpolate(a, scale_factor=scale, **kw)
    got = gt.nn.functional.interpolate(b, scale_factor=scale, **kw)
    assert tuple(got.shape) == tuple(want.shape)
    exact = mode != "bilinear"  # a pixel's own bits
    tol = {"rtol": 0.0, "atol": 0.0} if exact else {"rtol": 1e-5, "atol": 1e-6}
    torch.testing.assert_close(torch.tensor(got.tolist()), want.detach(), **tol)
    cot = torch.randn(want.shape, generator=torch.Generator().manual_seed(12))
    (want * cot).sum().backward()
    (got * gt.tensor(cot.tolist())).sum().backward()
    torch.testing.assert_close(torch.tensor(b.grad.tolist()), a.grad, rtol=1e-5, atol=1e-5)


def test_upsample_module_passes_recompute_scale_factor() -> None:
    x = _x((1, 1, 4, 6))
    for recompute in (None, True):
        want = torch.nn.Upsample(scale_factor=1.4, recompute_scale_factor=recompute)(x)
        got = gt.nn.Upsample(scale_factor=1.4, recompute_scale_factor=recompute)(
            gt.tensor(x.tolist())
        )
        torch.testing.assert_close(torch.tensor(got.tolist()), want, rtol=0.0, atol=0.0)


def test_interpolate_refuses_what_torch_refuses_or_we_lack() -> None:
    x = gt.tensor(_x((1, 1, 4, 4)).tolist())
    with pytest.raises(ValueError, match="only one of size or scale_factor"):
        gt.nn.functional.interpolate(x, size=(5, 5), scale_factor=2.0)
    with pytest.raises(ValueError, match="recompute_scale_factor"):
        gt.nn.functional.interpolate(x, size=(5, 5), recompute_scale_factor=True)
    with pytest.raises(gt.Unsupported, match="antialias"):
        gt.nn.functional.interpolate(x, size=(3, 3), mode="bilinear", antialias=True)


@pytest.mark.parametrize(("mode", "align_corners"), MODES[:3])
def test_compiled_interpolate_scale_factor_matches_torch(
    mode: str, align_corners: bool | None
) -> None:
    """Through torch.compile(backend="gpulab"): PyTorch decomposes upsample at its Autograd key
    into index ops carrying its own 1 / s map; the result (and gradient) matches eager."""
    x = _x()

    def fn(t: torch.Tensor) -> torch.Tensor:
        return TF.interpolate(t, scale_factor=1.7, mode=mode, align_corners=align_corners) * 2.0

    a = x.clone().requires_grad_(True)
    b = x.clone().requires_grad_(True)
    out = torch.compile(fn, backend="gpulab", options=CPU, dynamic=False)(a)
    want = fn(b)
    torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-6)
    out.sum().backward()
    want.sum().backward()
    torch.testing.assert_close(a.grad, b.grad, rtol=1e-5, atol=1e-5)
