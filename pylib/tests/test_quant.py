"""Block-quantized weights: q4_k / q6_k blocks and matmul_fixed natively.

- the decode is bit for bit gguf-py's `gguf.quants.dequantize` (the reference, a test
  dependency) on random blocks whose f16 scales include 65504, subnormals and -0, in
  gpulab.quant and through every native executor (cpu-python; wgpu where it opens);
- the quantizers (ports of ggml's quantize_row_q4_K_ref / q6_K_ref: gguf-py has none to
  compare with) round-trip within ggml's usual error and decode exactly what they encode;
- a small GGUF file written by gguf-py's writer is read back with its reader and run;
- the Python API (`g.quantized`, `x @ w.T`, `w.dequantize()`, `a.matmul_fixed(b)`) and its
  refusals (K not a multiple of 256, a quantized output, `x @ w` without .T).
"""

from __future__ import annotations

import gguf  # gguf-py, a test dependency (pyproject's test extra): a missing one fails
import numpy as np
import pytest
from gpulab import quant
from gpulab.errors import GpuLabError
from gpulab.graph import Graph

QTYPE = {
    "q4_k": gguf.GGMLQuantizationType.Q4_K,
    "q6_k": gguf.GGMLQuantizationType.Q6_K,
    "q8_0": gguf.GGMLQuantizationType.Q8_0,
    "q4_0": gguf.GGMLQuantizationType.Q4_0,
}
KINDS = tuple(QTYPE)
SPECIAL_F16 = [
    0x7BFF,
    0xFBFF,
    0x0001,
    0x0002,
    0x03FF,
    0x8001,
    0x83FF,
    0x0000,
    0x8000,
    0x0400,
    0x3C00,
    0xBC00,
]
F16_FIELDS = {"q4_k": (0, 2), "q6_k": (208,), "q8_0": (0,), "q4_0": (0,)}


def random_blocks(kind: str, n_blocks: int, seed: int, special: bool) -> np.ndarray:
    """[blocks, bytes] of random bytes; f16 fields finite (ggml never writes inf/NaN)."""
    rng = np.random.default_rng(seed)
    blocks = rng.integers(0, 256, (n_blocks, quant.BLOCK_BYTES[kind]), dtype=np.uint8)
    for at in F16_FIELDS[kind]:
        if special:
            bits = np.array(SPECIAL_F16, np.uint16)[rng.integers(0, len(SPECIAL_F16), n_blocks)]
        else:
            bits = rng.integers(0, 0x7C00, n_blocks).astype(np.uint16)
            bits |= (rng.integers(0, 2, n_blocks) << 15).astype(np.uint16)
        blocks[:, at : at + 2] = bits.view(np.uint8).reshape(-1, 2)
    return blocks


def gguf_values(blocks: np.ndarray, kind: str, n: int) -> np.ndarray:
    return gguf.quants.dequantize(blocks.reshape(n, -1), QTYPE[kind]).astype(np.float32)


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("special", [False, True])
def test_decode_is_gguf_py_bit_for_bit(kind: str, special: bool) -> None:
    blocks = random_blocks(kind, 4 * 64, seed=7 + special, special=special)
    ref = gguf_values(blocks, kind, 4)
    got = quant.dequantize(blocks.tobytes(), kind, (4, 64 * quant.BLOCK_VALUES[kind]))
    assert same_bits(got, ref)
    if special:  # the cases asked for are really there
        assert np.any(np.signbit(ref) & (ref == 0)), "a -0 value"
        assert np.nanmax(np.abs(ref)) > 5e5, "65504 * 8, 65504 * 127, 65504 * 63 * 15 and the like"


@pytest.mark.parametrize("kind", KINDS)
def test_rows_decode_as_the_whole_tensor_does(kind: str) -> None:
    per = quant.BLOCK_VALUES[kind]
    blocks = random_blocks(kind, 5 * 2, seed=5, special=True)
    whole = quant.dequantize(blocks.tobytes(), kind, (5, 2 * per))
    rows = [4, 0, 4, 2]
    assert same_bits(quant.dequantize_rows(blocks.tobytes(), kind, (5, 2 * per), rows), whole[rows])


def run_graph(backend: str, **outputs: object) -> dict:
    g: Graph = outputs.pop("graph")  # type: ignore[assignment]
    return g.run(backend=backend, **outputs)["outputs"]


def backends() -> list[str]:
    names = ["cpu-python"]
    try:
        from gpulab.native.wgpu_executor import open_executor

        open_executor(allow_software=True).dispose()
        names.append("wgpu")
    except GpuLabError:
        pass
    return names


@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize("kind", KINDS)
def test_every_native_executor_decodes_as_gguf_py(
    backend: str, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPULAB_ALLOW_SOFTWARE", "1")
    k = 2 * quant.BLOCK_VALUES[kind] if kind in ("q4_k", "q6_k") else 576  # 18 q8_0/q4_0 blocks
    per_row = k // quant.BLOCK_VALUES[kind]
    blocks = random_blocks(kind, 3 * per_row, seed=3, special=True)
    g = Graph()
    w = g.quantized(blocks.tobytes(), kind, (3, k))
    xs = np.arange(2 * k, dtype=np.float32).reshape(2, k) % 7 - 3
    x = g.tensor(xs)
    out = run_graph(backend, graph=g, w=w.dequantize(), y=x @ w.T, r=w.dequantize_rows([2, 0, 2]))
    ref = gguf_values(blocks, kind, 3)
    assert same_bits(np.asarray(out["w"]["array"], np.float32), ref)
    assert same_bits(np.asarray(out["r"]["array"], np.float32), ref[[2, 0, 2]])
    want = xs.astype(np.float64) @ ref.astype(np.float64).T
    scale = np.abs(xs.astype(np.float64)) @ np.abs(ref.astype(np.float64)).T
    assert np.all(np.abs(out["y"]["array"] - want) <= 1.5e-6 * scale + 1e-30)


@pytest.mark.parametrize("backend", backends())
def test_rows_out_of_range_at_run_time_are_refused_naming_the_node(
    backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fed (or computed) index past the table: BACKEND naming the position, the session
    poisoned; a constant one is refused at validation."""
    monkeypatch.setenv("GPULAB_ALLOW_SOFTWARE", "1")
    g = Graph()
    w = g.quantized(random_blocks("q8_0", 3, seed=1, special=False).tobytes(), "q8_0", (3, 32))
    idx = g.input([2], name="idx", dtype="int32")
    session = g.prepare(feeds=[idx], backend=backend, r=w.dequantize_rows(idx))
    try:
        ok = session.run({"idx": np.array([2, 0], np.int32)})["outputs"]["r"]["array"]
        assert np.asarray(ok).shape == (2, 32)
        with pytest.raises(GpuLabError) as err:
            session.run({"idx": np.array([1, 3], np.int32)})
        assert err.value.code == "BACKEND"
        assert "(dequantize_rows): operand idx holds" in err.value.message
        assert "idx[1]" in err.value.message and "valid 0..2" in err.value.message
    finally:
        session.dispose()
    with pytest.raises(GpuLabError, match=r"idx\[0\] = -1, out of range for axis 0"):
        g.run(backend="cpu-python", r=w.dequantize_rows([-1]))


@pytest.mark.parametrize("kind,bound", [("q4_k", 0.08), ("q6_k", 0.02)])
def test_quantizers_round_trip_within_ggml_error(kind: str, bound: float) -> None:
    # ggml's reference quantizers on N(0, 1) data: q4_k ~0.071, q6_k ~0.018 RMS error
    w = np.random.default_rng(1).standard_normal((16, 1024)).astype(np.float32)
    raw = quant.quantize(w, kind)
    assert len(raw) == 16 * 4 * quant.BLOCK_BYTES[kind]
    back = quant.dequantize(raw, kind, w.shape)
    assert np.sqrt(np.mean((back - w) ** 2)) < bound
    assert same_bits(back, gguf_values(np.frombuffer(raw, np.uint8), kind, 16))
    zeros = quant.dequantize(quant.quantize(np.zeros((1, 256), np.float32), kind), kind, (1, 256))
    assert not zeros.any()
    with pytest.raises(ValueError, match="multiple of 256"):
        quant.quantize(np.zeros((2, 100), np.float32), kind)


def test_a_gguf_file_written_by_gguf_py_reads_back_and_runs(tmp_path) -> None:
    rng = np.random.default_rng(2)
    weights = {
        "blk.0.ffn_up.weight": ("q4_k", rng.standard_normal((6, 512))),
        "blk.0.ffn_down.weight": ("q6_k", rng.standard_normal((4, 256))),
    }
    path = tmp_path / "tiny.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    for name, (kind, w) in weights.items():
        raw = np.frombuffer(quant.quantize(w.astype(np.float32), kind), np.uint8)
        raw = raw.reshape(w.shape[0], -1)  # gguf-py takes the bytes per row as the shape
        writer.add_tensor(name, raw, raw_shape=raw.shape, raw_dtype=QTYPE[kind])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    reader = gguf.GGUFReader(str(path))
    for t in reader.tensors:
        kind = {v: k for k, v in QTYPE.items()}[t.tensor_type]
        k, n = (int(d) for d in t.shape)  # GGUF lists dims innermost first: [K, N]
        g = Graph()
        w = g.quantized(t.data, kind, (n, k))
        x = g.tensor(np.ones((1, k), np.float32))
        out = g.run(backend="cpu-python", y=x @ w.T, w=w.dequantize())["outputs"]
        ref = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32).reshape(n, k)
        assert same_bits(np.asarray(out["w"]["array"], np.float32), ref)
        np.testing.assert_allclose(
            out["y"]["array"][0], ref.astype(np.float64).sum(axis=1), rtol=1e-5, atol=1e-4
        )
        assert np.abs(ref - weights[t.name][1]).mean() < 0.1  # the checkpoint's own values


def test_matmul_fixed_is_the_int64_reference() -> None:
    rng = np.random.default_rng(4)
    a = (rng.standard_normal((3, 300)) * 50).astype(np.float32)
    b = (rng.standard_normal((300, 2)) * 50).astype(np.float32)
    a[0, :4] = [np.nan, np.inf, 3e9, -0.5]
    g = Graph()
    out = g.run(backend="cpu-python", y=g.tensor(a).matmul_fixed(g.tensor(b), frac_bits=12))
    qa = np.clip(
        np.rint(np.nan_to_num(a.astype(np.float64) * 4096, posinf=1e300)), -(2**31), 2**31 - 1
    ).astype(np.int64)
    qb = np.clip(np.rint(b.astype(np.float64) * 4096), -(2**31), 2**31 - 1).astype(np.int64)
    want = (qa @ qb).astype(np.float32) * np.float32(2.0**-24)
    assert same_bits(np.asarray(out["outputs"]["y"]["array"], np.float32), want)


def test_the_api_refuses_what_the_protocol_refuses() -> None:
    g = Graph()
    with pytest.raises(
        GpuLabError,
        match=r"node 0 \(input\): a q4_k tensor has shape \[N, K\] "
        r"with K a multiple of 256, got \[2, 100\]",
    ):
        g.quantized(bytes(2 * 144), "q4_k", (2, 100))
    w = g.quantized(bytes(2 * 144), "q4_k", (2, 256))
    x = g.tensor(np.ones((1, 256), np.float32))
    square = g.quantized(bytes(256 * 144), "q4_k", (256, 256))
    with pytest.raises(GpuLabError, match="operand b must be float32, got q4_k"):
        x @ square
    with pytest.raises(GpuLabError, match="is a q4_k tensor; only matmul_q, dequantize"):
        g.run(backend="cpu-python", w=w)
    with pytest.raises(GpuLabError, match="holds 100 bytes"):
        g.quantized(bytes(100), "q6_k", (1, 256))
    with pytest.raises(GpuLabError, match="kind must be one of q4_k, q6_k, q8_0, q4_0"):
        g.quantized(bytes(144), "q5_0", (1, 256))
    with pytest.raises(
        GpuLabError, match="a q4_0 tensor has shape \\[N, K\\] with K a multiple of 32"
    ):
        g.quantized(bytes(18), "q4_0", (1, 16))
    assert g.to_dict(y=x @ w.T)["nodes"][0]["data"] == {"base64": "A" * 384}  # 288 zero bytes


@pytest.mark.parametrize("backend", backends())
def test_a_session_feeds_quantized_weights_per_step(
    backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPULAB_ALLOW_SOFTWARE", "1")
    blocks = [random_blocks("q6_k", 2, seed=s, special=False) for s in (11, 12)]
    g = Graph()
    w = g.input([2, 256], name="w", dtype="q6_k")
    x = g.tensor(np.ones((1, 256), np.float32))
    session = g.prepare(feeds=[w], backend=backend, y=x @ w.T, d=w.dequantize())
    try:
        out = session.run_steps([{w: blocks[0].tobytes()}, {"w": blocks[1].tobytes()}])
    finally:
        session.dispose()
    ref = gguf_values(blocks[1], "q6_k", 2)  # the last step's weight
    assert same_bits(np.asarray(out["outputs"]["d"]["array"], np.float32), ref)
    np.testing.assert_allclose(
        out["outputs"]["y"]["array"][0], ref.sum(axis=1, dtype=np.float64), rtol=1e-5, atol=1e-3
    )


@pytest.mark.parametrize(
    ("kind", "rows", "entry"),
    [
        ("q4_k", 1, "matmul_q4k_vec"),
        ("q4_k", 5, "matmul_q4k_vec"),
        ("q4_k", 6, "matmul_q4k"),
        ("q6_k", 8, "matmul_q6k_vec"),
        ("q6_k", 9, "matmul_q6k"),
    ],
)
def test_the_planner_takes_the_gemv_for_few_rows(kind: str, rows: int, entry: str) -> None:
    """x of few rows (batch 1 decoding) runs the GEMV kernels; more rows the general one
    (the thresholds measured on the H200: docs/benchmarks.md)."""
    from gpulab.native.planner import plan_graph
    from gpulab.protocol import validate

    raw = quant.quantize(np.ones((3, 512), np.float32), kind)
    g = {
        "version": 2,
        "nodes": [
            {"id": 0, "op": "input", "shape": [rows, 512], "data": [1.0] * (rows * 512)},
            {"id": 1, "op": "input", "shape": [3, 512], "dtype": kind, "data": raw},
            {"id": 2, "op": "matmul_q", "a": 0, "b": 1},
        ],
        "outputs": [{"name": "y", "id": 2}],
    }
    (step,) = plan_graph(validate(g))["steps"]
    assert step["entry"] == entry
    assert step["overrides"].get("MR", rows) == rows
