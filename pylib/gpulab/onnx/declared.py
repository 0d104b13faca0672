"""The ONNX operators of the op library's declarations (gpulab.functional: `onnx=onnx(...)` on
an entry): each lowers to its entry's function, its inputs in order (float32; an optional input
left out is None), its attributes read as the entry's keywords with the declaration's defaults,
type-checked against them, and the keywords the operator fixes. An error the function raises
names the node."""

from __future__ import annotations

from typing import Any

from .. import functional as F
from ..errors import GpuLabError
from ..functional import Entry, Onnx
from .ctx import NodeCtx, Op
from .values import Value


def _attribute(cx: NodeCtx, name: str, default: Any) -> Any:
    """An attribute, checked against its default's type (an INT is a FLOAT's value too)."""
    value = cx.attr(name, default)
    if isinstance(default, float) and isinstance(value, int):
        return float(value)
    if type(value) is not type(default):
        raise cx.invalid(
            f"attribute {name!r} must be {type(default).__name__}, got {type(value).__name__}"
        )
    return value


def lowering(spec: Onnx, entry: Entry) -> Op:
    """The operator's Op: entry.fn(inputs..., keywords from the attributes)."""
    count = len(entry.operands())

    def lower(cx: NodeCtx) -> list[Value]:
        if cx.n_inputs > count:
            raise cx.invalid(f"{cx.n_inputs} inputs given, {spec.op_type} takes {count}")
        inputs = []
        for i in range(count):
            t = cx.t(i) if cx.has(i) else None
            if t is not None and t.dtype != "float32":
                raise cx.fail(f"input of type {t.dtype} is not supported (float only)")
            inputs.append(t)
        keywords = {kw: _attribute(cx, name, d) for name, (kw, d) in spec.attrs.items()}
        try:
            return [entry.fn(*inputs, **keywords, **spec.fixed)]
        except GpuLabError as err:
            raise GpuLabError(err.code, f"onnx: {cx.label}: {err.message}") from None

    lower.__name__ = f"onnx_{entry.name}"
    return Op(lower, frozenset(spec.attrs), since=spec.since, until=spec.until)


def declared_ops() -> dict[str, Op]:
    """ONNX op type -> its Op, for every declared operator (one opset range each)."""
    out: dict[str, Op] = {}
    for op_type, ranges in F.onnx_names().items():
        if len(ranges) > 1:
            raise ValueError(f"onnx: {op_type} is declared for several opset ranges")
        spec, entry = ranges[0]
        out[op_type] = lowering(spec, entry)
    return out


DECLARED_OPS = declared_ops()
