"""torch.cuda as seen from gpulab.torch: there is no CUDA device (graphs run on gpulab's
backend: wgpu, cpu-python or the page's), so code that asks picks its CPU path."""

from __future__ import annotations


def is_available() -> bool:
    return False


def device_count() -> int:
    return 0
