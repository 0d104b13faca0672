"""The cross-lane bitwise check: the same case gives the same bits on every lane that ran it.

The protocol promises identical bits on every backend for the ops of tolerance class `exact`
(docs/protocol.md "Numerics"); integer and bool results are exact whatever the class. For every
case and every output of such an op, the bits of all lanes that produced the output are compared
(float32 by their 32 bits, so +0 and -0 differ; any NaN equals any NaN, as the exact class says:
the protocol fixes no NaN payload). A difference fails the run, and the report names the op, the
case, the output, the two lanes and the first element that differs. Outputs of the other classes
are compared too, for information only: they may differ within their tolerance.

An exact op is a function of its operands' bits, so an exact output is gated only when its
operands are the same bits on every lane: sources, outputs that agree, or unread exact nodes fed
alike. In a chain an exact node downstream of a matmul is fed each lane's own values (equal
within the matmul class, not in bits), so there it is compared for information only, as the
conformance judge checks each chain node from the values the lane fed it.

A lane takes part in a case when it returned outputs for it (an error or a refusal lanes.json
expects leaves it out), so the check never compares fewer than two results.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from .executors import RawResult
from .reference import OP_TABLE, operand_ids


@dataclass
class Difference:
    """The first element where two lanes disagree."""

    case: str
    output: str
    lanes: tuple[str, str]
    index: int  # flat index (-1: shape or dtype differ)
    values: tuple[str, str]  # each lane's element (bits and value), or its shape/dtype

    def describe(self) -> str:
        where = f"{self.case} {self.output}" + (f"[{self.index}]" if self.index >= 0 else "")
        a, b = self.lanes
        return f"{where}: {a} {self.values[0]} vs {b} {self.values[1]}"


@dataclass
class OpBits:
    """One op's verdict across lanes (cases keyed by their op, "chain" included)."""

    op: str
    lanes: list[str] = field(default_factory=list)  # lanes that produced some compared output
    exact_outputs: int = 0  # exact-class output tensors compared on two lanes or more
    exact_differing: int = 0
    other_outputs: int = 0  # outputs of other classes compared (information only)
    other_differing: int = 0
    first: Difference | None = None  # the first exact difference (else the first other one)

    @property
    def gated(self) -> bool:
        """Whether the op has exact outputs that two lanes or more produced."""
        return self.exact_outputs > 0

    @property
    def passed(self) -> bool:
        return self.exact_differing == 0

    def summary(self) -> str:
        """The report's cell: bit-identical, or the first difference."""
        n = len(self.lanes)
        if self.exact_differing:
            return (
                f"DIFFER: {self.exact_differing} of {self.exact_outputs} exact outputs; "
                f"first {self.first.describe() if self.first else '?'}"
            )
        if self.gated and self.other_differing:
            return (
                f"bit-identical exact outputs ({n} lanes); {self.other_differing} other "
                "outputs differ within tolerance"
            )
        if self.gated:
            return f"bit-identical ({n} lanes)"
        if self.other_outputs:
            same = "identical" if not self.other_differing else "not bit-identical"
            return f"{same} ({n} lanes; not exact, not gated)"
        return "-"


def is_exact_output(op: str, dtype: np.dtype) -> bool:
    """An output the protocol promises the same bits for: an exact op, or integer data."""
    return OP_TABLE["ops"][op]["tolerance"] == "exact" or dtype.kind in "iub"


def first_difference(a: np.ndarray, b: np.ndarray) -> tuple[int, str, str] | None:
    """None when the bits agree (any NaN equals any NaN), else (index, a's, b's element)."""
    if a.dtype.newbyteorder("=") != b.dtype.newbyteorder("=") or a.shape != b.shape:
        return -1, f"{a.dtype.name}{list(a.shape)}", f"{b.dtype.name}{list(b.shape)}"
    fa, fb = a.reshape(-1), b.reshape(-1)
    if fa.dtype.kind == "f":
        ua, ub = fa.view(f"u{fa.dtype.itemsize}"), fb.view(f"u{fb.dtype.itemsize}")
        same = (ua == ub) | (np.isnan(fa) & np.isnan(fb))
    else:
        same = fa == fb
    if same.all():
        return None
    i = int(np.argmin(same))
    return i, _element(fa, i), _element(fb, i)


def _element(flat: np.ndarray, i: int) -> str:
    value = flat[i]
    if flat.dtype.kind == "f":
        bits = int(flat[i : i + 1].view(f"u{flat.dtype.itemsize}")[0])
        return f"0x{bits:0{flat.dtype.itemsize * 2}x} ({float(value)!r})"
    return str(int(value))


def compare_lanes(
    cases: Sequence[Mapping],
    runs: Mapping[str, Mapping[str, RawResult]],
    skip: Mapping[str, set[str]] | None = None,
) -> dict[str, OpBits]:
    """Compare every output of every case across the lanes in `runs` (executor -> results).

    skip: per executor, case names to leave out (refusals lanes.json expects).
    """
    skip = skip or {}
    by_op: dict[str, OpBits] = {}
    for case in cases:
        bits = by_op.setdefault(case["op"], OpBits(case["op"]))
        produced = {
            lane: raw.outputs
            for lane, results in runs.items()
            if (raw := results.get(case["name"])) is not None
            and raw.error is None
            and case["name"] not in skip.get(lane, set())
        }
        if len(produced) < 2:
            continue
        _compare_case(case, produced, bits)
    return by_op


def _compare_case(
    case: Mapping, produced: Mapping[str, Mapping[str, np.ndarray]], bits: OpBits
) -> None:
    graph = case["graph"]
    nodes = {n["id"]: n for n in graph["nodes"]}
    lanes = list(produced)
    bits.lanes += [lane for lane in lanes if lane not in bits.lanes]
    outs = [
        (o["name"], o["id"])
        for o in graph["outputs"]
        if all(o["name"] in produced[lane] for lane in lanes)
    ]
    diffs = {nid: _first_across(case["name"], name, produced, lanes) for name, nid in outs}
    agreed = _agreed_nodes(nodes, diffs)
    for name, nid in outs:
        node = nodes[nid]
        fed_alike = all(i in agreed for i in operand_ids(node))
        exact = fed_alike and is_exact_output(node["op"], produced[lanes[0]][name].dtype)
        _count(bits, exact, diffs[nid])


def _first_across(
    case: str, output: str, produced: Mapping[str, Mapping[str, np.ndarray]], lanes: Sequence[str]
) -> Difference | None:
    """The first lane that disagrees with the first lane on this output, or None."""
    base = produced[lanes[0]][output]
    for other in lanes[1:]:
        found = first_difference(base, produced[other][output])
        if found is not None:
            return Difference(case, output, (lanes[0], other), *_split(found))
    return None


def _agreed_nodes(nodes: Mapping[int, Mapping], diffs: Mapping[int, Difference | None]) -> set[int]:
    """The nodes whose values are the same bits on every lane: sources, outputs that agree,
    and unread exact nodes fed only by such nodes. An exact op is a function of its operands'
    bits, so only an exact output fed alike must agree: in a chain, an exact node downstream
    of a matmul is fed each lane's own (within tolerance) values and may differ."""
    agreed: set[int] = set()
    decided: set[int] = set()
    for start in nodes:
        stack = [start]
        while stack:  # operands first, without recursion (chains are long)
            nid = stack[-1]
            pending = [i for i in operand_ids(nodes[nid]) if i in nodes and i not in decided]
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            decided.add(nid)
            if _agrees(nodes[nid], diffs, agreed):
                agreed.add(nid)
    return agreed


def _agrees(node: Mapping, diffs: Mapping[int, Difference | None], agreed: set[int]) -> bool:
    spec = OP_TABLE["ops"][node["op"]]
    if node["id"] in diffs:
        return diffs[node["id"]] is None
    if spec["family"] == "source":
        return True
    return spec["tolerance"] == "exact" and all(i in agreed for i in operand_ids(node))


def _split(found: tuple[int, str, str]) -> tuple[int, tuple[str, str]]:
    index, a, b = found
    return index, (a, b)


def _count(bits: OpBits, exact: bool, diff: Difference | None) -> None:
    if exact:
        bits.exact_outputs += 1
        bits.exact_differing += diff is not None
        if diff is not None and (bits.first is None or bits.exact_differing == 1):
            bits.first = diff
    else:
        bits.other_outputs += 1
        bits.other_differing += diff is not None
        if diff is not None and bits.first is None:
            bits.first = diff
