"""Tensor factories: tensor, zeros, ones, full, arange, randn, rand, randint, *_like."""

from __future__ import annotations

import array
import math
from collections.abc import Sequence
from typing import Any

from ._dtype import as_dtype, bool_, dtype, float32, int32, int64
from ._random import Generator, pick
from .tensor import Tensor, _fill_value

INT32_RANGE = (-(2**31), 2**31 - 1)


def _flatten(data: Any) -> tuple[list[int], list[Any]]:
    if isinstance(data, (list, tuple)):
        if not data:
            return [0], []
        parts = [_flatten(d) for d in data]
        shape = parts[0][0]
        if any(p[0] != shape for p in parts):
            raise ValueError(
                f"expected sequence of length {shape[0] if shape else 0} at "
                "dim 1 (a ragged nested list)"
            )
        return [len(data), *shape], [v for p in parts for v in p[1]]
    if isinstance(data, Tensor):
        return list(data.shape), data.reshape(-1).tolist() if data.ndim else [data.item()]
    return [], [data]


def _infer(flat: list[Any]) -> dtype:
    if flat and all(isinstance(v, bool) for v in flat):
        return bool_
    if all(isinstance(v, int) for v in flat) and flat:
        return int64
    return float32


def pack(flat: Sequence[Any], dt: dtype) -> Any:
    """Flat values as the storage of dtype (array('f') / array('i') / list of bools)."""
    if dt is float32:
        return array.array("f", [float(v) for v in flat])
    if dt is bool_:
        return [bool(v) for v in flat]
    ints = [int(v) for v in flat]
    lo, hi = INT32_RANGE
    bad = next((v for v in ints if not lo <= v <= hi), None)
    if bad is not None:
        raise OverflowError(
            f"gpulab.torch holds {dt.name} as int32 on the device: {bad} is out of the int32 range"
        )
    return array.array("i", ints)


def tensor(data: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A leaf tensor from a number, (nested) list, numpy array or torch tensor (anything with
    `tolist()`), or one of ours (copied)."""
    if hasattr(data, "tolist") and not isinstance(data, Tensor):
        src_dtype = str(getattr(data, "dtype", ""))
        data = data.tolist()
        if dtype is None and "float" in src_dtype and not isinstance(data, float):
            dtype = float32
    shape, flat = _flatten(data)
    dt = as_dtype(dtype) if dtype is not None else _infer(flat)
    if requires_grad and not dt.is_floating_point:
        raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
    return Tensor._leaf_of(pack(flat, dt), shape, dt, requires_grad)


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> Tensor:
    if isinstance(data, Tensor) and (dtype is None or as_dtype(dtype) is data.dtype):
        return data
    return tensor(data, dtype=dtype)


def from_numpy(arr: Any) -> Tensor:
    return tensor(arr)


def _shape(size: Sequence[Any]) -> list[int]:
    if len(size) == 1 and isinstance(size[0], (list, tuple)):
        return [int(n) for n in size[0]]
    return [int(n) for n in size]


def full(
    size: Sequence[int],
    fill_value: Any,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    dt = (
        as_dtype(dtype)
        if dtype is not None
        else (
            bool_
            if isinstance(fill_value, bool)
            else int64
            if isinstance(fill_value, int)
            else float32
        )
    )
    shape = [int(n) for n in size]
    return Tensor._leaf_of(_fill_value(fill_value, shape, dt), shape, dt, requires_grad)


def zeros(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    return full(_shape(size), 0.0 if dtype is None else 0, dtype, requires_grad=requires_grad)


def ones(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    return full(_shape(size), 1.0 if dtype is None else 1, dtype, requires_grad=requires_grad)


def empty(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    return zeros(*size, dtype=dtype, requires_grad=requires_grad)


def zeros_like(t: Tensor, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    return full(list(t.shape), 0, dtype or t.dtype, requires_grad=requires_grad)


def ones_like(t: Tensor, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    return full(list(t.shape), 1, dtype or t.dtype, requires_grad=requires_grad)


def full_like(t: Tensor, fill_value: Any, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    return full(list(t.shape), fill_value, dtype or t.dtype, requires_grad=requires_grad)


def arange(
    start: Any,
    end: Any = None,
    step: Any = 1,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("arange: step must be nonzero")
    n = max(0, math.ceil((end - start) / step))
    is_int = all(isinstance(v, int) and not isinstance(v, bool) for v in (start, end, step))
    dt = as_dtype(dtype) if dtype is not None else (int64 if is_int else float32)
    values = [start + i * step for i in range(n)]
    return Tensor._leaf_of(pack(values, dt), [n], dt, requires_grad)


def linspace(start: float, end: float, steps: int, dtype: Any = None) -> Tensor:
    if steps == 1:
        return tensor([float(start)])
    step = (end - start) / (steps - 1)
    return tensor([start + i * step for i in range(steps)], dtype=dtype or float32)


def eye(n: int, m: int | None = None, dtype: Any = None) -> Tensor:
    m = n if m is None else m
    return tensor(
        [[1.0 if i == j else 0.0 for j in range(m)] for i in range(n)], dtype=dtype or float32
    )


def randn(
    *size: Any,
    generator: Generator | None = None,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Standard normals from our counter-hash stream (gpulab.torch._random: not torch's)."""
    shape = _shape(size)
    values = pick(generator).normals(math.prod(shape))
    return Tensor._leaf_of(pack(values, float32), shape, float32, requires_grad)


def rand(
    *size: Any,
    generator: Generator | None = None,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Uniforms in [0, 1) from our counter-hash stream (not torch's)."""
    shape = _shape(size)
    values = pick(generator).uniforms(math.prod(shape))
    return Tensor._leaf_of(pack(values, float32), shape, float32, requires_grad)


def randint(
    low: int,
    high: int | None = None,
    size: Sequence[int] = (),
    *,
    generator: Generator | None = None,
    dtype: Any = None,
    device: Any = None,
) -> Tensor:
    """Integers in [low, high) from our stream: floor(u * (high - low)) + low."""
    if high is None:
        low, high = 0, low
    shape = [int(n) for n in size]
    us = pick(generator).uniforms(math.prod(shape))
    values = [low + min(int(u * (high - low)), high - low - 1) for u in us]
    dt = as_dtype(dtype) if dtype is not None else int64
    return Tensor._leaf_of(pack(values, dt), shape, dt)


def randn_like(t: Tensor, generator: Generator | None = None) -> Tensor:
    return randn(list(t.shape), generator=generator)


def rand_like(t: Tensor, generator: Generator | None = None) -> Tensor:
    return rand(list(t.shape), generator=generator)


def is_tensor(x: Any) -> bool:
    return isinstance(x, Tensor)


def numel(t: Tensor) -> int:
    return t.numel()


__all__ = [
    "arange",
    "as_tensor",
    "empty",
    "eye",
    "from_numpy",
    "full",
    "full_like",
    "int32",
    "is_tensor",
    "linspace",
    "ones",
    "ones_like",
    "rand",
    "rand_like",
    "randint",
    "randn",
    "randn_like",
    "tensor",
    "zeros",
    "zeros_like",
]
