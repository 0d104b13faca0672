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


@dataclass(frozen=True)
class Quotas:
    """Per-graph quotas (a server setting); each an integer from 1 to its maximum."""

    memory_bytes: int = QUOTAS["memory_bytes"][0]
    buffers: int = QUOTAS["buffers"][0]
    pipelines: int = QUOTAS["pipelines"][0]

    def __post_init__(self) -> None:
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
