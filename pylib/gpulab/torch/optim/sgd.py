"""torch.optim.SGD, torch's update formulas (torch/optim/sgd.py, _single_tensor_sgd):

g = -grad if maximize else grad
g = g + weight_decay * p                       (weight_decay != 0)
buf = g (first step) | buf * momentum + (1 - dampening) * g      (momentum != 0)
g = g + momentum * buf (nesterov) | buf
p = p - lr * g
"""

from __future__ import annotations

from typing import Any

from ...graph import Tensor as Node
from .optimizer import Optimizer, Required, state_node


class SGD(Optimizer):
    def __init__(
        self,
        params: Any,
        lr: float = 1e-3,
        momentum: float = 0.0,
        dampening: float = 0.0,
        weight_decay: float = 0.0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        if lr is not Required and lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(
            params,
            {
                "lr": lr,
                "momentum": momentum,
                "dampening": dampening,
                "weight_decay": weight_decay,
                "nesterov": nesterov,
                "maximize": maximize,
                "foreach": foreach,
                "differentiable": differentiable,
                "fused": fused,
            },
        )

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")

    def _scalars(self, group: dict[str, Any], state: dict[str, Any]) -> dict[str, float]:
        out = {"lr": float(group["lr"])}
        if group["weight_decay"] != 0:
            out["weight_decay"] = float(group["weight_decay"])
        if group["momentum"] != 0:
            out["momentum"] = float(group["momentum"])
            if "momentum_buffer" in state:
                out["one_minus_dampening"] = 1.0 - float(group["dampening"])
        return out

    def _update(
        self,
        group: dict[str, Any],
        state: dict[str, Any],
        param: Node,
        grad: Node,
        s: dict[str, Node],
    ) -> dict[str, Node]:
        g = -grad if group["maximize"] else grad
        if "weight_decay" in s:
            g = g + param * s["weight_decay"]
        new: dict[str, Node] = {}
        if "momentum" in s:
            if "momentum_buffer" in state:
                buf = (
                    state_node(state, "momentum_buffer") * s["momentum"]
                    + g * s["one_minus_dampening"]
                )
            else:
                buf = g
            new["momentum_buffer"] = buf
            g = g + buf * s["momentum"] if group["nesterov"] else buf
        new["param"] = param - g * s["lr"]
        return dict(sorted(new.items(), key=lambda kv: kv[0] != "param"))
