"""torch's memory formats: they choose strides, and gpulab.torch holds every tensor dense and
row-major, so each is accepted where torch takes one (`float(memory_format=)`, `*_like`) and
changes no value."""

from __future__ import annotations


class memory_format:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"torch.{self.name}"


preserve_format = memory_format("preserve_format")
contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
