"""Model / loss / optimizer fixtures of the torch subset, run the same way
by real PyTorch (the oracle, natively) and by gpulab.torch (natively, in prepared sessions and
in the page).

A fixture is DATA: a spec in `FIXTURES` (model kind and sizes, loss, optimizer and its param
groups, seed). Everything else is derived from the spec by the functions here, written once
against the torch API and given the torch module to use (`torch` itself or `gpulab.torch`):

    built = build(spec, torch_module)      # model, optimizer, loss_fn, batches, train_step
    trace = run(spec, torch_module)        # per step: {"loss": float, "params": {name: flat}}
    ref = reference(spec)                  # run(spec, torch) with real PyTorch (natively)
    problems = compare(trace, ref)         # [] when every loss and parameter matches

Initial weights and data come from the spec's seed through the protocol's counter hash
(gpulab.hash_uniform, pure Python), loaded into both models with `load_state_dict` of plain
lists, so neither side's RNG is involved. Dropout: gpulab.torch's masks come from its own
counter-hash stream (not torch's RNG), so the PyTorch side is given the SAME masks: its
dropout layer (`HashDropout`) computes our mask in Python from the same (seed, counter) and
multiplies by it and by float32(1 / (1 - p)) as our `dropout` op does. Everything else
(forward, backward, the optimizer) is PyTorch's own.

Pure Python (no numpy; torch imported only by `reference`), so the page can import it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from gpulab.hash_uniform import dropout_words, hash_key, hash_word

STEPS = 5
# |ours - torch| <= ATOL + RTOL * |torch| per loss and per parameter element, every step:
# float32 rounding differences (reduction order, fused multiply-add in PyTorch's CPU kernels)
# compounded over 5 steps; measured worst cases are in docs/torch.md.
RTOL = 1e-6
ATOL = 1e-6

MLP = {"kind": "mlp", "sizes": [6, 16, 4], "act": "relu", "batch": 8}
FIXTURES: dict[str, dict[str, Any]] = {
    "mlp_sgd": {"model": MLP, "loss": "ce", "seed": 1, "optim": {"name": "SGD", "lr": 0.1}},
    "mlp_sgd_momentum": {
        "model": MLP,
        "loss": "ce",
        "seed": 2,
        "optim": {"name": "SGD", "lr": 0.1, "momentum": 0.9},
    },
    "mlp_sgd_dampening": {
        "model": MLP,
        "loss": "ce",
        "seed": 3,
        "optim": {"name": "SGD", "lr": 0.05, "momentum": 0.8, "dampening": 0.3},
    },
    "mlp_sgd_nesterov_wd": {
        "model": MLP,
        "loss": "ce",
        "seed": 4,
        "optim": {
            "name": "SGD",
            "lr": 0.05,
            "momentum": 0.9,
            "nesterov": True,
            "weight_decay": 0.01,
        },
    },
    "mlp_sgd_maximize": {
        "model": {**MLP, "act": "tanh"},
        "loss": "ce_sum",
        "seed": 5,
        "optim": {"name": "SGD", "lr": 0.02, "maximize": True, "weight_decay": 0.1},
    },
    "mlp_sgd_groups": {
        "model": MLP,
        "loss": "ce",
        "seed": 6,
        "optim": {
            "name": "SGD",
            "lr": 0.1,
            "momentum": 0.5,
            "groups": [
                {"params": "0."},
                {"params": "2.", "lr": 0.3, "momentum": 0.0, "weight_decay": 0.05},
            ],
        },
    },
    "mlp_adam_mse": {
        "model": {**MLP, "act": "gelu", "sizes": [6, 12, 3]},
        "loss": "mse",
        "seed": 7,
        "optim": {"name": "Adam", "lr": 0.01},
    },
    "mlp_adam_wd_groups": {
        "model": {**MLP, "act": "sigmoid"},
        "loss": "ce",
        "seed": 8,
        "optim": {
            "name": "Adam",
            "lr": 0.02,
            "betas": [0.8, 0.99],
            "weight_decay": 0.01,
            "groups": [
                {"params": "0."},
                {"params": "2.", "lr": 0.005, "maximize": False, "eps": 1e-6},
            ],
        },
    },
    "mlp_adamw_probs": {
        "model": MLP,
        "loss": "ce_probs",
        "seed": 9,
        "optim": {"name": "AdamW", "lr": 0.01, "weight_decay": 0.05},
    },
    "mlp_dropout": {
        "model": {**MLP, "dropout": 0.25, "sizes": [6, 32, 4]},
        "loss": "ce",
        "seed": 10,
        "optim": {"name": "SGD", "lr": 0.1, "momentum": 0.9},
    },
    "embed_layernorm": {
        "model": {"kind": "embed", "vocab": 11, "dim": 8, "classes": 5, "batch": 12},
        "loss": "ce",
        "seed": 11,
        "optim": {"name": "AdamW", "lr": 0.02},
    },
    "tiny_attention": {
        "model": {"kind": "attention", "seq": 4, "dim": 8, "classes": 3, "batch": 3},
        "loss": "ce",
        "seed": 12,
        "optim": {"name": "Adam", "lr": 0.01},
    },
}


# -- deterministic values from the seed (the protocol's counter hash) -------------------------


def uniforms(seed: int, stream: int, n: int) -> list[float]:
    """n values in [-1, 1) for (seed, stream): exact in float32 (multiples of 2^-23)."""
    key = hash_key(seed, stream)
    return [(hash_word(key, i) >> 8) * 2.0**-23 - 1.0 for i in range(n)]


def integers(seed: int, stream: int, n: int, high: int) -> list[int]:
    key = hash_key(seed, stream)
    return [(hash_word(key, i) >> 8) % high for i in range(n)]


def _nest(flat: list[Any], shape: list[int]) -> Any:
    if len(shape) <= 1:
        return list(flat)
    step = math.prod(shape[1:])
    return [_nest(flat[i * step : (i + 1) * step], shape[1:]) for i in range(shape[0])]


def initial_state(spec: dict[str, Any], shapes: dict[str, list[int]]) -> dict[str, Any]:
    """Plain nested lists for every parameter (name -> values of its shape)."""
    out = {}
    for i, (name, shape) in enumerate(sorted(shapes.items())):
        n = math.prod(shape)
        u = uniforms(spec["seed"], 1000 + i, n)
        if name.endswith("norm.weight"):
            vals = [1.0 + 0.25 * v for v in u]
        elif "emb" in name:
            vals = list(u)
        else:
            bound = 1.0 / math.sqrt(shape[-1]) if len(shape) > 1 else 0.3
            vals = [bound * v for v in u]
        out[name] = _nest(vals, shape) if len(shape) > 1 else vals
    return out


# -- models, written once against the torch API ------------------------------------------------


def _is_real_torch(torch: Any) -> bool:
    return hasattr(torch, "_C")


class _HashMask:
    """Our dropout masks for the PyTorch side: the counters gpulab.torch's default generator
    gives (seed = the fixture's seed, one counter per dropout call, from 0)."""

    def __init__(self, seed: int) -> None:
        self.seed = seed & 0xFFFFFFFF
        self.counter = 0

    def mask(self, n: int, p: float) -> list[float]:
        threshold, scale, _ = dropout_words(p)
        key = hash_key(self.seed, self.counter)
        self.counter += 1
        return [scale if (hash_word(key, i) >> 8) >= threshold else 0.0 for i in range(n)]


def _dropout_layer(torch: Any, p: float, masks: _HashMask | None) -> Any:
    if not _is_real_torch(torch):
        return torch.nn.Dropout(p)

    class HashDropout(torch.nn.Module):
        """x * mask * float32(1/(1-p)) with gpulab.torch's mask (see the module doc)."""

        def forward(self, x: Any) -> Any:
            if not self.training:
                return x
            assert masks is not None
            m = masks.mask(x.numel(), p)
            return x * torch.tensor(m, dtype=torch.float32).reshape(x.shape)

    return HashDropout()


def _act(torch: Any, name: str) -> Any:
    return {
        "relu": torch.nn.ReLU,
        "gelu": torch.nn.GELU,
        "tanh": torch.nn.Tanh,
        "sigmoid": torch.nn.Sigmoid,
    }[name]()


def _mlp(torch: Any, m: dict[str, Any], masks: _HashMask | None) -> Any:
    sizes = m["sizes"]
    layers: list[Any] = []
    for i in range(len(sizes) - 1):
        layers.append(torch.nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            layers.append(_act(torch, m["act"]))
            if m.get("dropout"):
                layers.append(_dropout_layer(torch, m["dropout"], masks))
    return torch.nn.Sequential(*layers)


def _embed(torch: Any, m: dict[str, Any]) -> Any:
    nn = torch.nn

    class EmbedNorm(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(m["vocab"], m["dim"])
            self.norm = nn.LayerNorm(m["dim"])
            self.head = nn.Linear(m["dim"], m["classes"])

        def forward(self, idx: Any) -> Any:
            h = self.norm(self.emb(idx))  # [B, 2, D]
            return self.head(torch.nn.functional.gelu(h.mean(dim=1)))

    return EmbedNorm()


def _attention(torch: Any, m: dict[str, Any]) -> Any:
    nn = torch.nn
    d, t = m["dim"], m["seq"]

    class TinyAttention(nn.Module):
        """One causal self-attention block: q/k/v projections, masked softmax, output
        projection with a residual and a LayerNorm, mean pooling, a classifier."""

        def __init__(self) -> None:
            super().__init__()
            self.q = nn.Linear(d, d)
            self.k = nn.Linear(d, d, bias=False)  # a key bias has gradient 0 in exact
            # arithmetic (softmax ignores a per-row shift): Adam would amplify rounding noise
            self.v = nn.Linear(d, d)
            self.o = nn.Linear(d, d)
            self.norm = nn.LayerNorm(d)
            self.head = nn.Linear(d, m["classes"])

        def forward(self, x: Any) -> Any:
            q, k, v = self.q(x), self.k(x), self.v(x)
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(d)
            future = torch.arange(t).unsqueeze(0) > torch.arange(t).unsqueeze(1)
            att = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
            h = self.norm(x + self.o(att @ v))
            return self.head(h.mean(dim=1))

    return TinyAttention()


def make_model(torch: Any, spec: dict[str, Any], masks: _HashMask | None = None) -> Any:
    m = spec["model"]
    if m["kind"] == "mlp":
        return _mlp(torch, m, masks)
    if m["kind"] == "embed":
        return _embed(torch, m)
    return _attention(torch, m)


# -- data, loss, optimizer ---------------------------------------------------------------------


def batches(spec: dict[str, Any], steps: int = STEPS) -> list[tuple[Any, Any]]:
    """Plain (x, target) lists per step."""
    m, seed = spec["model"], spec["seed"]
    out = []
    for s in range(steps):
        if m["kind"] == "mlp":
            b, n_in, n_out = m["batch"], m["sizes"][0], m["sizes"][-1]
            x = _nest(uniforms(seed, 10 * s + 1, b * n_in), [b, n_in])
            if spec["loss"] == "mse":
                y: Any = _nest(uniforms(seed, 10 * s + 2, b * n_out), [b, n_out])
            elif spec["loss"] == "ce_probs":
                raw = [abs(v) + 0.1 for v in uniforms(seed, 10 * s + 2, b * n_out)]
                rows = [raw[i * n_out : (i + 1) * n_out] for i in range(b)]
                y = [[v / sum(r) for v in r] for r in rows]
            else:
                y = integers(seed, 10 * s + 2, b, n_out)
        elif m["kind"] == "embed":
            b = m["batch"]
            x = _nest(integers(seed, 10 * s + 1, 2 * b, m["vocab"]), [b, 2])
            y = integers(seed, 10 * s + 2, b, m["classes"])
        else:
            b, t, d = m["batch"], m["seq"], m["dim"]
            x = _nest(uniforms(seed, 10 * s + 1, b * t * d), [b, t, d])
            y = integers(seed, 10 * s + 2, b, m["classes"])
        out.append((x, y))
    return out


def loss_fn(torch: Any, spec: dict[str, Any]) -> Any:
    F = torch.nn.functional
    kind = spec["loss"]
    if kind == "mse":
        return lambda out, y: F.mse_loss(out, y)
    if kind == "ce_sum":
        return lambda out, y: F.cross_entropy(out, y, reduction="sum")
    return lambda out, y: F.cross_entropy(out, y)


def make_optimizer(torch: Any, spec: dict[str, Any], model: Any) -> Any:
    o = dict(spec["optim"])
    cls = getattr(torch.optim, o.pop("name"))
    groups = o.pop("groups", None)
    if "betas" in o:
        o["betas"] = tuple(o["betas"])
    if groups is None:
        return cls(model.parameters(), **o)
    named = list(model.named_parameters())
    param_groups = []
    for g in groups:
        g = dict(g)
        prefix = g.pop("params")
        param_groups.append({"params": [p for n, p in named if n.startswith(prefix)], **g})
    return cls(param_groups, **o)


@dataclass
class Built:
    """A fixture made with one torch module: call `train_step(x, y)` once per batch."""

    torch: Any
    model: Any
    optimizer: Any
    loss_fn: Any
    batches: list[tuple[Any, Any]]
    names: list[str] = field(default_factory=list)

    def tensors(self, x: Any, y: Any) -> tuple[Any, Any]:
        return self.torch.tensor(x), self.torch.tensor(y)

    def train_step(self, x: Any, y: Any) -> Any:
        """One eager step, the same code for both: zero_grad, forward, loss, backward, step."""
        self.optimizer.zero_grad()
        loss = self.loss_fn(self.model(x), y)
        loss.backward()
        self.optimizer.step()
        return loss

    def params(self) -> dict[str, list[float]]:
        return {n: _flat(p.detach().tolist()) for n, p in self.model.named_parameters()}


def _flat(v: Any) -> list[float]:
    if isinstance(v, list):
        return [x for item in v for x in _flat(item)]
    return [v]


def build(spec: dict[str, Any], torch: Any, steps: int = STEPS) -> Built:
    """Model (with the spec's initial weights), optimizer, loss and data for one torch."""
    masks = _HashMask(spec["seed"]) if _is_real_torch(torch) else None
    model = make_model(torch, spec, masks)
    shapes = {n: list(p.shape) for n, p in model.named_parameters()}
    state = initial_state(spec, shapes)
    model.load_state_dict({n: torch.tensor(v) for n, v in state.items()})
    model.train()
    if not _is_real_torch(torch):
        torch.manual_seed(spec["seed"])  # our dropout stream: counters 0, 1, ... per call
    return Built(
        torch,
        model,
        make_optimizer(torch, spec, model),
        loss_fn(torch, spec),
        batches(spec, steps),
        list(shapes),
    )


def run(spec: dict[str, Any], torch: Any, steps: int = STEPS) -> list[dict[str, Any]]:
    """Train `steps` eager steps; per step the loss and every parameter afterwards."""
    b = build(spec, torch, steps)
    trace = []
    for x, y in b.batches:
        loss = b.train_step(*b.tensors(x, y))
        trace.append({"loss": float(loss.item()), "params": b.params()})
    return trace


async def run_async(spec: dict[str, Any], torch: Any, steps: int = STEPS) -> list[dict[str, Any]]:
    """run() through `await optimizer.step_async()` (gpulab.torch in a page without JSPI):
    the step's one run also brings back the loss and the parameters."""
    b = build(spec, torch, steps)
    trace = []
    for x, y in b.batches:
        xt, yt = b.tensors(x, y)
        b.optimizer.zero_grad()
        loss = b.loss_fn(b.model(xt), yt)
        loss.backward()
        await b.optimizer.step_async()
        trace.append({"loss": float(loss.item()), "params": b.params()})
    return trace


def reference(spec: dict[str, Any], steps: int = STEPS) -> list[dict[str, Any]]:
    """run() with real PyTorch on the CPU (natively: a test dependency)."""
    import torch

    torch.use_deterministic_algorithms(True)
    return run(spec, torch, steps)


def compare(
    ours: list[dict[str, Any]], ref: list[dict[str, Any]], rtol: float = RTOL, atol: float = ATOL
) -> list[str]:
    """Every mismatch: step, what, index, ours, torch's (empty when all match)."""
    problems = []
    if len(ours) != len(ref):
        return [f"{len(ours)} steps against torch's {len(ref)}"]
    for s, (a, b) in enumerate(zip(ours, ref, strict=True)):
        if not _close(a["loss"], b["loss"], rtol, atol):
            problems.append(f"step {s}: loss {a['loss']!r} vs torch {b['loss']!r}")
        for name, want in b["params"].items():
            got = a["params"].get(name)
            if got is None or len(got) != len(want):
                problems.append(f"step {s}: parameter {name} missing or of another size")
                continue
            bad = [
                i
                for i, (u, v) in enumerate(zip(got, want, strict=True))
                if not _close(u, v, rtol, atol)
            ]
            if bad:
                i = bad[0]
                problems.append(
                    f"step {s}: {name}[{i}] {got[i]!r} vs torch {want[i]!r} "
                    f"({len(bad)} of {len(want)} elements off)"
                )
    return problems


def max_error(ours: list[dict[str, Any]], ref: list[dict[str, Any]]) -> float:
    """The largest |ours - torch| / (1 + |torch|) over every loss and parameter (for docs)."""
    worst = 0.0
    for a, b in zip(ours, ref, strict=True):
        worst = max(worst, abs(a["loss"] - b["loss"]) / (1 + abs(b["loss"])))
        for name, want in b["params"].items():
            for u, v in zip(a["params"][name], want, strict=True):
                worst = max(worst, abs(u - v) / (1 + abs(v)))
    return worst


def _close(a: float, b: float, rtol: float, atol: float) -> bool:
    return abs(a - b) <= atol + rtol * abs(b)


def main(argv: list[str] | None = None) -> None:
    """Print each fixture's worst deviation from PyTorch as a markdown table (docs/torch.md):
    `PYTHONPATH=pylib python pylib/tests/torch_fixtures/fixtures.py [--backend wgpu]`."""
    import argparse
    import time

    import gpulab.torch as gt

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("--backend", default="cpu-python")
    args = ap.parse_args(argv)
    gt.set_backend(args.backend)
    print(f"| fixture | steps | max abs(ours - torch) / (1 + abs(torch)) | ours ({args.backend}) |")
    print("| --- | --- | --- | --- |")
    for name, spec in FIXTURES.items():
        start = time.perf_counter()
        ours = run(spec, gt)
        took = time.perf_counter() - start
        ref = reference(spec)
        ok = "" if not compare(ours, ref) else " (OUT OF TOLERANCE)"
        print(f"| {name} | {STEPS} | {max_error(ours, ref):.1e}{ok} | {took * 1e3:.0f} ms |")


if __name__ == "__main__":
    main()
