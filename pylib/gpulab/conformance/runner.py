"""Run the corpus on an executor, judge every output against the reference, write reports.

From pytest (each lane is a few lines):

    from gpulab.conformance.runner import run_conformance
    report = run_conformance("node-cpu")
    assert report.passed, report.describe_failures()

From the shell: `python -m gpulab.conformance --executor cpu-python --executor node-cpu
--report reports/conformance` writes one combined JSON + markdown table (op x executor).

lanes.json (pylib/gpulab/conformance/lanes.py) lists, per backend lane, the ops a lane is expected not to
support yet: there a case must be refused with UNSUPPORTED (that passes, reported as expected);
a listed case that runs fails, correct or not ("unexpectedly supported: remove from lanes.json").
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from .compare import compare
from .executors import EXECUTORS, LaneInfo, LaneRun, RawResult, lane_of, resolve
from .lanes import Lanes, listed_entry, load_lanes
from .reference import OP_TABLE, NodeRef, evaluate, operand_ids

CASES_PATH = Path(__file__).with_name("cases.json")
CPU_BACKENDS = {"cpu", "wasm", "cpu-python"}


def load_cases(names: Iterable[str] | None = None, ops: Iterable[str] | None = None) -> list[dict]:
    """The corpus, optionally only the named cases or the cases of some ops."""
    cases = json.loads(CASES_PATH.read_text())
    if names is not None:
        wanted = set(names)
        cases = [c for c in cases if c["name"] in wanted]
    if ops is not None:
        wanted_ops = set(ops)
        cases = [c for c in cases if c["op"] in wanted_ops]
    return cases


@dataclass
class OutputResult:
    name: str
    node: int
    op: str
    tolerance: str
    passed: bool
    max_ulp: float
    detail: str
    used: float = 0.0  # share of the tolerance used (1.0 = at the bound)


@dataclass
class CaseResult:
    name: str
    op: str
    passed: bool
    max_ulp: float
    error: str | None = None  # the executor refused or crashed: "CODE: message"
    outputs: list[OutputResult] = field(default_factory=list)
    used: float = 0.0  # largest share of the tolerance used by an output
    listed: str | None = None  # the lanes.json entry this lane lists the case under ("abs")
    reason: str | None = None  # that entry's reason
    refused: str | None = None  # the expected UNSUPPORTED refusal's message

    def describe(self) -> str:
        if self.error:
            first = " ".join(self.error.split())  # backend messages span lines (shader logs)
            return f"{self.name}: {first[:300]}{'...' if len(first) > 300 else ''}"
        bad = [f"{o.name} ({o.op}): {o.detail}" for o in self.outputs if not o.passed]
        return f"{self.name}: " + "; ".join(bad)


@dataclass
class OpSummary:
    cases: int = 0
    failed: int = 0
    max_ulp: float = 0.0
    used: float = 0.0
    unsupported: int = 0  # cases refused with UNSUPPORTED as lanes.json expects


@dataclass
class Report:
    """One executor's verdict on the corpus."""

    lane: LaneInfo
    results: list[CaseResult]
    listed: dict[str, str] = field(default_factory=dict)  # this lane's lanes.json entries
    raw: dict[str, RawResult] = field(default_factory=dict, repr=False)  # for the bitwise check

    @property
    def passed(self) -> bool:
        """True only when the lane ran and every case passed (an unavailable lane never passes)."""
        return self.lane.available and bool(self.results) and all(r.passed for r in self.results)

    def failures(self) -> list[CaseResult]:
        return [r for r in self.results if not r.passed]

    def describe_failures(self, limit: int = 40) -> str:
        """A readable list of what failed (for assertion messages)."""
        if not self.lane.available:
            return f"{self.lane.executor}: UNAVAILABLE: {self.lane.reason}"
        bad = self.failures()
        lines = [f"{self.lane.executor}: {len(bad)} of {len(self.results)} cases failed"]
        lines += ["  " + r.describe() for r in bad[:limit]]
        if len(bad) > limit:
            lines.append(f"  ... and {len(bad) - limit} more")
        return "\n".join(lines)

    def by_op(self) -> dict[str, OpSummary]:
        summary: dict[str, OpSummary] = {}
        for r in self.results:
            s = summary.setdefault(r.op, OpSummary())
            s.cases += 1
            s.failed += 0 if r.passed else 1
            s.unsupported += 1 if r.passed and r.refused is not None else 0
            s.max_ulp = max(s.max_ulp, r.max_ulp)
            s.used = max(s.used, r.used)
        return summary

    def to_dict(self) -> dict:
        return {
            "lane": asdict(self.lane),
            "passed": self.passed,
            "cases": len(self.results),
            "failed": len(self.failures()),
            "by_op": {op: asdict(s) for op, s in self.by_op().items()},
            "listed": dict(self.listed),
            "results": [asdict(r) for r in self.results],
        }


def _tolerance_of(op: str) -> str:
    return OP_TABLE["ops"][op]["tolerance"]


def _outputs_used_as_operands(graph: Mapping) -> set[int]:
    outs = {o["id"] for o in graph["outputs"]}
    return {i for node in graph["nodes"] for i in operand_ids(node) if i in outs}


def check_case(
    case: Mapping, raw: RawResult | None, listed: tuple[str, str] | None = None
) -> CaseResult:
    """Judge one executor result: every output against the reference from its operands.

    `listed` (entry, reason) from lanes.json: the lane must refuse the case with UNSUPPORTED;
    that passes, and anything else (another error, a result) fails.
    """
    if listed is not None:
        return _check_listed(case, raw, *listed)
    if raw is None:
        return CaseResult(
            case["name"], case["op"], False, math.inf, "no result from executor", used=math.inf
        )
    if raw.error is not None:
        err = raw.error
        return CaseResult(
            case["name"],
            case["op"],
            False,
            math.inf,
            f"{err.get('code')}: {err.get('message')}",
            used=math.inf,
        )
    graph = case["graph"]
    by_name = {o["name"]: o["id"] for o in graph["outputs"]}
    missing = sorted(set(by_name) - set(raw.outputs))
    if missing:
        return CaseResult(
            case["name"], case["op"], False, math.inf, f"missing outputs {missing}", used=math.inf
        )
    refs = evaluate(graph)
    fed = _outputs_used_as_operands(graph)
    if fed:  # a chain: judge each node from the values the backend fed it
        overrides = {
            by_name[n]: arr
            for n, arr in raw.outputs.items()
            if n in by_name and by_name[n] in fed and arr.size == refs[by_name[n]].value.size
        }
        refs = evaluate(graph, overrides)
    nodes = {n["id"]: n for n in graph["nodes"]}
    outputs = [
        _check_output(name, nid, nodes[nid]["op"], raw.outputs[name], refs[nid])
        for name, nid in by_name.items()
    ]
    passed = all(o.passed for o in outputs)
    return CaseResult(
        case["name"],
        case["op"],
        passed,
        max(o.max_ulp for o in outputs),
        None,
        outputs,
        max(o.used for o in outputs),
    )


def _check_listed(case: Mapping, raw: RawResult | None, entry: str, reason: str) -> CaseResult:
    """A case lanes.json lists for this lane: only an UNSUPPORTED refusal passes."""
    name, op = case["name"], case["op"]
    tag = {"listed": entry, "reason": reason}
    if raw is not None and raw.error is not None and raw.error.get("code") == "UNSUPPORTED":
        return CaseResult(name, op, True, 0.0, refused=str(raw.error.get("message")), **tag)
    if raw is None or raw.error is not None:
        got = "no result" if raw is None else f"{raw.error.get('code')}: {raw.error.get('message')}"
        return CaseResult(
            name,
            op,
            False,
            math.inf,
            f"expected UNSUPPORTED (lanes.json lists {entry!r}: {reason}), got {got}",
            used=math.inf,
            **tag,
        )
    judged = check_case(case, raw)
    how = "and matches the reference" if judged.passed else f"and is wrong: {judged.describe()}"
    return CaseResult(
        name,
        op,
        False,
        judged.max_ulp,
        f"unexpectedly supported: remove {entry!r} from lanes.json (it ran, {how})",
        judged.outputs,
        judged.used,
        **tag,
    )


def _check_output(name: str, nid: int, op: str, got: np.ndarray, ref: NodeRef) -> OutputResult:
    tolerance = _tolerance_of(op)
    if list(got.shape) != list(ref.value.shape):
        return OutputResult(
            name,
            nid,
            op,
            tolerance,
            False,
            math.inf,
            f"shape {list(got.shape)}, want {list(ref.value.shape)}",
            math.inf,
        )
    c = compare(got, ref.value, ref.scale, tolerance, ref.dtype)
    if c.passed and ref.bits is not None:  # the protocol's fixed order: same bits everywhere
        order = compare(got, ref.bits.astype(np.float64), ref.scale, "exact")
        if not order.passed:
            detail = "not the protocol's 64-lane order: " + order.detail.replace(
                "outside 'exact'", "differ from the fixed-order float32 sum"
            )
            return OutputResult(name, nid, op, tolerance, False, c.max_ulp, detail, c.used)
    return OutputResult(name, nid, op, tolerance, c.passed, c.max_ulp, c.detail, c.used)


Judge = Callable[[Mapping, RawResult | None], CaseResult]


def check_results(
    cases: list[dict], run: LaneRun, lanes: Lanes | None = None, judge: Judge | None = None
) -> Report:
    """Judge an executor's raw results (also how tests feed perturbed results).

    lanes: the expectation list (default lanes.json); the executor's lane's entries apply.
    judge: another suite's rule for one case (the bad-graph table's); lanes.json then does not
    apply (those graphs must be refused before any kernel is chosen).
    """
    entries = (load_lanes() if lanes is None else lanes).get(lane_of(run.info.executor), {})
    if judge is not None:
        entries = {}
    if not run.info.available:
        return Report(run.info, [], dict(entries))
    results = []
    for c in cases:
        raw = run.results.get(c["name"])
        if judge is not None:
            results.append(judge(c, raw))
            continue
        listed = listed_entry(c["graph"], entries)
        results.append(check_case(c, raw, listed))
    return Report(run.info, results, dict(entries), dict(run.results))


def run_conformance(
    executor: str,
    cases: list[dict] | None = None,
    lanes: Lanes | Path | str | None = None,
    judge: Judge | None = None,
    **opts: object,
) -> Report:
    """Run the corpus (or `cases`) on one executor and judge it.

    lanes: the expectation list (a mapping or a file; default pylib/gpulab/conformance/lanes.json).
    opts go to the executor: allow_software (bool), and for browser lanes `browser` (a
    Playwright Browser, e.g. the pytest fixture) and `server_url` (the repo root served);
    node lanes take the test hook without_kernels (a list of ops); the broken-kernel hook
    break_ops (a list of ops) comes from GPULAB_CONFORMANCE_BREAK unless given.
    """
    expectations = load_lanes(lanes)
    executor = resolve(executor)
    if executor not in EXECUTORS:
        raise ValueError(f"unknown executor {executor!r}; known: {', '.join(EXECUTORS)}")
    broken = break_hook().get(executor)
    if broken and "break_ops" not in opts:
        opts["break_ops"] = broken
    cases = load_cases() if cases is None else cases
    started = time.perf_counter()
    run = EXECUTORS[executor](cases, **opts)
    run.info.extra["run_seconds"] = round(time.perf_counter() - started, 2)
    return check_results(cases, run, expectations, judge)


BREAK_ENV = "GPULAB_CONFORMANCE_BREAK"


def break_hook(value: str | None = None) -> dict[str, list[str]]:
    """The broken-kernel test hook, "lane:op,lane:op" (GPULAB_CONFORMANCE_BREAK): executor ->
    ops whose kernel returns wrong bits on that executor (executors.py says how)."""
    text = os.environ.get(BREAK_ENV, "") if value is None else value
    hooks: dict[str, list[str]] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        lane, sep, op = item.partition(":")
        if not sep or resolve(lane) not in EXECUTORS or op not in OP_TABLE["ops"]:
            raise ValueError(f"{BREAK_ENV}: {item!r} is not <executor>:<op> of known names")
        hooks.setdefault(resolve(lane), []).append(op)
    return hooks
