"""clamp (protocol v3) at float32 and int32 (family custom, as map_bits.wgsl: two optional
bounds, ceil/floor-ed and saturated at int32); abs and square are generated map1 ops (maps.py).
"""

from __future__ import annotations

import numpy as np

from .. import clamp_bounds
from ..protocol import CheckedNode
from .kernels import register

V3 = ("float32", "int32")


@register("clamp", dtypes=V3)
def _clamp(node: CheckedNode, args: list[np.ndarray]) -> np.ndarray:
    a = args[0]
    lo, hi = (a.dtype.type(v) for v in clamp_bounds.bounds(node.attrs, str(a.dtype)))
    # comparisons, not np.clip: NaN stays, a value equal to a bound is kept (-0 stays -0)
    a = np.where(a < lo, lo, a)
    a = np.where(a > hi, hi, a)
    return np.asarray(a, dtype=args[0].dtype).reshape(node.shape)  # a 0-d result stays 0-d
