"""The docs' lists of what each frontend supports, from the op library's declarations
(gpulab.functional) and the ONNX operator table: a block between `<!-- gen:begin KEY -->` and
`<!-- gen:end KEY -->` is rewritten whole by `make gen` (docs/torch.md, docs/torch-backend.md,
docs/onnx.md); the rest of each page stays hand-written.

Only declarations are read (names are data), so this needs neither torch nor onnx installed.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable
from pathlib import Path

from gpulab import functional as F
from gpulab.codegen import tables

DOCS = [
    tables.ROOT / "docs/torch.md",
    tables.ROOT / "docs/torch-backend.md",
    tables.ROOT / "docs/onnx.md",
]
BLOCK = re.compile(r"(<!-- gen:begin ([\w-]+) -->\n).*?([ \t]*<!-- gen:end \2 -->)", re.DOTALL)


def _code(names: tuple[str, ...] | list[str], prefix: str = "") -> str:
    return " ".join(f"`{prefix}{n}`" for n in names)


def _doc(e: F.Entry) -> str:
    """The entry's name and first doc line, as one table cell."""
    return f"`{e.name}`: " + e.doc.replace("|", "\\|")


def _torch_table() -> str:
    head = "| op library (`gpulab.functional`) | `torch.X` | `Tensor.X` | `torch.nn.functional.X` |"
    rows = [head + " `torch.nn.X` |", "| --- | --- | --- | --- | --- |"]
    for e in F.entries():
        if not (e.torch or e.method or e.functional or e.nn):
            continue
        inplace = " (`inplace=`)" if e.inplace and e.functional else ""
        rows.append(
            f"| {_doc(e)} | {_code(e.torch)} | {_code(e.method)} "
            f"| {_code(e.functional)}{inplace} | {_code(e.nn)} |"
        )
    return "\n".join(rows)


def _aten_table() -> str:
    rows = ["| aten ops | op library (`gpulab.functional`) |", "| --- | --- |"]
    for e in F.entries():
        if e.aten:
            rows.append(f"| {_code(e.aten, 'aten.')} | {_doc(e)} |")
    return "\n".join(rows)


def _onnx_table() -> str:
    rows = [
        "| operator | opsets | op library (`gpulab.functional`) | attributes -> keywords |",
        "| --- | --- | --- | --- |",
    ]
    for op_type, ranges in sorted(F.onnx_names().items()):
        for spec, e in ranges:
            attrs = [
                f"{a} -> {kw} ({default!r})" if a != kw else f"{a} ({default!r})"
                for a, (kw, default) in spec.attrs.items()
            ] + [f"{kw} = {v!r}" for kw, v in spec.fixed.items()]
            rows.append(f"| {op_type} | {spec.opsets()} | {_doc(e)} | {', '.join(attrs) or '-'} |")
    return "\n".join(rows)


def _onnx_list() -> str:
    from gpulab.onnx.ops import OPS

    text = f"{len(OPS)} operators today: {', '.join(sorted(OPS))}."
    return textwrap.fill(text, 98, initial_indent="  ", subsequent_indent="  ")


BLOCKS: dict[str, Callable[[], str]] = {
    "torch-library": _torch_table,
    "aten-library": _aten_table,
    "onnx-library": _onnx_table,
    "onnx-operators": _onnx_list,
}


def render(text: str, name: str) -> str:
    def block(match: re.Match[str]) -> str:
        key = match.group(2)
        if key not in BLOCKS:
            raise KeyError(f"{name}: unknown generated block gen:begin {key}")
        return f"{match.group(1)}{BLOCKS[key]()}\n{match.group(3)}"

    return BLOCK.sub(block, text)


def outputs() -> dict[Path, bytes]:
    return {path: render(path.read_text(encoding="utf-8"), path.name).encode() for path in DOCS}
