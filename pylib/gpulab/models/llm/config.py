"""A llama-family model's hyperparameters from its GGUF metadata (llama.cpp's key names).

`general.architecture` names the key prefix (`llama.block_count`, ...). The architectures read
are the ones llama.cpp builds with its llama graph (LLM_ARCH_LLAMA): `llama` (Llama 1-3,
TinyLlama, SmolLM2, Mistral 7B v0.1...). Anything the graph here does not implement is refused
by name: a sliding window, rope scaling other than linear, a rope type other than llama's.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpulab.errors import GpuLabError

from .gguf import GGUFFile

ARCHITECTURES = ("llama",)

__all__ = ["ARCHITECTURES", "Config", "read_config"]


@dataclass(frozen=True)
class Config:
    """The shape of the model and the constants of its layers (the issue's names first)."""

    n_layer: int
    n_head: int
    n_head_kv: int
    n_embd: int
    vocab_size: int
    context_length: int
    n_ff: int
    head_dim: int
    rms_eps: float
    rope_base: float
    rope_dim: int
    rope_scale: float  # linear rope scaling: the frequencies are divided by it (1: none)
    architecture: str = "llama"

    @property
    def n_group(self) -> int:
        """Query heads per key/value head (grouped-query attention)."""
        return self.n_head // self.n_head_kv

    @property
    def kv_dim(self) -> int:
        return self.n_head_kv * self.head_dim


def _bad(message: str, code: str = "VALIDATION") -> GpuLabError:
    return GpuLabError(code, f"gguf: {message}")


def read_config(f: GGUFFile, vocab_size: int) -> Config:
    """The Config of a GGUF file's metadata; vocab_size from its token table's rows."""
    arch = f.string("general.architecture")
    if arch not in ARCHITECTURES:
        raise _bad(
            f"architecture {arch!r} is not built here (built: {', '.join(ARCHITECTURES)})",
            "UNSUPPORTED",
        )
    n_embd = f.integer(f"{arch}.embedding_length")
    n_head = f.integer(f"{arch}.attention.head_count")
    n_head_kv = f.integer(f"{arch}.attention.head_count_kv", n_head)
    head_dim = f.integer(f"{arch}.attention.key_length", n_embd // max(n_head, 1))
    value_dim = f.integer(f"{arch}.attention.value_length", head_dim)
    cfg = Config(
        n_layer=f.integer(f"{arch}.block_count"),
        n_head=n_head,
        n_head_kv=n_head_kv,
        n_embd=n_embd,
        vocab_size=vocab_size,
        context_length=f.integer(f"{arch}.context_length"),
        n_ff=f.integer(f"{arch}.feed_forward_length"),
        head_dim=head_dim,
        rms_eps=f.number(f"{arch}.attention.layer_norm_rms_epsilon", 1e-5),
        rope_base=f.number(f"{arch}.rope.freq_base", 10000.0),
        rope_dim=f.integer(f"{arch}.rope.dimension_count", head_dim),
        rope_scale=_rope_scale(f, arch),
        architecture=arch,
    )
    _check(cfg, value_dim, f, arch)
    return cfg


def _rope_scale(f: GGUFFile, arch: str) -> float:
    kind = f.string(f"{arch}.rope.scaling.type", "none")
    if kind == "none":
        return 1.0
    if kind == "linear":
        return f.number(f"{arch}.rope.scaling.factor", 1.0)
    raise _bad(
        f"key '{arch}.rope.scaling.type' is {kind!r}: only linear scaling is built", "UNSUPPORTED"
    )


def _check(cfg: Config, value_dim: int, f: GGUFFile, arch: str) -> None:
    positive = {
        f"{arch}.block_count": cfg.n_layer,
        f"{arch}.embedding_length": cfg.n_embd,
        f"{arch}.attention.head_count": cfg.n_head,
        f"{arch}.attention.head_count_kv": cfg.n_head_kv,
        f"{arch}.feed_forward_length": cfg.n_ff,
        f"{arch}.context_length": cfg.context_length,
        f"{arch}.attention.key_length": cfg.head_dim,
    }
    for key, value in positive.items():
        if value < 1:
            raise _bad(f"key {key!r} is {value}: it must be at least 1")
    if cfg.n_head % cfg.n_head_kv:
        raise _bad(
            f"key '{arch}.attention.head_count' ({cfg.n_head}) is not a multiple of "
            f"head_count_kv ({cfg.n_head_kv})"
        )
    if value_dim != cfg.head_dim:
        raise _bad(
            f"key '{arch}.attention.value_length' ({value_dim}) differs from key_length "
            f"({cfg.head_dim}): not built",
            "UNSUPPORTED",
        )
    if cfg.rope_dim != cfg.head_dim:
        raise _bad(
            f"key '{arch}.rope.dimension_count' ({cfg.rope_dim}) is not the head size "
            f"({cfg.head_dim}): partial rotary embeddings are not built",
            "UNSUPPORTED",
        )
    if cfg.head_dim % 2:
        raise _bad(f"the head size {cfg.head_dim} is odd: rotary pairs need an even one")
    if f.integer(f"{arch}.attention.sliding_window", 0):
        raise _bad(f"key '{arch}.attention.sliding_window' is set: not built", "UNSUPPORTED")
    if not cfg.rms_eps > 0 or not cfg.rope_base > 0 or not cfg.rope_scale > 0:
        raise _bad("the rms epsilon, rope base and rope scaling factor must be positive")
