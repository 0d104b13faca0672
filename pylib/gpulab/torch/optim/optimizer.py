"""torch.optim.Optimizer of the subset: param groups, `state`, zero_grad, and a step that
records the update into the current Graph and runs it once.

`step()` records, for every parameter with a `.grad`, the update of `_update` (protocol nodes:
parameter, gradient, state tensors and host scalars), then runs the Graph once: forward,
backward and update of this step together (gpulab.torch._tape). The new parameter values and
state tensors are read back (parameters hold concrete values again) and a new record starts.

Host scalars (lr, weight decay, bias corrections...) are computed in Python float64 exactly
as torch computes them, then rounded once to float32 as torch does when it applies a Python
number to a float32 tensor; they enter the Graph as scalar input nodes listed in the record's
`scalars` (key "g<group>.p<param>.<name>"), so a prepared session can feed them per step
(`Optimizer.scalars(group_index, param_index)` gives the next step's values).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from ...graph import Tensor as Node
from .._grad_mode import enable_grad, no_grad
from .._refuse import Unsupported
from .._tape import TAPE, current, run, run_async
from ..tensor import Tensor

Required = object()
Plan = tuple[Tensor, dict[str, Any], dict[str, Node]]  # param, its state, its new nodes


class Optimizer:
    """Base class: `param_groups` (list of dicts with "params" and the hyperparameters),
    `state` (param -> dict, as torch's), `defaults`."""

    def __init__(self, params: Any, defaults: dict[str, Any]) -> None:
        self.defaults = dict(defaults)
        self.state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)

    def add_param_group(self, group: dict[str, Any]) -> None:
        g = dict(group)
        ps = g["params"]
        g["params"] = [ps] if isinstance(ps, Tensor) else list(ps)
        for k, v in self.defaults.items():
            if v is Required and k not in g:
                raise ValueError(
                    f"parameter group didn't specify a value of required optimization parameter {k}"
                )
            g.setdefault(k, v)
        self._check_group(g)
        seen = {id(p) for old in self.param_groups for p in old["params"]}
        if any(id(p) in seen for p in g["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        for p in g["params"]:
            if not isinstance(p, Tensor) or not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        self.param_groups.append(g)

    def _check_group(self, group: dict[str, Any]) -> None:
        """Refuse by name what the subset does not implement (subclasses extend)."""
        for flag in ("foreach", "fused", "differentiable", "capturable"):
            if group.get(flag):
                raise Unsupported(
                    f"gpulab.torch does not implement {flag}=True for "
                    f"{type(self).__name__} (the update is one graph already)"
                )

    def zero_grad(self, set_to_none: bool = True) -> None:
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is not None:
                    if set_to_none:
                        p.grad = None
                    else:
                        p.grad = p.grad.detach().zero_()

    def state_dict(self) -> Any:
        raise Unsupported(
            "gpulab.torch does not implement Optimizer.state_dict; read "
            "optimizer.state (param -> dict of tensors) instead"
        )

    def load_state_dict(self, state_dict: Any) -> None:
        raise Unsupported("gpulab.torch does not implement Optimizer.load_state_dict")

    # -- the step ------------------------------------------------------------------------------

    def scalars(self, group_index: int, param_index: int) -> dict[str, float]:
        """The host scalars of the next step of one parameter (float64, as torch's)."""
        group = self.param_groups[group_index]
        return self._scalars(group, self.state[group["params"][param_index]])

    def step(self, closure: Any = None) -> Any:
        """Record the update of every parameter with a .grad, run the graph once (forward,
        backward and update together), write parameters and state back, start a new record."""
        loss = self._closure(closure)
        rec, plans = self._record()
        if plans:
            self._commit(plans, run(rec, self._wanted(plans), extra=list(rec.alive)))
        return loss

    async def step_async(self, closure: Any = None) -> Any:
        """`step()` awaiting the run (in the page: works without JSPI)."""
        loss = self._closure(closure)
        rec, plans = self._record()
        if plans:
            values = await run_async(rec, self._wanted(plans), extra=list(rec.alive))
            self._commit(plans, values)
        return loss

    @staticmethod
    def _closure(closure: Any) -> Any:
        if closure is None:
            return None
        with enable_grad():
            return closure()

    def _record(self) -> tuple[Any, list[Plan]]:
        """The update nodes of every parameter with a .grad, in the current record."""
        rec = current()
        plans: list[Plan] = []
        with no_grad():
            for gi, group in enumerate(self.param_groups):
                for pi, p in enumerate(group["params"]):
                    if p.grad is None:
                        continue
                    state = self.state[p]
                    self._init_state(p, state)
                    values = self._scalars(group, state)
                    nodes = {k: rec.scalar(v, f"g{gi}.p{pi}.{k}") for k, v in values.items()}
                    grad = p.grad._n()
                    new = self._update(group, state, rec.leaf_node(p, True), grad, nodes)
                    plans.append((p, state, new))
        return rec, plans

    @staticmethod
    def _wanted(plans: list[Plan]) -> list[tuple[str, Node]]:
        return [(key, node) for (_, _, new) in plans for key, node in new.items()]

    def _commit(self, plans: list[Plan], values: list[Any]) -> None:
        """Parameters and state take the values read back; a new record starts."""
        it = iter(values)
        for p, state, new in plans:
            for key in new:
                value = next(it)
                if key == "param":
                    p._value, p._node, p._rec = value, None, None
                    p._version += 1
                else:
                    state[key] = Tensor._leaf_of(value, p.shape, p.dtype)
            self._advance(state)
        TAPE.reset()

    # -- what each optimizer defines -------------------------------------------------------------

    def _init_state(self, p: Tensor, state: dict[str, Any]) -> None:
        pass

    def _scalars(self, group: dict[str, Any], state: dict[str, Any]) -> dict[str, float]:
        raise NotImplementedError

    def _update(
        self,
        group: dict[str, Any],
        state: dict[str, Any],
        param: Node,
        grad: Node,
        s: dict[str, Node],
    ) -> dict[str, Node]:
        raise NotImplementedError

    def _advance(self, state: dict[str, Any]) -> None:
        pass

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, g in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines += [f"    {k}: {v}" for k, v in sorted(g.items()) if k != "params"]
        return "\n".join(lines) + "\n)"


def state_node(state: dict[str, Any], key: str) -> Node:
    """A state tensor as a node of the current record."""
    return state[key]._n()


def params_of(params: Iterable[Any]) -> list[Any]:
    return list(params)
