"""torch.nn of the subset (modules in .modules, functions in .functional)."""

from __future__ import annotations

from typing import Any

from .._refuse import refuse
from . import functional, init, utils
from .modules import (
    GELU,
    AdaptiveAvgPool2d,
    AvgPool2d,
    Conv2d,
    CrossEntropyLoss,
    Dropout,
    Embedding,
    Flatten,
    Identity,
    LayerNorm,
    Linear,
    LogSoftmax,
    MaxPool2d,
    Module,
    ModuleList,
    MSELoss,
    NLLLoss,
    Parameter,
    ReLU,
    Sequential,
    Sigmoid,
    Softmax,
    Tanh,
    Upsample,
)

__all__ = [
    "GELU",
    "AdaptiveAvgPool2d",
    "AvgPool2d",
    "Conv2d",
    "CrossEntropyLoss",
    "Dropout",
    "Embedding",
    "Flatten",
    "Identity",
    "LayerNorm",
    "Linear",
    "LogSoftmax",
    "MSELoss",
    "MaxPool2d",
    "Module",
    "ModuleList",
    "NLLLoss",
    "Parameter",
    "ReLU",
    "Sequential",
    "Sigmoid",
    "Softmax",
    "Tanh",
    "Upsample",
    "functional",
    "init",
    "utils",
]


def __getattr__(name: str) -> Any:
    raise refuse(f"torch.nn.{name}", "nn")
