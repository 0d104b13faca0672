"""torch dtypes of the subset: float32, int64 (held as int32 on the device), int32, bool.

A dtype object compares equal only to itself (as torch's). int64 exists because torch gives it
to every integer tensor (`torch.tensor([1, 2])`, `argmax`, class targets); its values live on
the device as int32 (the protocol has no 64-bit integers), so integers beyond +-2^31 wrap.
"""

from __future__ import annotations

from typing import Any

from ..functional.dtypes import torch_dtypes
from ._refuse import Unsupported


class dtype:
    """A torch dtype: `name` as torch prints it, `device` the protocol dtype it is held as."""

    __slots__ = ("device", "is_floating_point", "itemsize", "name")

    def __init__(self, name: str, device: str, itemsize: int) -> None:
        self.name = name
        self.device = device
        self.is_floating_point = device == "float32"
        self.itemsize = itemsize

    def __repr__(self) -> str:
        return f"torch.{self.name}"

    def __reduce__(self) -> str:
        return self.name


# one dtype object per row of the frontends' dtype map that torch takes
_MADE = {d.name: dtype(d.name, d.held_as, d.itemsize) for d in torch_dtypes()}
float32, int64, int32, bool_ = (_MADE[n] for n in ("float32", "int64", "int32", "bool"))

DTYPES = {alias: _MADE[d.name] for d in torch_dtypes() for alias in (d.name, *d.aliases)}
NUMPY_NAMES = {made: name for name, made in _MADE.items()}


def as_dtype(d: Any) -> dtype:
    """A dtype from a dtype, a torch dtype name (or PyTorch's own dtype object), or Python's
    float / int / bool; any other dtype (float64, uint8, ...) is refused by name (Unsupported),
    never read as float32."""
    if isinstance(d, dtype):
        return d
    if d is float:
        return float32
    if d is int:
        return int64
    if d is bool:
        return bool_
    name = str(d).removeprefix("torch.")
    if name in DTYPES:
        return DTYPES[name]
    raise Unsupported(
        f"gpulab.torch does not implement dtype {d!r}; supported: "
        "torch.float32, torch.int64 (held as int32), torch.int32, "
        "torch.bool"
    )


def promote(a: dtype, b: dtype) -> dtype:
    """torch's result dtype of two tensor operands (float wins, then the wider integer)."""
    if a is b:
        return a
    if a is float32 or b is float32:
        return float32
    if int64 in (a, b):
        return int64
    return int32
