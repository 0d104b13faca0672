"""`import torch` in the page: GPU Lab's PyTorch subset, `gpulab.torch`.

The worker writes this file as /home/pyodide/torch.py, so only the page has a module named
`torch`; natively nothing shadows the real one (there, `import gpulab.torch as torch`). On
import it puts `gpulab.torch` and each of its submodules in `sys.modules` under the `torch`
names (`torch.nn`, `torch.nn.functional`, `torch.optim`, ...), so `import torch.nn as nn` and
`from torch import nn` give gpulab's modules, and prints one note saying so (the page states
the substitution the first time a cell imports torch).
"""

from __future__ import annotations

import importlib
import pkgutil
import sys

import gpulab.torch as _subset

NOTE = (
    "note: `torch` in this page is gpulab.torch, GPU Lab's PyTorch subset: tensors record "
    "graphs that run on the page's backend (natively: `import gpulab.torch as torch`)"
)


def _alias_submodules() -> None:
    """sys.modules["torch.X"] = gpulab.torch.X for every submodule of the subset."""
    prefix = _subset.__name__ + "."
    for info in pkgutil.walk_packages(_subset.__path__, prefix):
        try:
            module = importlib.import_module(info.name)
        except ModuleNotFoundError as err:
            if (err.name or "").startswith("gpulab"):
                raise
            continue  # a native-only helper (it needs a package the page lacks, e.g. numpy)
        sys.modules["torch." + info.name[len(prefix) :]] = module


_alias_submodules()
sys.modules[__name__] = _subset  # the import statement hands back what sys.modules holds
print(NOTE)
