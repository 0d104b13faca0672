"""Every dtype passes through the Python executors bit for bit (cpu-python, and the wgpu executor
on this machine's adapter, software allowed): inputs that are outputs, given by value (list,
base64, numpy, bytes) or fed, constant, carried and swapped across steps, in execute and in
prepared sessions; results carry their dtype. The JS lanes run the same scenario
(backends-js/test/typed-roundtrip.mjs)."""

from __future__ import annotations

import numpy as np
import pytest
from gpulab import host
from gpulab.dtypes import DTYPE_NUMPY, to_base64_data, to_typed
from gpulab.errors import GpuLabError

pytest.importorskip("wgpu", reason="wgpu-py is not installed")

BACKENDS = ["cpu-python", "wgpu"]
VALUES = {
    # float32 bit patterns: -0, 1.5, the smallest subnormal, the largest finite, -123
    "float32": np.array([0x80000000, 0x3FC00000, 1, 0x7F7FFFFF, 0xC2F60000], dtype="<u4").view(
        "<f4"
    ),
    "int32": np.array([-2147483648, -1, 0, 7, 2147483647], dtype=np.int32),
    "uint32": np.array([0, 1, 2147483648, 4000000000, 4294967295], dtype=np.uint32),
    "bool": np.array([True, False, False, True, True]),
}


def same_bits(entry: dict, dtype: str, want: np.ndarray) -> bool:
    arr = entry["array"]  # bool as uint8 0/1 (gpulab.results)
    return (
        entry["dtype"] == dtype
        and arr.dtype == np.dtype(DTYPE_NUMPY[dtype])
        and arr.tobytes() == want.astype(DTYPE_NUMPY[dtype]).tobytes()
    )


def node(node_id: int, dtype: str, data: object = None) -> dict:
    out: dict = {"id": node_id, "op": "input", "shape": [5], "dtype": dtype}
    if data is not None:
        out["data"] = data
    return out


@pytest.mark.parametrize("backend", BACKENDS)
def test_execute_returns_every_dtype_bit_for_bit(backend: str) -> None:
    nodes, outputs = [], []
    for k, (dtype, v) in enumerate(VALUES.items()):
        packed = to_typed(v, dtype, "test")
        forms = {"base64": to_base64_data(packed), "numpy": v, "bytes": packed.tobytes()}
        if dtype != "float32":
            forms["list"] = v.astype(np.int64).tolist()
        for j, (form, data) in enumerate(forms.items()):
            nodes.append(node(10 * k + j, dtype, data))
            outputs.append({"name": f"{dtype}_{form}", "id": 10 * k + j})
    nodes += [
        {"id": 90, "op": "input", "shape": [2], "data": [1, -2]},
        {"id": 91, "op": "neg", "a": 90},
    ]
    result = host.execute(
        {"version": 3, "nodes": nodes, "outputs": outputs + [{"name": "neg", "id": 91}]},
        backend=backend,
        allow_software=True,
        strict=True,
    )
    assert result["backend"] == backend
    for out in outputs:
        dtype = out["name"].split("_")[0]
        entry = result["outputs"][out["name"]]
        assert same_bits(entry, dtype, VALUES[dtype]), (out["name"], entry)
        if dtype != "float32":
            assert entry["data"] == VALUES[dtype].astype(np.int64).tolist()  # ints, bool 0/1
    assert result["outputs"]["neg"]["data"] == [-1.0, 2.0]  # float32 data stays a float list


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", list(VALUES))
def test_sessions_feed_carry_and_swap_every_dtype(backend: str, dtype: str) -> None:
    a0, b0 = VALUES[dtype], VALUES[dtype][::-1].copy()
    f1, f2 = np.roll(a0, 2), np.roll(a0, 1)
    b_data = to_base64_data(to_typed(b0, dtype, "test"))
    graph = {
        "version": 3,
        "nodes": [node(0, dtype, a0), node(1, dtype, b_data), node(2, dtype)],
        "outputs": [{"name": "a", "id": 0}, {"name": "b", "id": 1}, {"name": "f", "id": 2}],
    }
    session = host.prepare(
        graph,
        feeds=[2],
        carry={0: "b", 1: "a"},
        outputs=["a", "b", "f"],
        backend=backend,
        allow_software=True,
        strict=True,
    )
    assert session.backend == backend
    try:
        first = session.run({2: f1})["outputs"]
        assert same_bits(first["a"], dtype, a0) and same_bits(first["f"], dtype, f1)
        assert same_bits(session.download(0), dtype, b0)  # carried into A
        feed2 = f2.astype(np.int64).tolist() if dtype != "float32" else f2
        two = session.run_steps([{2: f1}, {2: feed2}])["outputs"]
        # run 2 starts from A = B0, B = A0; its first carry swaps them back
        assert same_bits(two["a"], dtype, a0) and same_bits(two["b"], dtype, b0)
        assert same_bits(two["f"], dtype, f2)
        assert same_bits(session.download(0), dtype, b0)
        assert same_bits(session.download(1), dtype, a0)
        bad = ["x", 0, 0, 0, 0] if dtype == "float32" else [0.5, 0, 0, 0, 0]
        with pytest.raises(GpuLabError) as info:
            session.run({2: bad})
        assert info.value.code == "VALIDATION" and info.value.node == 2
        assert info.value.message.startswith("node 2 (input): step 0: feed")
        assert session.poisoned is None
    finally:
        session.dispose()


def test_a_carry_between_dtypes_is_refused() -> None:
    graph = {
        "version": 3,
        "nodes": [node(0, "int32", [0] * 5), node(1, "uint32", [0] * 5)],
        "outputs": [{"name": "u", "id": 1}, {"name": "i", "id": 0}],
    }
    with pytest.raises(GpuLabError, match="has dtype int32 but output 'u' has dtype uint32"):
        host.prepare(graph, carry={0: "u"}, backend="cpu-python")
