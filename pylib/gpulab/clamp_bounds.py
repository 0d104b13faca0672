"""clamp's bounds (docs/protocol.md "Numerics"), twin of backends-js/src/clamp-bounds.mjs.

float32: min / max as they are (no bound: -inf / +inf, which no comparison passes); int32:
ceil(min) / floor(max) saturated to the int32 range (no bound: INT32_MIN / INT32_MAX). `words`
gives them as the unsigned 32-bit words the WGSL kernel compares (the plan-equality test checks
both planners give the same). Pure Python: the planner runs in Pyodide too.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping
from typing import Any

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def bounds(attrs: Mapping[str, Any], dtype: str) -> tuple[float, float]:
    lo, hi = attrs.get("min"), attrs.get("max")
    if dtype == "float32":
        return (-math.inf if lo is None else float(lo)), (math.inf if hi is None else float(hi))
    lo_i = INT32_MIN if lo is None else min(max(math.ceil(lo), INT32_MIN), INT32_MAX)
    hi_i = INT32_MAX if hi is None else min(max(math.floor(hi), INT32_MIN), INT32_MAX)
    return lo_i, hi_i


def words(attrs: Mapping[str, Any], dtype: str) -> tuple[int, int]:
    lo, hi = bounds(attrs, dtype)
    if dtype == "float32":
        return tuple(struct.unpack("<2I", struct.pack("<2f", lo, hi)))  # type: ignore[return-value]
    return int(lo) & 0xFFFFFFFF, int(hi) & 0xFFFFFFFF
