"""square, clamp (protocol v3) at float32 and int32 (family custom, as map_bits.wgsl; abs is
a generated map1 op, maps.py).

numpy's int32 arithmetic wraps as two's complement (squares modulo 2^32), which is what the
protocol says.
"""

from __future__ import annotations

import numpy as np

from .. import clamp_bounds
from ..protocol import CheckedNode
from .kernels import register

V3 = ("float32", "int32")


@register("square", dtypes=V3)
def _square(node: CheckedNode, args: list[np.ndarray]) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.multiply(args[0], args[0])  # dtype kept: float32 one rounding, int32 wraps


@register("clamp", dtypes=V3)
def _clamp(node: CheckedNode, args: list[np.ndarray]) -> np.ndarray:
    a = args[0]
    lo, hi = (a.dtype.type(v) for v in clamp_bounds.bounds(node.attrs, str(a.dtype)))
    # comparisons, not np.clip: NaN stays, a value equal to a bound is kept (-0 stays -0)
    a = np.where(a < lo, lo, a)
    a = np.where(a > hi, hi, a)
    return np.asarray(a, dtype=args[0].dtype).reshape(node.shape)  # a 0-d result stays 0-d
