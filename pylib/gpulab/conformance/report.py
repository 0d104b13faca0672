"""The run's report in three formats: conformance.json, conformance.md and conformance.xml.

All three say the same verdict (verdict.py) and start with the machine summary (machine.py).

- JSON: {suite, machine, verdict: {passed, exit_code, regressions, unavailable, fixed},
  cells: [{executor, op, status, cases, message, known}], bitwise: {op: {...}},
  lanes: [runner.Report.to_dict()]} (infinities as "inf").
- Markdown: the machine summary, the verdict, the lanes (backend, adapter, software or not),
  then one table op x lane (pass/FAIL, case count, max ulp against the reference, share of the
  tolerance used) with a last column "across lanes" (bit-identical, or the first difference),
  then the expected refusals, known failures, fixed entries and each lane's failures.
- JUnit XML: a <testsuite> per lane with one <testcase> per op (failure: a regression; skipped:
  a known failure; error: the lane was unavailable), and a <testsuite> "bit-identical" with one
  <testcase> per op (failure: exact outputs differ across lanes; skipped: the op is not exact,
  or fewer than two lanes produced its outputs). So a run of L lanes over the cases of N ops
  has N * (L + 1) test cases.
"""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path

from . import machine as machine_summary
from .reference import OP_TABLE
from .runner import CPU_BACKENDS, OpSummary, Report
from .verdict import Cell, Verdict


def write_all(
    suite: str, reports: Sequence, verdict: Verdict, machine: Mapping, directory: Path | str
) -> dict[str, Path]:
    """Write conformance.json, .md and .xml into `directory`; returns the paths by format."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    paths = {
        "json": out / "conformance.json",
        "markdown": out / "conformance.md",
        "junit": out / "conformance.xml",
    }
    payload = to_json(suite, reports, verdict, machine)
    paths["json"].write_text(json.dumps(payload, indent=1, allow_nan=False) + "\n")
    paths["markdown"].write_text(to_markdown(suite, reports, verdict, machine))
    ET.indent(tree := ET.ElementTree(to_junit(suite, reports, verdict, machine)))
    tree.write(paths["junit"], encoding="utf-8", xml_declaration=True)
    return paths


# ---- JSON -----------------------------------------------------------------------------------


def to_json(suite: str, reports: Sequence, verdict: Verdict, machine: Mapping) -> dict:
    return _json_safe(
        {
            "suite": suite,
            "machine": dict(machine),
            "verdict": {
                "passed": verdict.exit_code == 0,
                "exit_code": verdict.exit_code,
                "regressions": verdict.regressions,
                "unavailable": verdict.unavailable,
                "fixed": verdict.fixed,
                "baseline": verdict.baseline.source or None,
            },
            "cells": [_cell_json(c) for c in verdict.cells.values()],
            "bitwise": {
                op: {
                    **asdict(bits),
                    "gated": bits.gated,
                    "passed": bits.passed,
                    "status": verdict.bitwise_status[op],
                    "summary": bits.summary(),
                }
                for op, bits in verdict.bitwise.items()
            },
            "lanes": [r.to_dict() for r in reports],
        }
    )  # type: ignore[return-value]


def _cell_json(c: Cell) -> dict:
    return {
        "executor": c.executor,
        "op": c.op,
        "status": c.status,
        "cases": c.cases,
        "message": c.message,
        "failed": [r.name for r in c.failed],
        "known": [{"case": r.name, "reason": why} for r, why in c.known],
    }


# ---- markdown -------------------------------------------------------------------------------


def verdict_line(verdict: Verdict) -> str:
    if verdict.regressions:
        return f"**FAIL**: {len(verdict.regressions)} regressions (exit status 1)"
    if verdict.unavailable:
        return f"**INCOMPLETE**: unavailable lanes {', '.join(verdict.unavailable)} (exit status 2)"
    known = sum(1 for c in verdict.cells.values() if c.status == "known")
    return "**PASS**" + (f" ({known} op x lane cells with known failures)" if known else "")


def to_markdown(suite: str, reports: Sequence, verdict: Verdict, machine: Mapping) -> str:
    lines = [
        f"# Conformance report: {suite}",
        "",
        *machine_summary.to_markdown(machine),
        "",
        "Verdict: " + verdict_line(verdict),
        "",
        "| executor | backend | adapter | kind | result | run time |",
        "| --- | --- | --- | --- | --- | --- |",
        *(_lane_line(r) for r in reports),
        "",
    ]
    lines += _op_table(reports, verdict)
    lines += _listed_section(reports)
    lines += _list_section("Regressions", verdict.regressions)
    lines += _list_section(
        "Known failures (baseline " + (verdict.baseline.source or "-") + ")",
        [f"{c.executor} {r.name}: {why}" for c in verdict.cells.values() for r, why in c.known],
    )
    lines += _list_section("Fixed since the baseline (remove these entries)", verdict.fixed)
    for r in reports:
        if r.failures():
            lines += [
                "",
                f"## Failures: {r.lane.executor}",
                "",
                "```",
                r.describe_failures(200),
                "```",
            ]
    return "\n".join(lines) + "\n"


def _op_table(reports: Sequence, verdict: Verdict) -> list[str]:
    names = [r.lane.executor for r in reports]
    lines = [
        "| op | tolerance | " + " | ".join(names) + " | across lanes |",
        "| --- | --- |" + " --- |" * (len(names) + 1),
    ]
    summaries = {r.lane.executor: r.by_op() for r in reports}
    for op in verdict.ops:
        row = [_markdown_cell(verdict.cells[name, op], summaries[name].get(op)) for name in names]
        lines.append(
            f"| {op} | {_tolerance(op)} | " + " | ".join(row) + f" | {_bitwise_cell(verdict, op)} |"
        )
    return lines


ONNX_TOLERANCE = "onnx: rtol 1e-3, atol 1e-7"


def _tolerance(op: str) -> str:
    if op in OP_TABLE["ops"]:
        return OP_TABLE["ops"][op]["tolerance"]
    if op[:1].isupper():  # an ONNX op type: a row of the onnx-node suite
        return ONNX_TOLERANCE
    return "per node" if op == "chain" else "refusal"


def _markdown_cell(cell: Cell, summary) -> str:
    if cell.status == "unavailable":
        return "-"
    text = _cell(summary)
    if _tolerance(cell.op) in ("refusal", ONNX_TOLERANCE):  # no ulps: refusals, ONNX cases
        said = "refused as the table says" if _tolerance(cell.op) == "refusal" else "match ONNX"
        text = (
            f"FAIL {len(cell.failed) + len(cell.known)}/{cell.cases}"
            if cell.status != "pass"
            else f"pass {cell.cases} ({said})"
        )
    if cell.status == "known":
        return f"KNOWN {len(cell.known)}/{cell.cases} (baseline); " + text
    return text


def _bitwise_cell(verdict: Verdict, op: str) -> str:
    bits = verdict.bitwise.get(op)
    text = bits.summary() if bits else "-"
    return ("KNOWN (baseline): " + text) if verdict.bitwise_status.get(op) == "known" else text


def _listed_section(reports: Sequence) -> list[str]:
    """The lanes.json entries that applied to a case of this run (refused as expected or not);
    entries no case of the run fell under are counted, not listed."""
    rows, idle = [], 0
    for r in reports:
        for entry, reason in r.listed.items():
            listed = [c for c in r.results if c.listed == entry]
            if not listed:
                idle += 1
                continue
            refused = sum(1 for c in listed if c.refused is not None)
            rows.append(f"| {r.lane.executor} | {entry} | {reason} | {refused} of {len(listed)} |")
    if not rows and not idle:
        return []
    lines = ["", "## Expected refusals (lanes.json)", ""]
    if rows:
        lines += [
            "| executor | entry | reason | refused with UNSUPPORTED |",
            "| --- | --- | --- | --- |",
            *rows,
        ]
    if idle:
        lines += ["", f"{idle} more lanes.json entries of these lanes matched no case of this run."]
    return lines


def _list_section(title: str, items: Sequence[str]) -> list[str]:
    if not items:
        return []
    return ["", f"## {title}", "", *(f"- {item}" for item in items)]


# ---- JUnit XML ------------------------------------------------------------------------------


def to_junit(suite: str, reports: Sequence, verdict: Verdict, machine: Mapping) -> ET.Element:
    root = ET.Element("testsuites", name=f"gpulab conformance {suite}")
    for report in reports:
        root.append(_lane_suite(suite, report, verdict, machine))
    if verdict.bitwise:  # the bad-graph table has no outputs to compare
        root.append(_bitwise_suite(suite, verdict))
    _totals(root, root.findall("testsuite"))
    return root


def _lane_suite(suite: str, report, verdict: Verdict, machine: Mapping) -> ET.Element:
    name = report.lane.executor
    seconds = report.lane.extra.get("run_seconds") or 0
    element = ET.Element(
        "testsuite", name=f"{suite}.{name}", timestamp=machine["date"], time=f"{float(seconds):.3f}"
    )
    props = ET.SubElement(element, "properties")
    for key, value in (
        ("backend", report.lane.backend),
        ("adapter", report.lane.adapter),
        ("software", report.lane.software),
        ("command", machine["command"]),
    ):
        ET.SubElement(props, "property", name=key, value=str(value))
    for op in verdict.ops:
        cell = verdict.cells[name, op]
        case = ET.SubElement(element, "testcase", classname=f"{suite}.{name}", name=op)
        if cell.status == "fail":
            failure = ET.SubElement(case, "failure", message=cell.message[:500], type="conformance")
            failure.text = "\n".join(r.describe() for r in cell.failed)
        elif cell.status == "known":
            ET.SubElement(case, "skipped", message=cell.message[:500])
        elif cell.status == "unavailable":
            ET.SubElement(
                case, "error", message=f"lane unavailable: {cell.message}"[:500], type="unavailable"
            )
    _totals(element, [element])
    return element


def _bitwise_suite(suite: str, verdict: Verdict) -> ET.Element:
    element = ET.Element("testsuite", name=f"{suite}.bit-identical")
    for op, bits in verdict.bitwise.items():
        case = ET.SubElement(element, "testcase", classname=f"{suite}.bit-identical", name=op)
        status = verdict.bitwise_status[op]
        if status == "fail":
            failure = ET.SubElement(case, "failure", message=bits.summary()[:500], type="bits")
            failure.text = bits.summary()
        elif status == "known":
            ET.SubElement(case, "skipped", message="known (baseline): " + bits.summary()[:400])
        elif status == "ungated":
            why = (
                "not exact: its outputs may differ within tolerance"
                if bits.other_outputs
                else "fewer than two lanes produced its outputs"
            )
            ET.SubElement(case, "skipped", message=why)
    _totals(element, [element])
    return element


def _totals(element: ET.Element, suites: Sequence[ET.Element]) -> None:
    cases = [c for s in suites for c in s.findall("testcase")]
    count = {
        tag: sum(1 for c in cases if c.find(tag) is not None)
        for tag in ("failure", "error", "skipped")
    }
    element.set("tests", str(len(cases)))
    element.set("failures", str(count["failure"]))
    element.set("errors", str(count["error"]))
    element.set("skipped", str(count["skipped"]))
    if element.tag == "testsuites":
        element.set("time", f"{sum(float(s.get('time') or 0) for s in suites):.3f}")


# ---- cells and lines (shared by the markdown and JSON writers) -------------------------------


def _cell(s: OpSummary | None) -> str:
    if s is None:
        return "-"
    ulp = "inf" if math.isinf(s.max_ulp) else f"{s.max_ulp:.3g}"
    used = "" if math.isinf(s.used) else f", {s.used:.0%} of tol"
    if s.failed:
        return f"FAIL {s.failed}/{s.cases} (max {ulp} ulp{used})"
    if s.unsupported == s.cases:
        return f"UNSUPPORTED {s.cases} (as lanes.json expects)"
    also = f", {s.unsupported} UNSUPPORTED as listed" if s.unsupported else ""
    return f"pass {s.cases} (max {ulp} ulp{used}{also})"


def _lane_line(r: Report) -> str:
    lane = r.lane
    if not lane.available:
        software = "-"
    elif lane.backend in CPU_BACKENDS:
        software = "CPU (no GPU adapter)"
    else:
        software = {True: "software adapter", False: "hardware adapter", None: "unknown"}[
            lane.software
        ]
    reason = lane.reason.removeprefix("UNAVAILABLE: ")
    state = (
        "UNAVAILABLE: " + reason
        if not lane.available
        else ("PASS" if r.passed else f"FAIL ({len(r.failures())} of {len(r.results)} cases)")
    )
    seconds = lane.extra.get("run_seconds")
    took = f"{seconds:.1f} s" if isinstance(seconds, float | int) else "-"
    return (
        f"| {lane.executor} | {lane.backend or '-'} | {lane.adapter or '-'} | {software} "
        f"| {state} | {took} |"
    )


def _json_safe(obj: object) -> object:
    if isinstance(obj, float) and not math.isfinite(obj):
        return "inf" if obj > 0 else ("-inf" if obj < 0 else "nan")
    if isinstance(obj, dict):
        return {k: _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_json_safe(v) for v in obj]
    return obj
