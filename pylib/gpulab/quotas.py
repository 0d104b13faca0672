"""Quotas for untrusted notebooks: the Python twin of backends-js/src/quotas.mjs.

A graph's device cost from its checked graph, before any device work: memory = every live
node's tensor in 32-bit words (bool is stored as u32 on GPUs; no reuse assumed: an upper
bound), one buffer per live node, one pipeline per distinct kernel (op at dtype; sources have
none). The server (`gpulab serve`, /api/execute) refuses a graph past its quotas with LIMIT
before any work; test_quotas compares graph_cost with the JS twin on the corpus.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import optable
from .errors import GpuLabError
from .protocol import CheckedGraph
from .shapes import element_count
from .shapes_conv import window_taps

MIB = 1024 * 1024
# name -> (default, most an option may ask for): docs/protocol.md "Limits"
QUOTAS = {"memory_bytes": (256 * MIB, 1536 * MIB), "buffers": (4096, 4096), "pipelines": (256, 256)}
WHAT = {"memory_bytes": "bytes of device memory", "buffers": "buffers", "pipelines": "pipelines"}
SOURCES = ("input", "full")

# The cost model (docs/protocol.md "Cost model"), the op table's cost_model, read by both languages
# (JS twin: backends-js/src/cost.mjs graphCostS, compared on the corpus): estimated seconds of one
# evaluation on a CPU backend, ns per result element of each op (measured: on cpu-python the median
# op about 4 ns, gelu/gelu_grad, which evaluate erf in numpy, over a thousand times more) and per
# flop for matmul-like ops. An upper-ish estimate, not a promise: it refuses the request that would
# hold the server for minutes.
COST_MODEL: dict[str, Any] = optable.load()["cost_model"]
FLOP_OPS = frozenset(COST_MODEL["flop_ops"])
WINDOW_OPS = frozenset(COST_MODEL["window_ops"])
COST_NS: dict[str, float] = COST_MODEL["backends"]["cpu-python"]["ns_per_element"]
MAX_COST_S = float(COST_MODEL["backends"]["cpu-python"]["limit_s"])  # Quotas.max_cost_s
# The server's per-request deadline (Quotas.deadline_s): the estimate may be off (a matmul
# recomputed in the protocol's k order takes about twice its estimate), hence 3x the limit.
DEADLINE_S = 30.0


def _node_bytes(node: Any) -> int:
    """A node's device memory: its tensor in 32-bit words; a student's wgsl node holds every
    result it declares, and wgsl_output is a view of one of them."""
    if node.op == "wgsl":
        return sum(element_count(r["shape"]) * 4 for r in node.attrs["results"])
    return 0 if node.op == "wgsl_output" else element_count(node.shape) * 4


def graph_cost(checked: CheckedGraph) -> dict[str, int]:
    """{memory_bytes, buffers, pipelines} of a checked graph (see the module doc)."""
    memory = 0
    kernels: set[tuple[str, str]] = set()
    for node_id in checked.order:
        node = checked.by_id[node_id]
        memory += _node_bytes(node)
        if node.op == "wgsl":  # one pipeline per student source
            kernels.add(("wgsl", node.attrs["source"]))
        elif node.op not in SOURCES and node.op != "wgsl_output":
            kernels.add((node.op, node.dtype))
    return {"memory_bytes": memory, "buffers": len(checked.order), "pipelines": len(kernels)}


def graph_cost_s(checked: CheckedGraph, backend: str = "cpu-python") -> float | None:
    """Estimated seconds of one evaluation of a checked graph on a backend (the op table's
    cost_model; None for a backend without one: the GPUs)."""
    model = COST_MODEL["backends"].get(backend)
    if model is None:
        return None
    per_element = model["ns_per_element"]
    total = 0.0
    for node_id in checked.order:
        node = checked.by_id[node_id]
        if node.op in SOURCES:
            continue
        count = element_count(node.shape)
        if node.op in FLOP_OPS:
            k = checked.by_id[node.operands[0]].shape[-1]
            total += 2 * count * k * model["ns_per_flop"]
        elif node.op in WINDOW_OPS:  # conv2d, the pools, resize: K = the taps per result
            shapes = [checked.by_id[ref].shape for ref in node.operands]
            total += 2 * count * window_taps(node.op, shapes, node.attrs) * model["ns_per_flop"]
        else:
            total += count * per_element.get(node.op, per_element["default"])
    return total * 1e-9


@dataclass(frozen=True)
class Quotas:
    """Per-graph quotas (a server setting); each an integer from 1 to its maximum."""

    memory_bytes: int = QUOTAS["memory_bytes"][0]
    buffers: int = QUOTAS["buffers"][0]
    pipelines: int = QUOTAS["pipelines"][0]
    max_cost_s: float = MAX_COST_S  # estimated cpu-python seconds of one graph (graph_cost_s)
    deadline_s: float = DEADLINE_S  # cpu-python stops between nodes past it (cpu/deadline.py)

    def __post_init__(self) -> None:
        for name in ("max_cost_s", "deadline_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise GpuLabError("VALIDATION", f"{name} must be a number > 0, got {value!r}")
        for name, (_, most) in QUOTAS.items():
            value: Any = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
                raise GpuLabError(
                    "VALIDATION", f"quota {name} must be an integer from 1 to {most}, got {value!r}"
                )

    def check(self, checked: CheckedGraph, what: str = "the graph") -> None:
        """LIMIT naming the quota when the graph needs more than it allows."""
        cost = graph_cost(checked)
        for name in QUOTAS:
            if cost[name] > getattr(self, name):
                raise GpuLabError(
                    "LIMIT",
                    f"{what}: the graph needs {cost[name]} {WHAT[name]}, "
                    f"past the quota of {getattr(self, name)} ({name})",
                )
        seconds = graph_cost_s(checked) or 0.0
        if seconds > self.max_cost_s:
            raise GpuLabError(
                "LIMIT",
                f"{what}: the graph would take about {seconds:.0f} s on "
                f"cpu-python, past the limit of {self.max_cost_s:g} s "
                "(max_cost_s; cost model: the op table's cost_model)",
            )
