"""torch.nn.utils of the subset: clip_grad_norm_ (2-norm and inf-norm) and clip_grad_value_,
recorded like any operation (no run: the clipped gradients are pending until step())."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from .. import creation
from .._grad_mode import no_grad
from .._refuse import refuse
from ..tensor import Tensor, stack


def _grads(parameters: Any) -> list[Tensor]:
    ps = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    return [p for p in ps if p.grad is not None]


def clip_grad_norm_(
    parameters: Iterable[Tensor] | Tensor,
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """torch's: total = ||(||g||_p for each g)||_p; every g *= min(max_norm / (total + 1e-6),
    1). Returns the total norm (a 0-dim tensor)."""
    if error_if_nonfinite:
        raise refuse("clip_grad_norm_(error_if_nonfinite=True) (a data-dependent error)", "nn")
    ps = _grads(parameters)
    if not ps:
        return creation.tensor(0.0)
    with no_grad():
        if norm_type == math.inf:
            norms = [p.grad.abs().max() for p in ps]
            total = stack(norms).max()
        elif norm_type == 2.0:
            norms = [(p.grad * p.grad).sum().sqrt() for p in ps]
            total = (stack(norms) ** 2).sum().sqrt()
        else:
            raise refuse(f"clip_grad_norm_(norm_type={norm_type}) (2 and inf only)", "nn")
        coef = (max_norm / (total + 1e-6)).clamp(max=1.0)
        for p in ps:
            p.grad = p.grad * coef
    return total


def clip_grad_value_(
    parameters: Iterable[Tensor] | Tensor, clip_value: float, foreach: bool | None = None
) -> None:
    with no_grad():
        for p in _grads(parameters):
            p.grad = p.grad.clamp(-clip_value, clip_value)


def __getattr__(name: str) -> Any:
    raise refuse(f"torch.nn.utils.{name}", "nn")
