"""Docs rows that list ops of the kernel table: each such markdown line ends its last cell with
`<!-- gen:KEY -->` (invisible when rendered; a table row stays one line), and `make gen`
rewrites the whole line from the table. The other lines of the docs stay hand-written.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from gpulab.codegen import tables

DOCS = [
    tables.ROOT / "docs/plan.md",
    tables.ROOT / "docs/webgl2.md",
    tables.ROOT / "kernels/wasm/README.md",
]
MARK = re.compile(r"^.*<!-- gen:([\w-]+) -->.*$", re.MULTILINE)


def _ops(family: str) -> list[str]:
    return [op for op, _ in tables.family_ops(family)]


def _codes(family: str) -> str:
    return ", ".join(f"{row['code']} {op}" for op, row in tables.family_ops(family))


def _rust(kind: str) -> list[str]:
    """map ops whose wasm export has one calling form (pylib/gpulab/codegen/rust.py, the JS glue)."""
    out = []
    for family in ("map1", "map2"):
        for op, row in tables.family_ops(family):
            text = tables.expr(row, "rust", "float32")
            form = (
                "unary"
                if family == "map1"
                else "bcast"
                if text.startswith("simd(")
                else "scalar"
                if row.get("scalar")
                else "same"
            )
            if form == kind:
                out.append(op)
    return out


def _int_note(family: str) -> str:
    """The webgl2 defines of an int32 node, where the family has ops at int32."""
    ops = [
        op
        for op, row in tables.family_ops(family, "int32")
        if tables.expr(row, "glsl", "int32", optional=True) is not None
    ]
    if not ops:
        return ""
    return (
        f"; at int32 ({', '.join(ops)}) also `A_INT` + `INT_KERNEL`: `R32I` textures read "
        "by `isampler2D`, an `R32I` target"
    )


def _kernels(family: str) -> str:
    names = [f"`{tables.kernel_name(family, d)}`" for d in tables.family_dtypes(family)]
    return " / ".join(names)


ROWS: dict[str, Callable[[], str]] = {
    "plan-map1": lambda: (
        f"| {' '.join(_ops('map1'))} | {_kernels('map1')} | `WG`, `OP` = {_codes('map1')} | n "
        "| a, out | ceil(n/64)"
    ),
    "plan-map2": lambda: (
        f"| {' '.join(_ops('map2'))} | {_kernels('map2')} (none for an `adam_m` / `adam_v` that "
        f"an `adam_step` writes, below) | `WG`, `OP` = {_codes('map2')} | n, same (1 when both "
        "operands have the result's shape), scalar f32 (the kernel table's `scalar`: "
        + ", ".join(f"`{r['scalar']}`" for _, r in tables.family_ops("map2") if r.get("scalar"))
        + "; else 0), 0, out4 (4), a broadcast strides (4), b broadcast strides (4) | a, b, out "
        "| ceil(n/64)"
    ),
    "plan-reduce": lambda: (
        f"| {' '.join(_ops('reduce'))} | {_kernels('reduce')} | `OP` = {_codes('reduce')} "
        "| size, inner, rows = outer·inner, 0 | a, out | rows"
    ),
    "webgl2-map2": lambda: (
        f"| {', '.join(_ops('map2'))} | `binary.glsl` (`OP_x`, `BROADCAST` when an operand's "
        f"shape differs{_int_note('map2')}) | 1 (adam_m/adam_v: 0 when absorbed)"
    ),
    "webgl2-map1": lambda: (
        f"| {', '.join(_ops('map1'))} | `unary.glsl` (`OP_x`{_int_note('map1')}) | 1"
    ),
    "wasm-unary": lambda: f"| `{' '.join(_rust('unary'))}` | `(a, out, n)`",
    "wasm-bcast": lambda: (
        f"| `{' '.join(_rust('bcast'))}` | `(a, b, out, desc)`; `desc` = u32 `dims[4], "
        "a_strides[4], b_strides[4]` (0 on broadcast axes)"
    ),
    "wasm-same": lambda: f"| `{' '.join(_rust('same'))}` | `(a, b, out, n)`",
    "wasm-scalar": lambda: f"| `{' '.join(_rust('scalar'))}` | `(a, b, out, n, attr: f64)`",
}


def render(text: str, name: str) -> str:
    def line(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in ROWS:
            raise KeyError(f"{name}: unknown generated row gen:{key}")
        return f"{ROWS[key]()} <!-- gen:{key} --> |"

    return MARK.sub(line, text)


def outputs() -> dict[Path, bytes]:
    return {path: render(path.read_text(encoding="utf-8"), path.name).encode() for path in DOCS}
