"""cpu-python: the numpy evaluator (imports without numpy; refuses to run without it)."""

from .evaluator import NAME, CpuExecutor, CpuProgram

__all__ = ["NAME", "CpuExecutor", "CpuProgram"]
