"""The 784-256-10 MLP training step (forward, backward, Adam) as ONE gpulab graph.

This is the benchmark step of SPEC.md and the step the session-equality tests use. The hidden
width and the number of linear layers are parameters (`init(hidden=, layers=)`; the defaults are
the 784-256-10 step, unchanged): `gpulab bench --sweep` runs 784-h-10 and 784-h-h-h-10. Weights and
the batch come from a seeded numpy generator (`init`), so PyTorch (gpulab.benchmarks.torch_peer) and
TensorFlow.js peers start from the same numbers; `step_graph` also works without numpy when the
caller passes plain lists (as in the page).
"""

from __future__ import annotations

import itertools
from array import array
from dataclasses import dataclass
from typing import Any

from gpulab.graph import Graph, Tensor

PARAMS = ("w1", "b1", "w2", "b2")


def param_names(layers: int = 2) -> tuple[str, ...]:
    """w1, b1, ..., wL, bL for `layers` linear layers (PARAMS for the default two)."""
    return tuple(f"{kind}{i}" for i in range(1, layers + 1) for kind in ("w", "b"))


def layer_count(values: dict[str, Any]) -> int:
    """How many linear layers `values` holds (w1, w2, ... present)."""
    n = 0
    while f"w{n + 1}" in values:
        n += 1
    return n


def init(
    seed: int = 0,
    inputs: int = 784,
    hidden: int = 256,
    classes: int = 10,
    batch: int = 64,
    layers: int = 2,
) -> dict[str, Any]:
    """Seeded float32 weights (normal / sqrt(fan-in)), zero biases, a uniform batch and one-hot
    labels. `layers` linear layers: inputs-hidden-...-hidden-classes. The generator draws the
    weights in layer order, then x and y, so the default is the 784-256-10 step of every peer."""
    import numpy as np

    if layers < 1:
        raise ValueError(f"init: layers must be >= 1, got {layers}")
    rng = np.random.default_rng(seed)
    f32 = np.float32
    widths = [inputs] + [hidden] * (layers - 1) + [classes]
    values: dict[str, Any] = {}
    for i, (fan_in, fan_out) in enumerate(itertools.pairwise(widths), start=1):
        # 1 / sqrt(fan-in): 1/28 and 1/16 exactly for 784-256-10
        values[f"w{i}"] = (rng.standard_normal((fan_in, fan_out)) * (1 / fan_in**0.5)).astype(f32)
        values[f"b{i}"] = np.zeros(fan_out, f32)
    values["x"] = rng.random((batch, inputs), dtype=f32)
    values["y"] = np.eye(classes, dtype=f32)[rng.integers(0, classes, batch)]
    return values


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
        for k in self.params:
            out[k] = self.new_params[k]
            out[f"m_{k}"], out[f"v_{k}"] = self.new_moments[k]
        return out

    def carry(self) -> dict[Tensor, Tensor]:
        """Input -> output pairs that turn one step's result into the next step's state."""
        pairs: dict[Tensor, Tensor] = {self.step: self.next_step}
        for k in self.params:
            pairs[self.params[k]] = self.new_params[k]
            for old, new in zip(self.moments[k], self.new_moments[k], strict=True):
                pairs[old] = new
        return pairs


def step_graph(values: dict[str, Any], lr: float = 1e-3, feed_batch: bool = False) -> MlpStep:
    """Record forward, backward and Adam for every parameter as one graph.

    `values` holds w1, b1, ..., wL, bL, x, y (numpy arrays or nested lists; L from the keys,
    `init`'s layout). With `feed_batch`, x and y are per-step inputs (for prepared sessions)
    instead of constants.
    """
    g = Graph()
    names = param_names(layer_count(values))
    p = {k: g.tensor(values[k]) for k in names}
    # Moments are inputs with data (zeros), not `full` constants: a session carries inputs.
    moments = {k: (_zeros(g, p[k].shape), _zeros(g, p[k].shape)) for k in names}
    if feed_batch:
        x = g.input(_shape(values["x"]), name="x")
        y = g.input(_shape(values["y"]), name="y")
    else:
        x, y = g.tensor(values["x"]), g.tensor(values["y"])
    step = g.tensor([1.0])

    logits, acts = _forward(x, p, len(names) // 2)
    loss = logits.cross_entropy(y)
    grads = _backward(logits.cross_entropy_grad(y), acts, p)

    new_params, new_moments = {}, {}
    for k in names:
        m, v = moments[k]
        new_params[k], nm, nv = g.adam(p[k], m, v, grads[k], step, lr=lr)
        new_moments[k] = (nm, nv)
    return MlpStep(g, x, y, step, p, moments, loss, new_params, new_moments, step + 1.0)


def _forward(x: Tensor, p: dict[str, Tensor], layers: int) -> tuple[Tensor, list[Tensor]]:
    """The logits and each layer's input (x, then the relu activations)."""
    acts = [x]
    for i in range(1, layers):
        acts.append((acts[-1] @ p[f"w{i}"] + p[f"b{i}"]).relu())
    return acts[-1] @ p[f"w{layers}"] + p[f"b{layers}"], acts


def _backward(dout: Tensor, acts: list[Tensor], p: dict[str, Tensor]) -> dict[str, Tensor]:
    """Every parameter's gradient, last layer first (the 2-layer graph's op order)."""
    grads: dict[str, Tensor] = {}
    for i in range(len(acts), 0, -1):
        a = acts[i - 1]
        grads[f"w{i}"] = a.transpose() @ dout
        grads[f"b{i}"] = dout.sum(axis=0)
        if i > 1:
            # positive(relu(h)) is positive(h) bit for bit (NaN and -0 included); reading `a`
            # leaves `h` to the relu alone, so the planners fold the bias add and the relu
            # into one dispatch
            dout = (dout @ p[f"w{i}"].transpose()) * a.positive()
    return grads


def _zeros(g: Graph, shape: tuple[int, ...]) -> Tensor:
    count = 1
    for d in shape:
        count *= d
    # a zeroed buffer, not a list: the sweep's 4096x4096 moments are 16M floats
    return g.tensor(array("f", bytes(4 * count)), shape=shape)


def _shape(value: Any) -> tuple[int, ...]:
    shape = getattr(value, "shape", None)
    if shape is not None:
        return tuple(shape)
    dims = []
    while isinstance(value, list | tuple):
        dims.append(len(value))
        value = value[0]
    return tuple(dims)
