"""cpu-python kernels against independent small computations (plain Python math, explicit
loops), the fixed 64-lane reduction order bit for bit, and the numerics corner cases of
docs/protocol.md."""

from __future__ import annotations

import math
import random
import struct

import numpy as np
import pytest
from gpulab import optable
from gpulab.cpu import CpuExecutor
from gpulab.cpu.fixed_reduce import fixed_sum
from gpulab.cpu.kernels import KERNELS
from gpulab.cpu.special import erfc
from gpulab.errors import GpuLabError
from gpulab.protocol import validate


def f32(x: float) -> float:
    """Round a Python float to float32 (independent of numpy)."""
    try:
        return struct.unpack("<f", struct.pack("<f", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def ulp32(x: float) -> float:
    x = abs(x)
    if x < 2**-126:
        return 2**-149
    return 2.0 ** (math.frexp(x)[1] - 24)


def evaluate(nodes: list[dict], out: int | list[int] = -1) -> np.ndarray | list[np.ndarray]:
    ids = [nodes[out]["id"]] if isinstance(out, int) else out
    graph = {"version": 2, "nodes": nodes, "outputs": [{"name": f"o{i}", "id": i} for i in ids]}
    checked = validate(graph)
    program = CpuExecutor().prepare(checked)
    values = program.run([{}], ids)
    program.dispose()
    got = [values[i] for i in ids]
    for v, i in zip(got, ids):
        assert v.dtype == np.float32 and v.shape == checked.by_id[i].shape
    return got[0] if isinstance(out, int) else got


def inp(node_id: int, data: list[float], shape: list[int] | None = None) -> dict:
    return {
        "id": node_id,
        "op": "input",
        "shape": shape if shape is not None else [len(data)],
        "data": [v if math.isfinite(v) else str(v).replace("infinity", "inf") for v in data],
    }


def rand_list(n: int, seed: int, lo: float = -3.0, hi: float = 3.0) -> list[float]:
    rng = random.Random(seed)
    return [f32(rng.uniform(lo, hi)) for _ in range(n)]


def test_every_op_has_a_kernel():
    """Every op but those lanes.json says cpu-python cannot run (the student wgsl op)."""
    from gpulab.conformance.lanes import load_lanes

    refused = set(load_lanes()["cpu-python"])
    assert refused <= {"wgsl", "wgsl_output"}  # a new entry here needs a reason in the issue
    assert set(optable.ops()) - {"input"} - refused == set(KERNELS)


# ------------------------------------------------------------------------------ elementwise

PY_BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: (
        a / b if b else math.copysign(math.inf, a) * math.copysign(1, b) if a else math.nan
    ),
}


@pytest.mark.parametrize("op", list(PY_BINARY))
def test_binary_ops_broadcast_and_round_once(op):
    a, b = rand_list(6, 1), rand_list(3, 2)
    got = evaluate([inp(0, a, [2, 3]), inp(1, b, [1, 3]), {"id": 2, "op": op, "a": 0, "b": 1}])
    want = [f32(PY_BINARY[op](a[i * 3 + j], b[j])) for i in range(2) for j in range(3)]
    assert got.reshape(-1).tolist() == want


def test_broadcast_rank4_against_index_arithmetic():
    a, b = rand_list(2 * 3, 3), rand_list(4 * 1 * 5, 4)
    got = evaluate(
        [inp(0, a, [2, 1, 3, 1]), inp(1, b, [4, 1, 5]), {"id": 2, "op": "mul", "a": 0, "b": 1}]
    )
    assert got.shape == (2, 4, 3, 5)
    for i in range(2):
        for j in range(4):
            for k in range(3):
                for m in range(5):
                    assert got[i, j, k, m] == f32(a[i * 3 + k] * b[j * 5 + m])


def test_relu_positive_neg_exact_semantics():
    x = [math.nan, -0.0, 0.0, -1.5, 2.5, math.inf, -math.inf]
    relu, pos, neg = evaluate(
        [
            inp(0, x),
            {"id": 1, "op": "relu", "a": 0},
            {"id": 2, "op": "positive", "a": 0},
            {"id": 3, "op": "neg", "a": 0},
        ],
        [1, 2, 3],
    )
    assert [bits(v) for v in relu.tolist()] == [
        bits(v) for v in [0.0, 0.0, 0.0, 0.0, 2.5, math.inf, 0.0]
    ]
    assert pos.tolist() == [0, 0, 0, 0, 1, 1, 0]
    assert [bits(v) for v in neg.tolist()[1:]] == [bits(-v) for v in x[1:]]
    assert math.isnan(neg[0])


@pytest.mark.parametrize(
    "op, fn",
    [
        ("exp", math.exp),
        ("tanh", math.tanh),
        ("sigmoid", lambda v: 1 / (1 + math.exp(-v))),
        ("gelu", lambda v: 0.5 * v * (1 + math.erf(v / math.sqrt(2)))),
        ("sqrt", lambda v: math.sqrt(v) if v >= 0 else math.nan),
        ("log", lambda v: math.log(v) if v > 0 else (-math.inf if v == 0 else math.nan)),
    ],
)
def test_unary_ops_within_one_ulp_of_math(op, fn):
    x = rand_list(40, 5, -6, 6) + [0.0, 1.0, -1.0]
    got = evaluate([inp(0, x), {"id": 1, "op": op, "a": 0}]).tolist()
    for v, g in zip(x, got):
        ref = fn(v)
        if math.isnan(ref):
            assert math.isnan(g)
        elif math.isinf(ref):
            assert g == ref
        else:
            assert abs(g - ref) <= ulp32(ref), (op, v, g, ref)


def test_gelu_tail_keeps_small_values():
    x = [-8.0, -10.0, -12.0, 30.0, -math.inf, math.inf]
    got = evaluate([inp(0, x), {"id": 1, "op": "gelu", "a": 0}]).tolist()
    for v, g in zip(x[:3], got[:3]):
        ref = v * 0.5 * math.erfc(-v / math.sqrt(2))
        assert ref != 0 and abs(g - ref) <= 2 * ulp32(ref)
    assert got[3] == 30.0 and got[4] == 0.0 and got[5] == math.inf


def test_gelu_grad_against_the_formula():
    x, dy = rand_list(30, 6, -5, 5), rand_list(30, 7)
    got = evaluate([inp(0, x), inp(1, dy), {"id": 2, "op": "gelu_grad", "a": 0, "b": 1}])
    for v, d, g in zip(x, dy, got.tolist()):
        cdf = 0.5 * math.erfc(-v / math.sqrt(2))
        ref = d * (cdf + v * math.exp(-v * v / 2) / math.sqrt(2 * math.pi))
        assert abs(g - ref) <= ulp32(ref) + 1e-30


def test_erfc_against_math_erfc():
    xs = [i / 64 for i in range(-400, 1700)]
    got = erfc(np.array(xs)).tolist()
    for x, g in zip(xs, got):
        ref = math.erfc(x)
        assert abs(g - ref) <= 1e-11 * ref, (x, g, ref)


def test_full_with_non_finite_value():
    got = evaluate([{"id": 0, "op": "full", "shape": [2, 2], "value": "-inf"}])
    assert got.tolist() == [[-math.inf, -math.inf]] * 2


# ------------------------------------------------------------------------------ layout


def test_transpose_permute_reshape():
    x = rand_list(24, 8)
    t, p, r = evaluate(
        [
            inp(0, x, [2, 3, 4]),
            {"id": 1, "op": "transpose", "a": 0},
            {"id": 2, "op": "permute", "a": 0, "dims": [2, 0, 1]},
            {"id": 3, "op": "reshape", "a": 0, "shape": [4, -1]},
        ],
        [1, 2, 3],
    )
    assert t.shape == (2, 4, 3) and p.shape == (4, 2, 3) and r.shape == (4, 6)
    for i in range(2):
        for j in range(3):
            for k in range(4):
                v = x[i * 12 + j * 4 + k]
                assert t[i, k, j] == v and p[k, i, j] == v
    assert r.reshape(-1).tolist() == x


def test_matmul_and_batched_matmul_against_loops():
    a, b = rand_list(2 * 3 * 4, 9), rand_list(4 * 5, 10)
    got = evaluate(
        [inp(0, a, [2, 3, 4]), inp(1, b, [4, 5]), {"id": 2, "op": "matmul", "a": 0, "b": 1}]
    )
    assert got.shape == (2, 3, 5)
    for n in range(2):
        for i in range(3):
            for j in range(5):
                terms = [a[n * 12 + i * 4 + k] * b[k * 5 + j] for k in range(4)]
                ref = math.fsum(terms)
                scale = math.fsum(abs(t) for t in terms)
                assert abs(got[n, i, j] - ref) <= 8 * ulp32(ref) + 4 * 2**-23 * scale


# ------------------------------------------------------------------------------ reductions


def lanes_sum(values: list[float]) -> float:
    """docs/protocol.md's order, one float32 add at a time (no numpy)."""
    lanes = [0.0] * 64
    for i, v in enumerate(values):
        lanes[i % 64] = f32(lanes[i % 64] + v)
    s = 32
    while s >= 1:
        for i in range(s):
            lanes[i] = f32(lanes[i] + lanes[i + s])
        s //= 2
    return lanes[0]


@pytest.mark.parametrize("n", [1, 5, 63, 64, 65, 200, 1000])
def test_sum_all_is_the_lane_order_bit_for_bit(n):
    rng = random.Random(n)
    x = [f32(rng.uniform(-1, 1) * 10 ** rng.uniform(-3, 6)) for _ in range(n)]
    got = evaluate([inp(0, x), {"id": 1, "op": "sum", "a": 0}])
    assert got.shape == () and bits(float(got)) == bits(lanes_sum(x))


def test_sum_and_mean_over_an_axis_with_keepdim():
    rows, cols = 3, 130
    x = rand_list(rows * cols, 11, -100, 100)
    s, m, sk = evaluate(
        [
            inp(0, x, [rows, cols]),
            {"id": 1, "op": "sum", "a": 0, "axis": -1},
            {"id": 2, "op": "mean", "a": 0, "axis": 0},
            {"id": 3, "op": "sum", "a": 0, "axis": 1, "keepdim": True},
        ],
        [1, 2, 3],
    )
    for r in range(rows):
        assert bits(s[r]) == bits(lanes_sum(x[r * cols : (r + 1) * cols]))
    for c in range(cols):
        col = [x[r * cols + c] for r in range(rows)]
        assert bits(m[c]) == bits(f32(lanes_sum(col) / rows))
    assert sk.shape == (rows, 1) and sk[:, 0].tolist() == s.tolist()


def test_sum_of_negative_zeros_is_positive_zero():
    got = evaluate([inp(0, [-0.0, -0.0]), {"id": 1, "op": "sum", "a": 0}])
    assert bits(float(got)) == bits(0.0)


def test_numpy_outer_axis_reduce_is_sequential():
    """fixed_sum relies on np.add.reduce over axis 0 adding rows in order; check with a loop."""
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((3000, 64)) * np.exp(rng.uniform(-8, 8, (3000, 64)))).astype(
        np.float32
    )
    acc = np.zeros(64, np.float32)
    for row in x:
        acc = acc + row
    assert np.array_equal(np.add.reduce(x, axis=0), acc)
    assert fixed_sum(x.T.reshape(-1)[: 3000 * 64]).dtype == np.float32


def test_softmax_and_log_softmax_against_math():
    x = rand_list(2 * 5, 12, -20, 20)
    sm, ls = evaluate(
        [
            inp(0, x, [2, 5]),
            {"id": 1, "op": "softmax", "a": 0},
            {"id": 2, "op": "log_softmax", "a": 0, "axis": 1},
        ],
        [1, 2],
    )
    for r in range(2):
        row = x[r * 5 : (r + 1) * 5]
        m = max(row)
        total = math.fsum(math.exp(v - m) for v in row)
        for c in range(5):
            p = math.exp(row[c] - m) / total
            assert abs(sm[r, c] - p) <= 8 * ulp32(p) + 4 * 2**-23 * p
            lp = row[c] - m - math.log(total)
            assert abs(ls[r, c] - lp) <= 8 * ulp32(lp) + 4 * 2**-23 * (abs(row[c]) + abs(m))


def test_softmax_over_axis_0():
    x = rand_list(6, 13)
    got = evaluate([inp(0, x, [3, 2]), {"id": 1, "op": "softmax", "a": 0, "axis": 0}])
    assert np.allclose(got.sum(axis=0), 1.0, atol=1e-6)


def test_cross_entropy_and_its_gradient_against_math():
    n, c = 4, 3
    logits = rand_list(n * c, 14)
    target = [1.0 if j == i % c else 0.0 for i in range(n) for j in range(c)]
    loss, grad = evaluate(
        [
            inp(0, logits, [n, c]),
            inp(1, target, [n, c]),
            {"id": 2, "op": "cross_entropy", "a": 0, "b": 1},
            {"id": 3, "op": "cross_entropy_grad", "a": 0, "b": 1},
        ],
        [2, 3],
    )
    ref_loss, ref_grad = 0.0, []
    for i in range(n):
        row = logits[i * c : (i + 1) * c]
        lse = max(row) + math.log(math.fsum(math.exp(v - max(row)) for v in row))
        ref_loss -= math.fsum(target[i * c + j] * (row[j] - lse) for j in range(c))
        ref_grad += [(math.exp(row[j] - lse) - target[i * c + j]) / n for j in range(c)]
    ref_loss /= n
    assert loss.shape == () and abs(float(loss) - ref_loss) <= 1e-6 * abs(ref_loss)
    assert np.allclose(grad.reshape(-1), ref_grad, rtol=1e-6, atol=1e-7)


# ------------------------------------------------------------------------------ optimizers


def test_optimizer_updates_against_python_formulas():
    p, g, m, v = rand_list(5, 15), rand_list(5, 16), rand_list(5, 17), rand_list(5, 18, 0, 1)
    nodes = [
        inp(0, p),
        inp(1, g),
        inp(2, m),
        inp(3, v),
        inp(4, [3.0], [1]),
        {"id": 5, "op": "sgd_update", "a": 0, "b": 1, "lr": 0.1},
        {"id": 6, "op": "momentum_update", "a": 2, "b": 1, "momentum": 0.9},
        {"id": 7, "op": "adam_m", "a": 2, "b": 1},
        {"id": 8, "op": "adam_v", "a": 3, "b": 1, "beta2": 0.99},
        {"id": 9, "op": "adam_update", "a": 0, "b": 2, "c": 3, "t": 4, "lr": 0.01},
    ]
    sgd, mom, am, av, upd = evaluate(nodes, [5, 6, 7, 8, 9])
    # float attributes are float32 values (docs/protocol.md): the formulas use those
    lr, mu, b1, b2 = f32(0.1), f32(0.9), f32(0.9), f32(0.99)
    lr2, b2d, eps = f32(0.01), f32(0.999), f32(1e-8)
    for i in range(5):
        assert sgd[i] == f32(p[i] - lr * g[i])
        assert mom[i] == f32(mu * m[i] + g[i])
        assert am[i] == f32(b1 * m[i] + (1 - b1) * g[i])
        assert av[i] == f32(b2 * v[i] + (1 - b2) * g[i] * g[i])
        ref = p[i] - (lr2 / (1 - b1**3)) * m[i] / (math.sqrt(v[i]) / math.sqrt(1 - b2d**3) + eps)
        assert abs(upd[i] - ref) <= ulp32(ref)


# ------------------------------------------------------------------------------ life


def test_life_blinker_and_glider_wrap_around():
    blinker = [0.0] * 25
    for c in (1, 2, 3):
        blinker[2 * 5 + c] = 1.0
    got = evaluate([inp(0, blinker, [5, 5]), {"id": 1, "op": "life", "a": 0}])
    assert {(r, c) for r in range(5) for c in range(5) if got[r, c]} == {(1, 2), (2, 2), (3, 2)}
    # a glider moves (1, 1) every 4 steps; on a 6x6 torus it wraps back after 24 steps
    n = 6
    cells = {(0, 1), (1, 2), (2, 0), (2, 1), (2, 2)}
    grid = [0.6 if (r, c) in cells else 0.4 for r in range(n) for c in range(n)]
    nodes = [inp(0, grid, [n, n])] + [{"id": i, "op": "life", "a": i - 1} for i in range(1, 25)]
    after4, after24 = evaluate(nodes, [4, 24])
    moved = {((r + 1) % n, (c + 1) % n) for r, c in cells}
    assert {(r, c) for r in range(n) for c in range(n) if after4[r, c] == 1} == moved
    assert {(r, c) for r in range(n) for c in range(n) if after24[r, c] == 1} == cells
    assert set(np.unique(after24).tolist()) == {0.0, 1.0}


# ------------------------------------------------------------------------------ program


def test_program_carry_download_and_dispose():
    graph = {
        "version": 2,
        "nodes": [
            inp(0, [1.0, 2.0]),
            {"id": 1, "op": "full", "shape": [2], "value": 1},
            {"id": 2, "op": "add", "a": 0, "b": 1},
        ],
        "outputs": [{"name": "next", "id": 2}],
    }
    program = CpuExecutor().prepare(validate(graph), carry={0: 2}, keep=[2])
    out = program.run([{}, {}, {}], [2])
    assert out[2].tolist() == [4.0, 5.0]  # the last step's output
    assert program.download(0).tolist() == [4.0, 5.0]  # the carried input after the last step
    program.dispose()
    with pytest.raises(GpuLabError) as info:
        program.run([{}], [2])
    assert info.value.code == "DISPOSED"


def test_unfed_input_is_refused_at_prepare():
    graph = {
        "version": 2,
        "nodes": [{"id": 0, "op": "input", "shape": [2]}, {"id": 1, "op": "relu", "a": 0}],
        "outputs": [{"name": "o", "id": 1}],
    }
    with pytest.raises(GpuLabError) as info:
        CpuExecutor().prepare(validate(graph))
    assert info.value.code == "VALIDATION" and "node 0 (input)" in info.value.message
