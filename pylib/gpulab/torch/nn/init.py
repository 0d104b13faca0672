"""torch.nn.init of the subset: values from our stream (not torch's), set in place."""

from __future__ import annotations

import math
from typing import Any

from .. import creation
from .._refuse import refuse
from ..tensor import Tensor

__all__ = ["constant_", "normal_", "ones_", "uniform_", "xavier_uniform_", "zeros_"]


def _set(t: Tensor, values: Tensor) -> Tensor:
    t._value, t._node, t._rec = values.reshape(list(t.shape))._values(), None, None
    t._version += 1
    return t


def zeros_(t: Tensor) -> Tensor:
    return _set(t, creation.zeros_like(t))


def ones_(t: Tensor) -> Tensor:
    return _set(t, creation.ones_like(t))


def constant_(t: Tensor, val: float) -> Tensor:
    return _set(t, creation.full_like(t, val))


def uniform_(t: Tensor, a: float = 0.0, b: float = 1.0, generator: Any = None) -> Tensor:
    u = creation.rand(list(t.shape), generator=generator)
    return _set(t, creation.tensor([a + (b - a) * v for v in u.reshape(-1).tolist()]))


def normal_(t: Tensor, mean: float = 0.0, std: float = 1.0, generator: Any = None) -> Tensor:
    z = creation.randn(list(t.shape), generator=generator)
    return _set(t, creation.tensor([mean + std * v for v in z.reshape(-1).tolist()]))


def xavier_uniform_(t: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    fan_out, fan_in = t.shape[0], math.prod(t.shape[1:])
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(t, -bound, bound, generator)


def __getattr__(name: str) -> Any:
    raise refuse(f"torch.nn.init.{name}", "init")
