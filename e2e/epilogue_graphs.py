"""Graphs for the matmul epilogue (planner_epilogue.py; docs/plan.md "Fusion"):
products folded into every epilogue slot (op, side, broadcast, PRE, POST) and products that
must stay unfused. Used by pylib/tests/test_matmul_epilogue.py (bits on wgpu, the plan) and
e2e/test_matmul_epilogue_webgpu.py (bits on Chromium's WebGPU)."""

from __future__ import annotations

from typing import Any

import numpy as np
from gpulab.kernel_table import family_codes

MAP1 = family_codes("map1")
MAP2 = family_codes("map2")
SPECIAL = [np.nan, 0.0, -0.0, np.inf, -np.inf, 1.5, -2.25, 3e38, -3e38, -1e-40, 7.0, -1e-30, -0.5]
BATCH, M, K, N = 2, 9, 12, 12  # N and K multiples of 4: a forced _v4 kernel really runs


def _data(shape: list[int], rng: np.random.Generator, special: bool) -> np.ndarray:
    n = int(np.prod(shape))
    if special:  # special values tiled, shuffled
        return rng.permutation(np.resize(np.array(SPECIAL, np.float32), n)).reshape(shape)
    return rng.standard_normal(n).astype(np.float32).reshape(shape)


def epilogue_graph(special: bool, seed: int = 0) -> dict[str, Any]:
    """Products p = x @ w folded into every epilogue slot, and five that must stay separate.
    With `special`, x and w hold small integers (exact sums, so `- p` cancels to signed zeros)
    with an inf and a NaN row in x, and the other operands hold special values."""
    rng = np.random.default_rng(seed)
    if special:
        x = rng.integers(-3, 4, (BATCH, M, K)).astype(np.float32)
        x[0, 1, 2], x[1, 3, 0] = np.inf, np.nan
        w = rng.integers(-3, 4, (K, N)).astype(np.float32)
    else:
        x, w = _data([BATCH, M, K], rng, False), _data([K, N], rng, False)
    with np.errstate(invalid="ignore"):  # the inf row meets zeros: NaN
        exact = (x.astype(np.float64) @ w.astype(np.float64)).astype(np.float32)
    z = _data([BATCH, M, N], rng, special)
    if special:  # some outputs cancel exactly: -p + p
        z[0, 0] = -exact[0, 0]
    nodes: list[dict[str, Any]] = [
        {"id": 0, "op": "input", "shape": [BATCH, M, K], "data": x.reshape(-1)},
        {"id": 1, "op": "input", "shape": [K, N], "data": w.reshape(-1)},
        {"id": 2, "op": "input", "shape": [N], "data": _data([N], rng, special).reshape(-1)},
        {"id": 3, "op": "input", "shape": [BATCH, M, N], "data": z.reshape(-1)},
        {"id": 4, "op": "input", "shape": [1, N], "data": _data([1, N], rng, special).reshape(-1)},
        {"id": 5, "op": "input", "shape": [M, 1], "data": _data([M, 1], rng, special).reshape(-1)},
        {"id": 6, "op": "input", "shape": [1], "data": _data([1], rng, special).reshape(-1)},
        {
            "id": 7,
            "op": "input",
            "shape": [BATCH, 1, N],
            "data": _data([BATCH, 1, N], rng, special).reshape(-1),
        },
        {"id": 8, "op": "input", "shape": [M, K], "data": x[0].reshape(-1)},
    ]
    ids = iter(range(10, 100))

    def op(name: str, *operands: int) -> int:
        i = next(ids)
        keys = ("a", "b")
        nodes.append({"id": i, "op": name, **dict(zip(keys, operands, strict=False))})
        return i

    def p() -> int:
        return op("matmul", 0, 1)

    outs = {  # each slot value at least once, in few override sets (pipelines to compile)
        "bias_relu": op("relu", op("add", p(), 2)),  # add, bias [N], POST relu
        "row_minus": op("sub", op("neg", 4), p()),  # sub, the product as b, [1, N], PRE neg
        "gated": op("abs", op("mul", p(), op("positive", 3))),  # mul, PRE positive, POST abs
        "cancel": op("add", 3, p()),  # the product as b, same shape; exact signed zeros
        "column": op("sub", p(), 5),  # [M, 1]
        "scaled": op("mul", 6, p()),  # one value, the product as b
    }
    keep = p()  # an output itself: stays a matmul
    twice = p()  # two readers
    outs |= {
        "kept": keep,
        "kept_plus": op("add", keep, 2),
        "twice_a": op("add", twice, 2),
        "twice_b": op("mul", twice, 3),
        "self": op("add", (s := p()), s),  # both operands the product
        "batch_row": op("add", p(), 7),  # [BATCH, 1, N]: a row per batch, not folded
        "up": op("add", op("matmul", 8, 1), 3),  # [M, N] product broadcast up to the batch
    }
    return {
        "version": 3,
        "nodes": nodes,
        "outputs": [{"name": k, "id": v} for k, v in outs.items()],
    }


FUSED = {  # output -> the epilogue overrides of its dispatch
    "bias_relu": {
        "EPI_OP": 1 + MAP2["add"],
        "EPI_SIDE": 0,
        "EPI_BCAST": 1,
        "EPI_POST": 1 + MAP1["relu"],
    },
    "row_minus": {
        "EPI_OP": 1 + MAP2["sub"],
        "EPI_SIDE": 1,
        "EPI_BCAST": 1,
        "EPI_PRE": 1 + MAP1["neg"],
    },
    "gated": {
        "EPI_OP": 1 + MAP2["mul"],
        "EPI_SIDE": 0,
        "EPI_BCAST": 0,
        "EPI_PRE": 1 + MAP1["positive"],
        "EPI_POST": 1 + MAP1["abs"],
    },
    "cancel": {"EPI_OP": 1 + MAP2["add"], "EPI_SIDE": 1, "EPI_BCAST": 0},
    "column": {"EPI_OP": 1 + MAP2["sub"], "EPI_SIDE": 0, "EPI_BCAST": 3},
    "scaled": {"EPI_OP": 1 + MAP2["mul"], "EPI_SIDE": 1, "EPI_BCAST": 2},
}


def words(values: Any) -> bytes:
    """The float32 words, every NaN as 0x7fc00000: a NaN's payload is not part of the contract
    (docs/protocol.md; the exact class counts every NaN equal), and NaN * NaN gives the payload
    of whichever operand the compiled instruction names first, which differs between kernels."""
    x = np.array(values, np.float32).reshape(-1)
    words = x.view(np.uint32).copy()
    words[np.isnan(x)] = 0x7FC00000
    return words.tobytes()
