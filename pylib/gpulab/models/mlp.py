"""The 784-256-10 MLP training step (forward, backward, Adam) as ONE gpulab graph.

This is the benchmark step of SPEC.md and the step the session-equality tests use. Weights and
the batch come from a seeded numpy generator (`init`), so PyTorch (gpulab.benchmarks.torch_peer) and
TensorFlow.js peers start from the same numbers; `step_graph` also works without numpy when the
caller passes plain lists (as in the page).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpulab.graph import Graph, Tensor

PARAMS = ("w1", "b1", "w2", "b2")


def init(
    seed: int = 0, inputs: int = 784, hidden: int = 256, classes: int = 10, batch: int = 64
) -> dict[str, Any]:
    """Seeded float32 weights (scaled normal), zero biases, a uniform batch and one-hot labels."""
    import numpy as np

    rng = np.random.default_rng(seed)
    f32 = np.float32
    return {
        "w1": (rng.standard_normal((inputs, hidden)) * (1 / 28)).astype(f32),
        "b1": np.zeros(hidden, f32),
        "w2": (rng.standard_normal((hidden, classes)) * (1 / 16)).astype(f32),
        "b2": np.zeros(classes, f32),
        "x": rng.random((batch, inputs), dtype=f32),
        "y": np.eye(classes, dtype=f32)[rng.integers(0, classes, batch)],
    }


@dataclass
class MlpStep:
    """Handles to the tensors of one recorded step (to prepare sessions and carry state)."""

    graph: Graph
    x: Tensor
    y: Tensor
    step: Tensor
    params: dict[str, Tensor]
    moments: dict[str, tuple[Tensor, Tensor]]
    loss: Tensor
    new_params: dict[str, Tensor]
    new_moments: dict[str, tuple[Tensor, Tensor]]
    next_step: Tensor

    def outputs(self) -> dict[str, Tensor]:
        """Every output of the step by name: the loss and the new state."""
        out = {"loss": self.loss, "next_step": self.next_step}
        for k in PARAMS:
            out[k] = self.new_params[k]
            out[f"m_{k}"], out[f"v_{k}"] = self.new_moments[k]
        return out

    def carry(self) -> dict[Tensor, Tensor]:
        """Input -> output pairs that turn one step's result into the next step's state."""
        pairs: dict[Tensor, Tensor] = {self.step: self.next_step}
        for k in PARAMS:
            pairs[self.params[k]] = self.new_params[k]
            for old, new in zip(self.moments[k], self.new_moments[k], strict=True):
                pairs[old] = new
        return pairs


def step_graph(values: dict[str, Any], lr: float = 1e-3, feed_batch: bool = False) -> MlpStep:
    """Record forward, backward and Adam for all four parameters as one graph.

    `values` holds w1, b1, w2, b2, x, y (numpy arrays or nested lists). With `feed_batch`, x and
    y are per-step inputs (for prepared sessions) instead of constants.
    """
    g = Graph()
    p = {k: g.tensor(values[k]) for k in PARAMS}
    # Moments are inputs with data (zeros), not `full` constants: a session carries inputs.
    moments = {k: (_zeros(g, p[k].shape), _zeros(g, p[k].shape)) for k in PARAMS}
    if feed_batch:
        x = g.input(_shape(values["x"]), name="x")
        y = g.input(_shape(values["y"]), name="y")
    else:
        x, y = g.tensor(values["x"]), g.tensor(values["y"])
    step = g.tensor([1.0])

    h = x @ p["w1"] + p["b1"]
    a = h.relu()
    logits = a @ p["w2"] + p["b2"]
    loss = logits.cross_entropy(y)

    dlogits = logits.cross_entropy_grad(y)
    grads = {
        "w2": a.transpose() @ dlogits,
        "b2": dlogits.sum(axis=0),
    }
    # positive(relu(h)) is positive(h) bit for bit (NaN and -0 included); reading `a` leaves
    # `h` to the relu alone, so the planners fold the bias add and the relu into one dispatch
    dh = (dlogits @ p["w2"].transpose()) * a.positive()
    grads["w1"] = x.transpose() @ dh
    grads["b1"] = dh.sum(axis=0)

    new_params, new_moments = {}, {}
    for k in PARAMS:
        m, v = moments[k]
        new_params[k], nm, nv = g.adam(p[k], m, v, grads[k], step, lr=lr)
        new_moments[k] = (nm, nv)
    return MlpStep(g, x, y, step, p, moments, loss, new_params, new_moments, step + 1.0)


def _zeros(g: Graph, shape: tuple[int, ...]) -> Tensor:
    count = 1
    for d in shape:
        count *= d
    return g.tensor([0.0] * count, shape=shape)


def _shape(value: Any) -> tuple[int, ...]:
    shape = getattr(value, "shape", None)
    if shape is not None:
        return tuple(shape)
    dims = []
    while isinstance(value, list | tuple):
        dims.append(len(value))
        value = value[0]
    return tuple(dims)
