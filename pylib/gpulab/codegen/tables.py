"""The two tables the generators read: the op table and the kernel table (build time only).

backends-js/src/ops.json says what an op is (family, operands, types); kernels/ops.json says
how each backend computes a map1/map2/reduce op (code, an expression per language). This module
joins them: which ops of a family a kernel instance holds, at which dtype, with which text.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]  # the checkout: pylib/gpulab/codegen/tables.py
OP_TABLE = ROOT / "backends-js/src/ops.json"
KERNEL_TABLE = ROOT / "kernels/ops.json"

# A dtype's name in each kernel language.
TYPE_NAMES = {
    "wgsl": {"float32": "f32", "int32": "i32"},
    "glsl": {"float32": "float", "int32": "int"},
    "rust": {"float32": "f32", "int32": "i32"},
}


@cache
def op_table() -> dict[str, Any]:
    return json.loads(OP_TABLE.read_text(encoding="utf-8"))


@cache
def kernel_table() -> dict[str, Any]:
    return json.loads(KERNEL_TABLE.read_text(encoding="utf-8"))


def dtypes_of(op: str) -> list[str]:
    """The dtypes an op's first operand may have (its type variable's list in the op table)."""
    row = op_table()["ops"][op]
    var = row["operand_types"][row["operands"][0]]
    return list(row["types"][var])


def family_ops(family: str, dtype: str | None = None) -> list[tuple[str, dict[str, Any]]]:
    """(op, kernel row) of a family, by code; only those allowing `dtype` when given."""
    rows = [(op, row) for op, row in kernel_table()["ops"].items() if row["family"] == family]
    if dtype is not None:
        rows = [(op, row) for op, row in rows if dtype in dtypes_of(op)]
    return sorted(rows, key=lambda item: item[1]["code"])


def family_dtypes(family: str) -> list[str]:
    """The dtypes at which a family has at least one op, in the kernel table's order."""
    return [d for d in kernel_table()["dtype_suffix"] if family_ops(family, d)]


def expr(
    row: dict[str, Any], lang: str, dtype: str, field: str | None = None, optional: bool = False
) -> Any:
    """An op's text in a language at a dtype: a string for every dtype, or {dtype: text};
    None (JSON null) where that language has no kernel at that dtype (only when `optional`)."""
    value = row[field][lang] if field else row[lang]
    if isinstance(value, dict):
        if dtype not in value:
            raise KeyError(
                f"kernels/ops.json: no {lang} text for {dtype} "
                f"({field or 'expression'} of code {row['code']})"
            )
        value = value[dtype]
    if value is None and not optional:
        raise KeyError(f"kernels/ops.json: {lang} has no kernel at {dtype} (code {row['code']})")
    return value


def kernel_name(family: str, dtype: str) -> str:
    """The WGSL kernel (file stem) of a family at a dtype: `unary`, `unary_i32`, ..."""
    table = kernel_table()
    return table["families"][family]["wgsl"] + table["dtype_suffix"][dtype]


def check() -> None:
    """Every kernel row names an op of the op table of the same family; codes are unique."""
    ops = op_table()["ops"]
    seen: dict[tuple[str, int], str] = {}
    for op, row in kernel_table()["ops"].items():
        assert op in ops, f"kernels/ops.json: {op} is not in the op table"
        assert ops[op]["family"] == row["family"], f"kernels/ops.json: {op}'s family differs"
        key = (row["family"], row["code"])
        assert key not in seen, f"kernels/ops.json: {op} and {seen[key]} share code {key}"
        seen[key] = op
    for op, row in ops.items():
        if row["family"] in kernel_table()["families"]:
            assert op in kernel_table()["ops"], f"kernels/ops.json has no row for {op}"
