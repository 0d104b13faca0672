"""The run's verdict, one place for what every report format and the exit status say.

Per op x lane: `pass` (every case passed, refusals lanes.json expects included), `fail` (a case
failed and the baseline does not list it: a regression), `known` (every failure is listed in
the baseline), `unavailable` (the lane did not run; `known` when the baseline lists the whole
lane). Per op across lanes: the bitwise check (bitwise.py), `pass`, `fail`, `known`, or
`ungated` (no exact output ran on two lanes). Exit status: 1 on any regression (a failing cell
or differing bits), else 2 when a lane was unavailable, else 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .baseline import Baseline
from .bitwise import OpBits
from .reference import OP_TABLE


@dataclass
class Cell:
    executor: str
    op: str
    status: str  # pass | fail | known | unavailable
    cases: int = 0
    failed: list = field(default_factory=list)  # CaseResult not in the baseline
    known: list = field(default_factory=list)  # (CaseResult, reason) listed in the baseline
    message: str = ""


@dataclass
class Verdict:
    ops: list[str]
    cells: dict[tuple[str, str], Cell]
    bitwise: dict[str, OpBits]
    bitwise_status: dict[str, str]
    unavailable: list[str]  # executors that did not run (and the baseline does not excuse)
    fixed: list[str]  # baseline entries that passed this time
    baseline: Baseline

    @property
    def regressions(self) -> list[str]:
        bad = [
            f"{c.executor} {c.op}: {c.message}" for c in self.cells.values() if c.status == "fail"
        ]
        bad += [
            f"bitwise {op}: {self.bitwise[op].summary()}"
            for op, s in self.bitwise_status.items()
            if s == "fail"
        ]
        return bad

    @property
    def exit_code(self) -> int:
        if self.regressions:
            return 1
        return 2 if self.unavailable else 0


def ops_in_order(cases: Sequence[dict]) -> list[str]:
    """The ops of the cases: the op table's order, then the others ("chain", bad-graph groups)."""
    present = list(dict.fromkeys(c["op"] for c in cases))
    table = [op for op in OP_TABLE["ops"] if op in present]
    return table + [op for op in present if op not in OP_TABLE["ops"]]


def judge_run(
    cases: Sequence[dict], reports: Sequence, bitwise: dict[str, OpBits], baseline: Baseline
) -> Verdict:
    """Combine the lanes' reports, the bitwise check and the baseline into one verdict."""
    ops = ops_in_order(cases)
    cells: dict[tuple[str, str], Cell] = {}
    unavailable = []
    for report in reports:
        executor = report.lane.executor
        if not report.lane.available:
            excuse = baseline.lane_reason(executor)
            if excuse is None:
                unavailable.append(executor)
            for op in ops:
                cells[executor, op] = Cell(
                    executor,
                    op,
                    "known" if excuse else "unavailable",
                    message=excuse or report.lane.reason,
                )
            continue
        for op in ops:
            cells[executor, op] = _cell(executor, op, report, baseline)
    status = {op: _bitwise_status(op, bitwise.get(op), baseline) for op in ops}
    return Verdict(
        ops, cells, bitwise, status, unavailable, _fixed(reports, bitwise, baseline), baseline
    )


def _cell(executor: str, op: str, report, baseline: Baseline) -> Cell:
    results = [r for r in report.results if r.op == op]
    cell = Cell(executor, op, "pass", len(results))
    for r in results:
        if r.passed:
            continue
        reason = baseline.reason(executor, r.name, op)
        if reason is None:
            cell.failed.append(r)
        else:
            cell.known.append((r, reason))
    if cell.failed:
        cell.status = "fail"
        cell.message = f"{len(cell.failed)} of {len(results)} cases failed; first " + (
            cell.failed[0].describe()
        )
    elif cell.known:
        cell.status = "known"
        cell.message = f"{len(cell.known)} known failures (baseline): {cell.known[0][1]}"
    return cell


def _bitwise_status(op: str, bits: OpBits | None, baseline: Baseline) -> str:
    if bits is None or not bits.gated:
        return "ungated"
    if bits.passed:
        return "pass"
    return "known" if baseline.bitwise_reason(op) else "fail"


def _fixed(reports: Sequence, bitwise: dict[str, OpBits], baseline: Baseline) -> list[str]:
    """Baseline entries (case names or ops) that ran and passed this time."""
    fixed = []
    for report in reports:
        executor = report.lane.executor
        entries = baseline.known.get(executor, {})
        if not entries or not report.lane.available:
            continue
        for entry in entries:
            ran = [r for r in report.results if entry in (r.name, r.op, "*")]
            if ran and all(r.passed for r in ran):
                fixed.append(f"{executor} {entry}")
    for op in baseline.known.get("bitwise", {}):
        if op in bitwise and bitwise[op].gated and bitwise[op].passed:
            fixed.append(f"bitwise {op}")
    return fixed
