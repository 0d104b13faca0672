"""PyTorch's own op conformance data as a test lane of gpulab.torch.

`torch.testing._internal.common_methods_invocations.op_db` holds an `OpInfo` per op with its
sample inputs. For every OpInfo whose name gpulab.torch claims (its public surface, which the
op library's declarations and the frontend's glue build: `claimed()`, never a hand list), each
float32 sample runs through gpulab.torch and through PyTorch on the CPU:

- forward: every output against PyTorch's float32 result and a float64 oracle (the sample cast
  to float64): a float output passes when it is as close to the oracle as PyTorch's own float32
  result is (8x, plus 1e-5 absolute and relative slack); integer and bool outputs must be equal;
- gradient (ops OpInfo marks `supports_autograd`): d sum(out * g) / d input for every float
  input that requires grad, g a fixed pseudo-random cotangent, judged the same way.

A sample's verdict: `pass`, `out of subset` (the sample asks for what gpulab.torch documents
as absent, a dtype other than float32 / int64 / int32 / bool, or its result is random by
definition: `RANDOM_SAMPLES`), `refused` (gpulab.torch.Unsupported, or torch's own error on
the sample), `error` (any other exception from gpulab.torch: an unclean refusal) or `wrong` (a
value, shape or dtype that differs: the worst defect). An out-of-subset sample is listed per op
and left out of the pass rate's denominator; a `dtype=` argument outside the subset is still
given to gpulab.torch, and only its refusal (Unsupported) makes the sample out of subset: a
result computed for it is `wrong`. Random ops (`RANDOM`) are left out of the lane altogether:
their values are our stream, not torch's (docs/torch.md).

    python -m gpulab.conformance.torch_opinfo [--backend cpu-python|wgpu] [--ops a,b] [--write-docs]

prints the per-op counts; `--write-docs` puts the table into docs/torch.md between its
`opinfo-lane` markers, with the machine, the command and the date.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import math
import os
import platform
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

import gpulab.torch as gt
from gpulab.torch._refuse import Unsupported, supported

# outputs drawn from a random stream: ours is not torch's, so no value can be compared
RANDOM = frozenset(
    {"randn", "randn_like", "rand_like", "randint", "empty", "multinomial", "nn.functional.dropout"}
)
# samples of a claimed op whose result is random by definition: (predicate, reason)
RANDOM_SAMPLES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "nn.functional.scaled_dot_product_attention": (
        lambda s: float(s.kwargs.get("dropout_p", 0.0)) > 0.0,
        "random: dropout_p > 0",
    ),
}
OUT = "out of subset"
VERDICTS = ("pass", OUT, "refused", "error", "wrong")
FUNCTIONAL = "nn.functional."
SLACK = 1e-5  # absolute and relative slack on top of 8x PyTorch's own float32 error


@dataclass
class Tally:
    """One OpInfo's verdict counts, with the first message of each non-pass verdict."""

    name: str
    declared: bool
    counts: Counter = field(default_factory=Counter)
    first: dict[str, str] = field(default_factory=dict)
    out_reasons: Counter = field(default_factory=Counter)  # why samples are out of subset

    def add(self, verdict: str, why: str = "") -> None:
        self.counts[verdict] += 1
        if verdict == OUT:
            self.out_reasons[why] += 1
        elif verdict != "pass":
            self.first.setdefault(verdict, why[:300])

    @property
    def in_subset(self) -> int:
        return sum(self.counts.values()) - self.counts[OUT]


def op_db() -> list[Any]:
    from torch.testing._internal.common_methods_invocations import op_db as db

    return list(db)


def full_name(op: Any) -> str:
    return op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")


def _declared_names() -> set[str]:
    """The torch names the op library (gpulab.functional) declares."""
    from .. import functional as GF

    names = set()
    for entry in GF.entries():
        names.update(entry.names("torch"), entry.names("method"))
        names.update(FUNCTIONAL + n for n in entry.names("functional"))
    return names


def claimed() -> list[tuple[Any, bool]]:
    """(OpInfo, declared by the op library) for each float32 OpInfo gpulab.torch names."""
    torch_names, methods = set(supported("torch")), set(supported("tensor"))
    functional = set(supported("nn.functional"))
    declared = _declared_names()
    out = []
    for op in op_db():
        if torch.float32 not in op.supported_dtypes("cpu") or op.name in RANDOM:
            continue
        name = op.name
        if name.startswith(FUNCTIONAL):
            ours = name[len(FUNCTIONAL) :] in functional
        else:
            ours = name in torch_names or name in methods
        if ours:
            out.append((op, name in declared))
    return out


# -- moving a sample between the two libraries ----------------------------------------------

DTYPES = {
    torch.float32: gt.float32,
    torch.int64: gt.int64,
    torch.int32: gt.int32,
    torch.bool: gt.bool,
}


class NotInSubset(Exception):
    """A sample holding a tensor of a dtype gpulab.torch has no form for (float64, uint8)."""


def absent_dtype(value: Any) -> str:
    """The out-of-subset reason for a dtype gpulab.torch documents as absent."""
    return f"{str(value).removeprefix('torch.')} (a dtype gpulab.torch lacks)"


def to_ours(
    value: Any, leaves: list[tuple[torch.Tensor, gt.Tensor]], asked: list[str] | None = None
) -> Any:
    """A sample argument in gpulab.torch's terms; tensors that require grad are recorded in
    `leaves` (torch's, ours) for the gradient check. A torch dtype gpulab.torch lacks is passed
    on as PyTorch's own object (gpulab.torch must refuse it) and recorded in `asked`."""
    if isinstance(value, torch.Tensor):
        if value.dtype not in DTYPES:
            raise NotInSubset(absent_dtype(value.dtype))
        grad = value.requires_grad and value.dtype == torch.float32
        ours = gt.tensor(value.detach().tolist(), dtype=DTYPES[value.dtype], requires_grad=grad)
        if list(ours.shape) != list(value.shape):  # tolist() of a zero-size tensor drops axes
            ours = ours.reshape(tuple(value.shape))
        if grad:
            leaves.append((value, ours))
        return ours
    if isinstance(value, torch.dtype):
        if value not in DTYPES:
            if asked is not None:
                asked.append(absent_dtype(value))
            return value
        return DTYPES[value]
    if isinstance(value, torch.device):
        return str(value)
    if isinstance(value, torch.Size):
        return tuple(value)
    if isinstance(value, list | tuple):
        return type(value)(to_ours(v, leaves, asked) for v in value)
    if isinstance(value, dict):
        return {k: to_ours(v, leaves, asked) for k, v in value.items()}
    return value


def to_double(value: Any) -> Any:
    """The sample for the float64 oracle: float32 tensors as float64 leaves."""
    if isinstance(value, torch.Tensor):
        if value.dtype == torch.float32:
            return value.detach().double().requires_grad_(value.requires_grad)
        return value
    if isinstance(value, list | tuple):
        return type(value)(to_double(v) for v in value)
    if isinstance(value, dict):
        return {k: to_double(v) for k, v in value.items()}
    if value is torch.float32:
        return torch.float64
    return value


def flat_outputs(out: Any) -> list[Any]:
    if isinstance(out, list | tuple):
        return [x for o in out for x in flat_outputs(o)]
    return [out]


def ours_as_torch(value: Any) -> Any:
    """One of our outputs as a torch tensor (values, shape, dtype) or a Python value."""
    if isinstance(value, gt.Tensor):
        dtype = {v: k for k, v in DTYPES.items()}[value.dtype]
        return torch.tensor(value.tolist(), dtype=dtype).reshape(tuple(value.shape))
    return value


# -- judging -----------------------------------------------------------------------------


def judge(ours: Any, ref32: Any, ref64: Any, what: str) -> str | None:
    """None when `ours` matches, else what differs."""
    if isinstance(ref32, torch.Tensor):
        if not isinstance(ours, torch.Tensor):
            return f"{what}: {type(ours).__name__}, torch gives a tensor"
        if tuple(ours.shape) != tuple(ref32.shape):
            return f"{what}: shape {tuple(ours.shape)}, torch {tuple(ref32.shape)}"
        if ours.dtype != ref32.dtype:
            return f"{what}: dtype {ours.dtype}, torch {ref32.dtype}"
        if not ref32.dtype.is_floating_point:
            bad = ours != ref32
            if bool(bad.any()):
                return f"{what}: {int(bad.sum())} of {ours.numel()} elements differ"
            return None
        exact = ref64.double() if isinstance(ref64, torch.Tensor) else ref32.double()
        got = ours.double()
        allowed = 8 * (ref32.double() - exact).abs() + SLACK + SLACK * exact.abs()
        same_nan = got.isnan() & exact.isnan()
        same_inf = (got == exact) & exact.isinf()
        bad = ~(((got - exact).abs() <= allowed) | same_nan | same_inf)
        if bool(bad.any()):
            i = int(bad.flatten().nonzero()[0])
            return (
                f"{what}: {int(bad.sum())} of {ours.numel()} elements differ, e.g. "
                f"{got.flatten()[i].item():.7g} vs {exact.flatten()[i].item():.7g}"
            )
        return None
    if isinstance(ref32, float) and isinstance(ours, float | int):
        exact = float(ref64) if isinstance(ref64, float | int) else ref32
        if math.isclose(ours, exact, rel_tol=1e-5, abs_tol=1e-5) or ours == exact:
            return None
        return f"{what}: {ours} vs {exact}"
    if isinstance(ours, torch.Size | tuple | list) and isinstance(ref32, torch.Size | tuple):
        return None if tuple(ours) == tuple(ref32) else f"{what}: {ours} vs {ref32}"
    return None if ours == ref32 else f"{what}: {ours!r} vs {ref32!r}"


# -- running one sample --------------------------------------------------------------------


# OpInfos whose `op` is a lambda reordering or wrapping torch's call: the same call on ours
ADAPTERS: dict[str, Callable[..., Any]] = {
    "where": lambda self, condition, other, **kw: gt.where(condition, self, other, **kw),
    "nn.functional.embedding": lambda weight, idx, **kw: gt.nn.functional.embedding(
        idx, weight, **kw
    ),
    "zero_": lambda x: x.clone().zero_(),
    "T": lambda x: x.T,
    "mT": lambda x: x.mT,
}


def _callable(op: Any) -> Callable[..., Any]:
    """gpulab.torch's form of the OpInfo: torch.X, else Tensor.X, else nn.functional.X."""
    name = op.name
    if name in ADAPTERS:
        return ADAPTERS[name]
    if name.startswith(FUNCTIONAL):
        return getattr(gt.nn.functional, name[len(FUNCTIONAL) :])
    fn = getattr(gt, name) if name in supported("torch") else None
    if callable(fn) and not isinstance(fn, gt.dtype):
        return fn
    return lambda t, *a, **k: getattr(t, name)(*a, **k)


def _reference(op: Any, sample: Any) -> Any:
    return op(sample.input, *sample.args, **sample.kwargs)


def run_sample(op: Any, sample: Any, grad: bool) -> tuple[str, str]:
    """(verdict, why) for one sample."""
    random = RANDOM_SAMPLES.get(full_name(op))
    if random and random[0](sample):
        return OUT, random[1]
    leaves: list[tuple[torch.Tensor, gt.Tensor]] = []
    asked: list[str] = []
    try:
        args = to_ours((sample.input, *sample.args), leaves, asked)
        kwargs = to_ours(dict(sample.kwargs), leaves, asked)
    except NotInSubset as err:
        return OUT, str(err)
    try:
        ref32 = _reference(op, sample)
    except Exception:  # noqa: BLE001 (a sample torch itself refuses: no oracle)
        return "refused", "torch refuses the sample"
    fn = _callable(op)
    try:
        ours = fn(*args, **kwargs)
        ours_flat = [ours_as_torch(o) for o in flat_outputs(ours)]
    except Unsupported as err:
        if asked and asked[0].split()[0] in str(err):  # refused by name, as it must be
            return OUT, asked[0]
        return "refused", str(err).split("; supported:")[0]
    except Exception as err:  # noqa: BLE001 (every other exception is judged, not hidden)
        return "error", f"{type(err).__name__}: {err}"
    if asked:
        return "wrong", f"computed a result for {asked[0]} instead of refusing it"
    sample64 = sample.transform(to_double) if hasattr(sample, "transform") else sample
    try:
        ref64 = _reference(op, sample64)
    except Exception:  # noqa: BLE001 (no float64 kernel: PyTorch's float32 is the oracle)
        ref64 = ref32
    refs32, refs64 = flat_outputs(ref32), flat_outputs(ref64)
    if len(ours_flat) != len(refs32):
        return "wrong", f"{len(ours_flat)} outputs, torch {len(refs32)}"
    for i, (o, r32, r64) in enumerate(zip(ours_flat, refs32, refs64, strict=True)):
        why = judge(o, r32, r64, f"output {i}")
        if why:
            return "wrong", why
    if grad and leaves:
        return _judge_gradients(op, sample, sample64, ours, ref32, leaves)
    return "pass", ""


def _cotangents(refs: list[Any]) -> list[torch.Tensor | None]:
    gen = torch.Generator().manual_seed(0)
    return [
        torch.randn(r.shape, generator=gen)
        if isinstance(r, torch.Tensor) and r.dtype == torch.float32 and r.requires_grad
        else None
        for r in refs
    ]


def _torch_grads(outs: list[Any], gs: list[Any], inputs: list[torch.Tensor]) -> list[Any]:
    pairs = [(o, g.to(o.dtype)) for o, g in zip(outs, gs, strict=True) if g is not None]
    got = torch.autograd.grad(
        [o for o, _ in pairs], inputs, [g for _, g in pairs], allow_unused=True
    )
    return [torch.zeros_like(x) if g is None else g for g, x in zip(got, inputs, strict=True)]


def _judge_gradients(
    op: Any, sample: Any, sample64: Any, ours: Any, ref32: Any, leaves: list[Any]
) -> tuple[str, str]:
    refs32 = flat_outputs(ref32)
    gs = _cotangents(refs32)
    if not any(g is not None for g in gs):
        return "pass", ""
    inputs32 = [t for t, _ in leaves]
    grads32 = _torch_grads(refs32, gs, inputs32)
    inputs64: list[torch.Tensor] = []
    sample64.transform(
        lambda t: inputs64.append(t) or t if isinstance(t, torch.Tensor) and t.requires_grad else t
    )
    try:
        grads64 = _torch_grads(flat_outputs(_reference(op, sample64)), gs, inputs64)
    except Exception:  # noqa: BLE001
        grads64 = grads32
    if len(grads64) != len(grads32):
        grads64 = grads32
    ours_out = flat_outputs(ours)
    try:
        loss = None
        for o, g in zip(ours_out, gs, strict=True):
            if g is None:
                continue
            term = (o * gt.tensor(g.tolist(), dtype=gt.float32).reshape(tuple(g.shape))).sum()
            loss = term if loss is None else loss + term
        got = gt.autograd.grad(loss, [t for _, t in leaves], allow_unused=True)
        ours_grads = [
            torch.zeros(x.shape) if g is None else ours_as_torch(g)
            for g, (x, _) in zip(got, leaves, strict=True)
        ]
    except Unsupported as err:
        return "refused", "gradient: " + str(err).split("; supported:")[0]
    except Exception as err:  # noqa: BLE001
        return "error", f"gradient: {type(err).__name__}: {err}"
    for i, (o, r32, r64) in enumerate(zip(ours_grads, grads32, grads64, strict=True)):
        why = judge(o, r32, r64, f"gradient {i}")
        if why:
            return "wrong", why
    return "pass", ""


@contextlib.contextmanager
def _cpu_only() -> Iterator[None]:
    """OpInfo's sample generators add a device='cuda' sample (the *_like ops) when CUDA is
    available: on a CUDA machine the lane's samples stay on the CPU, as on any other."""
    saved = torch.cuda.is_available
    torch.cuda.is_available = lambda: False  # type: ignore[assignment]
    try:
        yield
    finally:
        torch.cuda.is_available = saved  # type: ignore[assignment]


def samples(op: Any) -> Iterator[Any]:
    """The OpInfo's float32 samples, made on the CPU."""
    with _cpu_only():
        made = list(op.sample_inputs("cpu", torch.float32, requires_grad=op.supports_autograd))
    yield from made


def run_op(op: Any, declared: bool) -> Tally:
    tally = Tally(full_name(op), declared)
    try:
        for sample in samples(op):
            verdict, why = run_sample(op, sample, op.supports_autograd)
            tally.add(verdict, why)
    except Exception as err:  # noqa: BLE001 (OpInfo's sample generator itself failing)
        tally.add("error", f"samples: {type(err).__name__}: {err}")
    return tally


def run(names: set[str] | None = None) -> list[Tally]:
    out = []
    for op, declared in claimed():
        if names is None or full_name(op) in names or op.name in names:
            out.append(run_op(op, declared))
    return out


# -- report ----------------------------------------------------------------------------------


def table(tallies: list[Tally]) -> str:
    rows = [
        (
            "| OpInfo | op library | samples | out of subset | pass | refused | error | wrong "
            "| first non-pass |"
        ),
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for t in sorted(tallies, key=lambda t: t.name):
        c = t.counts
        why = next((t.first[v] for v in ("wrong", "error", "refused") if v in t.first), "")
        if not why and t.out_reasons:
            why = "out of subset: " + "; ".join(sorted(t.out_reasons))
        why = re.sub(r"\s+", " ", why).replace("|", "\\|")[:160]
        rows.append(
            f"| `{t.name}` | {'yes' if t.declared else ''} | {sum(c.values())} | {c[OUT]} "
            f"| {c['pass']} | {c['refused']} | {c['error']} | {c['wrong']} | {why} |"
        )
    total, n, inside = totals(tallies)
    rows.append(
        f"| **all {len(tallies)}** | | {n} | {total[OUT]} | {total['pass']} "
        f"({100 * total['pass'] / max(inside, 1):.1f}% of {inside} in subset) "
        f"| {total['refused']} | {total['error']} | {total['wrong']} | |"
    )
    return "\n".join(rows)


def totals(tallies: list[Tally]) -> tuple[Counter, int, int]:
    """(verdict counts over every op, samples, samples in the subset)."""
    total: Counter = Counter()
    for t in tallies:
        total.update(t.counts)
    n = sum(total.values())
    return total, n, n - total[OUT]


def summary(tallies: list[Tally]) -> str:
    """One line: pass / in-subset, and the out-of-subset samples by reason."""
    total, n, inside = totals(tallies)
    reasons: Counter = Counter()
    for t in tallies:
        reasons.update(t.out_reasons)
    out = ", ".join(f"{k}: {v}" for k, v in sorted(reasons.items(), key=lambda kv: -kv[1]))
    return (
        f"{total['pass']} of {inside} in-subset samples pass "
        f"({100 * total['pass'] / max(inside, 1):.1f}%), {total['wrong']} wrong, "
        f"{total['refused']} refused, {total['error']} errors; {total[OUT]} of {n} samples "
        f"out of subset ({out or 'none'})."
    )


def where_it_ran(backend: str) -> str:
    """The backend a one-node graph runs on through gpulab.host with the lane's backend
    name, and for wgpu its adapter (name, API, type) and whether it is software."""
    from ..graph import Graph
    from ..native.adapter import describe

    g = Graph()
    result = g.run(backend=backend, probe=g.full([1], 1.0) + 1.0)
    stats = result.get("stats", {})
    text = result["backend"]
    if stats.get("adapter"):
        text += f", adapter {describe(stats['adapter'])}"
        text += ", software" if stats.get("software") else ", hardware"
    if stats.get("fallback"):
        text += f", fallback: {stats['fallback']}"
    return text


def write_docs(text: str, path: Path) -> None:
    doc = path.read_text()
    begin, end = "<!-- opinfo-lane:begin -->", "<!-- opinfo-lane:end -->"
    if begin not in doc:
        raise SystemExit(f"{path}: no {begin} marker")
    head, rest = doc.split(begin, 1)
    _, tail = rest.split(end, 1)
    path.write_text(f"{head}{begin}\n{text}\n{end}{tail}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", default="cpu-python")
    parser.add_argument("--ops", help="comma-separated OpInfo names (default: every claimed)")
    parser.add_argument("--write-docs", action="store_true")
    ns = parser.parse_args(argv)
    gt.set_backend(ns.backend)
    ran_on = where_it_ran(ns.backend)
    names = set(ns.ops.split(",")) if ns.ops else None
    tallies = run(names)
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    cmd = " ".join(["python -m gpulab.conformance.torch_opinfo", *(argv or sys.argv[1:])])
    head = (
        f"Measured {when} on {platform.node() or 'this machine'} ({os.cpu_count()} cores, "
        f"torch {torch.__version__}), backend {ran_on}; command: `{cmd}`.\n\n"
        f"{summary(tallies)}\n\n"
    )
    print(head + table(tallies))
    if ns.write_docs:
        write_docs(head + table(tallies), Path(__file__).resolve().parents[3] / "docs" / "torch.md")
    return 1 if any(t.counts["wrong"] for t in tallies) else 0


if __name__ == "__main__":
    raise SystemExit(main())
