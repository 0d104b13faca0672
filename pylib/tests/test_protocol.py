"""gpulab.protocol.validate: every error code, the check order, messages naming nodes, and the
content of the checked graph."""

from __future__ import annotations

import array
import copy
import math

import numpy as np
import pytest
from gpulab import optable
from gpulab.errors import CODES, GpuLabError
from gpulab.protocol import validate


def seed_graph() -> dict:
    return {
        "version": 1,
        "nodes": [
            {"id": 0, "op": "input", "shape": [3], "data": [-2, 3, 4]},
            {"id": 1, "op": "input", "shape": [3], "data": [10, 20, 30]},
            {"id": 2, "op": "mul", "a": 0, "b": 1},
            {"id": 3, "op": "relu", "a": 2},
        ],
        "outputs": [{"name": "values", "id": 3}],
    }


def edited(**changes) -> dict:
    """The seed graph with top-level fields replaced."""
    g = seed_graph()
    g.update(changes)
    return g


def with_nodes(*nodes: dict, outputs: list | None = None, version: int = 2) -> dict:
    return {
        "version": version,
        "nodes": list(nodes),
        "outputs": outputs or [{"name": "out", "id": nodes[-1]["id"]}],
    }


def inp(node_id: int, shape: list, data: list | None = None) -> dict:
    n = len(data) if data is not None else math.prod(shape)
    return {
        "id": node_id,
        "op": "input",
        "shape": shape,
        "data": data if data is not None else [1.0] * n,
    }


def refused(graph, code: str, node: int | None = None, *words: str) -> GpuLabError:
    with pytest.raises(GpuLabError) as info:
        validate(graph)
    err = info.value
    assert err.code == code, err
    assert err.node == node, err
    for word in words:
        assert word in err.message, err
    return err


# ------------------------------------------------------------------------------ happy path


def test_seed_graph_is_checked():
    checked = validate(seed_graph())
    assert checked.version == 1 and checked.required_version == 1
    assert checked.order == [0, 1, 2, 3]
    assert [(o.name, o.id) for o in checked.outputs] == [("values", 3)]
    assert checked.by_id[2].operands == (0, 1)
    assert checked.by_id[2].shape == (3,)
    assert list(checked.by_id[0].data) == [-2.0, 3.0, 4.0]
    assert checked.by_id[0].attrs == {"shape": (3,), "dtype": "float32"}


def test_order_is_topological_with_ties_by_list_position_and_skips_dead_nodes():
    g = with_nodes(
        {"id": 7, "op": "relu", "a": 5},  # listed first but needs 5
        inp(9, [2]),
        {"id": 3, "op": "neg", "a": 9},  # dead: no output depends on it
        inp(5, [2]),
        {"id": 1, "op": "add", "a": 7, "b": 9},
        outputs=[{"name": "o", "id": 1}],
    )
    checked = validate(g)
    assert checked.order == [9, 5, 7, 1]
    assert checked.by_id[3].shape == (2,)  # dead nodes are still validated and shaped


def test_attrs_are_normalized_with_defaults_filled():
    g = with_nodes(
        inp(0, [2, 3, 4]),
        {"id": 1, "op": "sum", "a": 0, "axis": -1},
        {"id": 2, "op": "softmax", "a": 0},
        {"id": 3, "op": "reshape", "a": 0, "shape": [-1, 4]},
        {"id": 4, "op": "adam_m", "a": 0, "b": 0},
        outputs=[{"name": n, "id": i} for n, i in [("s", 1), ("p", 2), ("r", 3), ("m", 4)]],
    )
    by_id = validate(g).by_id
    assert by_id[1].attrs == {"axis": 2, "keepdim": False} and by_id[1].shape == (2, 3)
    assert by_id[2].attrs == {"axis": 2}
    assert by_id[3].attrs["shape"] == (6, 4) and by_id[3].shape == (6, 4)
    assert by_id[4].attrs == {"beta1": float(np.float32(0.9))}  # defaults are float32 values too


@pytest.mark.parametrize(
    "data",
    [
        [1, 2.5, "nan", "inf", "-inf", 0],
        array.array("f", [1, 2.5, math.nan, math.inf, -math.inf, 0]),
        array.array("d", [1, 2.5, math.nan, math.inf, -math.inf, 0]),
        memoryview(array.array("f", [1, 2.5, math.nan, math.inf, -math.inf, 0])),
        array.array("f", [1, 2.5, math.nan, math.inf, -math.inf, 0]).tobytes(),
        np.array([[1, 2.5, np.nan], [np.inf, -np.inf, 0]]),
        (1, 2.5, math.nan, math.inf, -math.inf, 0),
    ],
)
def test_data_forms_are_accepted_as_float32(data):
    checked = validate(with_nodes({"id": 0, "op": "input", "shape": [2, 3], "data": data}))
    got = list(checked.by_id[0].data)
    assert got[:2] == [1.0, 2.5] and math.isnan(got[2])
    assert got[3:] == [math.inf, -math.inf, 0.0]


def test_full_value_strings_and_integral_floats_as_ids():
    g = with_nodes({"id": 0.0, "op": "full", "shape": [2.0], "value": "-inf"})
    node = validate(g).nodes[0]
    assert node.id == 0 and node.shape == (2,) and node.attrs["value"] == -math.inf


def test_declaring_more_than_needed_is_accepted():
    assert validate(edited(version=2)).required_version == 1


# ------------------------------------------------------------------------------ step 1


@pytest.mark.parametrize("graph", [None, [], "graph", 3])
def test_graph_must_be_an_object(graph):
    refused(graph, "VALIDATION")


@pytest.mark.parametrize("missing", ["version", "nodes", "outputs"])
def test_top_level_fields_are_required(missing):
    g = seed_graph()
    del g[missing]
    refused(g, "VALIDATION", None, missing)


@pytest.mark.parametrize("version", ["1", 1.5, None, True])
def test_version_must_be_an_integer(version):
    refused(edited(version=version), "VALIDATION", None, "version")


@pytest.mark.parametrize("version", [0, 9, 99, -1])
def test_unknown_version(version):
    refused(edited(version=version), "UNSUPPORTED_VERSION", None, str(version))


def test_version_checked_before_nodes():
    refused(edited(version=99, nodes="not a list"), "UNSUPPORTED_VERSION")


@pytest.mark.parametrize("field", ["nodes", "outputs"])
@pytest.mark.parametrize("value", [[], {}, "x", None])
def test_nodes_and_outputs_must_be_non_empty_lists(field, value):
    refused(edited(**{field: value}), "VALIDATION", None, field)


def test_node_and_output_count_limits():
    lim = optable.limits()
    many = [inp(i, [1]) for i in range(lim["max_nodes"] + 1)]
    refused(edited(nodes=many), "LIMIT", None, "max_nodes")
    outs = [{"name": f"o{i}", "id": 3} for i in range(lim["max_outputs"] + 1)]
    refused(edited(outputs=outs), "LIMIT", None, "max_outputs")


# ------------------------------------------------------------------------------ step 2


def test_node_must_be_an_object():
    refused(
        with_nodes(inp(0, [1]), "node", outputs=[{"name": "o", "id": 0}]),
        "VALIDATION",
        None,
        "index 1",
    )


@pytest.mark.parametrize("bad_id", [-1, 1.5, "1", None, True])
def test_node_id_must_be_a_non_negative_integer(bad_id):
    refused(
        with_nodes({"id": bad_id, "op": "full", "shape": [1], "value": 1}), "VALIDATION", None, "id"
    )


def test_duplicate_id_names_the_node():
    g = with_nodes(inp(4, [1]), {"id": 4, "op": "relu", "a": 4})
    refused(g, "VALIDATION", 4, "node 4 (relu)", "duplicate id")


def test_unknown_op_names_the_node():
    refused(
        with_nodes({"id": 2, "op": "frobnicate", "a": 0}),
        "VALIDATION",
        2,
        "node 2 (frobnicate)",
        "unknown op",
    )


@pytest.mark.parametrize(
    "node, word",
    [
        ({"id": 1, "op": "add", "a": 0}, "'b'"),
        ({"id": 1, "op": "add", "a": 0, "b": "0"}, "'b'"),
        ({"id": 1, "op": "add", "a": 0, "b": 0.5}, "'b'"),
        ({"id": 1, "op": "relu", "a": False}, "'a'"),
    ],
)
def test_operands_present_and_integers(node, word):
    refused(with_nodes(inp(0, [2]), node), "VALIDATION", 1, "node 1", word)


def test_unknown_fields_are_refused():
    refused(
        with_nodes(inp(0, [2]), {"id": 1, "op": "relu", "a": 0, "shape": [2]}),
        "VALIDATION",
        1,
        "node 1 (relu)",
        "unknown field",
    )


def test_missing_required_attribute():
    refused(with_nodes({"id": 0, "op": "full", "shape": [2]}), "VALIDATION", 0, "'value'")
    refused(
        with_nodes(inp(0, [2]), {"id": 1, "op": "sgd_update", "a": 0, "b": 0}),
        "VALIDATION",
        1,
        "'lr'",
    )


@pytest.mark.parametrize("shape", [[-1], [-2], [2.5], ["2"], [True], 3, None, [2, None]])
def test_bad_shapes(shape):
    refused(
        with_nodes({"id": 0, "op": "full", "shape": shape, "value": 1}),
        "VALIDATION",
        0,
        "node 0 (full)",
    )


def test_shape_rank_and_size_limits():
    refused(with_nodes({"id": 0, "op": "full", "shape": [1] * 9, "value": 1}), "LIMIT", 0, "rank")
    big = [2**13, 2**13, 2]  # 2^27 elements > 2^26
    refused(with_nodes({"id": 0, "op": "full", "shape": big, "value": 1}), "LIMIT", 0)
    # rank past the limit wins over bad dims (the documented order)
    refused(with_nodes({"id": 0, "op": "full", "shape": [-1] * 9, "value": 1}), "LIMIT", 0)


@pytest.mark.parametrize(
    "data",
    [
        [1, 2],
        [1, 2, 3, 4],
        [1, 2, "x"],
        [1, [2], 3],
        [1, True, 3],
        [1, 2, None],
        "abc",
        None,
        {"0": 1},
    ],
)
def test_bad_data(data):
    refused(
        with_nodes({"id": 5, "op": "input", "shape": [3], "data": data}),
        "VALIDATION",
        5,
        "node 5 (input)",
    )


def test_data_length_is_checked_before_the_values():
    err = refused(
        with_nodes({"id": 0, "op": "input", "shape": [3], "data": ["x"]}), "VALIDATION", 0
    )
    assert "1 values" in err.message


@pytest.mark.parametrize(
    "node",
    [
        {"id": 1, "op": "full", "shape": [1], "value": "NaN"},
        {"id": 1, "op": "full", "shape": [1], "value": None},
        {"id": 1, "op": "sgd_update", "a": 0, "b": 0, "lr": math.nan},
        {"id": 1, "op": "sgd_update", "a": 0, "b": 0, "lr": "0.1"},
        {"id": 1, "op": "sgd_update", "a": 0, "b": 0, "lr": math.inf},
        {"id": 1, "op": "sum", "a": 0, "axis": 0.5},
        {"id": 1, "op": "sum", "a": 0, "axis": "0"},
        {"id": 1, "op": "sum", "a": 0, "keepdim": 1},
        {"id": 1, "op": "permute", "a": 0, "dims": [0, "1"]},
        {"id": 1, "op": "permute", "a": 0, "dims": 1},
        {"id": 1, "op": "reshape", "a": 0, "shape": [-1, -1]},
        {"id": 1, "op": "reshape", "a": 0, "shape": [0, 2]},
        {"id": 1, "op": "input", "shape": [1], "dtype": "float16", "data": [1]},
    ],
)
def test_bad_attributes(node):
    refused(with_nodes(inp(0, [2, 2]), node), "VALIDATION", 1, "node 1")


def test_reshape_rank_limit():
    refused(
        with_nodes(inp(0, [1]), {"id": 1, "op": "reshape", "a": 0, "shape": [1] * 9}), "LIMIT", 1
    )


def test_nodes_are_checked_in_list_order():
    g = with_nodes({"id": 0, "op": "nope"}, {"id": 1, "op": "full", "shape": [0], "value": 1})
    refused(g, "VALIDATION", 0, "unknown op")


# ------------------------------------------------------------------------------ step 3


def test_dangling_operand_names_the_referring_node():
    g = seed_graph()
    g["nodes"][2]["b"] = 42
    refused(g, "VALIDATION", 2, "node 2 (mul)", "dangling operand", "42")


def test_dangling_output():
    refused(edited(outputs=[{"name": "values", "id": 9}]), "VALIDATION", None, "dangling", "9")


@pytest.mark.parametrize(
    "outputs",
    [
        [{"name": "", "id": 3}],
        [{"name": 3, "id": 3}],
        [{"id": 3}],
        [{"name": "v", "id": "3"}],
        [{"name": "v", "id": 3, "extra": 1}],
        ["values"],
        [{"name": "v", "id": 3}, {"name": "v", "id": 2}],
    ],
)
def test_bad_outputs(outputs):
    refused(edited(outputs=outputs), "VALIDATION")


def test_cycle_names_the_first_listed_node_on_it():
    g = with_nodes(
        inp(0, [2]),
        {"id": 1, "op": "relu", "a": 0},  # downstream of the cycle, not on it
        {"id": 2, "op": "add", "a": 0, "b": 3},  # on the cycle
        {"id": 3, "op": "neg", "a": 2},  # on the cycle
        outputs=[{"name": "o", "id": 1}],
    )
    g["nodes"][1]["a"] = 3
    refused(g, "VALIDATION", 2, "node 2 (add)", "cycle")


def test_self_loop_is_a_cycle():
    refused(
        with_nodes(inp(0, [2]), {"id": 1, "op": "add", "a": 0, "b": 1}), "VALIDATION", 1, "cycle"
    )


def test_dangling_is_reported_before_a_cycle():
    g = with_nodes(
        {"id": 1, "op": "neg", "a": 2},
        {"id": 2, "op": "neg", "a": 1},
        {"id": 3, "op": "neg", "a": 8},
    )
    refused(g, "VALIDATION", 3, "dangling")


# ------------------------------------------------------------------------------ step 4


@pytest.mark.parametrize(
    "nodes, words",
    [
        (
            [inp(0, [2, 3]), inp(1, [4]), {"id": 2, "op": "add", "a": 0, "b": 1}],
            ["[2, 3]", "[4]", "broadcast"],
        ),
        ([inp(0, [2, 3]), inp(1, [2, 3]), {"id": 2, "op": "matmul", "a": 0, "b": 1}], ["[2, 3]"]),
        ([inp(0, [3]), inp(1, [3, 2]), {"id": 2, "op": "matmul", "a": 0, "b": 1}], ["[3]"]),
        (
            [inp(0, [2, 2, 3]), inp(1, [3, 3, 4]), {"id": 2, "op": "matmul", "a": 0, "b": 1}],
            ["batch"],
        ),
        ([inp(0, [2, 3]), inp(1, [1]), {"id": 2, "op": "sum", "a": 0, "axis": 2}], ["axis 2"]),
        ([inp(0, [2, 3]), inp(1, [1]), {"id": 2, "op": "softmax", "a": 0, "axis": -3}], ["axis"]),
        (
            [inp(0, [2, 3]), inp(1, [1]), {"id": 2, "op": "permute", "a": 0, "dims": [0, 0]}],
            ["permutation"],
        ),
        (
            [inp(0, [2, 3]), inp(1, [1]), {"id": 2, "op": "permute", "a": 0, "dims": [-1, 0]}],
            ["permutation"],
        ),
        (
            [inp(0, [2, 3]), inp(1, [1]), {"id": 2, "op": "reshape", "a": 0, "shape": [4, -1]}],
            ["reshape"],
        ),
        (
            [inp(0, [2, 3]), inp(1, [1]), {"id": 2, "op": "reshape", "a": 0, "shape": [5]}],
            ["reshape"],
        ),
        ([inp(0, [3]), inp(1, [1]), {"id": 2, "op": "transpose", "a": 0}], ["rank"]),
        (
            [inp(0, [2, 3]), inp(1, [3, 2]), {"id": 2, "op": "gelu_grad", "a": 0, "b": 1}],
            ["[3, 2]"],
        ),
        (
            [
                inp(0, [2, 3, 1]),
                inp(1, [2, 3, 1]),
                {"id": 2, "op": "cross_entropy", "a": 0, "b": 1},
            ],
            ["rank 2"],
        ),
        (
            [inp(0, [6]), inp(1, [6]), {"id": 2, "op": "cross_entropy_grad", "a": 0, "b": 1}],
            ["rank 2"],
        ),
        (
            [
                inp(0, [3]),
                inp(1, [2]),
                {"id": 2, "op": "adam_update", "a": 0, "b": 0, "c": 0, "t": 1},
            ],
            ["t"],
        ),
        (
            [
                inp(0, [3]),
                inp(1, [1, 1]),
                {"id": 2, "op": "adam_update", "a": 0, "b": 0, "c": 0, "t": 1},
            ],
            ["t"],
        ),
        (
            [
                inp(0, [3]),
                inp(1, [3, 1]),
                {"id": 2, "op": "adam_update", "a": 0, "b": 1, "c": 0, "t": 0},
            ],
            ["equal"],
        ),
        ([inp(0, [3]), inp(1, [1]), {"id": 2, "op": "life", "a": 0}], ["rank-2"]),
    ],
)
def test_shape_errors_name_the_node_and_shapes(nodes, words):
    op = nodes[-1]["op"]
    refused(with_nodes(*nodes), "VALIDATION", 2, f"node 2 ({op})", *words)


def test_result_and_total_element_limits():
    a = {"id": 0, "op": "full", "shape": [2**13, 2**13], "value": 1}  # 2^26: at the limit
    b = {"id": 1, "op": "full", "shape": [2, 1, 1], "value": 1}
    refused(
        with_nodes(a, b, {"id": 2, "op": "add", "a": 0, "b": 1}),
        "LIMIT",
        2,
        "node 2 (add)",
        "max_elements",
    )
    many = [{"id": i, "op": "full", "shape": [2**13, 2**13], "value": 1} for i in range(5)]
    refused(with_nodes(*many), "LIMIT", 4, "max_total_elements")


def test_shapes_are_checked_in_topological_order():
    g = with_nodes(
        {"id": 5, "op": "transpose", "a": 4},  # listed first, runs last
        inp(3, [2]),
        {"id": 4, "op": "add", "a": 3, "b": 6},
        inp(6, [3]),
    )
    refused(g, "VALIDATION", 4, "node 4 (add)")


# ------------------------------------------------------------------------------ step 5


def test_v1_graph_with_softmax_is_unsupported_version():
    g = with_nodes(inp(0, [2, 3]), {"id": 1, "op": "softmax", "a": 0}, version=1)
    refused(g, "UNSUPPORTED_VERSION", 1, "node 1 (softmax)", "version 2")


@pytest.mark.parametrize(
    "nodes, bad",
    [
        ([inp(0, [2, 3]), inp(1, [3]), {"id": 2, "op": "add", "a": 0, "b": 1}], 2),
        ([inp(0, [2, 2, 2]), {"id": 1, "op": "transpose", "a": 0}], 1),
        ([inp(0, [2, 2, 2]), inp(1, [2, 2]), {"id": 2, "op": "matmul", "a": 0, "b": 1}], 2),
        ([inp(0, [2, 3]), {"id": 1, "op": "sum", "a": 0, "axis": 0}], 1),
        ([inp(0, [2, 3]), {"id": 1, "op": "sum", "a": 0, "keepdim": True}], 1),
    ],
)
def test_v1_ops_using_v2_features(nodes, bad):
    refused(with_nodes(*nodes, version=1), "UNSUPPORTED_VERSION", bad)
    assert validate(with_nodes(*copy.deepcopy(nodes), version=2)).required_version == 2


@pytest.mark.parametrize("b_shape", [[], [1], [3]])
def test_scalar_like_operands_stay_version_1(b_shape):
    nodes = [inp(0, [3]), inp(1, b_shape), {"id": 2, "op": "mul", "a": 0, "b": 1}]
    assert validate(with_nodes(*nodes, version=1)).required_version == 1


def test_version_error_names_the_first_listed_node_that_needs_more():
    g = with_nodes(
        inp(0, [2]),
        {"id": 9, "op": "neg", "a": 0},
        {"id": 1, "op": "exp", "a": 0},
        outputs=[{"name": "a", "id": 1}, {"name": "b", "id": 9}],
        version=1,
    )
    refused(g, "UNSUPPORTED_VERSION", 9, "node 9 (neg)")


# ------------------------------------------------------------------------------ errors


def test_error_codes_match_the_op_table():
    assert set(CODES) == set(optable.load()["error_codes"])
    with pytest.raises(ValueError):
        GpuLabError("NOPE", "x")
    err = GpuLabError("STATE", "poisoned", 3)
    assert (err.code, err.message, err.node) == ("STATE", "poisoned", 3)
    assert err.to_dict() == {"code": "STATE", "message": "poisoned", "node": 3}


def test_non_string_keys_in_process_are_unknown_fields():
    g = with_nodes({"id": 0, "op": "full", "shape": [1], "value": 1, 5: 1, "x": 2})
    refused(g, "VALIDATION", 0, "unknown field", "5")
    g = with_nodes(
        {"id": 0, "op": "full", "shape": [1], "value": 1},
        outputs=[{"name": "o", "id": 0, 3: 4, "k": 1}],
    )
    refused(g, "VALIDATION", None, "unknown field")


def test_float_attributes_are_float32_values():
    graph = with_nodes(inp(0, [2], [1, 2]), {"id": 1, "op": "adam_m", "a": 0, "b": 0, "beta1": 0.9})
    beta1 = validate(graph).by_id[1].attrs["beta1"]
    assert beta1 == float(np.float32(0.9)) and beta1 != 0.9
    refused(
        with_nodes(inp(0, [2], [1, 2]), {"id": 1, "op": "sgd_update", "a": 0, "b": 0, "lr": 1e39}),
        "VALIDATION",
        1,
        "float32",
    )
