"""Graphs for the planners' multi-node dispatches (planner_multi.py): many Adam
parameters (adam_m + adam_v + adam_update each) of many sizes and hyperparameters, some
gradients reading an earlier parameter's new weight, and cross-entropy pairs in either order.
Used by pylib/tests/test_multi_fusion.py (bits on wgpu, sound plans) and
e2e/test_plans_equal.py (the two planners' equality)."""

from __future__ import annotations

from typing import Any

import numpy as np

SHAPES = ([1], [5], [64], [65], [3, 43], [7, 64], [300])


class _Nodes:
    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.nodes: list[dict[str, Any]] = []
        self.outs: list[int] = []

    def add(self, node: dict[str, Any], out: bool = False) -> int:
        node["id"] = len(self.nodes) * 2 + 3  # sparse ids
        self.nodes.append(node)
        if out:
            self.outs.append(node["id"])
        return node["id"]

    def data(self, shape: list[int], low: float = -1.0, high: float = 1.0) -> int:
        values = self.rng.uniform(low, high, int(np.prod(shape))).astype(np.float32)
        return self.add({"op": "input", "shape": shape, "data": values.tolist()})

    def adam(self, w: int, shape: list[int], g: int, t: int, **hyper: float) -> int:
        """One parameter's Adam step; its m', v', w' are outputs."""
        b1, b2 = hyper.get("beta1", 0.9), hyper.get("beta2", 0.999)
        m = self.add({"op": "adam_m", "a": self.data(shape), "b": g, "beta1": b1}, True)
        v = self.add({"op": "adam_v", "a": self.data(shape, 0.0, 1.0), "b": g, "beta2": b2}, True)
        node = {"op": "adam_update", "a": w, "b": m, "c": v, "t": t, **hyper}
        return self.add(node, True)

    def graph(self) -> dict[str, Any]:
        return {
            "version": 2,
            "nodes": self.nodes,
            "outputs": [{"name": f"o{i}", "id": o} for i, o in enumerate(self.outs)],
        }


def multi_graph(rng: np.random.Generator) -> dict[str, Any]:
    """2-10 parameters sharing one step counter (a few a second one), a third of the gradients
    scaled by the sum of the previous new weight, and 1-2 cross-entropy pairs."""
    b = _Nodes(rng)
    steps = [b.add({"op": "input", "shape": [1], "data": [float(rng.integers(1, 40))]})]
    steps.append(b.add({"op": "input", "shape": [1], "data": [float(rng.integers(1, 40))]}))
    last: int | None = None
    for _ in range(int(rng.integers(2, 11))):
        shape = list(SHAPES[int(rng.integers(len(SHAPES)))])
        g = b.data(shape)
        if last is not None and rng.random() < 0.3:  # depends on the previous update
            g = b.add({"op": "mul", "a": g, "b": b.add({"op": "sum", "a": last, "axis": None})})
        hyper = {
            "lr": float(rng.choice([0.001, 0.01, 0.5])),
            "beta1": float(rng.choice([0.9, 0.8])),
            "beta2": float(rng.choice([0.999, 0.99])),
            "eps": float(rng.choice([1e-8, 1e-3])),
        }
        t = steps[1] if rng.random() < 0.15 else steps[0]
        last = b.adam(b.data(shape), shape, g, t, **hyper)
        if rng.random() < 0.3:
            _cross_entropy_pair(b)
    _cross_entropy_pair(b)
    return b.graph()


def _cross_entropy_pair(b: _Nodes) -> None:
    rows, classes = int(b.rng.integers(1, 9)), int(b.rng.integers(2, 150))
    logits, target = b.data([rows, classes], -3.0, 3.0), b.data([rows, classes], 0.0, 1.0)
    ops = ["cross_entropy", "cross_entropy_grad"]
    if b.rng.random() < 0.5:
        ops.reverse()
    for op in ops:
        b.add({"op": op, "a": logits, "b": target}, True)


def adam_chain_graph() -> dict[str, Any]:
    """p0..p4 on one step counter: p1's gradient reads p0's new weight, exp of p2's new
    weight is computed between p2 and p3 (see test_multi_fusion)."""
    b = _Nodes(np.random.default_rng(5))
    t = b.add({"op": "input", "shape": [1], "data": [3.0]})
    shape = [70]
    u0 = b.adam(b.data(shape), shape, b.data(shape), t)
    g1 = b.add({"op": "mul", "a": b.data(shape), "b": u0})
    b.adam(b.data(shape), shape, g1, t)
    u2 = b.adam(b.data(shape), shape, b.data(shape), t, lr=0.01)
    b.add({"op": "exp", "a": u2}, True)
    for _ in range(2):
        b.adam(b.data(shape), shape, b.data(shape), t)
    return b.graph()


def params_graph(k: int) -> dict[str, Any]:
    """k independent parameters of different sizes on one step counter: one adam_multiK
    dispatch where the device allows k (a case per shipped kernel)."""
    b = _Nodes(np.random.default_rng(k))
    t = b.add({"op": "input", "shape": [1], "data": [2.0]})
    for i in range(k):
        shape = list(SHAPES[i % len(SHAPES)])
        b.adam(b.data(shape), shape, b.data(shape), t, lr=0.001 * (i + 1))
    return b.graph()
