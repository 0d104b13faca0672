"""The kernel table: gpulab/kernels/ops.json, a byte copy of kernels/ops.json (`make gen`).

How the map1, map2 and reduce families compute each op: the native planner reads the OP codes
here, as the JS planner does through backends-js/src/kernel-table.mjs (the twin).
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any


@lru_cache(maxsize=1)
def load() -> dict[str, Any]:
    """The parsed kernel table (cached; treat it as read-only)."""
    path = resources.files("gpulab").joinpath("kernels", "ops.json")
    return json.loads(path.read_text(encoding="utf-8"))


def family_ops(family: str) -> list[str]:
    """The ops of a family ("map1", "map2", "reduce"), by OP code."""
    rows = [(row["code"], op) for op, row in load()["ops"].items() if row["family"] == family]
    return [op for _, op in sorted(rows)]


def family_codes(family: str) -> dict[str, int]:
    """op -> its OP code, for one family."""
    return {op: int(load()["ops"][op]["code"]) for op in family_ops(family)}


def scalar_attrs(family: str) -> dict[str, str]:
    """op -> the float attribute it reads as its scalar, for the ops of a family with one."""
    ops = load()["ops"]
    return {op: ops[op]["scalar"] for op in family_ops(family) if ops[op].get("scalar")}


def family_kernel(family: str, dtype: str = "float32") -> str:
    """The WGSL kernel of a family at a dtype: "unary", "unary_i32", ..."""
    table = load()
    if dtype not in table["dtype_suffix"]:
        raise ValueError(f"kernels/ops.json: no kernels at {dtype}")
    return table["families"][family]["wgsl"] + table["dtype_suffix"][dtype]
