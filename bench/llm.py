"""Language-model throughput: prefill and decode tokens/s of gpulab.models.llm against
transformers' `generate` and (when installed) llama.cpp, on one GGUF of SmolLM2-135M's shapes.

    PYTHONPATH=pylib .venv/bin/python bench/llm.py --backends cpu-python,wgpu --peer cpu
    PYTHONPATH=pylib python3 bench/llm.py --backends wgpu --peer cuda --quant Q4_0,Q8_0
    PYTHONPATH=pylib python3 bench/llm.py --layers 2 --new 16 --backends cpu-python  # a check

The model: SmolLM2-135M's config (30 layers, n_embd 576, 9 query / 3 key-value heads, n_ff 1536,
vocabulary 49152, tied embeddings, rope base 100000), written by gpulab.models.llm.synthetic with
random valid blocks of the asked type (`--quant`: Q4_0, Q8_0; throughput does not depend on the
values). `--layers N` keeps the shapes with fewer layers (a quick check, not the model).

Measures, per backend and per tokens-per-submission k (`--chunks`, default 1,4,16):
- prefill tok/s: the prompt (`--prompt` tokens) through `generate(max_new_tokens=1)` -- one
  submission of a step per prompt token, the session already prepared (a warm-up call first);
- decode tok/s: `generate(max_new_tokens=--new, tokens_per_submission=k)`, from the first new
  token's arrival (on_token) to the last: (new - 1) / elapsed, so prefill is not in it;
- prompt tok/s: `model.logits(prompt)`, every position in one graph (the batched path).
The peer: transformers' LlamaForCausalLM of the same config in float32 (random init; eager,
KV cache, greedy): prefill = one forward of the prompt, decode = (new - 1) / (time of
generate(new) - time of generate(1)), with torch.cuda.synchronize on CUDA. llama.cpp: the
`llama_cpp` module (llama-cpp-python, built from source in a throwaway venv, not the lock) on
the same file, `--llama-threads` (default 1 and all cores): eval of the prompt, then one eval per
greedy token. Median of `--runs`. Prints the machine and markdown tables; `--json` writes rows.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from gpulab.errors import GpuLabError
from gpulab.models import llm
from gpulab.models.llm import synthetic
from gpulab.models.llm.synthetic import ModelSpec

SMOLLM2_135M = {
    "n_layer": 30,
    "n_embd": 576,
    "n_head": 9,
    "n_head_kv": 3,
    "n_ff": 1536,
    "vocab_size": 49152,
    "context_length": 2048,  # the model's is 8192; the bench's positions fit in 2048
    "rope_base": 100000.0,
    "rms_eps": 1e-5,
}


def write_model(path: Path, quant: str, layers: int | None) -> ModelSpec:
    shape = dict(SMOLLM2_135M)
    if layers is not None:
        shape["n_layer"] = layers
    spec = ModelSpec(**shape, weight_type=quant, tied=True, random_blocks=True, seed=0)
    synthetic.write_llama_gguf(path, spec)
    return spec


def prompt_ids(n: int, vocab: int) -> list[int]:
    return [(i * 7919 + 11) % vocab for i in range(n)]


def median(samples: list[float]) -> float:
    return statistics.median(samples)


def time_ours(
    model: llm.LLM, backend: str, prompt: list[int], new: int, chunk: int, runs: int
) -> dict[str, float]:
    """Prefill and decode tok/s of one backend at `chunk` tokens per submission."""
    model.generate(prompt, max_new_tokens=2, backend=backend, tokens_per_submission=chunk)
    prefill, decode = [], []
    for _ in range(runs):
        t = time.perf_counter()
        model.generate(prompt, max_new_tokens=1, backend=backend)
        prefill.append(len(prompt) / (time.perf_counter() - t))
        arrivals: list[float] = []
        out = model.generate(
            prompt,
            max_new_tokens=new,
            backend=backend,
            tokens_per_submission=chunk,
            on_token=lambda _t, seen=arrivals: seen.append(time.perf_counter()),
        )
        if len(out) > 1:  # EOS can end a random model early: rate over what it made
            decode.append((len(out) - 1) / (arrivals[-1] - arrivals[0]))
    return {"prefill": median(prefill), "decode": median(decode) if decode else float("nan")}


def time_prompt(model: llm.LLM, backend: str, prompt: list[int], runs: int) -> float:
    model.logits(prompt, backend=backend)
    samples = []
    for _ in range(runs):
        t = time.perf_counter()
        model.logits(prompt, backend=backend)
        samples.append(len(prompt) / (time.perf_counter() - t))
    return median(samples)


def torch_peer(cfg: llm.Config, device: str) -> Any:
    import torch
    import transformers

    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=cfg.vocab_size,
        hidden_size=cfg.n_embd,
        intermediate_size=cfg.n_ff,
        num_hidden_layers=cfg.n_layer,
        num_attention_heads=cfg.n_head,
        num_key_value_heads=cfg.n_head_kv,
        max_position_embeddings=cfg.context_length,
        rms_norm_eps=cfg.rms_eps,
        rope_theta=cfg.rope_base,
        tie_word_embeddings=True,
    )
    return transformers.LlamaForCausalLM(config).to(device=device, dtype=torch.float32).eval()


def time_peer(model: Any, device: str, prompt: list[int], new: int, runs: int) -> dict[str, float]:
    import torch

    ids = torch.tensor([prompt], device=device)

    def sync() -> None:
        if device == "cuda":
            torch.cuda.synchronize()

    def generate(n: int) -> float:
        sync()
        t = time.perf_counter()
        with torch.no_grad():
            model.generate(ids, max_new_tokens=n, min_new_tokens=n, do_sample=False, use_cache=True)
        sync()
        return time.perf_counter() - t

    def forward() -> float:
        sync()
        t = time.perf_counter()
        with torch.no_grad():
            model(ids)
        sync()
        return time.perf_counter() - t

    generate(2)
    forward()
    prefill = [len(prompt) / forward() for _ in range(runs)]
    decode = [(new - 1) / max(generate(new) - generate(1), 1e-9) for _ in range(runs)]
    return {"prefill": median(prefill), "decode": median(decode)}


def time_llama_cpp(path: Path, prompt: list[int], new: int, threads: int, runs: int) -> Any:
    try:
        from llama_cpp import Llama
    except ImportError:
        return None
    model = Llama(
        model_path=str(path),
        n_ctx=len(prompt) + new + 8,
        n_threads=threads,
        n_threads_batch=threads,
        n_batch=len(prompt),
        verbose=False,
    )
    prefill, decode = [], []
    for _ in range(runs + 1):
        model.reset()
        t = time.perf_counter()
        model.eval(prompt)
        t_prefill = time.perf_counter() - t
        token = model.sample(temp=0.0)
        t = time.perf_counter()
        for _ in range(new - 1):
            model.eval([token])
            token = model.sample(temp=0.0)
        t_decode = time.perf_counter() - t
        prefill.append(len(prompt) / t_prefill)
        decode.append((new - 1) / t_decode)
    return {"prefill": median(prefill[1:]), "decode": median(decode[1:])}


def machine() -> str:
    return f"{platform.node()} {platform.machine()} {os.cpu_count()} cores, {platform.python_version()}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--backends", default="cpu-python,wgpu")
    p.add_argument("--quant", default="Q4_0,Q8_0")
    p.add_argument("--chunks", default="1,4,16", help="decode tokens per submission")
    p.add_argument("--prompt", type=int, default=32, help="prompt tokens")
    p.add_argument("--new", type=int, default=64, help="new tokens per generate")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--layers", type=int, default=None, help="fewer layers (a check)")
    p.add_argument("--peer", default="cpu", help="transformers on cpu, cuda, or none")
    p.add_argument("--llama-threads", default=f"1,{os.cpu_count()}")
    p.add_argument("--dir", default=None, help="where the GGUF files go (default: a temp dir)")
    p.add_argument("--json", default=None)
    ns = p.parse_args(argv)
    rows: list[dict[str, Any]] = []
    print(f"machine: {machine()}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(ns.dir or tmp)
        for quant in ns.quant.split(","):
            path = folder / f"smollm2-135m-shapes-{quant.lower()}.gguf"
            write_model(path, quant, ns.layers)
            model = llm.load(path)
            prompt = prompt_ids(ns.prompt, model.config.vocab_size)
            print(f"\n{quant}: {model!r}, prompt {ns.prompt}, {ns.new} new tokens")
            for backend in ns.backends.split(","):
                try:
                    prompt_rate = time_prompt(model, backend, prompt, ns.runs)
                    for chunk in (int(c) for c in ns.chunks.split(",")):
                        r = time_ours(model, backend, prompt, ns.new, chunk, ns.runs)
                        row = {"quant": quant, "runs_on": f"gpulab {backend}", "k": chunk}
                        rows.append({**row, "prompt": prompt_rate, **r})
                except GpuLabError as exc:  # a lane that cannot run is a row that says so
                    rows.append({"quant": quant, "runs_on": f"gpulab {backend}", "error": str(exc)})
                model.close()
            if ns.peer != "none":
                peer = torch_peer(model.config, ns.peer)
                r = time_peer(peer, ns.peer, prompt, ns.new, ns.runs)
                rows.append({"quant": quant, "runs_on": f"transformers fp32 {ns.peer}", **r})
            for threads in (int(t) for t in ns.llama_threads.split(",") if t):
                r = time_llama_cpp(path, prompt, ns.new, threads, ns.runs)
                if r is None:
                    rows.append({"quant": quant, "runs_on": "llama.cpp", "error": "not installed"})
                    break
                rows.append({"quant": quant, "runs_on": f"llama.cpp {threads} threads", **r})
    print(table(rows))
    if ns.json:
        Path(ns.json).write_text(json.dumps(rows, indent=1))
    return 1 if any("error" in r and r["runs_on"].startswith("gpulab") for r in rows) else 0


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| weights | runs on | k | prefill tok/s | decode tok/s | prompt logits tok/s |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['quant']} | {r['runs_on']} | | not run: {r['error']} | | |")
            continue
        prompt = f"{r['prompt']:.1f}" if "prompt" in r else ""
        lines.append(
            f"| {r['quant']} | {r['runs_on']} | {r.get('k', '')} | {r['prefill']:.1f} | "
            f"{r['decode']:.1f} | {prompt} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
