"""gpulab.validate_cache gives exactly what protocol.validate gives (the checked graph, or the
same first error: code, node, message) with its cache cold and warm: every bad graph of the
corpus (bad_graphs.json) cold, and again after a good graph of the same structure (its data
replaced by zeros) warmed the cache; every good corpus graph (cases.json) warm, and warm with
its data made wrong (too short, too long, a junk value, an index out of range)."""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gpulab import protocol, validate_cache
from gpulab.errors import GpuLabError

ROOT = Path(__file__).resolve().parents[2]
BAD = json.loads((ROOT / "pylib/gpulab/conformance/bad_graphs.json").read_text())
CASES = json.loads((ROOT / "pylib/gpulab/conformance/cases.json").read_text())


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    validate_cache.configure()
    yield
    validate_cache.configure()


def _answer(fn: Any, graph: Any) -> Any:
    """A comparable view of a validation: the error, or the checked graph's every field."""
    try:
        c = fn(graph)
    except GpuLabError as err:
        return ("error", err.code, err.node, str(err))
    nodes = [
        (n.id, n.op, n.operands, repr(n.attrs), n.shape, n.dtype, n.version, n.why, _data(n.data))
        for n in c.nodes
    ]
    by_id = sorted((k, v.id, _data(v.data)) for k, v in c.by_id.items())
    return ("ok", c.version, c.required_version, nodes, c.order, c.outputs, by_id)


def _data(data: Any) -> Any:
    return None if data is None else (type(data).__name__, data.typecode, data.tobytes())


def _same(graph: Any) -> None:
    assert _answer(validate_cache.validate, graph) == _answer(protocol.validate, graph)


def _zeroed(graph: Any) -> Any:
    """The graph with every input's data replaced by zeros of its shape (None: no data)."""
    if not isinstance(graph, dict) or not isinstance(graph.get("nodes"), list):
        return None
    twin = copy.deepcopy(graph)
    changed = False
    for node in twin["nodes"]:
        if isinstance(node, dict) and "data" in node and isinstance(node.get("shape"), list):
            try:
                count = math.prod(int(d) for d in node["shape"])
            except (TypeError, ValueError):
                return None
            node["data"] = [0] * count
            changed = True
    return twin if changed else None


def test_every_bad_graph_gives_the_same_error_cold_and_after_a_good_twin() -> None:
    warm = 0
    for case in BAD:
        graph = case["graph"]
        _same(graph)
        _same(graph)  # a failed graph is not cached: the same answer again
        twin = _zeroed(graph)
        if twin is None:
            continue
        try:
            protocol.validate(twin)
        except GpuLabError:
            continue  # the error is not in the data: no good twin of this structure
        hits = validate_cache.counters["hits"]
        _same(twin)  # caches the structure
        _same(graph)  # the bad data, checked on the warm path
        assert validate_cache.counters["hits"] > hits, case["name"]
        warm += 1
    # the data cases: too short, too long, not numbers, bool, object data, indices out of range
    assert warm >= 8, warm


def _broken_data(graph: dict) -> Iterator[dict]:
    """The good graph with one input's data made wrong, in every way the data checks catch."""
    for i, node in enumerate(graph["nodes"]):
        data = node.get("data")
        if not isinstance(data, list) or not data:
            continue
        for bad in (data[:-1], [*data, data[0]], ["junk", *data[1:]], [[0], *data[1:]]):
            broken = copy.deepcopy(graph)
            broken["nodes"][i]["data"] = bad
            yield broken
        out_of_range = copy.deepcopy(graph)
        out_of_range["nodes"][i]["data"] = [10**6] * len(data)  # past any index axis
        yield out_of_range
        return  # the first input with data is enough per case


def test_every_good_graph_warm_and_with_its_data_broken() -> None:
    broken_count = 0
    for case in CASES:
        graph = case["graph"]
        _same(graph)
        _same(graph)
        for broken in _broken_data(graph):
            _same(broken)
            broken_count += 1
    assert validate_cache.counters["hits"] >= len(CASES)
    assert broken_count > 1000


def test_numpy_data_hits_and_numpy_structure_is_validated_in_full() -> None:
    graph = {
        "version": 1,
        "nodes": [
            {"id": 0, "op": "input", "shape": [2, 3], "data": np.arange(6, dtype=np.float32)},
            {"id": 1, "op": "relu", "a": 0},
        ],
        "outputs": [{"name": "y", "id": 1}],
    }
    _same(graph)
    graph["nodes"][0]["data"] = np.ones(6, dtype=np.float32)
    hits = validate_cache.counters["hits"]
    _same(graph)
    assert validate_cache.counters["hits"] == hits + 1
    assert validate_cache.validate(graph).by_id[0].data.tolist() == [1.0] * 6
    graph["nodes"][0]["data"] = np.ones(5, dtype=np.float32)
    _same(graph)  # the length is checked on the warm path
    graph["nodes"][0]["data"] = np.ones(6, dtype=np.float32)
    graph["nodes"][0]["shape"] = [np.int64(2), 3]  # not a builtin: validated in full
    before = validate_cache.counters["uncacheable"]
    _same(graph)
    assert validate_cache.counters["uncacheable"] == before + 1
    graph["nodes"][0]["shape"] = [b"\x02" + bytes(7), 3]  # np.int64(2)'s bytes: a bytes key
    _same(graph)


def test_types_the_validator_tells_apart_are_different_keys() -> None:
    base = {
        "version": 1,
        "nodes": [{"id": 0, "op": "input", "shape": [2], "data": [1, 2]}],
        "outputs": [{"name": "y", "id": 0}],
    }
    _same(base)
    for shape in ([True, 2], [2.0], [2.5], ["2"], [-0.0]):
        g = copy.deepcopy(base)
        g["nodes"][0]["shape"] = shape
        _same(g)
    subclass = type("Shape", (list,), {})
    g = copy.deepcopy(base)
    g["nodes"][0]["shape"] = subclass([2])
    assert validate_cache.structure_key(g) is None
    g["nodes"][0]["shape"] = (2,)  # a tuple is not a list
    assert validate_cache.structure_key(g) != validate_cache.structure_key(base)
    cyclic: list[Any] = [2]
    cyclic.append(cyclic)
    g["nodes"][0]["shape"] = cyclic
    assert validate_cache.structure_key(g) is None
    _same(g)


def test_the_cache_keeps_no_data_and_can_be_turned_off() -> None:
    graph = {
        "version": 1,
        "nodes": [{"id": 0, "op": "input", "shape": [3], "data": [1, 2, 3]}],
        "outputs": [{"name": "y", "id": 0}],
    }
    validate_cache.validate(graph)
    (entry,) = validate_cache._entries.values()
    assert all(n.data is None for n in entry.checked.nodes)
    validate_cache.configure(0)
    hits = validate_cache.counters["hits"]
    validate_cache.validate(graph)
    validate_cache.validate(graph)
    assert not validate_cache._entries and validate_cache.counters["hits"] == hits


def test_graph_run_hits_the_cache_on_the_second_run() -> None:
    import gpulab

    g = gpulab.Graph()
    x = g.tensor([1.0, -2.0, 3.0])
    before = dict(validate_cache.counters)
    y = x.relu()
    first = g.run(backend="cpu-python", y=y)
    second = g.run(backend="cpu-python", y=y)
    assert list(first["outputs"]["y"]["data"]) == list(second["outputs"]["y"]["data"]) == [1, 0, 3]
    assert validate_cache.counters["misses"] == before["misses"] + 1
    assert validate_cache.counters["hits"] == before["hits"] + 1


def test_the_structure_memo_is_shared_and_matches_a_fresh_computation() -> None:
    from gpulab.models.mlp import init, step_graph
    from gpulab.native.plan_cache import structure_key

    step = step_graph(init(0))
    graph = step.graph._graph_dict(step.outputs())
    first, second = validate_cache.validate(graph), validate_cache.validate(graph)
    assert second.memo is first.memo  # one structure, one memo
    fresh = protocol.validate(graph)
    assert fresh.memo is not first.memo
    assert structure_key(second, "x") == structure_key(fresh, "x")
    assert "structure_key" in first.memo
