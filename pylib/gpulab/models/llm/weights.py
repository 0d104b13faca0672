"""A llama model's tensors from a GGUF file, by llama.cpp's names, checked and typed.

Names and shapes (row-major [N, K]; GGUF stores dims reversed) are llama.cpp's for LLM_ARCH_LLAMA:
`token_embd.weight` [vocab, n_embd], `output_norm.weight` [n_embd], `output.weight` [vocab, n_embd]
(absent: the output reuses token_embd, tied embeddings), `rope_freqs.weight` [head_dim / 2]
(optional: Llama 3's per-frequency divisors), and per layer `blk.N.` `attn_norm`, `attn_q`
[n_head * head_dim, n_embd], `attn_k` / `attn_v` [n_head_kv * head_dim, n_embd], `attn_output`
[n_embd, n_head * head_dim], `ffn_norm`, `ffn_gate` / `ffn_up` [n_ff, n_embd], `ffn_down`
[n_embd, n_ff]. A tensor of another name (a bias, an expert) is refused by name: the graph has no
place for it, and dropping it would compute a different model.

Types: Q8_0, Q4_0, Q4_K and Q6_K matrices stay in their blocks (matmul_q and dequantize_rows decode
them inside the kernels); F32 is used as it is; F16 and BF16 are widened to float32 once, at load
(no f16 path on the devices: twice the memory of the file for those tensors). Any other ggml type
is refused with UNSUPPORTED naming the tensor and its type.
"""

from __future__ import annotations

import array
import struct
import sys
from dataclasses import dataclass
from typing import Any

from gpulab.errors import GpuLabError

from .config import Config
from .gguf import GGUFFile, TensorInfo

BLOCK_KINDS = {"Q8_0": "q8_0", "Q4_0": "q4_0", "Q4_K": "q4_k", "Q6_K": "q6_k"}
FLOAT_TYPES = ("F32", "F16", "BF16")
LAYER_PARTS = (
    "attn_norm",
    "attn_q",
    "attn_k",
    "attn_v",
    "attn_output",
    "ffn_norm",
    "ffn_gate",
    "ffn_up",
    "ffn_down",
)
CHUNK = 1 << 16  # values widened per struct call (without numpy)
BIG_ENDIAN = sys.byteorder == "big"

__all__ = ["LayerWeights", "LlamaWeights", "Weight", "read_weights"]


@dataclass(frozen=True)
class Weight:
    """One tensor as the graph takes it: kind "float32" (data: float32 values) or a block
    kind q8_0 / q4_0 / q4_k / q6_k (data: the blocks' bytes)."""

    name: str
    kind: str
    shape: tuple[int, ...]
    data: Any

    @property
    def quantized(self) -> bool:
        return self.kind != "float32"

    @property
    def nbytes(self) -> int:
        return len(memoryview(self.data).cast("B"))


@dataclass(frozen=True)
class LayerWeights:
    attn_norm: Weight
    attn_q: Weight
    attn_k: Weight
    attn_v: Weight
    attn_output: Weight
    ffn_norm: Weight
    ffn_gate: Weight
    ffn_up: Weight
    ffn_down: Weight


@dataclass(frozen=True)
class LlamaWeights:
    token_embd: Weight
    output_norm: Weight
    output: Weight  # token_embd itself when the file ties them
    layers: tuple[LayerWeights, ...]
    rope_freqs: Weight | None

    @property
    def tied(self) -> bool:
        return self.output is self.token_embd

    def all(self) -> list[Weight]:
        parts = [self.token_embd, self.output_norm]
        if not self.tied:
            parts.append(self.output)
        if self.rope_freqs is not None:
            parts.append(self.rope_freqs)
        for layer in self.layers:
            parts.extend(getattr(layer, p) for p in LAYER_PARTS)
        return parts

    def nbytes(self) -> int:
        """Bytes of every tensor as the graph holds it (what a session uploads)."""
        return sum(w.nbytes for w in self.all())


def _bad(message: str, code: str = "VALIDATION") -> GpuLabError:
    return GpuLabError(code, f"gguf: {message}")


def read_weights(f: GGUFFile, cfg: Config) -> LlamaWeights:
    """Every tensor the llama graph needs, shape-checked against the config."""
    d, hd, ff, v = cfg.n_embd, cfg.head_dim, cfg.n_ff, cfg.vocab_size
    wanted: dict[str, tuple[int, ...]] = {
        "token_embd.weight": (v, d),
        "output_norm.weight": (d,),
    }
    layer_shapes = {
        "attn_norm": (d,),
        "attn_q": (cfg.n_head * hd, d),
        "attn_k": (cfg.kv_dim, d),
        "attn_v": (cfg.kv_dim, d),
        "attn_output": (d, cfg.n_head * hd),
        "ffn_norm": (d,),
        "ffn_gate": (ff, d),
        "ffn_up": (ff, d),
        "ffn_down": (d, ff),
    }
    for i in range(cfg.n_layer):
        for part, shape in layer_shapes.items():
            wanted[f"blk.{i}.{part}.weight"] = shape
    optional = {"output.weight": (v, d), "rope_freqs.weight": (hd // 2,)}
    extra = sorted(set(f.tensors) - set(wanted) - set(optional))
    if extra:
        more = f" and {len(extra) - 1} more" if len(extra) > 1 else ""
        raise _bad(
            f"tensor {extra[0]!r}{more} has no place in the llama graph (a bias, an expert or "
            "another architecture's part): refused rather than dropped",
            "UNSUPPORTED",
        )
    got = {name: _weight(f, name, shape) for name, shape in wanted.items()}
    opt = {name: _weight(f, name, shape) for name, shape in optional.items() if name in f.tensors}
    layers = tuple(
        LayerWeights(**{p: got[f"blk.{i}.{p}.weight"] for p in LAYER_PARTS})
        for i in range(cfg.n_layer)
    )
    embd = got["token_embd.weight"]
    return LlamaWeights(
        token_embd=embd,
        output_norm=got["output_norm.weight"],
        output=opt.get("output.weight", embd),
        layers=layers,
        rope_freqs=opt.get("rope_freqs.weight"),
    )


def _weight(f: GGUFFile, name: str, shape: tuple[int, ...]) -> Weight:
    if name not in f.tensors:
        raise _bad(f"tensor {name!r} is missing")
    info = f.info(name)
    if info.shape != shape:
        raise _bad(f"tensor {name!r} has shape {list(info.shape)}, expected {list(shape)}")
    kind = info.type_name
    if kind in BLOCK_KINDS:
        if len(shape) != 2:
            raise _bad(
                f"tensor {name!r} is {kind}: only matrices are read in blocks", "UNSUPPORTED"
            )
        return Weight(name, BLOCK_KINDS[kind], shape, f.raw(name))
    if kind in FLOAT_TYPES:
        return Weight(name, "float32", shape, _float32(f.raw(name), info))
    raise _bad(
        f"tensor {name!r} is {kind}: gpulab computes with F32, F16, BF16, Q8_0, Q4_0, Q4_K and "
        "Q6_K (requantize the file, e.g. llama.cpp's llama-quantize to Q4_0 or Q8_0)",
        "UNSUPPORTED",
    )


def _float32(raw: memoryview, info: TensorInfo) -> Any:
    """The values as float32: F32 as it is (a view), F16 / BF16 widened (numpy when present)."""
    kind = info.type_name
    if kind == "F32" and not BIG_ENDIAN:
        return raw.cast("f") if len(raw) % 4 == 0 else memoryview(array.array("f", raw.tobytes()))
    try:
        import numpy as np
    except ImportError:
        return _float32_pure(raw, kind, info.size)
    dtype = {"F32": "<f4", "F16": "<f2", "BF16": "<u2"}[kind]
    values = np.frombuffer(raw, dtype=dtype)
    if kind == "BF16":  # the top half of a float32
        return memoryview((values.astype(np.uint32) << 16).view(np.float32))
    return memoryview(values.astype(np.float32))


def _float32_pure(raw: memoryview, kind: str, count: int) -> Any:
    out = array.array("f")
    if kind == "F16":
        for i in range(0, count, CHUNK):
            out.extend(struct.unpack_from(f"<{min(CHUNK, count - i)}e", raw, 2 * i))
        return memoryview(out)
    if kind == "BF16":  # interleave zero low halves
        wide = bytearray(2 * len(raw))
        wide[2::4], wide[3::4] = raw[0::2], raw[1::2]
        return memoryview(wide).cast("f")
    out.frombytes(bytes(raw))
    if BIG_ENDIAN:  # pragma: no cover - no big-endian host here
        out.byteswap()
    return memoryview(out)
