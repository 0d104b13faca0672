"""`compile_step(model, optimizer, loss_fn)`: forward, backward and the optimizer update as ONE
protocol graph, run as a prepared session.

The loss and its gradients are traced by `make_fx` over `torch.func.grad_and_value` of a
functional call of the model (aten ops, the same decompositions and table as the dynamo
backend); the update is appended with the protocol's optimizer ops (`Graph.sgd`/`momentum`/
`adam`, the PyTorch formulas; AdamW's decoupled decay and SGD's weight decay, nesterov and
maximize as plain ops). Parameters, momentum buffers, Adam moments and the step count are
carried inputs (they stay on the device between steps); each step's batch is fed. `steps(...)`
runs many steps in one session run; `sync()` writes the state back into the model and the
optimizer, so eager training can go on from there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import torch
from torch.fx.experimental.proxy_tensor import make_fx

from ..errors import GpuLabError
from ..graph import Graph, Tensor
from .lower import fed_input, lower
from .runner import Options, to_numpy, to_torch
from .table import DECOMPOSITIONS, protocol_dtype


class CompiledStep:
    """One training step of `model` as a prepared gpulab session (built at the first batch)."""

    def __init__(
        self,
        model: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        loss_fn: Callable[..., torch.Tensor],
        backend: str | None = None,
    ) -> None:
        self.model, self.optimizer, self.loss_fn = model, optimizer, loss_fn
        self.options = Options(backend=backend)
        self.params = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        self.groups = [_group_of(optimizer, p, n) for n, p in self.params]
        self.kind = _optimizer_kind(optimizer)
        self._session: Any = None
        self._batch_inputs: list[Tensor] = []
        self._state: list[dict[str, Tensor]] = []  # per parameter: carried input Tensors
        self.backend: str | None = None
        self.steps_run = 0

    # -- public ------------------------------------------------------------------------------

    def __call__(self, *batch: torch.Tensor) -> torch.Tensor:
        """One step on one batch (inputs..., target); returns the loss (before the update)."""
        return self.steps([batch])

    def steps(
        self, batches: int | Iterable[Sequence[torch.Tensor]], *batch: torch.Tensor
    ) -> torch.Tensor:
        """Many steps in one session run: `steps([(x1, y1), (x2, y2), ...])`, or
        `steps(n, x, y)` for n steps on the same batch. Returns the last step's loss."""
        if isinstance(batches, int):
            if not batch:
                raise GpuLabError("VALIDATION", "steps(n, *batch): give the batch")
            batches = [batch] * batches
        batches = [tuple(b) for b in batches]
        if not batches:
            raise GpuLabError("VALIDATION", "steps: no batches")
        if self._session is None:
            self._build(batches[0])
        feeds = [
            {
                t: to_numpy(v, f"batch {i} item {j}")
                for j, (t, v) in enumerate(zip(self._batch_inputs, b, strict=True))
            }
            for i, b in enumerate(batches)
        ]
        result = self._session.run_steps(feeds)
        self.backend = result["backend"]
        self.steps_run += len(batches)
        return to_torch(result["outputs"]["loss"], torch.float32, batches[0][0].device)

    def sync(self) -> None:
        """Copy the carried parameters and optimizer state into the model and optimizer."""
        if self._session is None:
            return
        for (_, p), carried in zip(self.params, self._state, strict=True):
            with torch.no_grad():
                p.copy_(self._download(carried["param"], p))
            self._sync_state(p, carried)

    def dispose(self) -> None:
        if self._session is not None:
            self._session.dispose()
            self._session = None

    # -- building ----------------------------------------------------------------------------

    def _build(self, batch: tuple[torch.Tensor, ...]) -> None:
        gm = self._trace(batch)
        count = len(self.params)

        def make_input(g: Graph, index: int, node: Any) -> Tensor:
            if index < count:
                p = self.params[index][1]
                return g.tensor(to_numpy(p, self.params[index][0]), dtype=protocol_dtype(p.dtype))
            return fed_input(g, index, node)

        lowered = lower(gm, make_input)
        g = lowered.graph
        loss = lowered.outputs[lowered.specs[0].name]
        carry: dict[Tensor, Tensor] = {}
        self._state = []
        for i, (name, p) in enumerate(self.params):
            spec = lowered.specs[1 + i]
            param = lowered.inputs[i]
            assert param is not None
            grad = (
                lowered.outputs[spec.name]
                if spec.kind == "tensor"
                else g.full(list(param.shape), 0.0)
            )
            state = self._update(g, param, grad, self.groups[i], p, carry)
            state["param"] = param
            self._state.append(state)
        self._batch_inputs = [t for t in lowered.inputs[count:] if t is not None]
        self._session = g.prepare(
            feeds=self._batch_inputs, carry=carry, backend=self.options.backend, loss=loss
        )

    def _trace(self, batch: tuple[torch.Tensor, ...]) -> Any:
        names = [n for n, _ in self.params]
        buffers = dict(self.model.named_buffers())
        model, loss_fn = self.model, self.loss_fn

        def loss_of(params: tuple[torch.Tensor, ...], *items: torch.Tensor) -> torch.Tensor:
            state = {**buffers, **dict(zip(names, params, strict=True))}
            out = torch.func.functional_call(model, state, tuple(items[:-1]))
            return loss_fn(out, items[-1])

        def step(params: tuple[torch.Tensor, ...], *items: torch.Tensor) -> Any:
            grads, loss = torch.func.grad_and_value(loss_of)(params, *items)
            return loss, grads

        params = tuple(p.detach() for _, p in self.params)
        return make_fx(step, decomposition_table=DECOMPOSITIONS)(params, *batch)

    def _update(
        self,
        g: Graph,
        param: Tensor,
        grad: Tensor,
        group: dict[str, Any],
        p: torch.Tensor,
        carry: dict[Tensor, Tensor],
    ) -> dict[str, Tensor]:
        """Append one parameter's update; carried state inputs go into `carry`."""
        lr, wd = float(group["lr"]), float(group.get("weight_decay", 0.0))
        state = self.optimizer.state.get(p, {})
        if group.get("maximize"):
            grad = -grad
        if self.kind == "sgd":
            return self._sgd(g, param, grad, group, state, lr, wd, carry)
        if self.kind == "adam" and wd:
            grad = grad + param * wd
        decayed = param * (1.0 - lr * wd) if self.kind == "adamw" and wd else param
        beta1, beta2 = (float(b) for b in group["betas"])
        m = _state_input(g, state.get("exp_avg"), param)
        v = _state_input(g, state.get("exp_avg_sq"), param)
        t = g.tensor([float(state["step"]) + 1.0 if "step" in state else 1.0])
        new_p, new_m, new_v = g.adam(
            decayed, m, v, grad, t, lr=lr, beta1=beta1, beta2=beta2, eps=float(group["eps"])
        )
        carry.update({param: new_p, m: new_m, v: new_v, t: t + 1.0})
        return {"exp_avg": m, "exp_avg_sq": v, "step": t}

    def _sgd(
        self,
        g: Graph,
        param: Tensor,
        grad: Tensor,
        group: dict[str, Any],
        state: dict[str, Any],
        lr: float,
        wd: float,
        carry: dict[Tensor, Tensor],
    ) -> dict[str, Tensor]:
        if wd:
            grad = grad + param * wd
        momentum = float(group.get("momentum", 0.0))
        if not momentum:
            carry[param] = g.sgd(param, grad, lr)
            return {}
        buf = _state_input(g, state.get("momentum_buffer"), param)
        new_buf = g.op("momentum_update", a=buf, b=grad, momentum=momentum)
        step_dir = grad + new_buf * momentum if group.get("nesterov") else new_buf
        carry.update({param: g.sgd(param, step_dir, lr), buf: new_buf})
        return {"momentum_buffer": buf}

    # -- sync --------------------------------------------------------------------------------

    def _download(self, t: Tensor, like: torch.Tensor) -> torch.Tensor:
        entry = self._session.download(t)
        return to_torch(entry, like.dtype, like.device).reshape(like.shape)

    def _sync_state(self, p: torch.Tensor, carried: dict[str, Tensor]) -> None:
        state = self.optimizer.state[p]
        for key in ("exp_avg", "exp_avg_sq", "momentum_buffer"):
            if key in carried:
                state[key] = self._download(carried[key], p)
        if "step" in carried:  # the carried value is the next step's number
            step = self._session.download(carried["step"])["array"]
            state["step"] = torch.tensor(float(np.asarray(step).reshape(-1)[0]) - 1.0)


def compile_step(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    loss_fn: Callable[..., torch.Tensor],
    backend: str | None = None,
) -> CompiledStep:
    """The whole training step as one protocol graph (see CompiledStep)."""
    return CompiledStep(model, optimizer, loss_fn, backend)


def _state_input(g: Graph, value: Any, param: Tensor) -> Tensor:
    """An optimizer state tensor as a carried input: its current value, or zeros."""
    if isinstance(value, torch.Tensor):
        return g.tensor(to_numpy(value, "optimizer state"))
    return g.tensor(np.zeros(param.shape, dtype=np.float32))


def _optimizer_kind(optimizer: torch.optim.Optimizer) -> str:
    kinds = {torch.optim.SGD: "sgd", torch.optim.Adam: "adam", torch.optim.AdamW: "adamw"}
    kind = kinds.get(type(optimizer))
    if kind is None:
        raise GpuLabError(
            "UNSUPPORTED",
            f"compile_step: {type(optimizer).__name__} is not supported (SGD, Adam, AdamW)",
        )
    for group in optimizer.param_groups:
        if group.get("amsgrad"):
            raise GpuLabError("UNSUPPORTED", "compile_step: Adam(amsgrad=True) is not supported")
        if kind == "sgd" and group.get("dampening", 0):
            raise GpuLabError("UNSUPPORTED", "compile_step: SGD dampening != 0 is not supported")
    return kind


def _group_of(optimizer: torch.optim.Optimizer, p: torch.Tensor, name: str) -> dict[str, Any]:
    for group in optimizer.param_groups:
        if any(q is p for q in group["params"]):
            return group
    raise GpuLabError("VALIDATION", f"compile_step: parameter {name!r} is not in the optimizer")
