"""torch.optim of the subset: SGD, Adam, AdamW (RMSprop and the rest refused by name)."""

from __future__ import annotations

from typing import Any

from .._refuse import refuse
from . import lr_scheduler
from .adam import Adam, AdamW
from .optimizer import Optimizer
from .sgd import SGD

__all__ = ["SGD", "Adam", "AdamW", "Optimizer", "lr_scheduler"]


def __getattr__(name: str) -> Any:
    raise refuse(f"torch.optim.{name}", "optim")
