"""Rank 5 to 8 on kernels of rank 4 (docs/protocol.md "Rank 5 to 8"): the coalescing the host
and the JS runtime do before a backend prepares a graph (gpulab.lowering_rank, twin
backends-js/src/lowering-rank.mjs; test_lowering.py compares the twins on the corpus)."""

from __future__ import annotations

import numpy as np
import pytest
from gpulab import host
from gpulab.conformance.runner import load_cases
from gpulab.lowering import lower_graph
from gpulab.lowering_rank import KERNEL_RANK, coalesce_broadcast
from gpulab.protocol import validate

V = 8


def _ranks(graph: dict) -> list[tuple[int, str, int]]:
    """(id, op, rank) of every lowered node: the highest rank among its tensors."""
    lowered = lower_graph(validate(graph))
    checked = lowered.checked if lowered else validate(graph)
    by_id = checked.by_id
    return [
        (n.id, n.op, max([len(n.shape)] + [len(by_id[i].shape) for i in n.operands]))
        for n in checked.nodes
    ]


def test_broadcast_axes_read_alike_merge() -> None:
    out, views = coalesce_broadcast(
        (2, 1, 3, 1, 2, 1, 2, 3), [(2, 1, 3, 1, 2, 1, 2, 3), (3, 1, 2, 1, 1, 1)]
    )
    assert (out, views) == ((2, 6, 6), [(2, 6, 6), (6, 1)])
    # an operand that no reshape takes (bool) keeps the axes it spans apart
    out, views = coalesce_broadcast((2, 2, 2, 3, 2), [(3, 2), (2, 2, 2, 3, 2), ()], [True])
    assert (out, views) == ((8, 3, 2), [(3, 2), (8, 3, 2), ()])


def test_every_rank_case_of_the_corpus_runs_on_rank_4_kernels() -> None:
    cases = [c for c in load_cases() if c["name"].startswith("high_rank/")]
    assert len(cases) >= 15
    for case in cases:
        past = [r for r in _ranks(case["graph"]) if r[2] > KERNEL_RANK]
        assert not past, (case["name"], past)


SCATTERED = [2, 3, 2, 3, 2], [4, 2, 0, 3, 1]  # no two axes stay adjacent


def _permute_graph(shape: list[int], dims: list[int]) -> dict:
    n = int(np.prod(shape))
    return {
        "version": V,
        "nodes": [
            {"id": 0, "op": "input", "shape": shape, "data": list(range(n))},
            {"id": 1, "op": "permute", "a": 0, "dims": dims},
        ],
        "outputs": [{"name": "y", "id": 1}],
    }


@pytest.mark.parametrize(
    "shape, dims, rank",
    [
        ([2, 3, 1, 2, 2, 3], [3, 4, 5, 2, 0, 1], 2),  # two runs
        ([2, 1, 3, 1, 2, 1, 2, 3], [6, 7, 1, 4, 3, 2, 5, 0], 4),  # size-1 axes go anywhere
        (*SCATTERED, 5),  # kept at its rank: a rank-4 kernel refuses it by name
    ],
)
def test_permute_coalesces_axes_that_stay_adjacent(
    shape: list[int], dims: list[int], rank: int
) -> None:
    graph = _permute_graph(shape, dims)
    assert max(r for _, op, r in _ranks(graph) if op == "permute") == rank
    got = host.execute(graph, backend="cpu-python")["outputs"]["y"]
    want = np.arange(np.prod(shape), dtype=np.float32).reshape(shape).transpose(dims)
    assert got["shape"] == list(want.shape)
    np.testing.assert_array_equal(np.asarray(got["array"]), want)


def test_slices_join_whole_axes_after_a_step_of_one() -> None:
    n = None
    graph = {
        "version": V,
        "nodes": [
            {"id": 0, "op": "input", "shape": [2, 3, 1, 2, 2, 3], "data": list(range(72))},
            {
                "id": 1,
                "op": "slice",
                "a": 0,
                "slices": [[1, n, 1], [n, n, 1], [n, n, 1], [n, n, 1], [n, n, 1], [n, n, 1]],
            },
            {
                "id": 2,
                "op": "slice",
                "a": 0,
                "slices": [[n, n, 1], [2, 0, -1], [n, n, 1], [n, n, 1], [n, n, 1], [n, n, 2]],
            },
        ],
        "outputs": [{"name": "y", "id": 1}, {"name": "z", "id": 2}],
    }
    lowered = lower_graph(validate(graph)).checked.by_id
    assert (lowered[1].shape, lowered[1].attrs["slices"]) == ((36,), [[36, 72, 1]])
    assert len(lowered[2].shape) == 4  # [2], [3 x 1], [2 x 2], [3 step 2]
    x = np.arange(72, dtype=np.float32).reshape(2, 3, 1, 2, 2, 3)
    got = host.execute(graph, backend="cpu-python")["outputs"]
    np.testing.assert_array_equal(np.asarray(got["y"]["array"]), x[1:])
    np.testing.assert_array_equal(np.asarray(got["z"]["array"]), x[:, 2:0:-1, :, :, :, ::2])


def test_a_bool_tensor_keeps_its_shape() -> None:
    """No lane reshapes bool: a comparison with a rank-5 bool result stays at rank 5 (a GPU
    backend refuses it by name; the CPU ones run it)."""
    graph = {
        "version": V,
        "nodes": [
            {"id": 0, "op": "input", "shape": [2, 1, 3, 1, 2], "data": [1, -1, 2, -2, 3, -3] * 2},
            {"id": 1, "op": "full", "shape": [], "value": 0},
            {"id": 2, "op": "gt", "a": 0, "b": 1},
        ],
        "outputs": [{"name": "m", "id": 2}],
    }
    assert ("gt", 5) in [(op, r) for _, op, r in _ranks(graph)]
    got = host.execute(graph, backend="cpu-python")["outputs"]["m"]
    assert got["shape"] == [2, 1, 3, 1, 2] and got["dtype"] == "bool"
