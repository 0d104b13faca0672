"""MiniLM (all-MiniLM-L6-v2) throughput: sentences per second, ours vs the PyTorch peer.

    PYTHONPATH=pylib .venv/bin/python bench/minilm_bench.py --backends cpu-python,wgpu --peer cpu
    PYTHONPATH=pylib python3 bench/minilm_bench.py --random-weights --backends wgpu --peer cuda

One sample is one batch of `--batches` sentences of `--length` tokens each (token ids fixed,
drawn once; mask all ones) through the model's prepared session (gpulab.models.minilm: one
submission, weights resident, the embeddings read back), after one warm-up batch; the median
over `--runs` gives sentences/s. The peer runs the same ids through sentence-transformers'
modules (transformers' BertModel, mean pooling, L2 normalisation; fp32, eager, `torch.no_grad`),
with `torch.cuda.synchronize()` around each sample on CUDA.

Weights: the installed checkpoint (`gpulab[models]`), or with `--random-weights` values drawn
from a seeded normal (x 0.02, layer-norm weights 1) for the shapes of bench/minilm_config.json
(the checkpoint's config.json): throughput does not depend on the values, and the 90 MB
checkpoint does not fit the device machine's 64 MiB transfer. `--quantize q6_k` quantizes the
linear weights (gpulab.quant) first. Prints a markdown table.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
from gpulab.models import minilm, minilm_weights
from gpulab.models.safetensors import SafeTensors, encode

CONFIG = Path(__file__).with_name("minilm_config.json")
TOKENIZER = {
    "model": {"type": "WordPiece", "vocab": {"[PAD]": 0, "[UNK]": 100, "[CLS]": 101, "[SEP]": 102}}
}


def random_checkpoint(config: dict[str, Any], seed: int = 0) -> bytes:
    """A safetensors file with BERT's tensor names and shapes, seeded normal values."""
    rng = np.random.default_rng(seed)
    d, f, n = config["hidden_size"], config["intermediate_size"], config["num_hidden_layers"]
    shapes = {
        "embeddings.word_embeddings.weight": [config["vocab_size"], d],
        "embeddings.position_embeddings.weight": [config["max_position_embeddings"], d],
        "embeddings.token_type_embeddings.weight": [config["type_vocab_size"], d],
        "embeddings.LayerNorm.weight": [d],
        "embeddings.LayerNorm.bias": [d],
    }
    for i in range(n):
        p = f"encoder.layer.{i}."
        for name in ("query", "key", "value"):
            shapes[f"{p}attention.self.{name}.weight"] = [d, d]
            shapes[f"{p}attention.self.{name}.bias"] = [d]
        shapes |= {
            f"{p}attention.output.dense.weight": [d, d],
            f"{p}attention.output.dense.bias": [d],
            f"{p}intermediate.dense.weight": [f, d],
            f"{p}intermediate.dense.bias": [f],
            f"{p}output.dense.weight": [d, f],
            f"{p}output.dense.bias": [d],
        }
        for ln in ("attention.output.LayerNorm", "output.LayerNorm"):
            shapes[f"{p}{ln}.weight"], shapes[f"{p}{ln}.bias"] = [d], [d]
    tensors = {}
    for name, shape in shapes.items():
        values = (
            np.ones(shape) if "LayerNorm.weight" in name else rng.standard_normal(shape) * 0.02
        ).astype("<f4")
        tensors[name] = ("F32", shape, values.tobytes())
    return encode(tensors)


def load_model(ns: argparse.Namespace) -> tuple[minilm.MiniLM, dict[str, Any], bytes]:
    if ns.random_weights:
        config = json.loads(CONFIG.read_text())
        raw = random_checkpoint(config)
        spec: dict[str, Any] = TOKENIZER
    else:
        files = minilm_weights._read_files(None)
        config, raw = json.loads(files["config.json"]), files["model.safetensors"]
        spec = json.loads(files["tokenizer.json"])
    st = SafeTensors(
        raw
        if ns.quantize is None
        else minilm_weights.quantized_checkpoint(SafeTensors(raw), ns.quantize)
    )
    ckpt = minilm_weights.Checkpoint(config, spec, minilm_weights.Weights(st))
    return minilm.MiniLM(ckpt, ns.quantize, None, 256), config, raw


def time_ours(
    model: minilm.MiniLM, backend: str, ids: list[int], batch: int, length: int, runs: int
) -> float:
    session = model._session(backend, batch, length)
    feeds = {"ids": ids, "mask": [1.0] * (batch * length)}
    session.run(feeds)  # warm-up: pipelines compiled, buffers made
    samples = []
    for _ in range(runs):
        t = time.perf_counter()
        session.run(feeds)
        samples.append(time.perf_counter() - t)
    if session.backend != backend:
        raise SystemExit(f"{backend} was asked for but {session.backend} ran")
    model.close()
    return batch / statistics.median(samples)


def torch_peer(config: dict[str, Any], raw: bytes, device: str, random: bool) -> Any:
    import torch
    from transformers import BertConfig, BertModel

    model = BertModel(BertConfig(**config), add_pooling_layer=False)
    if not random:
        from safetensors.torch import load as load_st

        model.load_state_dict(load_st(raw), strict=False)
    return model.eval().to(torch.device(device))


def time_peer(model: Any, device: str, ids: list[int], batch: int, length: int, runs: int) -> float:
    import torch

    tid = torch.tensor(ids, dtype=torch.long, device=device).reshape(batch, length)
    mask = torch.ones_like(tid)

    def once() -> None:
        with torch.no_grad():
            out = model(input_ids=tid, attention_mask=mask).last_hidden_state
            m = mask.unsqueeze(-1).float()
            pooled = (out * m).sum(1) / m.sum(1).clamp(min=1e-9)
            torch.nn.functional.normalize(pooled, p=2, dim=1).cpu()
        if device == "cuda":
            torch.cuda.synchronize()

    once()
    samples = []
    for _ in range(runs):
        t = time.perf_counter()
        once()
        samples.append(time.perf_counter() - t)
    return batch / statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="cpu-python,wgpu")
    parser.add_argument("--peer", default="cpu", help="torch device (cpu, cuda) or none")
    parser.add_argument("--batches", default="1,32")
    parser.add_argument("--length", type=int, default=32, help="tokens per sentence")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--random-weights", action="store_true")
    parser.add_argument("--quantize", choices=minilm.QUANT_KINDS)
    ns = parser.parse_args()
    model, config, raw = load_model(ns)
    rng = np.random.default_rng(1)
    batches = [int(b) for b in ns.batches.split(",")]
    rows = []
    for batch in batches:
        ids = rng.integers(1000, config["vocab_size"], batch * ns.length).astype(int).tolist()
        for backend in ns.backends.split(","):
            rows.append(
                (
                    f"gpulab {backend}" + (f" {ns.quantize}" if ns.quantize else ""),
                    batch,
                    time_ours(model, backend, ids, batch, ns.length, ns.runs),
                )
            )
        if ns.peer != "none":
            peer = torch_peer(config, raw, ns.peer, ns.random_weights)
            rows.append(
                (
                    f"torch {ns.peer} (sentence-transformers' modules)",
                    batch,
                    time_peer(peer, ns.peer, ids, batch, ns.length, ns.runs),
                )
            )
    print(
        f"\nMiniLM-L6 throughput, {ns.length} tokens per sentence, median of {ns.runs}; "
        f"{'random' if ns.random_weights else 'checkpoint'} weights; {platform.node()}, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n"
    )
    print("| runs on | batch | sentences/s |\n| --- | ---: | ---: |")
    for name, batch, rate in rows:
        print(f"| {name} | {batch} | {rate:.1f} |")


if __name__ == "__main__":
    main()
