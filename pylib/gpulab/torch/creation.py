"""Tensor factories: tensor, zeros, ones, full, arange, randn, rand, randint, *_like."""

from __future__ import annotations

import array
import math
import operator
from collections.abc import Sequence
from typing import Any

from .. import optable
from ..errors import GpuLabError
from ._dtype import as_dtype, bool_, dtype, float32, int32, int64
from ._random import Generator, pick
from .tensor import Tensor, _fill_value

INT32_RANGE = (-(2**31), 2**31 - 1)
INT64_RANGE = (-(2**63), 2**63 - 1)


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


# -- sizes: torch's rules and errors, then the protocol's element limit ------------------------


def _index(value: Any) -> int | None:
    """An int-like size entry (int, numpy integer, a 0-d integer tensor) as an int; None for
    anything else (float, str, bool: torch refuses a bool size)."""
    if isinstance(value, bool):
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


def _sequence_size(fn: str, size: Any, position: int = 1) -> list[int]:
    """A size given as one sequence (`full((2, 3), x)`, `randint(0, 5, (2,))`)."""
    if not isinstance(size, (list, tuple)):
        raise TypeError(
            f"{fn}(): argument 'size' (position {position}) must be tuple of ints, "
            f"not {type(size).__name__}"
        )
    return _entries(fn, size)


def _entries(fn: str, items: Sequence[Any]) -> list[int]:
    dims = []
    for pos, item in enumerate(items, start=1):
        n = _index(item)
        if n is None:
            raise TypeError(
                f"{fn}(): argument 'size' failed to unpack the object at pos {pos} with error "
                f'"type must be tuple of ints,but got {type(item).__name__}"'
            )
        if not INT64_RANGE[0] <= n <= INT64_RANGE[1]:  # torch's first line, word for word
            raise TypeError(
                f"{fn}(): argument 'size' failed to unpack the object at pos {pos} with error "
                f'"Overflow when unpacking long long'
            )
        dims.append(n)
    return dims


def _size_args(fn: str, size: Sequence[Any]) -> list[int]:
    """A size given as varargs or one sequence (`zeros(2, 3)`, `zeros((2, 3))`)."""
    if len(size) == 1 and isinstance(size[0], (list, tuple)):
        return _entries(fn, size[0])
    if len(size) == 1 and _index(size[0]) is None:
        raise TypeError(
            f"{fn}(): argument 'size' (position 1) must be tuple of ints, "
            f"not {type(size[0]).__name__}"
        )
    return _entries(fn, size)


def checked_size(fn: str, dims: Sequence[int]) -> list[int]:
    """torch's refusal of a negative dimension (RuntimeError, its message), then LIMIT when
    the tensor would hold more than the protocol's max_elements: checked before anything of
    that size is allocated."""
    dims = list(dims)
    bad = next((d for d in dims if d < 0), None)
    if bad is not None:
        if fn == "zeros":
            raise RuntimeError(f"{fn}: Dimension size must be non-negative.")
        raise RuntimeError(f"Trying to create tensor with negative dimension {bad}: {dims}")
    _limit(fn, dims, math.prod(dims))
    return dims


def size_of(fn: str, dims: Sequence[Any]) -> list[int]:
    """A module's parameter shape checked as torch's `fn` (e.g. "empty") checks its size."""
    return checked_size(fn, _entries(fn, dims))


def _limit(fn: str, dims: Sequence[int], n: int) -> None:
    limit = int(optable.limits()["max_elements"])
    if n > limit:
        raise GpuLabError(
            "LIMIT",
            f"{fn}(): size {list(dims)} has {n} elements, more than the protocol's "
            f"max_elements {limit}",
        )


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
    shape = checked_size("full", _sequence_size("full", size))
    return _filled(shape, fill_value, dt, requires_grad)


def _filled(shape: list[int], fill_value: Any, dt: dtype, requires_grad: bool) -> Tensor:
    return Tensor._leaf_of(_fill_value(fill_value, shape, dt), shape, dt, requires_grad)


def _filled_like_torch(
    fn: str, size: Sequence[Any], value: int, dtype: Any, requires_grad: bool
) -> Tensor:
    shape = checked_size(fn, _size_args(fn, size))
    dt = as_dtype(dtype) if dtype is not None else float32
    return _filled(shape, float(value) if dt is float32 else value, dt, requires_grad)


def zeros(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    return _filled_like_torch("zeros", size, 0, dtype, requires_grad)


def ones(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    return _filled_like_torch("ones", size, 1, dtype, requires_grad)


def empty(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    return _filled_like_torch("empty", size, 0, dtype, requires_grad)


def zeros_like(
    input: Tensor,
    *,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    memory_format: Any = None,
) -> Tensor:
    """device=, layout= and memory_format= are accepted and change nothing (one device, dense
    row-major values)."""
    return full(list(input.shape), 0, dtype or input.dtype, requires_grad=requires_grad)


def ones_like(
    input: Tensor,
    *,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    memory_format: Any = None,
) -> Tensor:
    """device=, layout= and memory_format= are accepted and change nothing (one device, dense
    row-major values)."""
    return full(list(input.shape), 1, dtype or input.dtype, requires_grad=requires_grad)


def full_like(
    input: Tensor,
    fill_value: Any,
    *,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    memory_format: Any = None,
) -> Tensor:
    return full(list(input.shape), fill_value, dtype or input.dtype, requires_grad=requires_grad)


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
        raise RuntimeError("step must be nonzero")
    if not all(math.isfinite(v) for v in (start, end)):
        raise RuntimeError(f"unsupported range: {start} -> {end}")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    n = max(0, math.ceil((end - start) / step))
    _limit("arange", [n], n)
    is_int = all(isinstance(v, int) and not isinstance(v, bool) for v in (start, end, step))
    dt = as_dtype(dtype) if dtype is not None else (int64 if is_int else float32)
    values = [start + i * step for i in range(n)]
    return Tensor._leaf_of(pack(values, dt), [n], dt, requires_grad)


def linspace(
    start: Any,
    end: Any,
    steps: int,
    *,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """torch's values: start + i * step for the first half, end - (steps - 1 - i) * step for
    the second (so both ends are exact), computed in float64 and rounded once; start and end
    may be 0-dim tensors."""
    start, end = (v.item() if isinstance(v, Tensor) else v for v in (start, end))
    if _index(steps) is None:
        raise TypeError(
            f"linspace(): argument 'steps' (position 3) must be int, not {type(steps).__name__}"
        )
    steps = operator.index(steps)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    _limit("linspace", [steps], steps)
    dt = as_dtype(dtype) if dtype is not None else float32
    if steps == 1:
        values = [start]
    else:
        step = (end - start) / (steps - 1)
        half = steps // 2
        values = [
            start + i * step if i < half else end - (steps - 1 - i) * step for i in range(steps)
        ]
    if not dt.is_floating_point:  # torch truncates toward zero
        values = [int(v) for v in values]
    return tensor(values, dtype=dt, requires_grad=requires_grad).reshape(steps)


def eye(
    n: int,
    m: int | None = None,
    *,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    m = n if m is None else m
    for name, position, v in (("n", 1, n), ("m", 2, m)):
        if _index(v) is None:
            raise TypeError(
                f"eye(): argument '{name}' (position {position}) must be int, "
                f"not {type(v).__name__}"
            )
        if operator.index(v) < 0:
            raise RuntimeError(f"{name} must be greater or equal to 0, got {v}")
    n, m = operator.index(n), operator.index(m)
    _limit("eye", [n, m], n * m)
    dt = as_dtype(dtype) if dtype is not None else float32
    flat = [0] * (n * m)
    for i in range(min(n, m)):
        flat[i * m + i] = 1
    return Tensor._leaf_of(pack(flat, dt), [n, m], dt, requires_grad)


def randn(
    *size: Any,
    generator: Generator | None = None,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Standard normals from our counter-hash stream (gpulab.torch._random: not torch's)."""
    shape = checked_size("randn", _size_args("randn", size))
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
    shape = checked_size("rand", _size_args("rand", size))
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
    shape = checked_size("randint", _sequence_size("randint", size, 3))
    if low >= high:
        raise RuntimeError(
            f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}"
        )
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


def _legacy_constructor(name: str, dt: dtype) -> Any:
    """torch.FloatTensor and its kin, the constructors older model files call: data (a
    sequence, a numpy array, a tensor) gives `tensor(data, dtype)`; sizes give an
    uninitialised tensor of that dtype (here zero-filled, as `empty`)."""

    def construct(*args: Any, device: Any = None) -> Tensor:
        sizes = len(args) != 1 or isinstance(args[0], int) or type(args[0]).__name__ == "Size"
        return empty(*args, dtype=dt) if sizes else tensor(args[0], dtype=dt)

    construct.__name__ = construct.__qualname__ = name
    return construct


FloatTensor = _legacy_constructor("FloatTensor", float32)
LongTensor = _legacy_constructor("LongTensor", int64)
IntTensor = _legacy_constructor("IntTensor", int32)
BoolTensor = _legacy_constructor("BoolTensor", bool_)
