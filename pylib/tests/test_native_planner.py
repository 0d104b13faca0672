"""The Python planner on its own (pure Python, no GPU): dispatch splitting, params packing,
buffer/alias rules and the limits that pick kernels or refuse a graph. The JS twin is compared
with it case by case in e2e/test_plans_equal.py."""

from __future__ import annotations

import struct

import pytest
from gpulab.errors import GpuLabError
from gpulab.native.planner import pack_params, plan_graph, split_dispatch
from gpulab.protocol import CheckedNode, validate

NODE = CheckedNode(id=7, op="add", operands=(), attrs={})


def _graph(*nodes: dict, outputs: list[int], version: int = 2) -> dict:
    return {
        "version": version,
        "nodes": list(nodes),
        "outputs": [{"name": f"o{i}", "id": i} for i in outputs],
    }


def _input(node_id: int, shape: list[int], data: bool = True) -> dict:
    node = {"id": node_id, "op": "input", "shape": shape}
    if data:
        count = 1
        for d in shape:
            count *= d
        node["data"] = [float(i) for i in range(count)]
    return node


@pytest.mark.parametrize(
    ("groups", "max_dim", "want"),
    [
        (1, 65535, [1, 1, 1]),
        (65535, 65535, [65535, 1, 1]),
        (65536, 65535, [65535, 2, 1]),
        (9, 3, [3, 3, 1]),
        (10, 3, [3, 3, 2]),  # 4 rows of 3 do not fit in y = 3: z takes the rest
        (8, 2, [2, 2, 2]),
    ],
)
def test_split_dispatch_covers_every_workgroup(groups: int, max_dim: int, want: list) -> None:
    got = split_dispatch(NODE, groups, max_dim)
    assert got == want
    assert all(d <= max_dim for d in got) and got[0] * got[1] * got[2] >= groups


def test_split_dispatch_refuses_past_three_dimensions() -> None:
    with pytest.raises(GpuLabError) as err:
        split_dispatch(NODE, 28, 3)
    assert err.value.code == "LIMIT" and "node 7 (add)" in err.value.message


def test_pack_params_is_little_endian_words_padded_to_16_bytes() -> None:
    raw = pack_params([["u32", 3], ["f32", 0.5], ["u32", 0xFFFFFFFF], ["f32", -2.0], ["u32", 1]])
    assert len(raw) == 32
    assert struct.unpack("<IfIfI3I", raw) == (3, 0.5, 0xFFFFFFFF, -2.0, 1, 0, 0, 0)
    assert len(pack_params([])) == 16


def test_matmul_kernel_follows_the_work_not_the_storage_limit() -> None:
    def kernel(a: list[int], b: list[int], storage: int = 32768) -> tuple[str, list[int]]:
        checked = validate(
            _graph(
                _input(0, a), _input(1, b), {"id": 2, "op": "matmul", "a": 0, "b": 1}, outputs=[2]
            )
        )
        step = plan_graph(checked, {"maxComputeWorkgroupStorageSize": storage})["steps"][0]
        return step["kernel"], [v for _, v in step["params"][:6]] + step["dispatch"]

    # few outputs: 16x16 tiles, whatever the storage
    for storage in (16384, 32768):
        assert kernel([5, 7], [7, 3], storage) == ("matmul_small", [5, 3, 7, 1, 1, 1, 1, 1, 1])
    assert kernel([64, 784], [784, 256])[0] == "matmul_small"  # the MLP's x @ W1: 64 groups
    # 128 tiles where they still give 128 workgroups; 64 tiles next; vec4 kernels when aligned
    assert kernel([4096, 8], [8, 4096]) == ("matmul_rb_v4", [4096, 4096, 8, 32, 32, 1, 1024, 1, 1])
    # the 128 tile has a kernel per alignment: vec4 a needs K % 4 == 0, vec4 b and out N % 4 == 0
    assert kernel([4096, 9], [9, 4096])[0] == "matmul_rb_b4"
    assert kernel([4096, 8], [8, 4095])[0] == "matmul_rb_a4"
    assert kernel([4096, 9], [9, 4095])[0] == "matmul_rb"
    assert kernel([1024, 8], [8, 1024]) == ("matmul_v4", [1024, 1024, 8, 16, 16, 1, 256, 1, 1])
    assert kernel([1024, 8], [8, 1023])[0] == "matmul"
    # a batch of thin products: tiles must be half filled along M and N
    assert kernel([128, 30, 8], [8, 36])[0] == "matmul_small"
    assert kernel([128, 36, 8], [8, 36])[0] == "matmul_v4"


def test_min_matmul_workgroups_is_a_limit_that_software_adapters_lower() -> None:
    def kernel(a: list[int], b: list[int], limits: dict) -> tuple[str, list[int]]:
        checked = validate(
            _graph(
                _input(0, a), _input(1, b), {"id": 2, "op": "matmul", "a": 0, "b": 1}, outputs=[2]
            )
        )
        plan = plan_graph(checked, limits)
        step = plan["steps"][0]
        assert plan["limits"]["minMatmulWorkgroups"] == limits.get("minMatmulWorkgroups", 128)
        return step["kernel"], [v for _, v in step["params"][3:5]] + step["dispatch"]

    software = {"minMatmulWorkgroups": 1}
    # the MLP's x @ W1: 4 tiles of 64 (a 128 tile would be half empty along M)
    assert kernel([64, 784], [784, 256], {})[0] == "matmul_small"
    assert kernel([64, 784], [784, 256], software) == ("matmul_v4", [1, 4, 4, 1, 1])
    # its weight gradient x^T @ dh ([784, 64] @ [64, 256]): 7 x 2 tiles of 128
    assert kernel([784, 64], [64, 256], software) == ("matmul_rb_v4", [7, 2, 14, 1, 1])
    # the threshold is compared, not just "software or not": 16 tiles of 64 need at most 16
    assert kernel([256, 8], [8, 256], {"minMatmulWorkgroups": 16})[0] == "matmul_v4"
    assert kernel([256, 8], [8, 256], {"minMatmulWorkgroups": 17})[0] == "matmul_small"
    # products under half a 64 tile stay on matmul_small even on a software adapter
    assert kernel([32, 8], [8, 256], software)[0] == "matmul_small"


def test_broadcast_strides_are_zero_on_size_one_axes() -> None:
    checked = validate(
        _graph(
            _input(0, [2, 1, 4]),
            _input(1, [3, 1]),
            {"id": 2, "op": "add", "a": 0, "b": 1},
            outputs=[2],
        )
    )
    step = plan_graph(checked)["steps"][0]
    words = [v for _, v in step["params"]]
    assert words[:2] == [24, 0]  # n, not "same"
    assert words[4:8] == [1, 2, 3, 4]  # result shape padded to rank 4
    assert words[8:12] == [0, 4, 0, 1]  # a [2, 1, 4]: axis of size 1 reads with stride 0
    assert words[12:16] == [0, 0, 1, 0]  # b [3, 1] aligned right


def test_reshape_aliases_computed_values_but_copies_inputs() -> None:
    checked = validate(
        _graph(
            _input(0, [2, 3]),
            {"id": 1, "op": "neg", "a": 0},
            {"id": 2, "op": "reshape", "a": 1, "shape": [3, 2]},
            {"id": 3, "op": "reshape", "a": 0, "shape": [6]},
            outputs=[2, 3],
        )
    )
    plan = plan_graph(checked)
    values = {v["node"]: v for v in plan["values"]}
    assert values[2]["alias"] and values[2]["buffer"] == values[1]["buffer"]
    assert plan["buffers"][values[1]["buffer"]]["kind"] == "output"  # holds output o2
    assert not values[3]["alias"] and values[3]["buffer"] != values[0]["buffer"]
    assert [s["kernel"] for s in plan["steps"]] == ["unary", "permute"]


def test_buffers_uploads_and_outputs() -> None:
    checked = validate(
        _graph(
            _input(0, [4]),
            _input(1, [4], data=False),
            {"id": 2, "op": "full", "shape": [4], "value": "nan"},
            {"id": 3, "op": "add", "a": 0, "b": 1},
            {"id": 4, "op": "mul", "a": 3, "b": 2},
            outputs=[4],
        )
    )
    plan = plan_graph(checked)
    kinds = {b["node"]: b["kind"] for b in plan["buffers"]}
    assert kinds == {0: "input", 1: "input", 2: "const", 3: "temp", 4: "output"}
    assert [u["node"] for u in plan["uploads"]] == [0, 2]  # input 1 is fed, not uploaded
    assert plan["outputs"] == [{"name": "o4", "node": 4, "buffer": 4, "shape": [4]}]


def test_buffer_past_the_binding_limit_is_refused_with_limit() -> None:
    checked = validate(_graph(_input(0, [64]), {"id": 1, "op": "exp", "a": 0}, outputs=[1]))
    with pytest.raises(GpuLabError) as err:
        plan_graph(checked, {"maxStorageBufferBindingSize": 128})
    assert err.value.code == "LIMIT" and "node 0 (input)" in err.value.message


def test_cross_entropy_plans_rows_then_a_mean_over_scratch() -> None:
    checked = validate(
        _graph(
            _input(0, [5, 3]),
            _input(1, [5, 3]),
            {"id": 2, "op": "cross_entropy", "a": 0, "b": 1},
            outputs=[2],
        )
    )
    plan = plan_graph(checked)
    rows, mean = plan["steps"]
    assert rows["kernel"] == "rows" and rows["entry"] == "cross_entropy_rows"
    assert rows["dispatch"] == [5, 1, 1]
    assert mean["kernel"] == "reduce" and mean["overrides"] == {"OP": 1}
    assert rows["bindings"][-1] == mean["bindings"][0]  # the scratch [N]
    assert plan["buffers"][rows["bindings"][-1]]["elements"] == 5
