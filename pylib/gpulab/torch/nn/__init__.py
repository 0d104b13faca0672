"""torch.nn of the subset (modules in .modules, functions in .functional; the modules and
functions of the op library's declarations come from gpulab.torch._library)."""

from __future__ import annotations

from typing import Any

from .._refuse import refuse
from . import functional, init, utils
from .modules import (
    DECLARED,
    AdaptiveAvgPool2d,
    AvgPool2d,
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
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
    ModuleDict,
    ModuleList,
    MSELoss,
    NLLLoss,
    Parameter,
    ParameterDict,
    ParameterList,
    Sequential,
    Softmax,
    Upsample,
)

__all__ = [
    "AdaptiveAvgPool2d",
    "AvgPool2d",
    "BatchNorm1d",
    "BatchNorm2d",
    "BatchNorm3d",
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
    "ModuleDict",
    "ModuleList",
    "NLLLoss",
    "Parameter",
    "ParameterDict",
    "ParameterList",
    "Sequential",
    "Softmax",
    "Upsample",
    "functional",
    "init",
    "utils",
]
globals().update(DECLARED)  # a module per op the op library gives an nn name (ReLU, ELU, ...)
__all__ += list(DECLARED)


def __getattr__(name: str) -> Any:
    raise refuse(f"torch.nn.{name}", "nn")
