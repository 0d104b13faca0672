"""Refusals by name: a name outside the subset raises `Unsupported` (a NotImplementedError
and an AttributeError, so `hasattr` stays False), naming what is refused and what exists."""

from __future__ import annotations

import importlib


class Unsupported(NotImplementedError, AttributeError):
    """gpulab.torch does not implement this (the message names it and the supported set)."""


# where -> the module whose public names are the supported set (the Tensor class for "tensor"):
# the surface itself, built from the op library's declarations and this frontend's glue, so
# the list in a message is never out of date (docs/torch.md has the whole subset)
NAMESPACES = {
    "torch": "gpulab.torch",
    "tensor": "gpulab.torch.tensor",
    "nn": "gpulab.torch.nn",
    "nn.functional": "gpulab.torch.nn.functional",
    "optim": "gpulab.torch.optim",
    "init": "gpulab.torch.nn.init",
}


def supported(where: str) -> list[str]:
    """The public names of a namespace of the subset, sorted."""
    module = importlib.import_module(NAMESPACES[where])
    if where == "tensor":
        return sorted(n for n in dir(module.Tensor) if not n.startswith("_"))
    names = getattr(module, "__all__", None) or [n for n in vars(module) if not n.startswith("_")]
    return sorted(set(names))


def refuse(name: str, where: str = "torch") -> Unsupported:
    """The error for `name` (e.g. "torch.fft", "Tensor.cumsum", "amsgrad=True")."""
    return Unsupported(
        f"gpulab.torch does not implement {name}; supported: {' '.join(supported(where))} "
        "(docs/torch.md)"
    )
