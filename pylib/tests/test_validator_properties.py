"""Property tests of gpulab.protocol.validate: random valid graphs validate (with a correct
execution order), targeted mutations give the documented error code and node, and arbitrary
JSON values in any field give a GpuLabError, never another exception."""

from __future__ import annotations

import copy
import math

import pytest
from gpulab import optable
from gpulab.errors import GpuLabError
from gpulab.kernel_table import graph_version, plain_ops
from gpulab.protocol import validate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# From the kernel table, so a new map op is drawn without editing this file.
UNARY = plain_ops("map1")
BINARY = plain_ops("map2", "broadcast")
VALIDATION_CODES = {"VALIDATION", "UNSUPPORTED_VERSION", "LIMIT"}


@st.composite
def valid_graphs(draw) -> dict:
    """Elementwise graphs over one shape: ids random and distinct, nodes listed in any order."""
    shape = draw(st.lists(st.integers(1, 3), max_size=3))
    count = math.prod(shape)
    n_inputs = draw(st.integers(1, 3))
    n_ops = draw(st.integers(1, 6))
    ids = draw(
        st.lists(
            st.integers(0, 500), min_size=n_inputs + n_ops, max_size=n_inputs + n_ops, unique=True
        )
    )
    floats = st.floats(-4, 4, allow_nan=False, width=32)
    nodes = [
        {
            "id": ids[i],
            "op": "input",
            "shape": list(shape),
            "data": draw(st.lists(floats, min_size=count, max_size=count)),
        }
        for i in range(n_inputs)
    ]
    for i in range(n_inputs, n_inputs + n_ops):
        earlier = st.sampled_from(ids[:i])
        if draw(st.booleans()):
            nodes.append({"id": ids[i], "op": draw(st.sampled_from(UNARY)), "a": draw(earlier)})
        else:
            nodes.append(
                {
                    "id": ids[i],
                    "op": draw(st.sampled_from(BINARY)),
                    "a": draw(earlier),
                    "b": draw(earlier),
                }
            )
    outputs = [{"name": "out", "id": ids[-1]}]
    extra = draw(st.lists(st.sampled_from(ids), max_size=2, unique=True))
    outputs += [{"name": f"o{k}", "id": i} for k, i in enumerate(extra)]
    order = draw(st.permutations(range(len(nodes))))
    return {"version": graph_version(nodes), "nodes": [nodes[k] for k in order], "outputs": outputs}


def operands(node: dict) -> list[int]:
    return [node[k] for k in optable.ops()[node["op"]]["operands"]]


def reachable(start: int, edges: dict[int, list[int]]) -> set[int]:
    seen, todo = set(), [start]
    while todo:
        n = todo.pop()
        if n not in seen:
            seen.add(n)
            todo.extend(edges.get(n, []))
    return seen


def expect(graph: dict, code: str, node: int | None = "any") -> GpuLabError:
    try:
        validate(graph)
    except GpuLabError as err:
        assert err.code == code, err
        if node != "any":
            assert err.node == node, err
        return err
    raise AssertionError(f"accepted a graph that should fail with {code}")


@SETTINGS
@given(valid_graphs())
def test_valid_graphs_validate_with_a_topological_order(graph):
    checked = validate(graph)
    position = {n["id"]: i for i, n in enumerate(graph["nodes"])}
    by_id = {n["id"]: n for n in graph["nodes"]}
    done: set[int] = set()
    for node_id in checked.order:
        assert set(operands(by_id[node_id])) <= done
        # the tie rule: no ready node listed earlier was skipped
        ready = [
            i
            for i in by_id
            if i not in done and set(operands(by_id[i])) <= done and i in checked.order
        ]
        assert position[node_id] == min(position[i] for i in ready)
        done.add(node_id)
    deps = {i: operands(n) for i, n in by_id.items()}
    needed = set().union(*(reachable(o["id"], deps) for o in graph["outputs"]))
    assert set(checked.order) == needed
    newest = max(optable.ops()[n["op"]]["since"] for n in graph["nodes"])
    assert checked.required_version == max(2, newest) or newest == 1


@SETTINGS
@given(valid_graphs(), st.data())
def test_duplicate_id(graph, data):
    i, j = sorted(
        data.draw(
            st.lists(st.integers(0, len(graph["nodes"]) - 1), min_size=2, max_size=2, unique=True)
        )
    )
    dup = graph["nodes"][i]["id"]
    graph["nodes"][j]["id"] = dup
    err = expect(graph, "VALIDATION", dup)
    assert "duplicate" in err.message


@SETTINGS
@given(valid_graphs(), st.data())
def test_dangling_operand(graph, data):
    ops = [n for n in graph["nodes"] if n["op"] != "input"]
    node = data.draw(st.sampled_from(ops))
    node["a"] = 10_000 + data.draw(st.integers(0, 100))
    err = expect(graph, "VALIDATION", node["id"])
    assert f"node {node['id']} ({node['op']})" in err.message and "dangling" in err.message


@SETTINGS
@given(valid_graphs(), st.data())
def test_dropped_node_leaves_a_dangling_reference(graph, data):
    used = {r for n in graph["nodes"] for r in operands(n)} | {o["id"] for o in graph["outputs"]}
    victim = data.draw(st.sampled_from(sorted(used)))
    graph["nodes"] = [n for n in graph["nodes"] if n["id"] != victim]
    if graph["nodes"]:
        assert "dangling" in expect(graph, "VALIDATION").message
    else:
        expect(graph, "VALIDATION", None)


@SETTINGS
@given(valid_graphs(), st.data())
def test_cycle_names_the_first_listed_node_on_it(graph, data):
    ops = [n for n in graph["nodes"] if n["op"] != "input"]
    x = data.draw(st.sampled_from(ops))
    users = {}
    for n in graph["nodes"]:
        for r in operands(n):
            users.setdefault(r, []).append(n["id"])
    downstream = sorted(reachable(x["id"], users))  # x itself included: a self-loop
    target = data.draw(st.sampled_from(downstream))
    x["a"] = target
    deps = {n["id"]: operands(n) for n in graph["nodes"]}
    on_cycle = reachable(x["id"], users) & reachable(target, deps)
    first = next(n["id"] for n in graph["nodes"] if n["id"] in on_cycle)
    assert "cycle" in expect(graph, "VALIDATION", first).message


@SETTINGS
@given(valid_graphs(), st.data(), st.sampled_from([[0], [-1], [2.5], ["2"], [True], [None]]))
def test_bad_input_shape(graph, data, bad):
    inputs = [n for n in graph["nodes"] if n["op"] == "input"]
    node = data.draw(st.sampled_from(inputs))
    node["shape"] = node["shape"] + bad
    expect(graph, "VALIDATION", node["id"])


@SETTINGS
@given(valid_graphs(), st.data())
def test_rank_past_the_limit(graph, data):
    node = data.draw(st.sampled_from([n for n in graph["nodes"] if n["op"] == "input"]))
    node["shape"] = [1] * (optable.limits()["max_rank"] + 1)
    expect(graph, "LIMIT", node["id"])


@SETTINGS
@given(valid_graphs(), st.data(), st.sampled_from([-1, 1]))
def test_wrong_data_length(graph, data, delta):
    node = data.draw(st.sampled_from([n for n in graph["nodes"] if n["op"] == "input"]))
    node["data"] = node["data"] + [1.0] if delta > 0 else node["data"][:-1]
    assert "values" in expect(graph, "VALIDATION", node["id"]).message


@SETTINGS
@given(valid_graphs(), st.integers().filter(lambda v: v not in optable.protocol_versions()))
def test_unknown_version(graph, version):
    graph["version"] = version
    expect(graph, "UNSUPPORTED_VERSION", None)


@SETTINGS
@given(
    valid_graphs(),
    st.one_of(
        st.text(),
        st.booleans(),
        st.none(),
        st.floats().filter(lambda v: not float(v).is_integer()),
        st.lists(st.integers(), max_size=2),
    ),
)
def test_version_not_an_integer(graph, version):
    graph["version"] = version
    expect(graph, "VALIDATION", None)


@SETTINGS
@given(valid_graphs())
def test_version_1_with_version_2_ops(graph):
    v2 = [n for n in graph["nodes"] if optable.ops()[n["op"]]["since"] >= 2]  # or later
    graph["version"] = 1
    if v2:
        expect(graph, "UNSUPPORTED_VERSION", v2[0]["id"])
    else:
        assert validate(graph).required_version == 1


@SETTINGS
@given(valid_graphs(), st.data(), st.text(min_size=1))
def test_unknown_op_or_field(graph, data, word):
    node = data.draw(st.sampled_from(graph["nodes"]))
    if word in optable.ops() or word in node:
        return
    if data.draw(st.booleans()):
        node["op"] = word
        expect(graph, "VALIDATION", node["id"])
    else:
        node[word] = 1
        assert "unknown field" in expect(graph, "VALIDATION", node["id"]).message


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=5)
    | st.sampled_from(["nan", "inf", "-inf", "input", "add"]),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)


@pytest.mark.slow  # over ~10 s of CPU: make test, not test-fast
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_graphs(), st.data(), JSON)
def test_any_json_in_any_field_gives_a_gpulab_error_or_a_graph(graph, data, junk):
    places = [("graph", k) for k in graph] + [("output", k) for k in graph["outputs"][0]]
    for i, n in enumerate(graph["nodes"]):
        places += [(i, k) for k in n] + [(i, "axis"), (i, "shape")]
    where, key = data.draw(st.sampled_from(places))
    graph = copy.deepcopy(graph)
    target = (
        graph
        if where == "graph"
        else graph["outputs"][0]
        if where == "output"
        else graph["nodes"][where]
    )
    target[key] = junk
    try:
        validate(graph)
    except GpuLabError as err:
        assert err.code in VALIDATION_CODES
        assert err.node is None or isinstance(err.node, int)
