"""The model loaders against malformed files: safetensors headers, the `gpulab.quantized`
metadata, a MiniLM checkpoint's config.json, tokenizer.json and weights. Each is refused with
VALIDATION naming the tensor or the file, never with a TypeError, KeyError or RecursionError,
and before a graph is built. A tiny checkpoint made here (hidden 8, one layer) is the baseline
that loads and encodes; each case breaks one thing of it.

The byte-level fuzz of the safetensors reader is in test_loader_fuzz.py."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest
from gpulab.errors import GpuLabError
from gpulab.models import minilm
from gpulab.models.minilm_weights import QUANT_KEY, Weights
from gpulab.models.safetensors import SafeTensors, encode
from hostile.bounded import run_bounded

CONFIG = {
    "model_type": "bert",
    "hidden_act": "gelu",
    "hidden_size": 8,
    "num_attention_heads": 2,
    "num_hidden_layers": 1,
    "intermediate_size": 16,
    "max_position_embeddings": 32,
    "layer_norm_eps": 1e-12,
}
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", "##s", "!"]
TOKENIZER = {
    "model": {
        "type": "WordPiece",
        "vocab": {t: i for i, t in enumerate(VOCAB)},
        "unk_token": "[UNK]",
        "continuing_subword_prefix": "##",
        "max_input_chars_per_word": 100,
    },
    "normalizer": {"lowercase": True},
    "added_tokens": [{"content": t} for t in VOCAB[:5]],
}


def _bert_shapes(hidden: int, inner: int, layers: int, rows: dict[str, int]) -> dict:
    """The tensors of a BERT checkpoint (as sentence-transformers' model.safetensors names
    them) and their shapes."""
    d = hidden
    shapes = {
        "embeddings.word_embeddings.weight": (rows["word"], d),
        "embeddings.position_embeddings.weight": (rows["position"], d),
        "embeddings.token_type_embeddings.weight": (rows["type"], d),
        "embeddings.LayerNorm.weight": (d,),
        "embeddings.LayerNorm.bias": (d,),
    }
    for layer in range(layers):
        p = f"encoder.layer.{layer}."
        for name, shape in (
            ("attention.self.query", (d, d)),
            ("attention.self.key", (d, d)),
            ("attention.self.value", (d, d)),
            ("attention.output.dense", (d, d)),
            ("intermediate.dense", (inner, d)),
            ("output.dense", (d, inner)),
        ):
            shapes[p + name + ".weight"], shapes[p + name + ".bias"] = shape, shape[:1]
        for norm in ("attention.output.LayerNorm.", "output.LayerNorm."):
            shapes[p + norm + "weight"], shapes[p + norm + "bias"] = (d,), (d,)
    return shapes


def _weights(rows: dict[str, int] | None = None) -> dict[str, np.ndarray]:
    rows = {"word": len(VOCAB), "position": 32, "type": 2, **(rows or {})}
    rng = np.random.default_rng(0)
    shapes = _bert_shapes(
        CONFIG["hidden_size"], CONFIG["intermediate_size"], CONFIG["num_hidden_layers"], rows
    )
    return {n: (rng.standard_normal(s) * 0.1).astype(np.float32) for n, s in shapes.items()}


def _checkpoint(
    tmp_path: Path,
    config: object = None,
    tokenizer: object = None,
    weights: dict[str, np.ndarray] | None = None,
    raw: dict[str, bytes] | None = None,
) -> Path:
    """A checkpoint directory: the tiny baseline, with any part replaced."""
    config = CONFIG if config is None else config
    tokenizer = TOKENIZER if tokenizer is None else tokenizer
    weights = _weights() if weights is None else weights
    files = {
        "config.json": json.dumps(config).encode(),
        "tokenizer.json": json.dumps(tokenizer).encode(),
        "model.safetensors": encode(
            {
                n: ("F32" if a.dtype == np.float32 else "I64", list(a.shape), a.tobytes())
                for n, a in weights.items()
            }
        ),
        **(raw or {}),
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    return tmp_path


def test_the_tiny_checkpoint_loads_and_encodes(tmp_path: Path) -> None:
    model = minilm.load(_checkpoint(tmp_path), max_length=16, backend="cpu-python")
    (vec,) = model.encode(["hello worlds!"])
    assert len(vec) == 8 and abs(sum(v * v for v in vec) - 1.0) < 1e-4


def _deep(levels: int) -> bytes:
    return b"[" * levels + b"]" * levels


BAD_CHECKPOINTS = {
    "config.json without hidden_size": (
        {"config": {k: v for k, v in CONFIG.items() if k != "hidden_size"}},
        "config.json: 'hidden_size' is missing",
    ),
    "config.json with hidden_size a string": (
        {"config": {**CONFIG, "hidden_size": "8"}},
        "config.json: 'hidden_size' is '8', not a positive integer",
    ),
    "config.json with negative layers": (
        {"config": {**CONFIG, "num_hidden_layers": -1}},
        "config.json: 'num_hidden_layers' is -1",
    ),
    "config.json with heads not dividing hidden": (
        {"config": {**CONFIG, "num_attention_heads": 3}},
        "'num_attention_heads' 3 does not divide 'hidden_size' 8",
    ),
    "config.json a list": ({"config": [1, 2]}, "MiniLM: config.json is not a JSON object"),
    "config.json nested 100k deep": (
        {"raw": {"config.json": _deep(100_000)}},
        "MiniLM: config.json nests deeper than",
    ),
    "tokenizer.json nested 100k deep": (
        {"raw": {"tokenizer.json": b'{"model": ' + _deep(100_000) + b"}"}},
        "MiniLM: tokenizer.json nests deeper than",
    ),
    "tokenizer.json with a vocab id a string": (
        {"tokenizer": {**TOKENIZER, "model": {**TOKENIZER["model"], "vocab": {"[UNK]": "1"}}}},
        "tokenizer.json: a vocab id is not a non-negative integer",
    ),
    "tokenizer.json with added tokens of lists": (
        {"tokenizer": {**TOKENIZER, "added_tokens": [[1]]}},
        "tokenizer.json: added_tokens is not a list of objects",
    ),
    "tokenizer.json with a model list": (
        {"tokenizer": {**TOKENIZER, "model": []}},
        "tokenizer.json: the model is not a WordPiece model",
    ),
    "a token id past the word embeddings": (
        {"weights": _weights({"word": 5})},
        "tokenizer.json: token id 8 is past the 5 rows of the word embeddings",
    ),
    "fewer positions than the token length": (
        {"weights": _weights({"position": 4})},
        "'embeddings.position_embeddings.weight' has 4 rows, fewer than the 16 tokens",
    ),
    "a layer weight missing": (
        {
            "weights": {
                k: v
                for k, v in _weights().items()
                if k != "encoder.layer.0.intermediate.dense.weight"
            }
        },
        "tensor 'encoder.layer.0.intermediate.dense.weight' is missing",
    ),
    "a layer weight of the wrong shape": (
        {
            "weights": {
                **_weights(),
                "encoder.layer.0.output.dense.weight": np.zeros((8, 15), np.float32),
            }
        },
        "tensor 'encoder.layer.0.output.dense.weight' has shape [8, 15], the config needs [8, 16]",
    ),
    "a weight of integers": (
        {
            "weights": {
                **_weights(),
                "embeddings.LayerNorm.bias": np.zeros(8, np.int64),
            }
        },
        "tensor 'embeddings.LayerNorm.bias' is I64, not a float dtype",
    ),
}


@pytest.mark.parametrize("name", list(BAD_CHECKPOINTS))
def test_malformed_checkpoints_are_refused_at_load_by_name(tmp_path: Path, name: str) -> None:
    parts, words = BAD_CHECKPOINTS[name]
    path = _checkpoint(tmp_path, **parts)
    with pytest.raises(GpuLabError) as info:
        minilm.load(path, max_length=16, backend="cpu-python")
    assert info.value.code == "VALIDATION", info.value
    assert words in info.value.message, info.value.message


# -- the gpulab.quantized metadata ------------------------------------------------------------

BLOCK = 144  # q4_k bytes per 256 values


@pytest.mark.parametrize(
    ("metadata", "words"),
    [
        ("[1, 2]", "metadata gpulab.quantized is not a JSON object"),
        ("{x", "metadata gpulab.quantized is not JSON"),
        ('{"w": ["q4_k", 1]}', "tensor 'w': gpulab.quantized entry is not [kind, N, K]"),
        ('{"w": ["q5_k", 1, 256]}', "tensor 'w': gpulab.quantized kind is not one of"),
        ('{"w": ["q4_k", "1", 256]}', "tensor 'w': gpulab.quantized N and K are not positive"),
        ('{"w": ["q4_k", 1, 100]}', "tensor 'w': gpulab.quantized K = 100 is not a multiple"),
        ('{"v": ["q4_k", 1, 256]}', "tensor 'v': gpulab.quantized names a tensor the file"),
        ('{"w": ["q4_k", 2, 256]}', "tensor 'w': gpulab.quantized q4_k [2, 256] does not match"),
        ('{"w": {"kind": "q4_k"}}', "tensor 'w': gpulab.quantized entry is not [kind, N, K]"),
        ('{"w": ' + "[" * 5000 + "]" * 5000 + "}", "metadata gpulab.quantized nests deeper"),
    ],
)
def test_bad_quantized_metadata_is_refused_naming_the_tensor(metadata: str, words: str) -> None:
    blob = encode({"w": ("U8", [BLOCK], bytes(BLOCK))}, {QUANT_KEY: metadata})
    with pytest.raises(GpuLabError) as info:
        Weights(SafeTensors(blob))
    assert info.value.code == "VALIDATION"
    assert words in info.value.message, info.value.message


# -- safetensors headers ----------------------------------------------------------------------


def _file(header: bytes, data: bytes = b"") -> bytes:
    return struct.pack("<Q", len(header)) + header + data


@pytest.mark.parametrize(
    ("blob", "words"),
    [
        (
            _file(b'{"w": {"dtype": ["F32"], "shape": [1], "data_offsets": [0, 4]}}', bytes(4)),
            "tensor 'w': unknown dtype ['F32']",
        ),
        (
            _file(b'{"w": {"dtype": {"a": 1}, "shape": [1], "data_offsets": [0, 4]}}', bytes(4)),
            "tensor 'w': unknown dtype {'a': 1}",
        ),
        (_file(b'{"w": ' + _deep(100_000) + b"}"), "safetensors: the header nests deeper"),
        (_file(b'{"__metadata__": {"a": ' + _deep(3000) + b"}}"), "the header nests deeper"),
        (
            _file(b'{"w": {"dtype": "F32", "shape": [true], "data_offsets": [0, 4]}}', bytes(4)),
            "tensor 'w': shape [True] is not a list of non-negative integers",
        ),
        (
            _file(b'{"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4.0]}}', bytes(4)),
            "tensor 'w': data_offsets [0, 4.0] is not [begin, end]",
        ),
    ],
)
def test_malformed_safetensors_headers_are_refused_naming_the_tensor(
    blob: bytes, words: str
) -> None:
    with pytest.raises(GpuLabError) as info:
        SafeTensors(blob)
    assert info.value.code == "VALIDATION"
    assert words in info.value.message, info.value.message


def test_a_shape_of_huge_rank_is_refused_before_its_product() -> None:
    header = json.dumps({"w": {"dtype": "F32", "shape": [99] * 300_000, "data_offsets": [0, 4]}})
    blob = _file(header.encode(), bytes(4))
    # the product of 300,000 factors of 99 is a 2-million-bit integer, built quadratically
    outcome = run_bounded(lambda: SafeTensors(blob), memory=256 << 20, seconds=60)
    assert outcome.kind == "error" and outcome.code == "VALIDATION", str(outcome)
    assert "tensor 'w': shape of rank 300000, more than" in outcome.message, outcome.message
