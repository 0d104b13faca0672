"""torch.var / torch.std and Tensor.var / Tensor.std read their arguments as PyTorch's
overloads do: a bool first argument is `unbiased` (never a dimension), then (dim, unbiased,
keepdim) and (dim, *, correction, keepdim); values against PyTorch CPU on cpu-python, and the
combinations PyTorch refuses are refused."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gpulab.torch as gt
import pytest
import torch

X = [[0.5, -1.25, 2.0, 0.0], [3.5, -0.75, -2.5, 1.5], [1.0, 0.25, -3.0, 2.25]]

# the same call for both modules: T is torch or gpulab.torch, x a float [3, 4]
CALLS: dict[str, Callable[[Any, Any], Any]] = {
    "fn_unbiased_true": lambda T, x: T.var(x, True),
    "fn_unbiased_false": lambda T, x: T.var(x, False),
    "method_unbiased_false": lambda T, x: x.var(False),
    "std_fn_unbiased_false": lambda T, x: T.std(x, False),
    "std_method_unbiased_true": lambda T, x: x.std(True),
    "unbiased_keyword_only": lambda T, x: T.var(x, unbiased=False),
    "dim_positional": lambda T, x: T.var(x, 1),
    "dim_unbiased_keepdim": lambda T, x: T.var(x, 0, False, True),
    "dim_tuple_unbiased": lambda T, x: x.std((0, 1), False),
    "dim_negative_keepdim": lambda T, x: x.var(-1, keepdim=True),
    "correction_zero": lambda T, x: T.var(x, dim=1, correction=0),
    "correction_two": lambda T, x: x.std(0, correction=2),
    "correction_all_dims": lambda T, x: T.std(x, correction=0),
    "correction_none_dim": lambda T, x: x.var(None, correction=3, keepdim=True),
    "dim_keyword_unbiased_keyword": lambda T, x: x.std(dim=0, unbiased=False),
}


@pytest.mark.parametrize("call", sorted(CALLS))
def test_variance_overloads_match_torch(call: str) -> None:
    want = CALLS[call](torch, torch.tensor(X))
    got = CALLS[call](gt, gt.tensor(X))
    assert tuple(got.shape) == tuple(want.shape), (got.shape, want.shape)
    torch.testing.assert_close(torch.tensor(got.tolist()), want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda T, x: T.var(x, 1, unbiased=True, correction=1), TypeError),
        (lambda T, x: x.std(True, keepdim=True), TypeError),
        (lambda T, x: x.var(0, 1), TypeError),  # unbiased must be a bool, not an int
    ],
)
def test_variance_combinations_torch_refuses_are_refused(
    call: Callable[[Any, Any], Any], error: type[Exception]
) -> None:
    with pytest.raises(error):
        call(torch, torch.tensor(X))
    with pytest.raises(error):
        call(gt, gt.tensor(X))


def test_variance_gradient_with_unbiased_positional() -> None:
    a = torch.tensor(X, requires_grad=True)
    b = gt.tensor(X, requires_grad=True)
    torch.std(a, False).backward()
    gt.std(b, False).backward()
    torch.testing.assert_close(torch.tensor(b.grad.tolist()), a.grad, rtol=1e-5, atol=1e-6)
