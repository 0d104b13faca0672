"""Corpus cases of rank 5 to 8 (docs/protocol.md "Rank 5 to 8", version 8): every family at a
rank past 4, small shapes (rank 8 of 2x1x3x1x2x1x2x3 is 72 elements). Each one coalesces to
rank <= 4 (gpulab.lowering_rank), so every lane runs it on its rank-4 kernels; the numpy
reference computes it at its own rank. generate.py lists `rank_cases` among its families.
"""

from __future__ import annotations

from collections.abc import Callable

from gpulab.conformance.generate import Builder, _counter, _data, _idx

Build = Callable[[Builder], None]
R8 = [2, 1, 3, 1, 2, 1, 2, 3]  # rank 8, 72 elements
R6 = [2, 3, 1, 2, 2, 3]  # rank 6, 72 elements
R5 = [2, 3, 2, 1, 3]  # rank 5, 36 elements


def _case(name: str, op: str, build: Build) -> dict:
    b = Builder(name)
    build(b)
    return b.case(op)


def _outs(b: Builder, *ids: int) -> None:
    for i in ids:
        b.out(i)


def _sources(b: Builder) -> None:
    _outs(b, b.rand(R8), b.full(R6, 1.5))


def _elementwise(b: Builder) -> None:
    # broadcasting alike (coalesced) and not (axes kept apart), a scalar, a rank-2 operand
    x = b.rand(R8)
    _outs(b, b.op("add", x, b.rand([1, 1, 3, 1, 2, 1, 1, 1])))
    _outs(b, b.op("mul", b.rand([2, 1, 1, 1, 2]), b.rand([3, 1, 2, 1])))
    _outs(b, b.op("sub", x, b.input([], [0.5])), b.op("div", b.rand(R5), b.rand([1, 3])))


def _maps(b: Builder) -> None:
    x = b.rand(R8)
    _outs(b, b.op("relu", x), b.op("exp", x), b.op("cast", b.rand_ints(R5, -9, 9), dtype="float32"))


def _where(b: Builder) -> None:
    # a bool operand keeps its axes (no lane reshapes bool): it spans axes of its own
    cond = b.op("gt", b.rand([3, 2]), b.input([], [0.0]))
    _outs(b, b.op("where", cond, b.rand([2, 2, 2, 3, 2]), b.input([], [0.5])))
    _outs(b, b.op("where", cond, b.rand([2, 1, 3, 1, 3, 2]), b.rand([2, 1, 1, 1, 1, 1])))


def _reductions(op: str) -> Build:
    def build(b: Builder) -> None:
        x = b.rand(R8) if op in ("sum", "mean") else b.rand_ints(R8, -5, 5)
        _outs(b, b.op(op, x), b.op(op, x, axis=0), b.op(op, x, axis=4, keepdim=True))
        _outs(b, b.op(op, x, axis=-1), b.op(op, x, axis=2))

    return build


def _softmax(b: Builder) -> None:
    x = b.rand(R6)
    _outs(b, b.op("softmax", x, axis=1), b.op("log_softmax", x, axis=-1))


def _layout(b: Builder) -> None:
    x = b.rand(R6)
    # [2, 3, 1, 2, 2, 3]: axes 3..5 stay together, as do 0..1: two runs
    _outs(b, b.op("permute", x, dims=[3, 4, 5, 2, 0, 1]), b.op("transpose", x))
    r = b.op("reshape", b.rand([6, 6]), shape=[1, 2, 1, 3, 2, 1, 3, 1])
    _outs(b, r, b.op("reshape", b.op("neg", r), shape=[3, 12]))


def _slices(b: Builder) -> None:
    x = _data(b, R6, "int32")
    n = None
    _outs(
        b,
        b.op("slice", x, slices=[[1, n, 1], [n, n, 1], [n, n, 1], [n, n, 1], [n, n, 1], [n, n, 1]]),
    )
    _outs(
        b,
        b.op(
            "slice", x, slices=[[n, n, 1], [2, 0, -1], [n, n, 1], [n, n, 1], [n, n, 1], [n, n, 2]]
        ),
    )
    src = b.rand([2, 2, 1, 2, 2, 3])
    y = b.rand(R6)
    _outs(
        b,
        b.op(
            "slice_scatter",
            y,
            src,
            slices=[[n, n, 1], [1, n, 1], [n, n, 1], [n, n, 1], [n, n, 1], [n, n, 1]],
        ),
    )


def _pad(b: Builder) -> None:
    _outs(b, b.op("pad", b.rand(R5), widths=[[0, 0], [1, 0], [0, 0], [0, 0], [0, 2]], value=-1.0))


def _concat(b: Builder) -> None:
    _outs(b, b.concat([b.rand([2, 1, 2, 1, 3]), b.rand([2, 1, 1, 1, 3])], 2))


def _index_list(b: Builder) -> None:
    x = b.rand(R5)
    i = _idx(b, [4], 2)
    _outs(b, b.op("index_select", x, i, axis=2))
    _outs(b, b.op("index_add", x, i, b.rand([2, 3, 4, 1, 3]), axis=-3))


def _index_elements(b: Builder) -> None:
    x = b.rand(R5)
    i = _idx(b, [2, 2, 2, 1, 3], 3)  # spans a along axes 0, 3, 4; fewer along 1
    _outs(b, b.op("gather", x, i, axis=1))
    _outs(b, b.op("scatter_add", x, i, b.rand([2, 2, 2, 1, 3]), axis=1))


def _matmul(b: Builder) -> None:
    a = b.rand([2, 3, 1, 2, 4])
    _outs(b, b.op("matmul", a, b.rand([2, 3, 1, 4, 3])), b.op("matmul", a, b.rand([4, 3])))
    _outs(b, b.op("matmul_fixed", a, b.rand([1, 1, 1, 4, 2])))


def _random(b: Builder) -> None:
    _outs(b, b.op("hash_uniform", _counter(b, 5), shape=[2, 1, 3, 1, 2]))
    _outs(b, b.op("dropout", b.rand(R6), _counter(b, 2), p=0.25))


CASES: list[tuple[str, str, Build]] = [
    ("high_rank/sources", "input", _sources),
    ("high_rank/elementwise", "add", _elementwise),
    ("high_rank/maps", "relu", _maps),
    ("high_rank/where", "where", _where),
    *[(f"high_rank/{op}", op, _reductions(op)) for op in ("sum", "mean", "reduce_max", "argmin")],
    ("high_rank/softmax", "softmax", _softmax),
    ("high_rank/layout", "permute", _layout),
    ("high_rank/slices", "slice", _slices),
    ("high_rank/pad", "pad", _pad),
    ("high_rank/concat", "concat", _concat),
    ("high_rank/index_list", "index_select", _index_list),
    ("high_rank/index_elements", "gather", _index_elements),
    ("high_rank/matmul", "matmul", _matmul),
    ("high_rank/random", "hash_uniform", _random),
]


def rank_cases() -> list[dict]:
    return [_case(name, op, build) for name, op, build in CASES]
