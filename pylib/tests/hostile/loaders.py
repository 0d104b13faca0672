"""The file loaders the byte-level fuzz lane runs (test_loader_fuzz.py): each reads bytes
someone else made and must end in a result or a GpuLabError refusal, never another exception.

A loader is one line: its name, the call that reads the bytes, a valid file to mutate, and the
prefix its refusals carry (and the codes they may have).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from gpulab.models.llm import gguf
from gpulab.models.minilm_weights import QUANT_KEY, Weights
from gpulab.models.safetensors import SafeTensors, encode
from gpulab.onnx import load as onnx_load
from gpulab.onnx.examples import digits_model


@dataclass(frozen=True)
class Loader:
    name: str
    read: Callable[[bytes], object]
    seed: Callable[[], bytes]
    prefix: str  # every refusal's message starts with it
    codes: tuple[str, ...] = ("VALIDATION", "LIMIT", "UNSUPPORTED")


def tiny_safetensors() -> bytes:
    """A safetensors file of every dtype the reader widens or narrows, and one q4_k block
    described in the `gpulab.quantized` metadata (what the quantized MiniLM file holds)."""
    tensors = {
        "f32": ("F32", [2, 2], bytes(range(16))),
        "f16": ("F16", [3], bytes(6)),
        "bf16": ("BF16", [1, 2], bytes(4)),
        "i64": ("I64", [2], (7).to_bytes(8, "little") * 2),
        "q": ("U8", [144], bytes(144)),
    }
    return encode(tensors, {QUANT_KEY: json.dumps({"q": ["q4_k", 1, 256]}), "note": "x"})


def read_every_tensor(data: bytes) -> object:
    """SafeTensors and the MiniLM weights over it, and every tensor read as the reader offers
    (a refusal of one view, e.g. int32 of a float tensor, is a GpuLabError too)."""
    from gpulab.errors import GpuLabError

    weights = Weights(SafeTensors(data))
    for name in weights.names():
        for view in (weights.st.raw, weights.st.float32, weights.st.int32):
            try:
                view(name)
            except GpuLabError as err:
                if not err.message.startswith("safetensors:"):
                    raise
    return weights


def gguf_seed() -> bytes:
    """test_gguf's hand-made file: metadata of several types and two tensors."""
    from test_gguf import good_file

    return good_file()


def read_every_gguf_tensor(data: bytes) -> object:
    """The GGUF reader, and every tensor's bytes taken as it offers them."""
    f = gguf.read(data)
    for name in f.tensors:
        f.raw(name)
    return f


LOADERS = [
    Loader("onnx", onnx_load, digits_model, "onnx:"),
    Loader("safetensors", read_every_tensor, tiny_safetensors, "safetensors:", ("VALIDATION",)),
    Loader("gguf", read_every_gguf_tensor, gguf_seed, "gguf:", ("VALIDATION", "LIMIT")),
]
