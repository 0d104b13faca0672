"""The student `wgsl` op and its `wgsl_output` projection (protocol version 5): the
validator's part, twin of backends-js/src/wgsl-op.mjs (same checks, same order, same words).

Attribute checkers (source size, results, workgroup counts, params), the node rules for shapes
and dtypes, and the binding convention (docs/playground.md) checked against the source by the
scanner (wgsl_scan.py) before any device work.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from . import optable
from .dtypes import DTYPES
from .errors import GpuLabError
from .wgsl_bounds import check_bounds, refusal_message
from .wgsl_scan import scan_wgsl

WGSL_ELEMENT = {"float32": "f32", "int32": "i32", "uint32": "u32", "bool": "u32"}
SCALARS = ("f32", "i32", "u32")
NAME = re.compile("[A-Za-z_][A-Za-z0-9_]*")


def _show(value: Any) -> str:
    """A value as the JS twin shows it (JSON, cut to 60 characters)."""
    try:
        s = json.dumps(value, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):
        s = type(value).__name__
    return s if len(s) <= 60 else s[:57] + "..."


def _fail(code: str, where: str, node: int | None, detail: str) -> GpuLabError:
    return GpuLabError(code, f"{where}: {detail}", node)


def _is_int(v: Any) -> bool:
    return (isinstance(v, int) and not isinstance(v, bool)) or (
        isinstance(v, float) and math.isfinite(v) and v.is_integer()
    )


def _lim(name: str) -> int:
    return int(optable.limits()[name])


def check_source(value: Any, where: str, node: int | None, _: dict) -> str:
    if not isinstance(value, str) or not value:
        raise _fail(
            "VALIDATION",
            where,
            node,
            f"source must be a non-empty string of WGSL, got {_show(value)}",
        )
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > _lim("max_wgsl_bytes"):
        raise _fail(
            "LIMIT",
            where,
            node,
            f"source is {size} bytes of UTF-8, more than max_wgsl_bytes {_lim('max_wgsl_bytes')}",
        )
    return value


def _check_shape(value: Any, where: str, node: int | None, what: str) -> list[int]:
    if not isinstance(value, (list, tuple)) or not all(_is_int(d) and d >= 1 for d in value):
        raise _fail(
            "VALIDATION", where, node, f"{what} must be a list of integers >= 1, got {_show(value)}"
        )
    if len(value) > _lim("max_rank"):
        raise _fail(
            "LIMIT",
            where,
            node,
            f"{what} {_show(value)} has rank {len(value)}, more than max_rank {_lim('max_rank')}",
        )
    count = math.prod(int(d) for d in value)
    if count > _lim("max_elements"):
        raise _fail(
            "LIMIT",
            where,
            node,
            f"{what} {_show(value)} has {count} elements, more "
            f"than max_elements {_lim('max_elements')}",
        )
    return [int(d) for d in value]


def check_results(value: Any, where: str, node: int | None, _: dict) -> list[dict[str, Any]]:
    if not isinstance(value, (list, tuple)) or not value:
        raise _fail(
            "VALIDATION",
            where,
            node,
            f"results must be a non-empty list of {{name, shape, dtype}}, got {_show(value)}",
        )
    if len(value) > _lim("max_outputs"):
        raise _fail(
            "LIMIT",
            where,
            node,
            f"results has {len(value)} entries, more than max_outputs {_lim('max_outputs')}",
        )
    names: set[str] = set()
    out = []
    for i, r in enumerate(value):
        at = f"results[{i}]"
        if not isinstance(r, dict):
            raise _fail("VALIDATION", where, node, f"{at} must be an object {{name, shape, dtype}}")
        extra = [k for k in r if k not in ("name", "shape", "dtype")]
        if extra:
            raise _fail("VALIDATION", where, node, f'{at} has unknown field "{extra[0]}"')
        name = r.get("name")
        if not isinstance(name, str) or not NAME.fullmatch(name):
            raise _fail(
                "VALIDATION", where, node, f"{at}.name must be an identifier, got {_show(name)}"
            )
        if name in names:
            raise _fail("VALIDATION", where, node, f'{at}.name "{name}" is used twice')
        names.add(name)
        shape = _check_shape(r.get("shape"), where, node, f"{at}.shape")
        dtype = r.get("dtype")
        if not isinstance(dtype, str) or dtype not in DTYPES:
            raise _fail(
                "VALIDATION",
                where,
                node,
                f"{at}.dtype must be one of {', '.join(DTYPES)}, got {_show(dtype)}",
            )
        out.append({"name": name, "shape": shape, "dtype": dtype})
    return out


def check_workgroups(value: Any, where: str, node: int | None, _: dict) -> list[int]:
    if (
        not isinstance(value, (list, tuple))
        or not 1 <= len(value) <= 3
        or not all(_is_int(d) and d >= 1 for d in value)
    ):
        raise _fail(
            "VALIDATION",
            where,
            node,
            f"workgroups must be a list of 1 to 3 integers >= 1, got {_show(value)}",
        )
    most = _lim("max_workgroups_per_dimension")
    for i, d in enumerate(value):
        if d > most:
            raise _fail(
                "LIMIT",
                where,
                node,
                f"workgroups[{i}] = {int(d)} is more than max_workgroups_per_dimension {most}",
            )
    return ([int(d) for d in value] + [1, 1])[:3]


def check_params(value: Any, where: str, node: int | None, _: dict) -> dict[str, float | int]:
    if not isinstance(value, dict):
        raise _fail(
            "VALIDATION",
            where,
            node,
            f"params must be an object {{name: number}}, got {_show(value)}",
        )
    out: dict[str, float | int] = {}
    for key in sorted(value, key=str):
        v = value[key]
        if not isinstance(key, str) or not NAME.fullmatch(key):
            raise _fail("VALIDATION", where, node, f'params: "{key}" is not an identifier')
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise _fail(
                "VALIDATION", where, node, f"params.{key} must be a finite number, got {_show(v)}"
            )
        out[key] = v
    return out


def check_index(value: Any, where: str, node: int | None, _: dict) -> int:
    if not _is_int(value) or value < 0:
        raise _fail("VALIDATION", where, node, f"index must be an integer >= 0, got {_show(value)}")
    return int(value)


ATTR_CHECKERS = {
    "wgsl_source": check_source,
    "wgsl_results": check_results,
    "workgroups": check_workgroups,
    "wgsl_params": check_params,
    "index": check_index,
}


# ---------------------------------------------------------------- node rules


def _label(node: Any) -> str:
    return f"node {node.id} ({node.op})"


def wgsl_shape(node: Any, operands: list[Any]) -> tuple[int, ...]:
    # every input is bound as a buffer, and WebGPU has no zero-size binding
    empty = next((i for i, n in enumerate(operands) if 0 in n.shape), None)
    if empty is not None:
        raise GpuLabError(
            "VALIDATION",
            f"{_label(node)}: operand inputs[{empty}] {list(operands[empty].shape)} is empty: "
            "a zero-size tensor cannot be bound to a student kernel",
            node.id,
        )
    return tuple(node.attrs["results"][0]["shape"])


def output_shape(node: Any, operands: list[Any]) -> tuple[int, ...]:
    (of,) = operands
    if of.op != "wgsl":
        raise GpuLabError(
            "VALIDATION",
            f"{_label(node)}: operand a must be a wgsl node, got node {of.id} ({of.op})",
            node.id,
        )
    results = of.attrs["results"]
    if node.attrs["index"] >= len(results):
        raise GpuLabError(
            "VALIDATION",
            f"{_label(node)}: index {node.attrs['index']} is past "
            f"the {len(results)} result(s) of node {of.id} (wgsl)",
            node.id,
        )
    return tuple(results[node.attrs["index"]]["shape"])


def wgsl_dtype(node: Any, inputs: list[Any]) -> str:
    check_convention(node, inputs)
    return str(node.attrs["results"][0]["dtype"])


def output_dtype(node: Any, operands: list[Any]) -> str:
    return str(operands[0].attrs["results"][node.attrs["index"]]["dtype"])


NODE_SHAPE_RULES = {"wgsl": wgsl_shape, "wgsl_output": output_shape}
NODE_DTYPE_RULES = {"wgsl": wgsl_dtype, "wgsl_output": output_dtype}


# ---------------------------------------------------------------- the binding convention


def source_line(source: str, line: int) -> str:
    """`   3 | text` for a 1-based line (the form compiler errors are shown in too)."""
    lines = source.split("\n")
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    return f"{line:>4} | {text.removesuffix(chr(13))}"


class _Convention:
    def __init__(self, node: Any, inputs: list[Any]) -> None:
        self.node = node
        self.source: str = node.attrs["source"]
        self.params: dict[str, Any] = node.attrs["params"]
        self.scan = scan_wgsl(self.source)
        self.expected = [
            {"kind": "input", "dtype": n.dtype, "label": f"input {i} (node {n.id}, {n.dtype})"}
            for i, n in enumerate(inputs)
        ]
        for i, r in enumerate(node.attrs["results"]):
            self.expected.append(
                {
                    "kind": "output",
                    "dtype": r["dtype"],
                    "label": f'result {i} "{r["name"]}" ({r["dtype"]})',
                }
            )
        if self.params:
            self.expected.append({"kind": "params", "label": "the params uniform"})
        self.inputs = len(inputs)

    def fail(self, at: dict | None, detail: str) -> GpuLabError:
        where = f" at line {at['line']}, column {at['column']}" if at else ""
        snippet = f"\n{source_line(self.source, at['line'])}" if at else ""
        return GpuLabError(
            "VALIDATION",
            f"{_label(self.node)}: WGSL binding error{where}: {detail}{snippet}",
            self.node.id,
        )

    def check(self) -> None:
        if "main" not in self.scan["computeEntries"]:
            raise self.fail(None, "the source has no @compute entry point named main")
        seen: dict[int, str] = {}
        for v in self.scan["vars"]:
            if not (
                v["space"] in ("storage", "uniform")
                or v["group"] is not None
                or v["binding"] is not None
            ):
                continue
            if v["group"] != 0 or v["binding"] is None:
                raise self.fail(
                    v,
                    f"{v['name']} must be declared @group(0) @binding(n) (the "
                    "convention uses group 0 only)",
                )
            b = v["binding"]
            if b in seen:
                raise self.fail(v, f"@binding({b}) is declared twice ({seen[b]} and {v['name']})")
            seen[b] = v["name"]
            if b >= len(self.expected):
                raise self.fail(
                    v,
                    f"@binding({b}) {v['name']} is past the convention's bindings "
                    f"0..{len(self.expected) - 1} ({self._count_text()})",
                )
            self._binding(v, self.expected[b])
        for b, e in enumerate(self.expected):
            if b not in seen:
                raise self.fail(
                    None,
                    f"the source declares nothing at @group(0) @binding({b}) "
                    f"for {e['label']}: expected {_wants(e)}",
                )

    def _count_text(self) -> str:
        params = ", then the params uniform" if self.params else ""
        return f"{self.inputs} input(s), then {len(self.node.attrs['results'])} result(s){params}"

    def _binding(self, v: dict, e: dict) -> None:
        space_text = ", ".join(x for x in (v["space"], v["access"]) if x)
        declared = f"var<{space_text}> {v['name']}: {v['type']}"
        mismatch = self.fail(
            v,
            f"@binding({v['binding']}) is {e['label']}: expected "
            f"{_wants(e)}, the source declares {declared}",
        )
        if e["kind"] == "params":
            if v["space"] != "uniform":
                raise mismatch
            self._params_struct(v)
            return
        access = v["access"] or "read"
        element = WGSL_ELEMENT[e["dtype"]]
        ok_access = access == ("read" if e["kind"] == "input" else "read_write")
        if (
            v["space"] != "storage"
            or not ok_access
            or not _is_array_of(v["type"], element, e["kind"] == "output")
        ):
            raise mismatch

    def _params_struct(self, v: dict) -> None:
        struct = next((s for s in self.scan["structs"] if s["name"] == v["type"]), None)
        if struct is None:
            raise self.fail(
                v,
                f"the params uniform {v['name']} must have a struct type "
                f"declared in the source, got {v['type']}",
            )
        at = {"line": struct["line"], "column": 1}
        for m in struct["members"]:
            if m["type"] not in SCALARS:
                raise self.fail(
                    at,
                    f"params struct {struct['name']}: member {m['name'] or '?'} "
                    f"must be f32, i32 or u32, got {m['type']}",
                )
            if m["name"] not in self.params:
                raise self.fail(
                    at,
                    f"params struct {struct['name']} has member {m['name']}, "
                    "which params does not give",
                )
            self._value(m, self.params[m["name"]], at)
        names = {m["name"] for m in struct["members"]}
        extra = [k for k in self.params if k not in names]
        if extra:
            raise self.fail(at, f"params.{extra[0]} is not a member of struct {struct['name']}")

    def _value(self, m: dict, value: float, at: dict) -> None:
        if m["type"] == "f32":
            if not math.isfinite(_float32(value)):
                raise self.fail(at, f"params.{m['name']} = {_num(value)} is not a finite f32")
            return
        lo, hi = (-(2**31), 2**31 - 1) if m["type"] == "i32" else (0, 2**32 - 1)
        if not _is_int(value) or not lo <= value <= hi:
            raise self.fail(
                at,
                f"params.{m['name']} = {_num(value)} is not a {m['type']} "
                f"(an integer from {lo} to {hi})",
            )


def _num(v: float) -> str:
    """A number as JS's String() writes it (2.0 -> 2)."""
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e21:
        return str(int(v))
    return repr(v)


def _float32(v: float) -> float:
    import struct

    try:
        return struct.unpack("<f", struct.pack("<f", v))[0]
    except OverflowError:
        return math.inf


def _wants(e: dict) -> str:
    if e["kind"] == "params":
        return "var<uniform> of a struct of the params"
    t = WGSL_ELEMENT[e["dtype"]]
    return (
        f"var<storage, read> array<{t}>"
        if e["kind"] == "input"
        else f"var<storage, read_write> array<{t}>"
    )


def _is_array_of(type_: str, element: str, atomic_ok: bool) -> bool:
    m = re.fullmatch(r"array<(.+?)(?:,[^,<>]+)?>", type_)
    if not m:
        return False
    return m.group(1) == element or (atomic_ok and m.group(1) == f"atomic<{element}>")


def check_convention(node: Any, inputs: list[Any]) -> None:
    """VALIDATION naming the node, the binding and the source line at the first mismatch;
    then the source's bounds (wgsl_bounds.py): LIMIT (or VALIDATION) at the first one passed,
    before any compiler sees the source."""
    _Convention(node, inputs).check()
    source = node.attrs["source"]
    refusal = check_bounds(source, list(node.attrs["workgroups"]))
    if refusal is not None:
        message, at = refusal_message(source, refusal)
        raise GpuLabError(
            refusal.code,
            f"{_label(node)}: {message}\n{source_line(source, at['line'])}",
            node.id,
        )


def param_words(source: str, params: dict[str, Any]) -> list[tuple[str, float | int]]:
    """The params uniform's words in struct member order (what both executors upload)."""
    if not params:
        return []
    scan = scan_wgsl(source)
    uniform = next((v for v in scan["vars"] if v["space"] == "uniform"), None)
    struct = next((s for s in scan["structs"] if uniform and s["name"] == uniform["type"]), None)
    return [(m["type"], params[m["name"]]) for m in (struct["members"] if struct else [])]
