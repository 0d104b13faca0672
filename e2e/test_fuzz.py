"""The fuzz lane (e2e/fuzz.py): 20 000 seeded random and mutated graphs through both
validators and the cpu, wasm and cpu-python executors (no non-protocol exception, the same
code and node on both sides, the same output shapes and dtypes on every executor), and a
hypothesis search natively. GPULAB_FUZZ=<count> runs more (the 200 000-graph run of the issue:
`GPULAB_FUZZ=200000 pytest e2e/test_fuzz.py`, or `python -m e2e.fuzz --count 200000`)."""

from __future__ import annotations

import os
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from e2e import fuzz

COUNT = int(os.environ.get("GPULAB_FUZZ", str(fuzz.COUNT)))


def test_fuzz_lane_is_clean_on_both_sides() -> None:
    stats = fuzz.run(COUNT, seed=20261201)
    assert stats["graphs"] == COUNT
    # not vacuous: graphs of every outcome, and enough of them run on every executor
    assert stats["valid"] >= COUNT // 20 and stats["ran"] >= COUNT // 25, stats


def test_the_judge_catches_a_crash_and_a_disagreement() -> None:
    graph = {"version": 1, "nodes": [], "outputs": []}
    ok = {"validate": {"code": "VALIDATION", "node": None}}
    assert fuzz.disagreement(graph, ok, ok) is None
    crash = {"validate": {"crash": "TypeError: x"}}
    assert "crashed" in (fuzz.disagreement(graph, ok, crash) or "")
    other = {"validate": {"code": "VALIDATION", "node": 3}}
    assert "differ" in (fuzz.disagreement(graph, ok, other) or "")
    valid = {
        "validate": {"ok": True},
        "run": {"cpu-python": {"ok": True, "outputs": {"y": [[2], "float32"]}}},
    }
    failed = {"validate": {"ok": True}, "run": {"cpu": {"code": "BACKEND", "node": None}}}
    assert "failed" in (fuzz.disagreement(graph, valid, failed) or "")
    shaped = {
        "validate": {"ok": True},
        "run": {"wasm": {"ok": True, "outputs": {"y": [[3], "float32"]}}},
    }
    assert "differ" in (fuzz.disagreement(graph, valid, shaped) or "")


@settings(
    max_examples=int(os.environ.get("GPULAB_FUZZ_HYPOTHESIS", "300")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(st.randoms(use_true_random=False))
def test_hypothesis_graphs_get_protocol_answers_natively(rng: random.Random) -> None:
    graph = fuzz.mutate(fuzz.random_graph(rng), rng)
    answer = fuzz.python_side(graph)
    for lane, view in [("validate", answer["validate"]), *answer.get("run", {}).items()]:
        assert "crash" not in view, (lane, view, graph)
    if "run" in answer:
        assert answer["run"]["cpu-python"].get("ok"), (answer, graph)


@pytest.mark.parametrize("seed", [1, 2])
def test_fuzz_graphs_are_deterministic(seed: int) -> None:
    assert list(fuzz.graphs(20, seed)) == list(fuzz.graphs(20, seed))
