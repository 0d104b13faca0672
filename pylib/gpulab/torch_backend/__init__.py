"""`torch.compile(model, backend="gpulab")`: PyTorch's aten graphs as gpulab protocol graphs.

    import gpulab.torch_backend            # registers the backend "gpulab" with dynamo
    fast = torch.compile(model, backend="gpulab", options={"backend": "cpu-python"})
    gpulab.torch_backend.explain(model, x)  # every aten op, mapped or not
    step = gpulab.torch_backend.compile_step(model, optimizer, loss_fn)
    step.steps([(x1, y1), (x2, y2)]); step.sync()

How it works, the op table and what breaks: docs/torch-backend.md. Needs torch (natively).
"""

from __future__ import annotations

from .backend import backend, compile_graph, make_backend, register
from .explain import Explanation, explain
from .runner import RECORDS, Options, Record
from .step import CompiledStep, compile_step
from .table import ATEN_TABLE, DECOMPOSITIONS

__all__ = [
    "ATEN_TABLE",
    "DECOMPOSITIONS",
    "RECORDS",
    "CompiledStep",
    "Explanation",
    "Options",
    "Record",
    "backend",
    "compile_graph",
    "compile_step",
    "explain",
    "make_backend",
    "register",
    "report",
]


def report() -> list[dict]:
    """What every graph compiled so far did: label, aten ops, protocol nodes, where it ran
    (None: eager PyTorch, with the reason), calls and session prepares."""
    return [dict(vars(r)) for r in RECORDS]


register()
