"""gpulab: Python tensor graphs that run on WebGPU/WebGL2/WASM/CPU in the browser and natively.

Pure Python: numpy and wgpu are optional (the `native` extra). In Pyodide, graphs go to the JS
runtime of the page; natively they run on wgpu-py or on the numpy evaluator `cpu-python`.
"""

from __future__ import annotations

from .errors import GpuLabError

__version__ = "0.1.0"

__all__ = ["GpuLabError", "Graph", "Session", "Tensor", "__version__", "execute", "validate"]


def __getattr__(name: str):
    # Lazy so `import gpulab` stays cheap and never imports numpy (Pyodide without numpy).
    if name in ("Graph", "Tensor"):
        from . import graph

        return getattr(graph, name)
    if name == "Session":
        from .session import Session

        return Session
    if name == "execute":
        from .host import execute

        return execute
    if name == "validate":
        from .protocol import validate

        return validate
    raise AttributeError(f"module 'gpulab' has no attribute {name!r}")
