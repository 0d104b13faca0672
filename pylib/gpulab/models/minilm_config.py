"""MiniLM's config.json read into a Config, and the check that a checkpoint's weights are what
that config's graph reads (every tensor present, of a float dtype or quantized, of its shape;
the tokenizer's ids and length within the embeddings): a malformed checkpoint is refused at
load naming the file or the tensor, never half-way through building a graph."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpulab.errors import GpuLabError
from gpulab.models.wordpiece import WordPiece


@dataclass(frozen=True)
class Config:
    hidden: int
    heads: int
    layers: int
    intermediate: int
    eps: float
    max_positions: int

    @classmethod
    def from_dict(cls, c: dict[str, Any]) -> Config:
        if c.get("hidden_act", "gelu") != "gelu" or c.get("model_type", "bert") != "bert":
            raise GpuLabError(
                "VALIDATION",
                "config.json: only BERT with exact gelu is built "
                f"(got {c.get('model_type')!r:.40}, {c.get('hidden_act')!r:.40})",
            )
        sizes = [_positive(c, key) for key in CONFIG_SIZES]
        eps = c.get("layer_norm_eps", 1e-12)
        if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not eps >= 0:
            raise GpuLabError("VALIDATION", "config.json: 'layer_norm_eps' is not a number >= 0")
        hidden, heads, layers, intermediate, positions = sizes
        if hidden % heads:
            raise GpuLabError(
                "VALIDATION",
                f"config.json: 'num_attention_heads' {heads} does not divide "
                f"'hidden_size' {hidden}",
            )
        return cls(hidden, heads, layers, intermediate, float(eps), positions)


CONFIG_SIZES = (
    "hidden_size",
    "num_attention_heads",
    "num_hidden_layers",
    "intermediate_size",
    "max_position_embeddings",
)


def _positive(c: dict[str, Any], key: str) -> int:
    value = c.get(key)
    if value is None:
        raise GpuLabError("VALIDATION", f"config.json: {key!r} is missing")
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise GpuLabError(
            "VALIDATION", f"config.json: {key!r} is {value!r:.40}, not a positive integer"
        )
    return value


def expected_weights(config: Config) -> dict[str, tuple[int | None, ...]]:
    """Every tensor the graph reads and its shape (None: any size; the word embeddings' rows
    are the vocabulary, the position rows at least the token length)."""
    d, inner = config.hidden, config.intermediate
    shapes: dict[str, tuple[int | None, ...]] = {
        "embeddings.word_embeddings.weight": (None, d),
        "embeddings.position_embeddings.weight": (None, d),
        "embeddings.token_type_embeddings.weight": (None, d),
        "embeddings.LayerNorm.weight": (d,),
        "embeddings.LayerNorm.bias": (d,),
    }
    for layer in range(config.layers):
        p = f"encoder.layer.{layer}."
        for name in ("attention.self.query", "attention.self.key", "attention.self.value"):
            shapes[p + name + ".weight"], shapes[p + name + ".bias"] = (d, d), (d,)
        shapes[p + "attention.output.dense.weight"] = (d, d)
        shapes[p + "attention.output.dense.bias"] = (d,)
        shapes[p + "intermediate.dense.weight"] = (inner, d)
        shapes[p + "intermediate.dense.bias"] = (inner,)
        shapes[p + "output.dense.weight"] = (d, inner)
        shapes[p + "output.dense.bias"] = (d,)
        for norm in ("attention.output.LayerNorm.", "output.LayerNorm."):
            shapes[p + norm + "weight"], shapes[p + norm + "bias"] = (d,), (d,)
    return shapes


FLOAT_DTYPES = ("F32", "F16", "BF16", "F64")


def check_weights(weights: Any, config: Config, tokenizer: WordPiece) -> None:
    """Every tensor the graph will read is in the file, of a float dtype (or quantized) and of
    its shape, and the tokenizer's ids and length fit the embeddings: refused at load naming
    the tensor (VALIDATION), never half-way through building a graph."""
    names = set(weights.names())
    for name, want in expected_weights(config).items():
        if name not in names:
            raise GpuLabError("VALIDATION", f"safetensors: tensor {name!r} is missing")
        if weights.is_quantized(name):
            n, k = weights.quant_shape(name)
            out, width = want
            if n != out or not width <= k < width + 256:
                raise GpuLabError(
                    "VALIDATION",
                    f"safetensors: tensor {name!r}: quantized [{n}, {k}], the config needs "
                    f"[{out}, {width}] (K padded to a multiple of 256)",
                )
            continue
        shape, dtype = tuple(weights.shape(name)), weights.dtype(name)
        if dtype not in FLOAT_DTYPES:
            raise GpuLabError(
                "VALIDATION", f"safetensors: tensor {name!r} is {dtype}, not a float dtype"
            )
        if len(shape) != len(want) or any(
            s != w if w is not None else s < 1 for s, w in zip(shape, want)
        ):
            shown = [w if w is not None else "*" for w in want]
            raise GpuLabError(
                "VALIDATION",
                f"safetensors: tensor {name!r} has shape {list(shape)}, the config needs {shown}",
            )
    words = weights.shape("embeddings.word_embeddings.weight")[0]
    positions = weights.shape("embeddings.position_embeddings.weight")[0]
    top = max(tokenizer.vocab.values())
    if top >= words:
        raise GpuLabError(
            "VALIDATION",
            f"tokenizer.json: token id {top} is past the {words} rows of the word embeddings",
        )
    if tokenizer.max_length > positions:
        raise GpuLabError(
            "VALIDATION",
            f"safetensors: tensor 'embeddings.position_embeddings.weight' has "
            f"{positions} rows, fewer than the "
            f"{tokenizer.max_length} tokens of a sentence",
        )
