"""The kernel table: gpulab/kernels/ops.json, a link to kernels/ops.json (a copy in the wheel).

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


def fusable_map1() -> dict[str, int]:
    """map1 ops the planners may fold into a map2 dispatch (kernel table `fuse`: selection or
    sign only, so fusing changes no bit), op -> its OP code (twin of kernel-table.mjs)."""
    return {op: code for op, code in family_codes("map1").items() if load()["ops"][op].get("fuse")}


def epilogue_map2() -> dict[str, int]:
    """map2 ops a matmul kernel may apply to its finished sum (kernel table `epilogue`: the
    planners fold such a node reading a matmul into its dispatch), op -> its OP code (twin of
    kernel-table.mjs epilogueMap2)."""
    ops = load()["ops"]
    return {op: code for op, code in family_codes("map2").items() if ops[op].get("epilogue")}


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


def plain_ops(family: str, shape_rule: str | None = None) -> list[str]:
    """The ops of a family that take no attributes and accept float32 operands, by OP code
    (only those with `shape_rule` when given): what the random-graph tests draw from, so a new
    row of the kernel table is covered without editing them."""
    from . import optable

    ops = optable.ops()
    out = []
    for op in family_ops(family):
        row = ops[op]
        first = row["operand_types"][row["operands"][0]]
        if row["attrs"] or "float32" not in row["types"][first]:
            continue
        if shape_rule is None or row["shape_rule"] == shape_rule:
            out.append(op)
    return out


def graph_version(nodes: list[dict[str, Any]], floor: int = 2) -> int:
    """The lowest version a graph of these nodes may declare: the largest `since` of its ops,
    at least `floor` (the random-graph tests use version-2 features such as broadcasting)."""
    from . import optable

    return max([floor, *(int(optable.ops()[n["op"]]["since"]) for n in nodes)])


def lang_dtypes(op: str, lang: str) -> list[str]:
    """The dtypes at which one kernel language ("wgsl", "glsl", "rust", "js", "np") computes a
    map/reduce op: the op table's dtypes that have kernels and a non-null text (twin of
    kernel-table.mjs langDtypes). The wgpu executor's supports() can read "wgsl" here."""
    from . import optable

    table = load()
    row = table["ops"][op]
    texts = row["combine"][lang] if row["family"] == "reduce" else row[lang]
    spec = optable.ops()[op]
    dtypes = spec["types"][spec["operand_types"][spec["operands"][0]]]
    out = []
    for dtype in dtypes:
        text = texts.get(dtype) if isinstance(texts, dict) else texts
        if dtype in table["dtype_suffix"] and text is not None:
            out.append(dtype)
    return out
