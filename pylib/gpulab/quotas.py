"""Quotas for untrusted notebooks (issue 11): the Python twin of backends-js/src/quotas.mjs.

A graph's device cost from its checked graph, before any device work: memory = every live
node's tensor in 32-bit words (bool is stored as u32 on GPUs; no reuse assumed: an upper
bound), one buffer per live node, one pipeline per distinct kernel (op at dtype; sources have
none). The server (`gpulab serve`, /api/execute) refuses a graph past its quotas with LIMIT
before any work; test_quotas compares graph_cost with the JS twin on the corpus.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import GpuLabError
from .protocol import CheckedGraph
from .shapes import element_count

MIB = 1024 * 1024
# name -> (default, most an option may ask for): docs/protocol.md "Limits"
QUOTAS = {"memory_bytes": (256 * MIB, 1536 * MIB), "buffers": (4096, 4096),
          "pipelines": (256, 256)}
WHAT = {"memory_bytes": "bytes of device memory", "buffers": "buffers", "pipelines": "pipelines"}
SOURCES = ("input", "full")

# The server's cost model (issue 11, defect 14): estimated cpu-python time of a graph, from
# nanoseconds per result element of each op measured on this project's 2-core machine (1024 x
# 1024 float32 operands, the median op about 4 ns; gelu/gelu_grad evaluate erf in numpy, over
# a thousand times more), and matmul at COST_NS_PER_FLOP per multiply-add pair. An upper-ish
# estimate, not a promise: it refuses the request that would hold the server for minutes.
COST_NS = {"gelu": 1300.0, "gelu_grad": 2700.0, "softmax": 120.0, "log_softmax": 40.0,
           "cross_entropy": 60.0, "cross_entropy_grad": 60.0, "adam_m": 35.0, "adam_v": 20.0,
           "adam_update": 60.0, "life": 40.0}
COST_NS_DEFAULT = 15.0
COST_NS_PER_FLOP = 0.1
MAX_COST_S = 10.0  # the server's default (Quotas.max_cost_s)


def graph_cost(checked: CheckedGraph) -> dict[str, int]:
    """{memory_bytes, buffers, pipelines} of a checked graph (see the module doc)."""
    memory = 0
    kernels: set[tuple[str, str]] = set()
    for node_id in checked.order:
        node = checked.by_id[node_id]
        memory += element_count(node.shape) * 4
        if node.op not in SOURCES:
            kernels.add((node.op, node.dtype))
    return {"memory_bytes": memory, "buffers": len(checked.order), "pipelines": len(kernels)}


def graph_cost_s(checked: CheckedGraph) -> float:
    """Estimated cpu-python seconds of a checked graph (COST_NS; matmul by its flops)."""
    total = 0.0
    for node_id in checked.order:
        node = checked.by_id[node_id]
        if node.op in SOURCES:
            continue
        count = element_count(node.shape)
        if node.op == "matmul":
            k = checked.by_id[node.operands[0]].shape[-1]
            total += 2.0 * count * k * COST_NS_PER_FLOP
        else:
            total += count * COST_NS.get(node.op, COST_NS_DEFAULT)
    return total * 1e-9


@dataclass(frozen=True)
class Quotas:
    """Per-graph quotas (a server setting); each an integer from 1 to its maximum."""

    memory_bytes: int = QUOTAS["memory_bytes"][0]
    buffers: int = QUOTAS["buffers"][0]
    pipelines: int = QUOTAS["pipelines"][0]
    max_cost_s: float = MAX_COST_S  # estimated cpu-python seconds of one graph (graph_cost_s)

    def __post_init__(self) -> None:
        if not isinstance(self.max_cost_s, int | float) or not self.max_cost_s > 0:
            raise GpuLabError("VALIDATION", f"max_cost_s must be a number > 0, got "
                                            f"{self.max_cost_s!r}")
        for name, (_, most) in QUOTAS.items():
            value: Any = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
                raise GpuLabError("VALIDATION", f"quota {name} must be an integer from 1 to "
                                                f"{most}, got {value!r}")

    def check(self, checked: CheckedGraph, what: str = "the graph") -> None:
        """LIMIT naming the quota when the graph needs more than it allows."""
        cost = graph_cost(checked)
        for name in QUOTAS:
            if cost[name] > getattr(self, name):
                raise GpuLabError("LIMIT", f"{what}: the graph needs {cost[name]} {WHAT[name]}, "
                                           f"past the quota of {getattr(self, name)} ({name})")
        seconds = graph_cost_s(checked)
        if seconds > self.max_cost_s:
            raise GpuLabError("LIMIT", f"{what}: the graph would take about {seconds:.0f} s on "
                                       f"cpu-python, past the limit of {self.max_cost_s:g} s "
                                       "(max_cost_s; cost model: gpulab.quotas.COST_NS)")
