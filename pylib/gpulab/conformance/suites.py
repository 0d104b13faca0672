"""The suites `gpulab conformance --suite` runs through the same lanes, in a registry.

- corpus: cases.json, every op against the float64 reference (runner.check_case), with the
  cross-lane bitwise check.
- bad-graphs: bad_graphs.json, hostile and malformed graphs; each lane's full runtime
  (validator included) must refuse each with the table's code, naming the table's node, its
  message containing the table's phrase. A case's "op" is the row's group (`attr`, `shape`...).

- onnx-node: ONNX's node tests (onnx_nodes.py: the installed onnx wheel's cases loaded by
  gpulab.onnx, those of exact element types), against ONNX's expected outputs with its
  tolerances (rtol 1e-3, atol 1e-7); `python -m e2e.onnx_nodes` reports every case.
"""

from __future__ import annotations

import fnmatch
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from .executors import RawResult
from .layout import SUITE_DIR
from .runner import CaseResult, Judge, load_cases


@dataclass(frozen=True)
class Suite:
    name: str
    load: Callable[[], list[dict]]
    judge: Judge | None  # None: the corpus rule (runner.check_case, lanes.json applies)
    bitwise: bool  # whether the cross-lane bit comparison applies
    what: str  # the report's word for a passing case


def load_bad_graphs() -> list[dict]:
    rows = json.loads((SUITE_DIR / "bad_graphs.json").read_text())
    return [
        {
            "name": r["name"],
            "op": r["name"].split("/", 1)[0],
            "graph": r["graph"],
            "expect": {"code": r["code"], "node": r["node"], "says": r["says"]},
        }
        for r in rows
    ]


def judge_refusal(case: Mapping, raw: RawResult | None) -> CaseResult:
    """A bad graph passes when the lane refused it as the table says."""
    want = case["expect"]
    name, group = case["name"], case["op"]
    if raw is None:
        return CaseResult(name, group, False, math.inf, "no result from executor")
    if raw.error is None:
        return CaseResult(
            name,
            group,
            False,
            math.inf,
            f"ran and returned {sorted(raw.outputs)}; expected {want['code']}",
        )
    code, node = raw.error.get("code"), raw.error.get("node")
    message = str(raw.error.get("message"))
    problems = []
    if code != want["code"]:
        problems.append(f"code {code}, want {want['code']}")
    if node != want["node"]:
        problems.append(f"node {node}, want {want['node']}")
    if want["node"] is not None and f"node {want['node']} (" not in message:
        problems.append(f"message does not name 'node {want['node']} ('")
    if want["says"] and want["says"] not in message.lower():
        problems.append(f"message does not say {want['says']!r}")
    if problems:
        return CaseResult(
            name, group, False, math.inf, "; ".join(problems) + f" (got {code}: {message[:200]})"
        )
    return CaseResult(name, group, True, 0.0)


def load_onnx_nodes() -> list[dict]:
    from .onnx_nodes import load_suite  # needs the onnx package: imported when asked for

    return load_suite()


def judge_onnx(case: Mapping, raw: RawResult | None) -> CaseResult:
    from .onnx_nodes import judge_suite

    return judge_suite(case, raw)


SUITES: dict[str, Suite] = {
    "corpus": Suite("corpus", load_cases, None, True, "pass"),
    "bad-graphs": Suite("bad-graphs", load_bad_graphs, judge_refusal, False, "refused as expected"),
    "onnx-node": Suite(
        "onnx-node", load_onnx_nodes, judge_onnx, False, "matches ONNX's expected outputs"
    ),
}
PLANNED: dict[str, str] = {}


def select(cases: Sequence[dict], patterns: str | None) -> list[dict]:
    """The cases matching a comma-separated filter: op names, case names or globs on names
    (`relu,sum/*,add/2x1x3x1_1x4x1x5`); all cases when there is no filter."""
    if not patterns:
        return list(cases)
    wanted = [p.strip() for p in patterns.split(",") if p.strip()]
    return [
        c
        for c in cases
        if any(c["op"] == p or c["name"] == p or fnmatch.fnmatchcase(c["name"], p) for p in wanted)
    ]
