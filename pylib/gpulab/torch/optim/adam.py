"""torch.optim.Adam and AdamW, torch's update (torch/optim/adam.py, _single_tensor_adam,
capturable=False), state per parameter {"step", "exp_avg", "exp_avg_sq"}:

    step += 1;  g = -grad if maximize else grad
    AdamW: p = p * (1 - lr * weight_decay)     Adam: g = g + weight_decay * p
    m = m + (1 - beta1) * (g - m)                   (lerp, weight < 0.5)
    v = v * beta2 + ((1 - beta2) * g) * g           (addcmul)
    denom = sqrt(v) / sqrt(1 - beta2^step) + eps
    p = p + ((-lr / (1 - beta1^step)) * m) / denom  (addcdiv)
bias corrections, step size and the square root in Python float64 (as torch), each rounded
once to float32 where it meets a tensor. amsgrad=True is refused by name.
"""

from __future__ import annotations

import array
from typing import Any

from ...graph import Tensor as Node
from .._refuse import Unsupported
from ..creation import zeros_like
from ..tensor import Tensor
from .optimizer import Optimizer, state_node


class Adam(Optimizer):
    decoupled = False

    def __init__(
        self,
        params: Any,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        amsgrad: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
        decoupled_weight_decay: bool = False,
    ) -> None:
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if eps < 0.0:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        super().__init__(
            params,
            {
                "lr": lr,
                "betas": tuple(betas),
                "eps": eps,
                "weight_decay": weight_decay,
                "amsgrad": amsgrad,
                "maximize": maximize,
                "foreach": foreach,
                "capturable": capturable,
                "differentiable": differentiable,
                "fused": fused,
                "decoupled_weight_decay": decoupled_weight_decay or self.decoupled,
            },
        )

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        if group.get("amsgrad"):
            raise Unsupported(
                f"gpulab.torch does not implement amsgrad=True "
                f"({type(self).__name__} with the AMSGrad variant); use "
                "amsgrad=False"
            )

    def _init_state(self, p: Tensor, state: dict[str, Any]) -> None:
        if not state:
            state["step"] = Tensor._leaf_of(array.array("f", [0.0]), [], p.dtype)
            state["exp_avg"] = zeros_like(p)
            state["exp_avg_sq"] = zeros_like(p)

    def _scalars(self, group: dict[str, Any], state: dict[str, Any]) -> dict[str, float]:
        step = (state["step"].item() if "step" in state else 0.0) + 1.0
        beta1, beta2 = (float(b) for b in group["betas"])
        lr, wd = float(group["lr"]), float(group["weight_decay"])
        out = {
            "one_minus_beta1": 1.0 - beta1,
            "beta2": beta2,
            "one_minus_beta2": 1.0 - beta2,
            "neg_step_size": -(lr / (1.0 - beta1**step)),
            "bias_correction2_sqrt": (1.0 - beta2**step) ** 0.5,
            "eps": float(group["eps"]),
        }
        if wd != 0:
            if group["decoupled_weight_decay"]:
                out["decay"] = 1.0 - lr * wd
            else:
                out["weight_decay"] = wd
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
        p = param
        if "decay" in s:
            p = p * s["decay"]
        if "weight_decay" in s:
            g = g + p * s["weight_decay"]
        m_old, v_old = state_node(state, "exp_avg"), state_node(state, "exp_avg_sq")
        m = m_old + (g - m_old) * s["one_minus_beta1"]
        v = v_old * s["beta2"] + (g * s["one_minus_beta2"]) * g
        denom = v.sqrt() / s["bias_correction2_sqrt"] + s["eps"]
        new_p = p + (m * s["neg_step_size"]) / denom
        return {"param": new_p, "exp_avg": m, "exp_avg_sq": v}

    def _advance(self, state: dict[str, Any]) -> None:
        step = state["step"].item() + 1.0
        state["step"] = Tensor._leaf_of(array.array("f", [step]), [], state["step"].dtype)


class AdamW(Adam):
    """Adam with decoupled weight decay (default weight_decay=0.01, as torch)."""

    decoupled = True

    def __init__(
        self,
        params: Any,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, **kwargs)
