"""The table of bad graphs (bad_graphs.json): graphs every validator must refuse, and how.

Each row: {name, graph, code, node, says}. `code` is the error code of docs/protocol.md,
`node` the id of the node the error must name (its message contains "node <id> (") or null
when no node is at fault, `says` a few words the message must contain (case-insensitive;
only where the protocol names the problem), or null. Rows are written by generate.py; both
validators (gpulab.protocol.validate, validateGraph in backends-js) are tested against them.
"""

from __future__ import annotations

import base64
import struct
from typing import Any

Node = dict[str, Any]


def inp(node_id: int, shape: list, data: list | None = None) -> Node:
    """An input node; data defaults to zeros of the shape's element count."""
    count = 1
    for d in shape:
        count *= d if isinstance(d, int) and d > 0 else 1
    return {
        "id": node_id,
        "op": "input",
        "shape": shape,
        "data": [0] * count if data is None else data,
    }


def graph(nodes: list[Node], out: int | list[dict] = -1, version: int = 2) -> dict:
    """A graph whose output is node `out` (default: the last listed node)."""
    outputs = (
        out
        if isinstance(out, list)
        else [{"name": "y", "id": nodes[out]["id"] if out == -1 else out}]
    )
    return {"version": version, "nodes": nodes, "outputs": outputs}


def row(name: str, g: Any, code: str, node: int | None, says: str | None = None) -> dict:
    return {"name": name, "graph": g, "code": code, "node": node, "says": says}


def _one_op(node: Node, *inputs: Node, version: int = 2) -> dict:
    return graph([*inputs, node], version=version)


def top_level_rows() -> list[dict]:
    ok_nodes = [inp(0, [1])]
    ok_out = [{"name": "y", "id": 0}]
    return [
        row("top/not_an_object", [1, 2], "VALIDATION", None),
        row("top/no_version", {"nodes": ok_nodes, "outputs": ok_out}, "VALIDATION", None),
        row("top/no_outputs", {"version": 1, "nodes": ok_nodes}, "VALIDATION", None),
        row(
            "top/version_string",
            {"version": "1", "nodes": ok_nodes, "outputs": ok_out},
            "VALIDATION",
            None,
        ),
        row(
            "top/version_fraction",
            {"version": 1.5, "nodes": ok_nodes, "outputs": ok_out},
            "VALIDATION",
            None,
        ),
        row(
            "top/version_bool",
            {"version": True, "nodes": ok_nodes, "outputs": ok_out},
            "VALIDATION",
            None,
        ),
        row("top/unknown_version_99", graph(ok_nodes, version=99), "UNSUPPORTED_VERSION", None),
        row("top/unknown_version_0", graph(ok_nodes, version=0), "UNSUPPORTED_VERSION", None),
        row("top/empty_nodes", {"version": 1, "nodes": [], "outputs": ok_out}, "VALIDATION", None),
        row(
            "top/nodes_not_a_list",
            {"version": 1, "nodes": {"0": ok_nodes[0]}, "outputs": ok_out},
            "VALIDATION",
            None,
        ),
        row(
            "top/empty_outputs",
            {"version": 1, "nodes": ok_nodes, "outputs": []},
            "VALIDATION",
            None,
        ),
        row(
            "top/too_many_outputs",
            graph(ok_nodes, [{"name": f"o{i}", "id": 0} for i in range(257)]),
            "LIMIT",
            None,
        ),
        # the version is checked before anything in the nodes
        row(
            "order/unknown_version_before_unknown_op",
            graph([{"id": 0, "op": "frobnicate"}], out=[{"name": "y", "id": 0}], version=99),
            "UNSUPPORTED_VERSION",
            None,
        ),
    ]


def node_rows() -> list[dict]:
    a = inp(0, [3])
    return [
        row(
            "node/unknown_op",
            graph([a, {"id": 1, "op": "frobnicate", "a": 0}]),
            "VALIDATION",
            1,
            "unknown op",
        ),
        row(
            "node/missing_id",
            graph([a, {"op": "relu", "a": 0}], out=[{"name": "y", "id": 0}]),
            "VALIDATION",
            None,
        ),
        row(
            "node/negative_id",
            graph([a, {"id": -1, "op": "relu", "a": 0}], out=0),
            "VALIDATION",
            None,
        ),
        row(
            "node/bool_id",
            graph([a, {"id": True, "op": "relu", "a": 0}], out=0),
            "VALIDATION",
            None,
        ),
        row(
            "node/string_id",
            graph([a, {"id": "1", "op": "relu", "a": 0}], out=0),
            "VALIDATION",
            None,
        ),
        row(
            "node/duplicate_id",
            graph([a, {"id": 0, "op": "relu", "a": 0}]),
            "VALIDATION",
            0,
            "duplicate id",
        ),
        row("node/not_an_object", graph([a, 5], out=0), "VALIDATION", None),
        row("node/missing_operand", _one_op({"id": 2, "op": "add", "a": 0}, a), "VALIDATION", 2),
        row(
            "node/operand_not_an_id",
            _one_op({"id": 2, "op": "add", "a": 0, "b": "0"}, a),
            "VALIDATION",
            2,
        ),
        row("node/operand_bool", _one_op({"id": 2, "op": "relu", "a": True}, a), "VALIDATION", 2),
        row(
            "node/unknown_field",
            _one_op({"id": 2, "op": "relu", "a": 0, "c": 0}, a),
            "VALIDATION",
            2,
        ),
        row(
            "node/unknown_field_name",
            _one_op({"id": 2, "op": "relu", "a": 0, "name": "x"}, a),
            "VALIDATION",
            2,
        ),
        row("node/missing_shape", graph([{"id": 0, "op": "input", "data": [1]}]), "VALIDATION", 0),
        row("node/missing_value", graph([{"id": 0, "op": "full", "shape": [2]}]), "VALIDATION", 0),
        row("node/missing_dims", _one_op({"id": 1, "op": "permute", "a": 0}, a), "VALIDATION", 1),
        row(
            "node/missing_lr",
            graph([a, inp(1, [3]), {"id": 2, "op": "sgd_update", "a": 0, "b": 1}]),
            "VALIDATION",
            2,
        ),
        row(
            "node/missing_reshape_shape",
            _one_op({"id": 1, "op": "reshape", "a": 0}, a),
            "VALIDATION",
            1,
        ),
    ]


def attr_rows() -> list[dict]:
    a = inp(0, [2, 3])
    bad_shapes = {
        "fraction": [2.5],
        "negative": [-1],
        "bool": [True],
        "string": ["3"],
        "not_a_list": 3,
    }
    rows = [
        row(
            f"attr/shape_{k}",
            graph([{"id": 0, "op": "full", "shape": v, "value": 1}]),
            "VALIDATION",
            0,
        )
        for k, v in bad_shapes.items()
    ]
    rows += [
        row(
            "attr/rank_9",
            graph([{"id": 0, "op": "full", "shape": [1] * 9, "value": 1}], version=8),
            "LIMIT",
            0,
        ),
        row(
            "attr/too_many_elements",
            graph([{"id": 0, "op": "full", "shape": [8192, 8193], "value": 1}]),
            "LIMIT",
            0,
        ),
        row("attr/data_too_short", graph([inp(0, [3], [1, 2])]), "VALIDATION", 0),
        row("attr/data_too_long", graph([inp(0, [], [1, 2])]), "VALIDATION", 0),
        row("attr/data_not_numbers", graph([inp(0, [2], [1, "one"])]), "VALIDATION", 0),
        row("attr/data_bool", graph([inp(0, [2], [1, True])]), "VALIDATION", 0),
        row("attr/dtype_float16", graph([{**inp(0, [1]), "dtype": "float16"}]), "VALIDATION", 0),
        row(
            "attr/value_string",
            graph([{"id": 0, "op": "full", "shape": [1], "value": "one"}]),
            "VALIDATION",
            0,
        ),
        row(
            "attr/lr_nan",
            graph([a, inp(1, [2, 3]), {"id": 2, "op": "sgd_update", "a": 0, "b": 1, "lr": "nan"}]),
            "VALIDATION",
            2,
        ),
        row(
            "attr/lr_bool",
            graph([a, inp(1, [2, 3]), {"id": 2, "op": "sgd_update", "a": 0, "b": 1, "lr": True}]),
            "VALIDATION",
            2,
        ),
        row(
            "attr/axis_fraction",
            _one_op({"id": 1, "op": "sum", "a": 0, "axis": 0.5}, a),
            "VALIDATION",
            1,
        ),
        row(
            "attr/keepdim_string",
            _one_op({"id": 1, "op": "sum", "a": 0, "keepdim": "yes"}, a),
            "VALIDATION",
            1,
        ),
        row(
            "attr/keepdim_null",
            _one_op({"id": 1, "op": "sum", "a": 0, "keepdim": None}, a),
            "VALIDATION",
            1,
        ),
        row(
            "attr/dims_not_a_list",
            _one_op({"id": 1, "op": "permute", "a": 0, "dims": 1}, a),
            "VALIDATION",
            1,
        ),
        row(
            "attr/reshape_two_minus_ones",
            _one_op({"id": 1, "op": "reshape", "a": 0, "shape": [-1, -1]}, a),
            "VALIDATION",
            1,
        ),
        row(
            "attr/reshape_zero",
            _one_op({"id": 1, "op": "reshape", "a": 0, "shape": [0, 6]}, a),
            "VALIDATION",
            1,
        ),
        row(
            "attr/reshape_minus_two",
            _one_op({"id": 1, "op": "reshape", "a": 0, "shape": [-2, -3]}, a),
            "VALIDATION",
            1,
        ),
    ]
    return rows


def structure_rows() -> list[dict]:
    a = inp(0, [3])
    return [
        row(
            "structure/dangling_operand",
            graph([a, {"id": 1, "op": "add", "a": 0, "b": 9}]),
            "VALIDATION",
            1,
            "dangling operand",
        ),
        row(
            "structure/dangling_output",
            graph([a], out=[{"name": "y", "id": 4}]),
            "VALIDATION",
            None,
            "dangling output",
        ),
        row(
            "structure/duplicate_output_names",
            graph(
                [a, {"id": 1, "op": "relu", "a": 0}],
                out=[{"name": "y", "id": 0}, {"name": "y", "id": 1}],
            ),
            "VALIDATION",
            None,
        ),
        row(
            "structure/empty_output_name",
            graph([a], out=[{"name": "", "id": 0}]),
            "VALIDATION",
            None,
        ),
        row(
            "structure/output_unknown_field",
            graph([a], out=[{"name": "y", "id": 0, "x": 1}]),
            "VALIDATION",
            None,
        ),
        row(
            "structure/cycle_self",
            graph([a, {"id": 1, "op": "add", "a": 0, "b": 1}]),
            "VALIDATION",
            1,
            "cycle",
        ),
        row(
            "structure/cycle_2",
            graph([a, {"id": 1, "op": "add", "a": 0, "b": 2}, {"id": 2, "op": "relu", "a": 1}]),
            "VALIDATION",
            1,
            "cycle",
        ),
        # listed 3, 1, 2: the first node in list order on the cycle is 3
        row(
            "structure/cycle_3",
            graph(
                [
                    a,
                    {"id": 3, "op": "relu", "a": 2},
                    {"id": 1, "op": "add", "a": 0, "b": 3},
                    {"id": 2, "op": "neg", "a": 1},
                ],
                out=1,
            ),
            "VALIDATION",
            3,
            "cycle",
        ),
        # per-node checks (step 2) come before structure (step 3)
        row(
            "order/node_checks_before_dangling",
            graph([a, {"id": 1, "op": "relu", "a": 9}, {"id": 2, "op": "frobnicate"}], out=0),
            "VALIDATION",
            2,
            "unknown op",
        ),
    ]


def shape_rows() -> list[dict]:
    def two(sa: list[int], sb: list[int], op: str, **attrs: Any) -> dict:
        return _one_op({"id": 2, "op": op, "a": 0, "b": 1, **attrs}, inp(0, sa), inp(1, sb))

    def one(sa: list[int], op: str, **attrs: Any) -> dict:
        return _one_op({"id": 1, "op": op, "a": 0, **attrs}, inp(0, sa))

    rows = [
        row("shape/add_mismatch", two([2, 3], [4, 3], "add"), "VALIDATION", 2),
        row("shape/div_mismatch_rank4", two([2, 1, 3, 4], [5, 2, 4], "div"), "VALIDATION", 2),
        row("shape/matmul_inner", two([2, 3], [4, 5], "matmul"), "VALIDATION", 2),
        row("shape/matmul_rank1", two([3], [3, 2], "matmul"), "VALIDATION", 2),
        row("shape/matmul_batch", two([2, 2, 3], [3, 3, 4], "matmul"), "VALIDATION", 2),
        row("shape/gelu_grad_mismatch", two([3], [4], "gelu_grad"), "VALIDATION", 2),
        row("shape/sgd_mismatch", two([3], [1], "sgd_update", lr=0.1), "VALIDATION", 2),
        row(
            "shape/cross_entropy_rank3", two([2, 2, 2], [2, 2, 2], "cross_entropy"), "VALIDATION", 2
        ),
        row("shape/cross_entropy_grad_rank1", two([4], [4], "cross_entropy_grad"), "VALIDATION", 2),
        row("shape/transpose_rank1", one([3], "transpose"), "VALIDATION", 1),
        row("shape/life_rank3", one([2, 2, 2], "life"), "VALIDATION", 1),
        row("shape/sum_axis_2_of_rank2", one([2, 3], "sum", axis=2), "VALIDATION", 1),
        row("shape/sum_axis_minus3_of_rank2", one([2, 3], "sum", axis=-3), "VALIDATION", 1),
        row("shape/mean_axis_1_of_rank0", one([], "mean", axis=1), "VALIDATION", 1),
        row("shape/softmax_axis_1_of_rank1", one([4], "softmax", axis=1), "VALIDATION", 1),
        row(
            "shape/log_softmax_axis_minus2_of_rank0",
            one([], "log_softmax", axis=-2),
            "VALIDATION",
            1,
        ),
        row("shape/permute_repeated", one([2, 3, 4], "permute", dims=[0, 0, 1]), "VALIDATION", 1),
        row("shape/permute_short", one([2, 3, 4], "permute", dims=[1, 0]), "VALIDATION", 1),
        row("shape/permute_negative", one([2, 3], "permute", dims=[-1, 0]), "VALIDATION", 1),
        row("shape/permute_out_of_range", one([2, 3], "permute", dims=[0, 2]), "VALIDATION", 1),
        row("shape/reshape_count", one([2, 3], "reshape", shape=[4]), "VALIDATION", 1),
        row(
            "shape/reshape_minus_one_uneven", one([2, 3], "reshape", shape=[-1, 4]), "VALIDATION", 1
        ),
        row(
            "shape/adam_t_two_elements",
            _one_op(
                {"id": 4, "op": "adam_update", "a": 0, "b": 1, "c": 2, "t": 3},
                inp(0, [3]),
                inp(1, [3]),
                inp(2, [3]),
                inp(3, [2]),
            ),
            "VALIDATION",
            4,
        ),
        row(
            "shape/adam_t_rank2",
            _one_op(
                {"id": 4, "op": "adam_update", "a": 0, "b": 1, "c": 2, "t": 3},
                inp(0, [3]),
                inp(1, [3]),
                inp(2, [3]),
                inp(3, [1, 1]),
            ),
            "VALIDATION",
            4,
        ),
        row(
            "shape/matmul_result_too_many_elements",
            _one_op(
                {"id": 2, "op": "matmul", "a": 0, "b": 1},
                {"id": 0, "op": "full", "shape": [8192, 1], "value": 1},
                {"id": 1, "op": "full", "shape": [1, 8193], "value": 1},
            ),
            "LIMIT",
            2,
        ),
        row(
            "shape/total_elements",
            graph([{"id": i, "op": "full", "shape": [4096, 16384], "value": 0} for i in range(5)]),
            "LIMIT",
            4,
        ),  # named: the node at which the running total passes the limit
        # a node no output depends on is still validated
        row(
            "shape/dead_node_mismatch",
            graph([inp(0, [2]), inp(1, [3]), {"id": 2, "op": "add", "a": 0, "b": 1}], out=0),
            "VALIDATION",
            2,
        ),
        # shapes run in topological order: node 3 (listed last) is checked before node 2
        row(
            "order/shapes_in_topological_order",
            graph(
                [
                    inp(0, [2]),
                    inp(1, [3]),
                    {"id": 2, "op": "add", "a": 3, "b": 1},
                    {"id": 3, "op": "add", "a": 0, "b": 1},
                ],
                out=2,
            ),
            "VALIDATION",
            3,
        ),
    ]
    return rows


def version_rows() -> list[dict]:
    def v1(*nodes: Node) -> dict:
        return graph(list(nodes), version=1)

    a, b = inp(0, [2, 3]), inp(1, [3])
    return [
        row(
            "version/v1_softmax",
            v1(a, {"id": 2, "op": "softmax", "a": 0}),
            "UNSUPPORTED_VERSION",
            2,
        ),
        row(
            "version/v1_div",
            v1(a, {"id": 2, "op": "div", "a": 0, "b": 0}),
            "UNSUPPORTED_VERSION",
            2,
        ),
        row(
            "version/v1_broadcast_add",
            v1(a, b, {"id": 2, "op": "add", "a": 0, "b": 1}),
            "UNSUPPORTED_VERSION",
            2,
        ),
        row(
            "version/v1_broadcast_rank4_one",
            v1(a, inp(1, [1, 1, 1, 1]), {"id": 2, "op": "mul", "a": 0, "b": 1}),
            "UNSUPPORTED_VERSION",
            2,
        ),
        row(
            "version/v1_sum_axis",
            v1(a, {"id": 2, "op": "sum", "a": 0, "axis": 1}),
            "UNSUPPORTED_VERSION",
            2,
        ),
        row(
            "version/v1_sum_keepdim",
            v1(a, {"id": 2, "op": "sum", "a": 0, "keepdim": True}),
            "UNSUPPORTED_VERSION",
            2,
        ),
        row(
            "version/v1_batched_matmul",
            v1(inp(0, [2, 2, 3]), inp(1, [2, 3, 2]), {"id": 2, "op": "matmul", "a": 0, "b": 1}),
            "UNSUPPORTED_VERSION",
            2,
        ),
        row(
            "version/v1_transpose_rank3",
            v1(inp(0, [2, 2, 3]), {"id": 2, "op": "transpose", "a": 0}),
            "UNSUPPORTED_VERSION",
            2,
        ),
        # the first node in list order that needs more is named, not the first in execution
        row(
            "version/v1_names_first_listed",
            graph(
                [a, {"id": 5, "op": "exp", "a": 4}, {"id": 4, "op": "neg", "a": 0}],
                out=5,
                version=1,
            ),
            "UNSUPPORTED_VERSION",
            5,
        ),
    ]


def typed(node_id: int, shape: list, dtype: str, data: Any) -> Node:
    """An input node of `dtype`."""
    return {"id": node_id, "op": "input", "shape": shape, "dtype": dtype, "data": data}


def b64(fmt: str, *values: Any) -> dict:
    """{"base64": ...} of little-endian values packed by struct format `fmt`."""
    return {"base64": base64.b64encode(struct.pack("<" + fmt, *values)).decode()}


def dtype_rows() -> list[dict]:
    """Dtypes (version 3): operand constraints and data per dtype. `says` is the whole message
    (lowercase), so both validators must say exactly the same."""

    def v3(*nodes: Node) -> dict:
        return graph(list(nodes), version=3)

    i3 = typed(0, [3], "int32", [1, 2, 3])
    rows = [
        row(
            "dtype/int32_into_relu",
            v3(i3, {"id": 1, "op": "relu", "a": 0}),
            "VALIDATION",
            1,
            "node 1 (relu): operand a must be float32, got int32",
        ),
        row(
            "dtype/bool_into_matmul_b",
            v3(
                inp(0, [2, 2]),
                typed(1, [2, 2], "bool", [1, 0, 0, 1]),
                {"id": 2, "op": "matmul", "a": 0, "b": 1},
            ),
            "VALIDATION",
            2,
            "node 2 (matmul): operand b must be float32, got bool",
        ),
        row(
            "dtype/uint32_into_add_a",
            v3(
                typed(0, [3], "uint32", [1, 2, 3]),
                inp(1, [3]),
                {"id": 2, "op": "add", "a": 0, "b": 1},
            ),
            "VALIDATION",
            2,
            "node 2 (add): operand a must be float32, got uint32",
        ),
        # transpose and permute are float32 only in the table today (reshape takes int32 too)
        row(
            "dtype/int32_into_layout",
            v3(i3, {"id": 1, "op": "permute", "a": 0, "dims": [0]}, {"id": 2, "op": "exp", "a": 1}),
            "VALIDATION",
            1,
            "node 1 (permute): operand a must be float32, got int32",
        ),
        # the v3 ops take float32 or int32 (argmax's int32 result does not widen that)
        row(
            "dtype/bool_into_abs",
            v3(typed(0, [2], "bool", [1, 0]), {"id": 1, "op": "abs", "a": 0}),
            "VALIDATION",
            1,
            "node 1 (abs): operand a must be float32 or int32, got bool",
        ),
        row(
            "dtype/uint32_into_argmax",
            v3(typed(0, [3], "uint32", [1, 2, 3]), {"id": 1, "op": "argmax", "a": 0}),
            "VALIDATION",
            1,
            "node 1 (argmax): operand a must be float32 or int32, got uint32",
        ),
        row(
            "attr/clamp_min_string",
            v3(i3, {"id": 1, "op": "clamp", "a": 0, "min": "1"}),
            "VALIDATION",
            1,
            None,
        ),
        row(
            "attr/clamp_max_inf",
            v3(i3, {"id": 1, "op": "clamp", "a": 0, "max": "inf"}),
            "VALIDATION",
            1,
            None,
        ),
        # shapes (step 4) are checked before dtypes (step 5)
        row(
            "order/shape_before_dtype",
            v3(typed(0, [2], "int32", [1, 2]), inp(1, [3]), {"id": 2, "op": "add", "a": 0, "b": 1}),
            "VALIDATION",
            2,
            None,
        ),
        # dtypes (step 5) before the version (step 6)
        row(
            "order/dtype_before_version",
            graph([i3, {"id": 1, "op": "relu", "a": 0}], version=2),
            "VALIDATION",
            1,
            "node 1 (relu): operand a must be float32, got int32",
        ),
        row(
            "dtype/base64_short",
            v3(typed(0, [3], "int32", b64("2i", 1, 2))),
            "VALIDATION",
            0,
            "node 0 (input): data.base64 holds 8 bytes, shape [3] of int32 needs 12",
        ),
        row(
            "dtype/base64_long_float32",
            v3(typed(0, [1], "float32", b64("2f", 1, 2))),
            "VALIDATION",
            0,
            "node 0 (input): data.base64 holds 8 bytes, shape [1] of float32 needs 4",
        ),
        row(
            "dtype/base64_bool_bytes",
            v3(typed(0, [2], "bool", b64("2i", 1, 0))),
            "VALIDATION",
            0,
            "node 0 (input): data.base64 holds 8 bytes, shape [2] of bool needs 2",
        ),
        row(
            "dtype/base64_bool_2",
            v3(typed(0, [2], "bool", b64("2B", 0, 2))),
            "VALIDATION",
            0,
            "node 0 (input): data[1] = 2 is not a bool (0, 1, true or false)",
        ),
        row(
            "dtype/base64_unpadded",
            v3(typed(0, [2], "bool", {"base64": "AAE"})),
            "VALIDATION",
            0,
            "node 0 (input): data.base64 is not base64 (a-z a-z 0-9 + /, = padding, length a "
            "multiple of 4)",
        ),
        row(
            "dtype/base64_bad_char",
            v3(typed(0, [1], "int32", {"base64": "AA*A"})),
            "VALIDATION",
            0,
            None,
        ),
        row(
            "dtype/base64_not_a_string",
            v3(typed(0, [1], "int32", {"base64": 5})),
            "VALIDATION",
            0,
            'node 0 (input): data object must be {"base64": "<string>"}, got {"base64":5}',
        ),
        row(
            "dtype/data_object_extra_key",
            v3(typed(0, [1], "int32", {"base64": "AAAAAA==", "x": 1})),
            "VALIDATION",
            0,
            None,
        ),
        row(
            "dtype/int32_fraction",
            v3(typed(0, [2], "int32", [1, 2.5])),
            "VALIDATION",
            0,
            "node 0 (input): data[1] = 2.5 is not an int32 (an integer in -2147483648..2147483647)",
        ),
        row(
            "dtype/int32_overflow",
            v3(typed(0, [1], "int32", [2147483648])),
            "VALIDATION",
            0,
            "node 0 (input): data[0] = 2147483648 is not an int32 (an integer in "
            "-2147483648..2147483647)",
        ),
        row(
            "dtype/uint32_negative",
            v3(typed(0, [2], "uint32", [0, -1])),
            "VALIDATION",
            0,
            "node 0 (input): data[1] = -1 is not a uint32 (an integer in 0..4294967295)",
        ),
        row(
            "dtype/int32_bool_value",
            v3(typed(0, [1], "int32", [True])),
            "VALIDATION",
            0,
            "node 0 (input): data[0] = true is not an int32 (an integer in "
            "-2147483648..2147483647)",
        ),
        row(
            "dtype/int32_nan_string",
            v3(typed(0, [1], "int32", ["nan"])),
            "VALIDATION",
            0,
            'node 0 (input): data[0] = "nan" is not an int32 (an integer in '
            "-2147483648..2147483647)",
        ),
        row(
            "dtype/bool_2",
            v3(typed(0, [3], "bool", [0, 1, 2])),
            "VALIDATION",
            0,
            "node 0 (input): data[2] = 2 is not a bool (0, 1, true or false)",
        ),
        row(
            "dtype/bool_length",
            v3(typed(0, [3], "bool", [True, False])),
            "VALIDATION",
            0,
            "node 0 (input): data has 2 values, shape [3] needs 3",
        ),
        row("dtype/not_a_string", v3({**inp(0, [1]), "dtype": 3}), "VALIDATION", 0, None),
        row(
            "version/v2_int32_input",
            graph([i3], version=2),
            "UNSUPPORTED_VERSION",
            0,
            "node 0 (input): needs version 3 (its dtype int32 is a version 3 dtype), the graph "
            "declares version 2",
        ),
        row(
            "version/v1_bool_input",
            graph([inp(0, [1]), typed(1, [1], "bool", [True])], out=0, version=1),
            "UNSUPPORTED_VERSION",
            1,
            "node 1 (input): needs version 3 (its dtype bool is a version 3 dtype), the graph "
            "declares version 1",
        ),
        row(
            "version/v1_message",
            graph([inp(0, [2]), {"id": 1, "op": "exp", "a": 0}], version=1),
            "UNSUPPORTED_VERSION",
            1,
            "node 1 (exp): needs version 2 (exp is a version 2 op), the graph declares version 1",
        ),
    ]
    return rows


def select_rows() -> list[dict]:
    """The v3 select ops: a graph labelled version 2, operand dtypes (the whole
    message: both validators word it the same), attributes, shapes."""

    def v3(*nodes: Node) -> dict:
        return graph(list(nodes), version=3)

    f3, i3 = inp(0, [3]), typed(1, [3], "int32", [1, 2, 3])
    u0, u0_1 = typed(0, [], "uint32", [0]), typed(1, [], "uint32", [0])
    bools = typed(2, [3], "bool", [1, 0, 1])
    rows = []
    for op in ("maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge"):
        rows.append(
            row(
                f"version/v2_{op}",
                graph([f3, inp(1, [3]), {"id": 2, "op": op, "a": 0, "b": 1}]),
                "UNSUPPORTED_VERSION",
                2,
                f"node 2 ({op}): needs version 3 ({op} is a version 3 op), the graph "
                "declares version 2",
            )
        )
    # listed first, so the v3 op (not its v3-dtype operand) is the first node needing more
    v2_first = [
        ("where", {"id": 3, "op": "where", "cond": 2, "a": 0, "b": 1}, [f3, inp(1, [3]), bools]),
        ("cast", {"id": 3, "op": "cast", "a": 0, "dtype": "float32"}, [f3]),
        ("hash_uniform", {"id": 3, "op": "hash_uniform", "counter": 0, "shape": [4]}, [u0]),
        ("dropout", {"id": 3, "op": "dropout", "a": 0, "counter": 1, "p": 0.5}, [f3, u0_1]),
    ]
    for op, node, operands in v2_first:
        rows.append(
            row(
                f"version/v2_{op}",
                graph([node, *operands], out=0),
                "UNSUPPORTED_VERSION",
                3,
                f"node 3 ({op}): needs version 3 ({op} is a version 3 op), the graph "
                "declares version 2",
            )
        )
    dtype = [
        (
            "dtype/bool_into_maximum",
            [bools, f3, {"id": 3, "op": "maximum", "a": 2, "b": 0}],
            "node 3 (maximum): operand a must be float32 or int32, got bool",
        ),
        (
            "dtype/lt_float32_int32",
            [f3, i3, {"id": 3, "op": "lt", "a": 0, "b": 1}],
            "node 3 (lt): operand b must be float32 like operand a, got int32",
        ),
        (
            "dtype/uint32_into_eq",
            [
                typed(0, [1], "uint32", [1]),
                typed(1, [1], "uint32", [2]),
                {"id": 3, "op": "eq", "a": 0, "b": 1},
            ],
            "node 3 (eq): operand a must be float32 or int32, got uint32",
        ),
        (
            "dtype/where_cond_float32",
            [f3, inp(1, [3]), {"id": 3, "op": "where", "cond": 0, "a": 0, "b": 1}],
            "node 3 (where): operand cond must be bool, got float32",
        ),
        (
            "dtype/where_a_b_differ",
            [f3, i3, bools, {"id": 3, "op": "where", "cond": 2, "a": 0, "b": 1}],
            "node 3 (where): operand b must be float32 like operand a, got int32",
        ),
        (
            "dtype/where_bool_values",
            [bools, {"id": 3, "op": "where", "cond": 2, "a": 2, "b": 2}],
            "node 3 (where): operand a must be float32 or int32, got bool",
        ),
        (
            "dtype/hash_counter_int32",
            [
                typed(0, [], "int32", [0]),
                {"id": 3, "op": "hash_uniform", "counter": 0, "shape": [2]},
            ],
            "node 3 (hash_uniform): operand counter must be uint32, got int32",
        ),
        (
            "dtype/dropout_int32",
            [i3, u0, {"id": 3, "op": "dropout", "a": 1, "counter": 0, "p": 0.5}],
            "node 3 (dropout): operand a must be float32, got int32",
        ),
        (
            "dtype/dropout_counter_float32",
            [f3, inp(1, []), {"id": 3, "op": "dropout", "a": 0, "counter": 1, "p": 0.5}],
            "node 3 (dropout): operand counter must be uint32, got float32",
        ),
    ]
    rows += [row(name, v3(*nodes), "VALIDATION", 3, says) for name, nodes, says in dtype]
    hash_node = {"id": 3, "op": "hash_uniform", "counter": 0, "shape": [4]}
    drop_node = {"id": 3, "op": "dropout", "a": 1, "counter": 0, "p": 0.5}
    f3_1 = inp(1, [3])
    attrs = [
        ("attr/cast_no_dtype", [f3, {"id": 3, "op": "cast", "a": 0}], "dtype"),
        (
            "attr/cast_dtype_float64",
            [f3, {"id": 3, "op": "cast", "a": 0, "dtype": "float64"}],
            "dtype",
        ),
        ("attr/hash_no_shape", [u0, {"id": 3, "op": "hash_uniform", "counter": 0}], "shape"),
        ("attr/hash_seed_negative", [u0, {**hash_node, "seed": -1}], "0..4294967295"),
        ("attr/hash_seed_2_32", [u0, {**hash_node, "seed": 2**32}], "0..4294967295"),
        ("attr/hash_seed_fraction", [u0, {**hash_node, "seed": 1.5}], "0..4294967295"),
        ("attr/hash_seed_bool", [u0, {**hash_node, "seed": True}], "0..4294967295"),
        ("attr/dropout_no_p", [u0, f3_1, {k: v for k, v in drop_node.items() if k != "p"}], "p"),
        ("attr/dropout_p_1", [u0, f3_1, {**drop_node, "p": 1}], "[0, 1)"),
        ("attr/dropout_p_negative", [u0, f3_1, {**drop_node, "p": -0.1}], "[0, 1)"),
        ("attr/dropout_p_rounds_to_1", [u0, f3_1, {**drop_node, "p": 0.99999999}], "[0, 1)"),
        ("attr/dropout_p_string", [u0, f3_1, {**drop_node, "p": "0.5"}], "[0, 1)"),
        ("attr/dropout_p_nan", [u0, f3_1, {**drop_node, "p": "nan"}], "[0, 1)"),
        ("attr/dropout_seed_negative", [u0, f3_1, {**drop_node, "seed": -3}], "0..4294967295"),
    ]
    rows += [row(name, v3(*nodes), "VALIDATION", 3, says) for name, nodes, says in attrs]
    shapes = [
        (
            "shape/maximum_no_broadcast",
            [inp(0, [2, 3]), inp(1, [4]), {"id": 3, "op": "maximum", "a": 0, "b": 1}],
            "broadcast",
        ),
        (
            "shape/ge_no_broadcast",
            [inp(0, [2, 3]), inp(1, [2]), {"id": 3, "op": "ge", "a": 0, "b": 1}],
            "broadcast",
        ),
        (
            "shape/where_cond_no_broadcast",
            [
                typed(0, [2], "bool", [1, 0]),
                inp(1, [3]),
                inp(2, []),
                {"id": 3, "op": "where", "cond": 0, "a": 1, "b": 2},
            ],
            "broadcast",
        ),
        (
            "shape/where_a_b_no_broadcast",
            [
                typed(0, [1], "bool", [1]),
                inp(1, [3]),
                inp(2, [2]),
                {"id": 3, "op": "where", "cond": 0, "a": 1, "b": 2},
            ],
            "broadcast",
        ),
        ("shape/hash_counter_two", [typed(0, [2], "uint32", [0, 1]), hash_node], "counter"),
        (
            "shape/dropout_counter_rank2",
            [typed(0, [1, 1], "uint32", [0]), f3_1, drop_node],
            "counter",
        ),
    ]
    rows += [row(name, v3(*nodes), "VALIDATION", 3, says) for name, nodes, says in shapes]
    return rows


def hostile_rows() -> list[dict]:
    """What a hostile notebook sends (the JS-only form of None, undefined, is tested
    in backends-js/test/hostile.test.mjs and by the twin test's page view)."""
    big = 2**53
    deep: Any = [1]
    for _ in range(200):
        deep = [deep]
    adam = [inp(0, [2]), inp(1, [2]), inp(2, [2]), inp(3, [1])]
    return [
        row("hostile/id_2_53", graph([inp(big, [1])]), "VALIDATION", None, "<= 2^53-1"),
        row(
            "hostile/ids_merging_past_2_53",
            graph([inp(big, [1]), inp(big + 1, [1])], out=[{"name": "y", "id": big + 1}]),
            "VALIDATION",
            None,
            "<= 2^53-1",
        ),
        row(
            "hostile/operand_past_2_53",
            graph([inp(0, [1]), {"id": 1, "op": "relu", "a": big + 1}]),
            "VALIDATION",
            1,
        ),
        row(
            "hostile/output_id_past_2_53",
            graph([inp(0, [1])], out=[{"name": "y", "id": big}]),
            "VALIDATION",
            None,
        ),
        row(
            "hostile/output_named_proto",
            graph([inp(0, [1])], out=[{"name": "__proto__", "id": 0}]),
            "VALIDATION",
            None,
            "reserved",
        ),
        row(
            "hostile/beta1_null",
            graph(
                [
                    *adam,
                    {"id": 4, "op": "adam_update", "a": 0, "b": 1, "c": 2, "t": 3, "beta1": None},
                ]
            ),
            "VALIDATION",
            4,
        ),
        row(
            "hostile/shape_nested_200_deep",
            graph([{"id": 0, "op": "full", "shape": deep, "value": 1.0}]),
            "VALIDATION",
            0,
        ),
        row(
            "hostile/op_nested_200_deep",
            graph([{"id": 0, "op": deep}], out=[{"name": "y", "id": 0}]),
            "VALIDATION",
            0,
            "unknown op",
        ),
        # found by the fuzz lane: a scalar float32 b reached matmul_q's shape rule (IndexError)
        row(
            "hostile/matmul_q_scalar_b",
            graph([inp(0, [3, 2]), inp(1, []), {"id": 2, "op": "matmul_q", "a": 0, "b": 1}]),
            "VALIDATION",
            2,
            "operand b must be [n, k]",
        ),
    ]


def ints(node_id: int, shape: list, data: list) -> Node:
    return typed(node_id, shape, "int32", data)


def v4_rows() -> list[dict]:
    """Protocol v4 (slice, slice_scatter, index_select, gather, index_add, scatter_add, concat,
    pad): attributes, shapes, dtypes, index data out of range, the variadic operand, versions."""
    x = inp(0, [3, 4])
    i2 = ints(1, [2], [0, 2])

    def v4(*nodes: Node, version: int = 4) -> dict:
        return graph([x, i2, *nodes], version=version)

    sl = {"id": 5, "op": "slice", "a": 0}
    ix = {"id": 5, "op": "index_select", "a": 0, "idx": 1, "axis": 1}
    ga = {"id": 5, "op": "gather", "a": 0, "axis": 1}
    ia = {"id": 5, "op": "index_add", "a": 0, "idx": 1, "axis": 0}
    sa = {"id": 5, "op": "scatter_add", "a": 0, "axis": 0}
    cat = {"id": 5, "op": "concat", "axis": 0}
    pad = {"id": 5, "op": "pad", "a": 0}
    src24 = inp(2, [2, 4])
    rows = [
        # versions: each v4 op in a graph labelled 3
        row(
            "v4/slice_in_version_3",
            v4({**sl, "slices": [[0, 1, 1], [N, N, 1]]}, version=3),
            "UNSUPPORTED_VERSION",
            5,
            "needs version 4",
        ),
        row(
            "v4/concat_in_version_3",
            v4({**cat, "tensors": [0, 0]}, version=3),
            "UNSUPPORTED_VERSION",
            5,
            "needs version 4",
        ),
        row(
            "v4/gather_in_version_3",
            v4({**ga, "idx": 3}, ints(3, [3, 4], [0] * 12), version=3),
            "UNSUPPORTED_VERSION",
            5,
            "needs version 4",
        ),
        # slice attributes and shapes
        row("v4/slice_step_0", v4({**sl, "slices": [[0, 1, 0], [N, N, 1]]}), "VALIDATION", 5),
        row("v4/slice_missing", v4(sl), "VALIDATION", 5, "missing attribute"),
        row("v4/slice_not_triples", v4({**sl, "slices": [[0, 1], [0, 1]]}), "VALIDATION", 5),
        row("v4/slice_fraction", v4({**sl, "slices": [[0.5, 1, 1], [N, N, 1]]}), "VALIDATION", 5),
        row(
            "v4/slice_rank_mismatch",
            v4({**sl, "slices": [[0, 1, 1]]}),
            "VALIDATION",
            5,
            "has rank 2",
        ),
        # an empty selection is a zero-size result: version 8 (bad_graphs_shapes.py)
        row(
            "v4/slice_empty_needs_v8",
            v4({**sl, "slices": [[2, 2, 1], [N, N, 1]]}),
            "UNSUPPORTED_VERSION",
            5,
            "version 8",
        ),
        row(
            "v4/slice_scatter_src_shape",
            v4(
                src24,
                {
                    "id": 5,
                    "op": "slice_scatter",
                    "a": 0,
                    "src": 2,
                    "slices": [[0, 3, 2], [1, 3, 1]],
                },
            ),
            "VALIDATION",
            5,
            "the slice's shape",
        ),
        row(
            "v4/slice_scatter_src_int32",
            v4(
                ints(3, [1, 2], [0, 1]),
                {
                    "id": 5,
                    "op": "slice_scatter",
                    "a": 0,
                    "src": 3,
                    "slices": [[0, 1, 1], [0, 2, 1]],
                },
            ),
            "VALIDATION",
            5,
            "operand src must be float32 like operand a",
        ),
        # index_select / gather
        row(
            "v4/index_select_float_idx",
            v4(inp(3, [2]), {**ix, "idx": 3}),
            "VALIDATION",
            5,
            "operand idx must be int32",
        ),
        row("v4/index_select_axis_null", v4({**ix, "axis": None}), "VALIDATION", 5),
        row(
            "v4/index_select_axis_past_max_rank",
            v4({**ix, "axis": 8}),
            "VALIDATION",
            5,
            "must be an integer in -8..7",
        ),
        row(
            "v4/index_select_axis_out_of_range",
            v4({**ix, "axis": 2}),
            "VALIDATION",
            5,
            "out of range",
        ),
        row(
            "v4/index_select_idx_rank2",
            v4(ints(3, [1, 2], [0, 1]), {**ix, "idx": 3}),
            "VALIDATION",
            5,
            "operand idx must have rank 1",
        ),
        row(
            "v4/index_select_idx_data_out_of_range",
            v4(ints(3, [3], [0, 4, 1]), {**ix, "idx": 3}),
            "VALIDATION",
            5,
            "idx[1] = 4, out of range",
        ),
        row(
            "v4/index_select_negative_index",
            v4(ints(3, [1], [-1]), {**ix, "idx": 3}),
            "VALIDATION",
            5,
            "idx[0] = -1, out of range",
        ),
        row(
            "v4/gather_rank_mismatch",
            v4({**ga, "idx": 1}),
            "VALIDATION",
            5,
            "operand idx must have rank 2",
        ),
        row(
            "v4/gather_idx_too_large",
            v4(ints(3, [4, 2], [0] * 8), {**ga, "idx": 3}),
            "VALIDATION",
            5,
            "larger than a",
        ),
        row(
            "v4/gather_idx_data_out_of_range",
            v4(ints(3, [1, 3], [3, 4, 0]), {**ga, "idx": 3}),
            "VALIDATION",
            5,
            "idx[1] = 4",
        ),
        # index_add / scatter_add
        row(
            "v4/index_add_src_shape",
            v4(inp(2, [3, 4]), {**ia, "src": 2}),
            "VALIDATION",
            5,
            "operand src",
        ),
        row(
            "v4/index_add_src_dtype",
            v4(ints(2, [2, 4], [0] * 8), {**ia, "src": 2}),
            "VALIDATION",
            5,
            "operand src must be float32 like operand a",
        ),
        row(
            "v4/index_add_idx_data_out_of_range",
            v4(src24, ints(3, [2], [0, 3]), {**ia, "idx": 3, "src": 2}),
            "VALIDATION",
            5,
            "idx[1] = 3",
        ),
        row(
            "v4/scatter_add_src_not_idx_shape",
            v4(ints(3, [2, 4], [0] * 8), inp(2, [2, 3]), {**sa, "idx": 3, "src": 2}),
            "VALIDATION",
            5,
            "idx's shape",
        ),
        row(
            "v4/scatter_add_missing_src",
            v4(ints(3, [2, 4], [0] * 8), {**sa, "idx": 3}),
            "VALIDATION",
            5,
            "missing",
        ),
        # concat: the variadic operand
        row("v4/concat_one_operand", v4({**cat, "tensors": [0]}), "VALIDATION", 5, "2 to 8"),
        row("v4/concat_nine_operands", v4({**cat, "tensors": [0] * 9}), "VALIDATION", 5, "2 to 8"),
        row(
            "v4/concat_not_a_list",
            v4({**cat, "tensors": 0}),
            "VALIDATION",
            5,
            "must be a list of integer node ids",
        ),
        row(
            "v4/concat_bad_entry",
            v4({**cat, "tensors": [0, "x"]}),
            "VALIDATION",
            5,
            "must be a list of integer node ids",
        ),
        row("v4/concat_dangling", v4({**cat, "tensors": [0, 9]}), "VALIDATION", 5, "tensors[1]"),
        row(
            "v4/concat_shape_mismatch",
            v4(src24, {**cat, "tensors": [0, 2], "axis": 1}),
            "VALIDATION",
            5,
            "tensors[1]",
        ),
        row(
            "v4/concat_dtype_mismatch",
            v4(ints(3, [3, 4], [0] * 12), {**cat, "tensors": [0, 3]}),
            "VALIDATION",
            5,
            "operand tensors[1] must be float32 like operand tensors[0]",
        ),
        row(
            "v4/concat_named_operand_a",
            v4({**cat, "tensors": [0, 0], "a": 0}),
            "VALIDATION",
            5,
            "unknown field",
        ),
        # pad
        row("v4/pad_negative_width", v4({**pad, "widths": [[0, -1], [0, 0]]}), "VALIDATION", 5),
        row("v4/pad_rank_mismatch", v4({**pad, "widths": [[0, 1]]}), "VALIDATION", 5, "has rank 2"),
        row(
            "v4/pad_int32_fraction",
            v4(ints(3, [2], [1, 2]), {**pad, "a": 3, "widths": [[1, 1]], "value": 2.5}),
            "VALIDATION",
            5,
            "is not an int32",
        ),
        row(
            "v4/pad_value_string",
            v4({**pad, "widths": [[0, 0], [0, 0]], "value": "one"}),
            "VALIDATION",
            5,
        ),
    ]
    return rows


def quant_rows() -> list[dict]:
    """Block-quantized inputs ([N, K], K a multiple of the block: 256 for q4_k / q6_k, 32 for
    q8_0 / q4_0; the blocks' bytes), the ops that read them, matmul_fixed's frac_bits."""

    def q(node_id: int, shape: list, kind: str = "q4_k", nbytes: int | None = None) -> Node:
        size, per = {"q4_k": (144, 256), "q6_k": (210, 256), "q8_0": (34, 32), "q4_0": (18, 32)}[
            kind
        ]
        count = nbytes if nbytes is not None else shape[0] * shape[1] // per * size
        return {
            "id": node_id,
            "op": "input",
            "shape": shape,
            "dtype": kind,
            "data": {"base64": base64.b64encode(bytes(count)).decode()},
        }

    def ints(node_id: int, shape: list, values: list) -> Node:
        return {"id": node_id, "op": "input", "shape": shape, "dtype": "int32", "data": values}

    def rows_of(a: int, idx: int) -> Node:
        return {"id": 2, "op": "dequantize_rows", "a": a, "idx": idx}

    x = inp(1, [2, 256])
    mq = {"id": 2, "op": "matmul_q", "a": 1, "b": 0}
    return [
        row(
            "quant/k_not_multiple_of_256",
            graph([q(0, [2, 100], nbytes=0)]),
            "VALIDATION",
            0,
            "k a multiple of 256",
        ),
        row("quant/rank_3", graph([q(0, [1, 2, 256], nbytes=0)]), "VALIDATION", 0, "shape [n, k]"),
        row(
            "quant/wrong_byte_length",
            graph([q(0, [2, 256], "q6_k", 419), x, mq]),
            "VALIDATION",
            0,
            "needs 420",
        ),
        row(
            "quant/byte_list_value",
            graph([{**q(0, [1, 256]), "data": [256] * 144}, x, mq]),
            "VALIDATION",
            0,
            "a byte in 0..255",
        ),
        row(
            "quant/output_is_quantized",
            graph([q(0, [1, 256])], out=0),
            "VALIDATION",
            0,
            "only matmul_q, dequantize and dequantize_rows",
        ),
        row(
            "quant/version_1",
            graph([q(0, [1, 256]), {"id": 1, "op": "dequantize", "a": 0}], version=1),
            "UNSUPPORTED_VERSION",
            0,
            "q4_k is a version 2 dtype",
        ),
        row(
            "quant/matmul_q_float_weight",
            graph([inp(0, [3, 256]), x, mq]),
            "VALIDATION",
            2,
            "operand b must be q4_k, q6_k, q8_0 or q4_0",
        ),
        row(
            "quant/matmul_q_inner_differs",
            graph([q(0, [3, 512]), x, mq]),
            "VALIDATION",
            2,
            "inner dimensions differ",
        ),
        row(
            "quant/matmul_weight_quantized",
            graph([q(0, [256, 256]), x, {"id": 2, "op": "matmul", "a": 1, "b": 0}]),
            "VALIDATION",
            2,
            "operand b must be float32, got q4_k",
        ),
        row(
            "quant/add_of_quantized",
            graph([q(0, [1, 256]), {"id": 1, "op": "relu", "a": 0}]),
            "VALIDATION",
            1,
            "got q4_k",
        ),
        row(
            "quant/q4_0_k_not_multiple_of_32",
            graph([q(0, [2, 48], "q4_0", nbytes=0)], version=7),
            "VALIDATION",
            0,
            "k a multiple of 32",
        ),
        row(
            "quant/q8_0_wrong_byte_length",
            graph([q(0, [2, 64], "q8_0", 135), inp(1, [1, 64]), mq], version=7),
            "VALIDATION",
            0,
            "needs 136",
        ),
        row(
            "quant/q8_0_version_6",
            graph([q(0, [1, 32], "q8_0"), {"id": 1, "op": "dequantize", "a": 0}], version=6),
            "UNSUPPORTED_VERSION",
            0,
            "q8_0 is a version 7 dtype",
        ),
        row(
            "quant/dequantize_rows_index_out_of_range",
            graph(
                [q(0, [3, 32], "q4_0"), ints(1, [2], [2, 3]), rows_of(0, 1)],
                version=7,
            ),
            "VALIDATION",
            2,
            "idx[1] = 3, out of range for axis 0",
        ),
        row(
            "quant/dequantize_rows_idx_rank_2",
            graph([q(0, [3, 32], "q4_0"), ints(1, [1, 2], [0, 1]), rows_of(0, 1)], version=7),
            "VALIDATION",
            2,
            "operand idx must have rank 1",
        ),
        row(
            "quant/dequantize_rows_of_floats",
            graph([inp(0, [3, 32]), ints(1, [2], [0, 1]), rows_of(0, 1)], version=7),
            "VALIDATION",
            2,
            "operand a must be q4_k, q6_k, q8_0 or q4_0, got float32",
        ),
        row(
            "quant/dequantize_rows_version_6",
            graph([q(0, [3, 256]), ints(1, [1], [0]), rows_of(0, 1)], version=6),
            "UNSUPPORTED_VERSION",
            2,
            "dequantize_rows is a version 7 op",
        ),
        row(
            "quant/frac_bits_31",
            graph(
                [inp(0, [2, 2]), {"id": 1, "op": "matmul_fixed", "a": 0, "b": 0, "frac_bits": 31}]
            ),
            "VALIDATION",
            1,
            "0..30",
        ),
        row(
            "quant/frac_bits_float",
            graph(
                [inp(0, [2, 2]), {"id": 1, "op": "matmul_fixed", "a": 0, "b": 0, "frac_bits": 1.5}]
            ),
            "VALIDATION",
            1,
            "0..30",
        ),
    ]


def v6_rows() -> list[dict]:
    """Protocol v6, the window ops: channel counts, groups, kernels bigger than the
    padded input, bias shape, attributes (pairs, padding, modes refused by name), rank, pools
    whose window holds no element, the MAC and resize limits, versions. Each names the node and
    the operand or attribute."""
    x = inp(0, [1, 4, 6, 6])
    w = inp(1, [8, 2, 3, 3])
    b8 = inp(2, [8])

    def v6(*nodes: Node, version: int = 6) -> dict:
        return graph([x, w, b8, *nodes], version=version)

    cv = {"id": 5, "op": "conv2d", "a": 0, "w": 1, "bias": [2], "groups": 2}
    mp = {"id": 5, "op": "max_pool2d", "a": 0, "kernel": [2, 2]}
    ap = {"id": 5, "op": "avg_pool2d", "a": 0, "kernel": [2, 2]}
    rs = {"id": 5, "op": "resize", "a": 0, "size": [12, 12]}
    # 2^24 results x 1024 * 9 taps = 1.5e11 multiply-adds, every tensor within max_elements
    big = {"id": 3, "op": "full", "shape": [1, 1024, 128, 128], "value": 1}
    big_w = {"id": 4, "op": "full", "shape": [1024, 1024, 3, 3], "value": 1}
    return [
        row(
            "v6/conv2d_in_version_5", v6(cv, version=5), "UNSUPPORTED_VERSION", 5, "needs version 6"
        ),
        row(
            "v6/resize_in_version_4", v6(rs, version=4), "UNSUPPORTED_VERSION", 5, "needs version 6"
        ),
        row(
            "v6/conv2d_wrong_channel_count",
            v6({**cv, "groups": 1}),
            "VALIDATION",
            5,
            "operand w [8, 2, 3, 3] takes 2 input channels per group",
        ),
        row(
            "v6/conv2d_groups_not_dividing_channels",
            v6({**cv, "groups": 3}),
            "VALIDATION",
            5,
            "groups 3 does not divide a [1, 4, 6, 6]'s 4 channels",
        ),
        row(
            "v6/conv2d_groups_not_dividing_outputs",
            v6(inp(3, [6, 1, 3, 3]), {**cv, "w": 3, "bias": [], "groups": 4}),
            "VALIDATION",
            5,
            "groups 4 does not divide w [6, 1, 3, 3]'s 6 output channels",
        ),
        row(
            "v6/conv2d_kernel_bigger_than_padded_input",
            v6(inp(3, [8, 2, 9, 3]), {**cv, "w": 3, "padding": [1, 0, 1, 0]}),
            "VALIDATION",
            5,
            "more than the padded input's 8",
        ),
        row(
            "v6/conv2d_dilated_kernel_too_big",
            v6({**cv, "dilations": [3, 1]}),
            "VALIDATION",
            5,
            "the kernel spans 7",
        ),
        row(
            "v6/conv2d_bias_wrong_length",
            v6(inp(3, [4]), {**cv, "bias": [3]}),
            "VALIDATION",
            5,
            "operand bias[0] must be [8]",
        ),
        row(
            "v6/conv2d_two_biases",
            v6({**cv, "bias": [2, 2]}),
            "VALIDATION",
            5,
            "must be a list of 0 to 1 node ids",
        ),
        row("v6/conv2d_bias_not_a_list", v6({**cv, "bias": 2}), "VALIDATION", 5),
        row(
            "v6/conv2d_weight_rank_3",
            v6(inp(3, [8, 2, 3]), {**cv, "w": 3}),
            "VALIDATION",
            5,
            "operand w must be [m, c / groups, kh, kw]",
        ),
        row(
            "v6/conv2d_input_rank_3",
            v6(inp(3, [4, 6, 6]), {**cv, "a": 3}),
            "VALIDATION",
            5,
            "operand a must be [n, c, h, w]",
        ),
        row(
            "v6/conv2d_stride_0",
            v6({**cv, "strides": [0, 1]}),
            "VALIDATION",
            5,
            "must be a list of 2 integers >= 1",
        ),
        row(
            "v6/conv2d_padding_3_values",
            v6({**cv, "padding": [1, 1, 1]}),
            "VALIDATION",
            5,
            "must be a list of 4 integers >= 0",
        ),
        row(
            "v6/conv2d_negative_padding",
            v6({**cv, "padding": [0, 0, -1, 0]}),
            "VALIDATION",
            5,
            "must be a list of 4 integers >= 0",
        ),
        row("v6/conv2d_groups_0", v6({**cv, "groups": 0}), "VALIDATION", 5),
        row(
            "v6/conv2d_int32_input",
            v6(ints(3, [1, 4, 6, 6], [0] * 144), {**cv, "a": 3}),
            "VALIDATION",
            5,
            "operand a must be float32",
        ),
        row(
            "v6/conv2d_past_max_macs",
            v6(
                big, big_w, {**cv, "a": 3, "w": 4, "bias": [], "groups": 1, "padding": [1, 1, 1, 1]}
            ),
            "LIMIT",
            5,
            "max_macs_per_node",
        ),
        row(
            "v6/max_pool2d_kernel_bigger_than_input",
            v6({**mp, "kernel": [7, 2]}),
            "VALIDATION",
            5,
            "more than the padded input's 6",
        ),
        row(
            "v6/max_pool2d_window_all_padding",
            v6({**mp, "kernel": [1, 1], "padding": [1, 0, 0, 0]}),
            "VALIDATION",
            5,
            "window 0 (padding 1) holds no element of a",
        ),
        row(
            "v6/max_pool2d_missing_kernel",
            v6({"id": 5, "op": "max_pool2d", "a": 0}),
            "VALIDATION",
            5,
            "missing attribute",
        ),
        row(
            "v6/avg_pool2d_kernel_3_values",
            v6({**ap, "kernel": [2, 2, 2]}),
            "VALIDATION",
            5,
            "must be a list of 2 integers >= 1",
        ),
        row(
            "v6/avg_pool2d_count_include_pad_int",
            v6({**ap, "count_include_pad": 1}),
            "VALIDATION",
            5,
            "a boolean",
        ),
        row(
            "v6/avg_pool2d_rank_2",
            v6(inp(3, [6, 6]), {**ap, "a": 3}),
            "VALIDATION",
            5,
            "operand a must be [n, c, h, w]",
        ),
        row(
            "v6/resize_mode_cubic",
            v6({**rs, "mode": "cubic"}),
            "VALIDATION",
            5,
            "must be one of nearest, linear",
        ),
        row(
            "v6/resize_tf_crop_and_resize",
            v6({**rs, "coordinate_transformation_mode": "tf_crop_and_resize"}),
            "VALIDATION",
            5,
            "must be one of half_pixel, asymmetric, align_corners, pytorch_half_pixel",
        ),
        row(
            "v6/resize_nearest_mode_round",
            v6({**rs, "nearest_mode": "round"}),
            "VALIDATION",
            5,
            "must be one of round_prefer_floor",
        ),
        row(
            "v6/resize_size_0",
            v6({**rs, "size": [0, 4]}),
            "VALIDATION",
            5,
            "must be a list of 2 integers >= 1",
        ),
        row(
            "v6/resize_past_max_resize_product",
            v6({**rs, "size": [100000000, 1]}),
            "LIMIT",
            5,
            "max_resize_product",
        ),
    ]


N = None


def build_bad_graphs() -> list[dict]:
    # the version-7 tensor features' rows build on this module's helpers (imported here)
    from gpulab.conformance.bad_graphs_shapes import tensor_feature_rows

    rows = (
        top_level_rows()
        + node_rows()
        + attr_rows()
        + structure_rows()
        + shape_rows()
        + version_rows()
        + dtype_rows()
        + hostile_rows()
        + select_rows()
        + v4_rows()
        + quant_rows()
        + v6_rows()
        + tensor_feature_rows()
    )
    names = [r["name"] for r in rows]
    assert len(names) == len(set(names)), "duplicate bad-graph names"
    return rows
