"""Graph inputs a hostile notebook can write get protocol answers: `g.tensor` of a list nested
thousands deep is VALIDATION (it was a RecursionError), and a graph whose `nodes` and `outputs`
are tuples runs natively as it does in the page (Pyodide's toJs makes them Arrays there; the
native validator refused them)."""

from __future__ import annotations

import numpy as np
import pytest
from gpulab import Graph, host
from gpulab.errors import GpuLabError


def _nested(depth: int) -> list:
    value: list = [1.0]
    for _ in range(depth - 1):
        value = [value]
    return value


@pytest.mark.parametrize("depth", [65, 2000, 100_000])
def test_a_list_nested_thousands_deep_is_validation(depth):
    g = Graph()
    with pytest.raises(GpuLabError) as err:
        g.tensor(_nested(depth))
    assert err.value.code == "VALIDATION"
    assert "nested more than 64 deep" in err.value.message


def test_a_list_nested_past_the_rank_limit_but_within_the_bound_still_gets_limit():
    """Past max_rank and up to 64 keeps its answer: LIMIT naming the rank limit."""
    from gpulab import optable

    rank = optable.limits()["max_rank"] + 1
    g = Graph()
    with pytest.raises(GpuLabError) as err:
        g.tensor(_nested(rank))
    assert err.value.code == "LIMIT" and f"rank {rank} > max_rank {rank - 1}" in err.value.message


def test_nodes_and_outputs_as_tuples_run_as_lists_do():
    g = Graph()
    a = g.tensor([1.0, 2.0, 3.0])
    graph = g.to_dict(y=a * a + a)
    tupled = {**graph, "nodes": tuple(graph["nodes"]), "outputs": tuple(graph["outputs"])}
    want = host.execute(graph, backend="cpu-python")["outputs"]["y"]["array"]
    got = host.execute(tupled, backend="cpu-python")["outputs"]["y"]["array"]
    assert np.array_equal(np.asarray(got), np.asarray(want))
    assert np.array_equal(np.asarray(got), [2.0, 6.0, 12.0])
