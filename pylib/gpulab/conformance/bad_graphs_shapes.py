"""Bad graphs of the version-8 tensor features (docs/protocol.md "Zero-size tensors", "Rank-0
axes"): each feature at a version that does not know it, rank 9, and the zero-size graphs whose
result would be undefined (an extreme over no element, an index into an empty axis, -1 beside
a 0, a window op over an empty plane, a student kernel bound to an empty tensor).
bad_graphs.py adds these rows to its table."""

from __future__ import annotations

from typing import Any

from gpulab.conformance.bad_graphs import Node, graph, inp, row

V8 = 8
SAXPY = """struct Params { a: f32, n: u32 }
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> y: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
  let i = id.x;
  if (i < p.n) { out[i] = p.a * x[i] + y[i]; }
}
"""


def ints(node_id: int, shape: list[int], data: list[int]) -> Node:
    return {"id": node_id, "op": "input", "shape": shape, "dtype": "int32", "data": data}


def _on(op: str, *inputs: Node, **attrs: Any) -> dict:
    """op over the inputs (operands a, idx, src / a, w in that order), at version 8."""
    names = {
        1: ["a"],
        2: ["a", "w"] if op == "conv2d" else ["a", "idx"],
        3: ["a", "idx", "src"],
    }[len(inputs)]
    node = {"id": 9, "op": op, **{n: i["id"] for n, i in zip(names, inputs, strict=True)}, **attrs}
    if op == "conv2d":
        node["bias"] = []
    return graph([*inputs, node], version=V8)


def version_rows() -> list[dict]:
    """A version-8 feature in a graph that declares 7: refused as a version, naming the node."""
    scalar = inp(0, [], [1.5])
    return [
        row(
            "version/zero_size_at_v6",
            graph([inp(0, [2, 0], [])], version=6),
            "UNSUPPORTED_VERSION",
            0,
            "zero_size",
        ),
        row(
            "version/high_rank_at_v6",
            graph([{"id": 0, "op": "full", "shape": [1, 2, 1, 2, 1], "value": 1}], version=6),
            "UNSUPPORTED_VERSION",
            0,
            "high_rank",
        ),
        row(
            "version/scalar_axis_at_v6",
            graph([scalar, {"id": 1, "op": "softmax", "a": 0, "axis": 0}], version=6),
            "UNSUPPORTED_VERSION",
            1,
            "scalar_axis",
        ),
        row(
            "version/high_rank_reshape_at_v6",
            graph(
                [inp(0, [4]), {"id": 1, "op": "reshape", "a": 0, "shape": [1, 1, 2, 1, 2]}],
                version=6,
            ),
            "UNSUPPORTED_VERSION",
            1,
            "high_rank",
        ),
    ]


def rank_rows() -> list[dict]:
    """max_rank is 8: a shape, a reshape or a student result of rank 9 is LIMIT."""
    return [
        row(
            "limit/input_rank_9", graph([inp(0, [1] * 9, [0])], version=V8), "LIMIT", 0, "max_rank"
        ),
        row(
            "limit/reshape_rank_9",
            graph(
                [inp(0, [2]), {"id": 1, "op": "reshape", "a": 0, "shape": [1] * 8 + [2]}],
                version=V8,
            ),
            "LIMIT",
            1,
            "max_rank",
        ),
        row(
            "limit/hash_uniform_rank_9",
            graph(
                [
                    {"id": 0, "op": "input", "shape": [], "dtype": "uint32", "data": [0]},
                    {"id": 1, "op": "hash_uniform", "counter": 0, "shape": [1] * 9},
                ],
                version=V8,
            ),
            "LIMIT",
            1,
            "max_rank",
        ),
        row(
            "limit/index_axis_8",
            _on("gather", inp(0, [2] * 8), ints(1, [1] * 8, [0]), axis=8),
            "VALIDATION",
            9,
            "-8..7",
        ),
        row(
            "shape/gather_axis_7_of_rank_4",
            _on("gather", inp(0, [2, 2, 2, 2]), ints(1, [1, 1, 1, 1], [0]), axis=7),
            "VALIDATION",
            9,
            "out of range",
        ),
    ]


def empty_rows() -> list[dict]:
    """Zero-size graphs whose result would be undefined: refused by name, never a number."""
    e03, e20 = inp(0, [0, 3], []), inp(0, [2, 0], [])
    return [
        row(
            "empty/reduce_max_over_empty_axis",
            _on("reduce_max", e03, axis=0),
            "VALIDATION",
            9,
            "no element",
        ),
        row(
            "empty/reduce_min_of_all_of_empty",
            _on("reduce_min", e20),
            "VALIDATION",
            9,
            "no element",
        ),
        row(
            "empty/argmax_keepdim_over_empty_axis",
            _on("argmax", e20, axis=1, keepdim=True),
            "VALIDATION",
            9,
            "no element",
        ),
        row("empty/argmin_of_all_of_empty", _on("argmin", e03), "VALIDATION", 9, "no element"),
        row(
            "empty/reshape_minus_one_beside_zero",
            _on("reshape", e03, shape=[0, -1]),
            "VALIDATION",
            9,
            "could be any size",
        ),
        row(
            "empty/index_select_into_empty_axis",
            _on("index_select", e20, ints(1, [2], [0, 0]), axis=1),
            "VALIDATION",
            9,
            "empty",
        ),
        row(
            "empty/gather_into_empty_axis",
            _on("gather", e03, ints(1, [1, 3], [0, 0, 0]), axis=0),
            "VALIDATION",
            9,
            "empty",
        ),
        row(
            "empty/index_add_into_empty_axis",
            _on("index_add", e20, ints(1, [1], [0]), inp(2, [2, 1]), axis=1),
            "VALIDATION",
            9,
            "empty",
        ),
        row(
            "empty/scatter_add_into_empty_axis",
            _on("scatter_add", inp(0, [0, 2], []), ints(1, [1, 2], [0, 0]), inp(2, [1, 2]), axis=0),
            "VALIDATION",
            9,
            "empty",
        ),
        row(
            "empty/dequantize_rows_of_an_empty_table",
            _on(
                "dequantize_rows",
                {"id": 0, "op": "input", "shape": [0, 32], "dtype": "q8_0", "data": {"base64": ""}},
                ints(1, [2], [0, 0]),
            ),
            "VALIDATION",
            9,
            "empty",
        ),
        row(
            "empty/conv2d_without_input_channels",
            _on("conv2d", inp(0, [1, 0, 4, 4], []), inp(1, [2, 0, 3, 3], [])),
            "VALIDATION",
            9,
            "no input channel",
        ),
        row(
            "empty/conv2d_empty_plane",
            _on("conv2d", inp(0, [1, 1, 0, 4], []), inp(1, [1, 1, 1, 1])),
            "VALIDATION",
            9,
            "empty plane",
        ),
        row(
            "empty/conv2d_empty_kernel",
            _on("conv2d", inp(0, [1, 1, 4, 4]), inp(1, [1, 1, 0, 3], [])),
            "VALIDATION",
            9,
            "empty kernel",
        ),
        row(
            "empty/max_pool2d_empty_plane",
            _on("max_pool2d", inp(0, [1, 1, 4, 0], []), kernel=[1, 1]),
            "VALIDATION",
            9,
            "empty plane",
        ),
        row(
            "empty/resize_empty_plane",
            _on("resize", inp(0, [1, 1, 0, 2], []), size=[2, 2]),
            "VALIDATION",
            9,
            "empty plane",
        ),
        row(
            "empty/wgsl_empty_input",
            graph(
                [
                    inp(0, [0], []),
                    inp(1, [4]),
                    {
                        "id": 5,
                        "op": "wgsl",
                        "inputs": [0, 1],
                        "source": SAXPY,
                        "results": [{"name": "out", "shape": [4], "dtype": "float32"}],
                        "workgroups": [1],
                        "params": {"a": 2.0, "n": 4},
                    },
                ],
                version=V8,
            ),
            "VALIDATION",
            5,
            "cannot be bound",
        ),
    ]


def scalar_axis_rows() -> list[dict]:
    """Rank-0 operands take axis 0 or -1 only, and an index to a scalar holds one value."""
    s = inp(0, [], [2.0])
    return [
        row("scalar_axis/sum_axis_1", _on("sum", s, axis=1), "VALIDATION", 9, "out of range"),
        row(
            "scalar_axis/softmax_axis_minus_2",
            _on("softmax", s, axis=-2),
            "VALIDATION",
            9,
            "out of range",
        ),
        row(
            "scalar_axis/index_select_two_indices",
            _on("index_select", s, ints(1, [2], [0, 0]), axis=0),
            "VALIDATION",
            9,
            "one index",
        ),
        row(
            "scalar_axis/index_select_out_of_range",
            _on("index_select", s, ints(1, [1], [1]), axis=0),
            "VALIDATION",
            9,
            "out of range",
        ),
        row(
            "scalar_axis/index_add_src_rank_1",
            _on("index_add", s, ints(1, [1], [0]), inp(2, [1]), axis=0),
            "VALIDATION",
            9,
            "src",
        ),
        row(
            "scalar_axis/concat_rank_0",
            graph(
                [s, inp(1, [], [1.0]), {"id": 9, "op": "concat", "tensors": [0, 1], "axis": 0}],
                version=V8,
            ),
            "VALIDATION",
            9,
            "rank 0",
        ),
    ]


def tensor_feature_rows() -> list[dict]:
    return version_rows() + rank_rows() + empty_rows() + scalar_axis_rows()
