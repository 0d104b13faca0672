"""gpulab.torch against PyTorch (values and gradients) where the OpInfo lane found paths
refused: layer_norm over several trailing axes, norm with other p, div's rounding modes.
Each builds on the op library; each test failed (refused) before its path existed."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import gpulab.torch as gt
import pytest
import torch


@pytest.fixture(autouse=True)
def cpu() -> Iterator[None]:
    gt.set_backend("cpu-python")
    yield
    gt.set_backend(None)


def _ours(t: torch.Tensor) -> Any:
    dtype = {torch.float32: gt.float32, torch.int64: gt.int64}[t.dtype]
    out = gt.tensor(t.tolist(), dtype=dtype, requires_grad=t.requires_grad)
    return out


def _as_torch(t: Any) -> torch.Tensor:
    dtype = {gt.float32: torch.float32, gt.int64: torch.int64, gt.bool: torch.bool}[t.dtype]
    return torch.tensor(t.tolist(), dtype=dtype).reshape(tuple(t.shape))


def _check(
    fn: Callable[[Any, Any], Any],
    inputs: list[torch.Tensor],
    atol: float = 1e-5,
    rtol: float = 1e-5,
    grad: bool = True,
) -> None:
    """fn(module, *inputs) with gpulab.torch and with PyTorch: the same values, shape and
    dtype; and, where grad, the same gradient of sum(out * g) for every float input."""
    ref_in = [x.clone().requires_grad_(grad and x.dtype == torch.float32) for x in inputs]
    our_in = [_ours(x) for x in ref_in]
    ref, ours = fn(torch, *ref_in), fn(gt, *our_in)
    got = _as_torch(ours)
    assert got.dtype == ref.dtype and got.shape == ref.shape, (got, ref)
    torch.testing.assert_close(got, ref.detach(), atol=atol, rtol=rtol, equal_nan=True)
    if not grad:
        return
    g = torch.linspace(-1.0, 2.0, ref.numel()).reshape(ref.shape)
    leaves = [(r, o) for r, o in zip(ref_in, our_in, strict=True) if r.requires_grad]
    want = torch.autograd.grad(ref, [r for r, _ in leaves], g, allow_unused=True)
    have = gt.autograd.grad(
        (ours * gt.tensor(g.tolist()).reshape(tuple(g.shape))).sum(),
        [o for _, o in leaves],
        allow_unused=True,
    )
    for w, h, (r, _) in zip(want, have, leaves, strict=True):
        w = torch.zeros_like(r) if w is None else w
        h = torch.zeros(r.shape) if h is None else _as_torch(h)
        torch.testing.assert_close(h, w, atol=atol, rtol=rtol, equal_nan=True)


def _randn(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


# -- layer_norm over several trailing axes ----------------------------------------------------


@pytest.mark.parametrize("shape", [(4, 5), (3, 4, 5), (5,)])
def test_layer_norm_over_trailing_axes_like_torch(shape: tuple[int, ...]) -> None:
    """F.layer_norm(x, normalized_shape of k trailing axes, weight, bias): values and the
    gradients of x, weight and bias as PyTorch's."""
    x = _randn(2, 3, 4, 5) * 3.0 + 1.0
    w, b = _randn(*shape, seed=1), _randn(*shape, seed=2)
    _check(lambda T, x, w, b: T.nn.functional.layer_norm(x, shape, w, b, 1e-5), [x, w, b])
    _check(lambda T, x: T.nn.functional.layer_norm(x, shape), [x])


def test_layer_norm_module_over_two_axes_like_torch() -> None:
    """nn.LayerNorm((4, 5)): its weight and bias have the normalized shape; the output and
    the parameters' gradients are PyTorch's."""
    x = _randn(3, 4, 5)
    ours, ref = gt.nn.LayerNorm((4, 5)), torch.nn.LayerNorm((4, 5))
    assert tuple(ours.weight.shape) == (4, 5)
    out_ref = ref(x)
    out = ours(_ours(x))
    torch.testing.assert_close(_as_torch(out), out_ref.detach(), atol=1e-5, rtol=1e-5)
    (out * out).sum().backward()
    (out_ref * out_ref).sum().backward()
    torch.testing.assert_close(_as_torch(ours.weight.grad), ref.weight.grad, atol=1e-4, rtol=1e-5)
    torch.testing.assert_close(_as_torch(ours.bias.grad), ref.bias.grad, atol=1e-4, rtol=1e-5)


def test_layer_norm_shape_mismatch_is_torchs_error() -> None:
    with pytest.raises(RuntimeError, match="normalized_shape"):
        gt.nn.functional.layer_norm(gt.ones(2, 3, 4), (3, 5))
    with pytest.raises(RuntimeError, match="normalized_shape"):
        gt.nn.functional.layer_norm(gt.ones(3, 4), (2, 3, 4))


# -- norm with any p --------------------------------------------------------------------------

_NORM_X = torch.tensor([[1.5, -0.0, 3.0, -0.25], [0.0, 0.0, 0.0, 0.0], [-2.0, 7.0, 0.5, 1.0]])


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("p", [3, -1, -2, 0.5, 1.5, -0.5, -1.5, 4.25, 0])
@pytest.mark.parametrize("dim", [None, 1, 0, (0, 1)])
def test_norm_with_other_p_like_torch(p: float, dim: Any, keepdim: bool) -> None:
    """Tensor.norm / torch.norm with p other than 1, 2, inf: values, and gradients finite and
    equal to torch's where x = 0 and where a whole row is 0 (norm_backward's masks); p = 0 is
    the nonzero count with gradient 0."""
    _check(lambda T, x: T.norm(x, p, dim, keepdim), [_NORM_X], atol=1e-5, rtol=2e-5)
    _check(lambda T, x: x.norm(p=p, dim=dim, keepdim=keepdim), [_NORM_X], atol=1e-5, rtol=2e-5)


def test_norm_of_non_finite_values_like_torch() -> None:
    """inf gives inf for p > 0 and counts as 0 beside it for p < 0; NaN propagates."""
    x = torch.tensor([[1.0, math.inf, 2.0], [1.0, math.nan, 2.0], [-math.inf, 3.0, 4.0]])
    for p in (3, 1.5, -1, -1.5, 0):
        _check(lambda T, x, p=p: T.norm(x, p, 1), [x], grad=False)


def test_norm_nuc_and_a_non_number_p_are_refused_by_name() -> None:
    x = gt.ones(3, 3)
    with pytest.raises(gt.Unsupported, match="p='nuc'"):
        x.norm(p="nuc")
    with pytest.raises(gt.Unsupported, match="p=nan"):
        x.norm(p=math.nan)


# -- trunc / floor / ceil and div(rounding_mode='trunc') -------------------------------------

_EDGES = [
    0.0, -0.0, 0.3, -0.3, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.99999994, -0.99999994,
    8388607.5, -8388607.5, 8388608.0, -8388609.0, 16777215.0, 2.0**31 + 256.0, -(2.0**40) - 2.0**17,
    3.0e38, -3.4e38, 1e-40, -1e-40, math.inf, -math.inf, math.nan,
]  # fmt: skip


def _bits_match(got: torch.Tensor, want: torch.Tensor) -> None:
    """Values equal, NaN where NaN, and the sign of every zero as torch's (a NaN's sign bit
    is no value: x86 gives 0/0 its sign bit set)."""
    torch.testing.assert_close(got, want, atol=0.0, rtol=0.0, equal_nan=True)
    number = ~want.isnan()
    assert torch.equal(torch.signbit(got[number]), torch.signbit(want[number])), (got, want)


@pytest.mark.parametrize("name", ["trunc", "floor", "ceil"])
def test_rounding_is_exact_with_zero_gradient(name: str) -> None:
    """torch.X and Tensor.X on halves, the 2^23 boundary, beyond int32, near float32's
    largest, subnormals, +-inf and NaN: torch's bits (signed zeros too); the gradient is 0
    everywhere, as torch's (not 1 where |x| >= 2^23)."""
    x = torch.tensor(_EDGES, requires_grad=True)
    ours_x = gt.tensor(_EDGES, requires_grad=True)
    _bits_match(_as_torch(getattr(gt, name)(ours_x)), getattr(torch, name)(x).detach())
    _bits_match(_as_torch(getattr(ours_x, name)()), getattr(x, name)().detach())
    finite = torch.tensor([v for v in _EDGES if math.isfinite(v)], requires_grad=True)
    _check(lambda T, x: getattr(T, name)(x), [finite], atol=0.0, rtol=0.0)
    (g,) = gt.autograd.grad(getattr(gt, name)(ours_x).sum(), [ours_x])
    assert g.tolist() == [0.0] * len(_EDGES)


def test_rounding_an_integer_tensor_keeps_it() -> None:
    t = gt.tensor([-3, 0, 7])
    for name in ("trunc", "floor", "ceil"):
        out = getattr(gt, name)(t)
        assert out.dtype is gt.int64 and out.tolist() == [-3, 0, 7]


def test_div_trunc_like_torch() -> None:
    """div(a, b, rounding_mode='trunc'): trunc(a / b) in float32 as torch, with its signed
    zeros, +-inf and NaN (x / 0), scalar and broadcast divisors; the gradient is 0 for both
    operands, as torch's."""
    a = torch.tensor([[7.0, -7.0, 0.5, -0.5, 1e30, 3.0, 0.0, -6.0]])
    b = torch.tensor([[2.0], [-2.0], [0.0], [3.0], [1e-10]])
    for ta, tb in [(a, b), (a, torch.tensor(-0.75)), (a.T, a.T * 0.5 + 0.25)]:
        want = torch.div(ta, tb, rounding_mode="trunc")
        _bits_match(_as_torch(gt.div(_ours(ta), _ours(tb), rounding_mode="trunc")), want)
        _bits_match(_as_torch(_ours(ta).div(_ours(tb), rounding_mode="trunc")), want)
    _bits_match(
        _as_torch(_ours(a).div(2.5, rounding_mode="trunc")), a.div(2.5, rounding_mode="trunc")
    )
    x, y = _randn(4, 5) * 10.0, _randn(4, 5, seed=3) + 3.0
    _check(lambda T, x, y: T.div(x, y, rounding_mode="trunc"), [x, y], atol=0.0, rtol=0.0)


def test_div_floor_and_integer_trunc_are_refused_by_name() -> None:
    """floor division (torch's fmod-based rule) and integer operands with a rounding mode are
    refused naming what; an unknown mode is torch's ValueError."""
    x = gt.tensor([7.0, -7.0])
    with pytest.raises(gt.Unsupported, match="rounding_mode='floor'"):
        x.div(2.0, rounding_mode="floor")
    with pytest.raises(gt.Unsupported, match="integer operands"):
        gt.tensor([7, -7]).div(2, rounding_mode="trunc")
    with pytest.raises(ValueError, match="rounding_mode"):
        x.div(2.0, rounding_mode="round")


def _near_integer_quotients() -> tuple[torch.Tensor, torch.Tensor]:
    """a = i * d rounded to float32, b = d: a / b within a few ulp of the integer i, where a
    division off by an ulp or two (GPU division may be 2.5 ulp off) truncates to i - 1."""
    steps = torch.arange(-300, 301, dtype=torch.float32)
    divisors = torch.tensor([0.1, 0.3, 0.7, 1.1, 3.0, 1.0 / 3.0, 0.2, 7.0, 1e-3, 49.0])
    a = (steps[:, None] * divisors[None, :]).flatten()
    return a, divisors.repeat(len(steps))


def test_div_trunc_at_near_integer_quotients() -> None:
    """torch's bits where a / b rounds to (or next to) an integer, on cpu-python."""
    a, b = _near_integer_quotients()
    got = _as_torch(gt.div(_ours(a), _ours(b), rounding_mode="trunc"))
    _bits_match(got, torch.div(a, b, rounding_mode="trunc"))


@pytest.mark.slow
def test_div_trunc_at_near_integer_quotients_on_wgpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same on wgpu (lavapipe here, admitted for the test; on a GPU this is where a
    division that is not correctly rounded would show: trunc(a / b) one off torch's)."""
    monkeypatch.setenv("GPULAB_ALLOW_SOFTWARE", "1")
    gt.set_backend("wgpu")
    a, b = _near_integer_quotients()
    got = _as_torch(gt.div(_ours(a), _ours(b), rounding_mode="trunc"))
    want = torch.div(a, b, rounding_mode="trunc")
    off = (got != want).nonzero().flatten()
    assert off.numel() == 0, [(a[i].item(), b[i].item(), got[i].item()) for i in off[:5]]
