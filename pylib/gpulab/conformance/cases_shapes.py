"""Corpus cases of the version-7 tensor features (docs/protocol.md "Zero-size tensors",
"Rank-0 axes"): every op over zero-size tensors, and the axis ops on rank-0 tensors.
generate.py lists `shape_cases` among its families.

Zero-size: every op of the table gets one case (several outputs where the op has several ways
to meet an empty tensor): empty results, and results with elements computed from nothing (sum
0, mean NaN, matmul with K = 0 zeros, cross_entropy NaN, a concat or a copy that drops the empty
operand). Refusals (max over no element, an index into an empty axis) are bad graphs
(bad_graphs.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from gpulab.conformance.generate import Builder, _counter, _data, conv, typed_input

Build = Callable[[Builder], None]


def _case(name: str, op: str, build: Build) -> dict:
    b = Builder(name)
    build(b)
    return b.case(op)


def _outs(b: Builder, *ids: int) -> None:
    for i in ids:
        b.out(i)


def _empty(b: Builder, shape: list[int], dtype: str = "float32") -> int:
    """An input with no elements (data of length 0)."""
    assert math.prod(shape) == 0, shape
    if dtype == "float32":
        return b.input(shape, [])
    return typed_input(b, shape, dtype, [])


def _map1(op: str, dtype: str) -> Build:
    return lambda b: _outs(b, b.op(op, _empty(b, [2, 0, 3], dtype)))


def _map2(op: str) -> Build:
    # an empty axis broadcast against 1, and a scalar against an empty tensor
    def build(b: Builder) -> None:
        same = optable_rule(op) != "broadcast"
        x = _empty(b, [0, 3])
        y = _empty(b, [0, 3]) if same else b.rand([1, 3])
        _outs(b, b.op(op, x, y, **_scalar_attrs(op)))
        if not same:
            _outs(b, b.op(op, b.rand([]), _empty(b, [2, 0]), **_scalar_attrs(op)))

    return build


def optable_rule(op: str) -> str:
    from gpulab.conformance.reference import OP_TABLE

    return str(OP_TABLE["ops"][op]["shape_rule"])


def _scalar_attrs(op: str) -> dict:
    from gpulab.conformance.reference import OP_TABLE

    attrs = OP_TABLE["ops"][op]["attrs"]
    return {name: 0.5 for name, spec in attrs.items() if spec.get("required")}


def _select2(op: str) -> Build:
    def build(b: Builder) -> None:
        _outs(b, b.op(op, _empty(b, [3, 0], "int32"), b.ints([1], [2])))
        _outs(b, b.op(op, b.rand([4, 1]), _empty(b, [0])))

    return build


def _where(b: Builder) -> None:
    cond = typed_input(b, [1, 4], "bool", [1, 0, 1, 0])
    _outs(b, b.op("where", _empty(b, [0, 1], "bool"), b.rand([1, 4]), b.rand([])))
    _outs(b, b.op("where", cond, _empty(b, [0, 4], "int32"), b.ints([], [7])))


def _cast(b: Builder) -> None:
    _outs(b, b.op("cast", _empty(b, [0, 2]), dtype="int32"))
    _outs(b, b.op("cast", _empty(b, [3, 0], "bool"), dtype="float32"))


def _reductions(op: str) -> Build:
    """sum 0 and mean NaN over an empty axis or all of an empty tensor; empty results."""

    def build(b: Builder) -> None:
        x = _empty(b, [0, 3])
        _outs(b, b.op(op, x, axis=0), b.op(op, x, axis=0, keepdim=True), b.op(op, x))
        _outs(b, b.op(op, x, axis=1), b.op(op, _empty(b, [2, 0, 2]), axis=-1))

    return build


def _extremes(op: str) -> Build:
    """Empty results only: an extreme over no element is refused (bad graphs)."""

    def build(b: Builder) -> None:
        _outs(b, b.op(op, _empty(b, [0, 3]), axis=1))
        _outs(b, b.op(op, _empty(b, [3, 0, 2], "int32"), axis=2, keepdim=True))

    return build


def _rows(op: str) -> Build:
    return lambda b: _outs(
        b, b.op(op, _empty(b, [0, 3]), axis=1), b.op(op, _empty(b, [3, 0]), axis=1)
    )


def _cross_entropy(b: Builder) -> None:
    # the mean over no row (N = 0) and over rows of no class (C = 0) are NaN, as PyTorch
    _outs(b, b.op("cross_entropy", _empty(b, [0, 3]), _empty(b, [0, 3])))
    _outs(b, b.op("cross_entropy", _empty(b, [2, 0]), _empty(b, [2, 0])))


def _matmul(op: str) -> Build:
    """K = 0 gives zeros; an empty M, N or batch axis an empty result."""

    def build(b: Builder) -> None:
        _outs(b, b.op(op, _empty(b, [2, 0]), _empty(b, [0, 3])))
        _outs(b, b.op(op, _empty(b, [0, 2]), b.rand([2, 3])))
        _outs(b, b.op(op, _empty(b, [2, 0, 2, 2]), b.rand([2, 3])))

    return build


def _matmul_q(b: Builder) -> None:
    # K = 0 (a weight of no block) gives zeros; N = 0 an empty result
    _outs(b, b.op("matmul_q", _empty(b, [2, 0]), b.quantized("q4_k", [3, 0], b"")))
    _outs(b, b.op("matmul_q", b.rand([2, 256]), b.quantized("q6_k", [0, 256], b"")))


def _dequantize(b: Builder) -> None:
    _outs(b, b.op("dequantize", b.quantized("q4_k", [0, 256], b"")))


def _dequantize_rows(b: Builder) -> None:
    # no row asked of an empty table, nor of a table of one row (its blocks all zero)
    no_idx = _empty(b, [0], "int32")
    _outs(b, b.op("dequantize_rows", b.quantized("q8_0", [0, 32], b""), no_idx))
    _outs(b, b.op("dequantize_rows", b.quantized("q4_0", [1, 32], bytes(18)), no_idx))


def _optimizer(op: str) -> Build:
    return lambda b: _outs(b, b.op(op, _empty(b, [0, 2]), _empty(b, [0, 2]), **_scalar_attrs(op)))


def _adam_update(b: Builder) -> None:
    e = [_empty(b, [3, 0]) for _ in range(3)]
    _outs(b, b.op("adam_update", *e, b.input([1], [2.0])))


def _layout(b: Builder, op: str) -> None:
    if op == "transpose":
        _outs(b, b.op(op, _empty(b, [3, 0])), b.op(op, _empty(b, [0, 2, 4])))
    elif op == "permute":
        _outs(b, b.op(op, _empty(b, [2, 0, 3]), dims=[2, 0, 1]))
    elif op == "reshape":
        x = _empty(b, [0, 3], "int32")
        _outs(b, b.op(op, x, shape=[3, 0, 1]), b.op(op, x, shape=[-1, 6]))


def _slice(b: Builder) -> None:
    # selecting nothing of a full axis, and a slice of an empty tensor
    _outs(b, b.op("slice", _data(b, [4, 3], "int32"), slices=[[3, 1, 1], [None, None, 1]]))
    _outs(b, b.op("slice", _empty(b, [0, 3]), slices=[[None, None, -1], [1, None, 1]]))


def _slice_scatter(b: Builder) -> None:
    # writing nothing leaves a as it is
    a = _data(b, [4, 3], "float32")
    _outs(b, b.op("slice_scatter", a, _empty(b, [0, 3]), slices=[[2, 2, 1], [None, None, 1]]))
    _outs(
        b,
        b.op("slice_scatter", _empty(b, [2, 0]), _empty(b, [1, 0]), slices=[[1, 2, 1], [0, 0, 1]]),
    )


def _index(b: Builder, op: str) -> None:
    a = _data(b, [3, 4], "float32")
    no_idx = _empty(b, [0], "int32")
    if op == "index_select":
        _outs(
            b, b.op(op, a, no_idx, axis=0), b.op(op, _empty(b, [0, 4]), b.ints([2], [3, 0]), axis=1)
        )
    elif op == "gather":
        _outs(b, b.op(op, a, _empty(b, [0, 4], "int32"), axis=0))
    elif op == "index_add":
        _outs(b, b.op(op, a, no_idx, _empty(b, [0, 4]), axis=0))
    else:
        _outs(b, b.op(op, a, _empty(b, [3, 0], "int32"), _empty(b, [3, 0]), axis=1))


def _concat(b: Builder) -> None:
    # an empty operand adds nothing: dropped (one left: a copy)
    a, e = _data(b, [2, 3], "int32"), _empty(b, [0, 3], "int32")
    _outs(b, b.concat([a, e, _data(b, [1, 3], "int32")], 0), b.concat([e, a], 0))
    _outs(b, b.concat([_empty(b, [2, 0]), _empty(b, [2, 0])], 1))


def _pad(b: Builder) -> None:
    # padding an empty tensor gives only the pad value
    _outs(b, b.op("pad", _empty(b, [0, 3]), widths=[[1, 1], [0, 0]], value=2.5))
    _outs(b, b.op("pad", _empty(b, [2, 0], "int32"), widths=[[0, 0], [1, 2]], value=-7))
    _outs(b, b.op("pad", _empty(b, [0, 2]), widths=[[0, 0], [3, 3]]))


def _conv2d(b: Builder) -> None:
    # no image (N = 0), no output channel (M = 0, a bias of none)
    _outs(b, conv(b, _empty(b, [0, 1, 4, 4]), b.rand([2, 1, 3, 3])))
    _outs(b, conv(b, b.rand([1, 1, 3, 3]), _empty(b, [0, 1, 2, 2]), _empty(b, [0])))


def _pools(op: str) -> Build:
    return lambda b: _outs(
        b,
        b.op(op, _empty(b, [0, 2, 4, 4]), kernel=[2, 2]),
        b.op(op, _empty(b, [1, 0, 4, 4]), kernel=[2, 2]),
    )


def _resize(b: Builder) -> None:
    _outs(b, b.op("resize", _empty(b, [0, 1, 2, 2]), size=[3, 3]))


def _sources(b: Builder, op: str) -> None:
    if op == "input":
        _outs(b, _empty(b, [0, 0, 2]), _empty(b, [3, 0], "bool"))
    else:
        _outs(b, b.full([2, 0], 1.5))


def _hash(b: Builder) -> None:
    _outs(b, b.op("hash_uniform", _counter(b, 3), shape=[4, 0]))


def _dropout(b: Builder) -> None:
    _outs(b, b.op("dropout", _empty(b, [0, 5]), _counter(b, 1), p=0.5))


def _life(b: Builder) -> None:
    _outs(b, b.op("life", _empty(b, [0, 4])))


def _clamp(b: Builder) -> None:
    _outs(b, b.op("clamp", _empty(b, [0]), min=-1, max=1))


# ops whose cases are not from a family rule; wgsl and wgsl_output refuse empty inputs
# (a zero-size binding), a bad graph
BY_OP: dict[str, Build] = {
    "input": lambda b: _sources(b, "input"),
    "full": lambda b: _sources(b, "full"),
    "where": _where,
    "cast": _cast,
    "cross_entropy": _cross_entropy,
    "cross_entropy_grad": lambda b: _outs(
        b, b.op("cross_entropy_grad", _empty(b, [0, 3]), _empty(b, [0, 3]))
    ),
    "matmul_q": _matmul_q,
    "dequantize": _dequantize,
    "dequantize_rows": _dequantize_rows,
    "adam_update": _adam_update,
    "slice": _slice,
    "slice_scatter": _slice_scatter,
    "concat": _concat,
    "pad": _pad,
    "conv2d": _conv2d,
    "resize": _resize,
    "hash_uniform": _hash,
    "dropout": _dropout,
    "life": _life,
    "clamp": _clamp,
    "gelu_grad": _map2("gelu_grad"),
}


def _build_for(op: str, row: dict) -> Build | None:
    if op in BY_OP:
        return BY_OP[op]
    family, rule = row["family"], row["shape_rule"]
    if op in ("transpose", "permute", "reshape"):
        return lambda b: _layout(b, op)
    if op in ("index_select", "gather", "index_add", "scatter_add"):
        return lambda b: _index(b, op)
    if op in ("sum", "mean"):
        return _reductions(op)
    if op in ("reduce_max", "reduce_min", "argmax", "argmin"):
        return _extremes(op)
    if op in ("softmax", "log_softmax"):
        return _rows(op)
    if op in ("matmul", "matmul_fixed"):
        return _matmul(op)
    if op in ("max_pool2d", "avg_pool2d"):
        return _pools(op)
    if rule == "broadcast" and family == "custom":
        return _select2(op)
    if family == "map1":
        return _map1(op, "int32" if "int32" in row.get("types", {}).get("T", []) else "float32")
    if family == "map2":
        return _optimizer(op) if rule == "same_ab" else _map2(op)
    return None


def zero_size_cases() -> list[dict]:
    """One case per op of the table over zero-size tensors (wgsl refuses them: a bad graph)."""
    from gpulab.conformance.reference import OP_TABLE

    cases = []
    for op, row in OP_TABLE["ops"].items():
        if row["family"] == "student":
            continue
        build = _build_for(op, row)
        assert build is not None, f"no zero-size case for {op}"
        cases.append(_case(f"empty/{op}", op, build))
    return cases


def _scalar(b: Builder, dtype: str = "float32") -> int:
    return b.ints([], [-7]) if dtype == "int32" else b.input([], [2.5])


def scalar_axis_cases() -> list[dict]:
    """axis 0 and -1 of a rank-0 tensor, as PyTorch's dim=0 / dim=-1 of a scalar."""
    cases = []
    for op in ("sum", "mean", "reduce_max", "reduce_min", "argmax", "argmin"):
        dtypes = ("float32",) if op in ("sum", "mean") else ("float32", "int32")

        def build(b: Builder, op: str = op, dtypes: tuple = dtypes) -> None:
            for dtype in dtypes:
                x = _scalar(b, dtype)
                _outs(b, b.op(op, x, axis=0), b.op(op, x, axis=-1, keepdim=True))

        cases.append(_case(f"scalar_axis/{op}", op, build))
    for op in ("softmax", "log_softmax"):
        cases.append(
            _case(
                f"scalar_axis/{op}",
                op,
                lambda b, op=op: _outs(
                    b, b.op(op, b.input([], [-3.5]), axis=0), b.op(op, b.input([], ["inf"]))
                ),
            )
        )
    cases.append(
        _case(
            "scalar_axis/index_select",
            "index_select",
            lambda b: _outs(
                b,
                b.op("index_select", _scalar(b), b.ints([1], [0]), axis=0),
                b.op("index_select", _scalar(b, "int32"), b.ints([], [0]), axis=-1),
            ),
        )
    )
    cases.append(
        _case(
            "scalar_axis/gather",
            "gather",
            lambda b: _outs(b, b.op("gather", _scalar(b), b.ints([], [0]), axis=-1)),
        )
    )
    for op in ("index_add", "scatter_add"):
        cases.append(
            _case(
                f"scalar_axis/{op}",
                op,
                lambda b, op=op: _outs(
                    b, b.op(op, _scalar(b), b.ints([], [0]), b.input([], [0.25]), axis=0)
                ),
            )
        )
    return cases


def shape_cases() -> list[dict]:
    return zero_size_cases() + scalar_axis_cases()
