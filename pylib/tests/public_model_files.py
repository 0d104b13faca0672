"""Load a public PyTorch model file, kept unchanged under tests/public_models/, with either the
real PyTorch or gpulab.torch behind its `import torch` (as the page's torch shim does: every
submodule of gpulab.torch under its `torch.` name), so the same source builds both models."""

from __future__ import annotations

import importlib
import pkgutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

import gpulab.torch as subset

PUBLIC_MODELS = Path(__file__).resolve().parent / "public_models"


def _subset_modules() -> dict[str, ModuleType]:
    """{"torch": gpulab.torch, "torch.nn": gpulab.torch.nn, ...} for every submodule."""
    prefix = subset.__name__ + "."
    names = {"torch": subset}
    for info in pkgutil.walk_packages(subset.__path__, prefix):
        names["torch." + info.name[len(prefix) :]] = importlib.import_module(info.name)
    return names


def _owned(name: str, top: str) -> bool:
    return name == top or name.startswith(top + ".")


@contextmanager
def _torch_is(gpulab: bool) -> Iterator[None]:
    """While inside, `import torch` (and torch.X) gives gpulab.torch when `gpulab`."""
    saved = {n: m for n, m in sys.modules.items() if _owned(n, "torch")}
    if gpulab:
        for name in saved:
            del sys.modules[name]
        sys.modules.update(_subset_modules())
    try:
        yield
    finally:
        for name in [n for n in sys.modules if _owned(n, "torch")]:
            del sys.modules[name]
        sys.modules.update(saved)


def load(folder: str, module: str, *, gpulab: bool) -> ModuleType:
    """Import `module` (dotted, e.g. "transformer.Models") from tests/public_models/`folder`
    with the chosen torch. The real-torch import stays in sys.modules under the file's own
    names (torch.compile reads a module's globals by its name); a gpulab.torch import is
    dropped from there after, so each load imports the source again."""
    root = str(PUBLIC_MODELS / folder)
    top = module.split(".")[0]
    before = {n: m for n, m in sys.modules.items() if _owned(n, top)}
    for name in before:
        del sys.modules[name]
    sys.path.insert(0, root)
    try:
        with _torch_is(gpulab):
            return importlib.import_module(module)
    finally:
        sys.path.remove(root)
        if gpulab:
            for name in [n for n in sys.modules if _owned(n, top)]:
                del sys.modules[name]
            sys.modules.update(before)
