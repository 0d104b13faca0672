"""`supports(checked)`: what an executor answers before any device work (twin of the JS
backends' `supports`, `{ok, missing: [{id, op, dtype, reason}]}`).

An executor that has no kernel for an op, or for an op at a dtype, lists the node in `missing`;
`refuse(backend)` turns the first entry into GpuLabError("UNSUPPORTED", "<backend> has no
kernel for <op> [at <dtype>] (node N)", N), the message the JS backends use.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import GpuLabError
from .lowering import lowered_checked
from .protocol import CheckedGraph, CheckedNode


@dataclass
class Support:
    """The answer: ok, or the nodes an executor cannot run and why."""

    missing: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.missing

    def refuse(self, backend: str) -> None:
        """Raise UNSUPPORTED naming the first missing node; nothing when ok."""
        if self.missing:
            first = self.missing[0]
            raise GpuLabError(
                "UNSUPPORTED", f"{backend} {first['reason']} (node {first['id']})", first["id"]
            )

    def as_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "missing": list(self.missing)}


def node_dtype(node: CheckedNode) -> str:
    """The node's result dtype (float32 until the protocol carries dtypes on checked nodes)."""
    return str(getattr(node, "dtype", None) or "float32")


def check_graph(checked: CheckedGraph, has_kernel: Callable[[CheckedNode], str | None]) -> Support:
    """`has_kernel(node)` returns None when the executor can run the node, else the reason
    ("has no kernel for abs", "has no kernel for add at int32")."""
    missing = []
    for node_id in checked.order:
        node = checked.by_id[node_id]
        reason = has_kernel(node)
        if reason is not None:
            missing.append(
                {"id": node.id, "op": node.op, "dtype": node_dtype(node), "reason": reason}
            )
    return Support(missing)


FLOAT32_ONLY = ("float32",)
# Every kernel handles tensors of rank <= 4 (the rank of protocol versions 1 to 7) until it says
# otherwise (`ranks[op]`): twin of kernels.mjs DEFAULT_MAX_RANK.
DEFAULT_MAX_RANK = 4


def node_rank(node: CheckedNode, checked: CheckedGraph) -> int:
    """The highest rank among a node's result and operands."""
    return max([len(node.shape)] + [len(checked.by_id[i].shape) for i in node.operands])


def check_kernels(
    checked: CheckedGraph,
    ops: Container[str],
    dtypes: Mapping[str, Sequence[str]] | None = None,
    default: Sequence[str] = FLOAT32_ONLY,
    ranks: Mapping[str, int] | None = None,
    default_rank: int = DEFAULT_MAX_RANK,
) -> Support:
    """The usual answer: a node is supported when its op has a kernel (`ops`), every dtype it
    touches (its result and its operands') is one the kernel takes (`dtypes[op]`, else
    `default`) and no tensor of it has a rank past the kernel's (`ranks[op]`, else
    `default_rank`)."""
    table = dtypes or {}
    rank_of = ranks or {}
    # judged on what the kernels will see: zero-size tensors gone, ranks past 4 coalesced
    given = checked.by_id
    checked = lowered_checked(checked)

    def reason(node: CheckedNode) -> str | None:
        if node.op not in ops:
            return no_kernel(node.op)
        allowed = table.get(node.op, default)
        used = [node_dtype(node)] + [node_dtype(checked.by_id[i]) for i in node.operands]
        bad = next((d for d in used if d not in allowed), None)
        if bad is not None:
            return no_kernel(node.op, bad)
        rank = node_rank(node, checked)
        if rank > rank_of.get(node.op, default_rank):
            return no_kernel(node.op, f"rank {rank}")
        return None

    found = check_graph(checked, reason)
    # a reshape the lowering made is named by the graph's node that reads it
    own = [m for m in found.missing if m["id"] in given]
    return Support(own or found.missing)


def no_kernel(op: str, dtype: str | None = None) -> str:
    """The reason text of a missing kernel."""
    return f"has no kernel for {op}" + (f" at {dtype}" if dtype else "")
