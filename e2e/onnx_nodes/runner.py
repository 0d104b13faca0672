"""Run the translated node tests on lanes and judge them with ONNX's tolerances.

Lanes are the conformance executors (pylib/gpulab/conformance/executors.py): cpu-python and wgpu run
the graphs through gpulab.host; node-cpu / node-wasm and chromium-* send the same protocol
graphs (JSON) to the JS runtime. A case passes on a lane when every output has the expected
shape and |out - ref| <= atol + rtol * |ref| elementwise (NaN where the reference is NaN), as
onnx.backend.test's assert_allclose; integer and bool outputs compare exactly.

Two counts per lane: strict (the model as given, every graph input fed at run time, as ONNX's
backend tests and ONNX Runtime define it) and bound (inputs that set a shape or attribute
given as constants at load). A case with bound inputs whose model also loads strictly runs
both graphs; its strict verdict is keyed `name + STRICT`.
"""

from __future__ import annotations

import json
import platform
import time
from collections.abc import Sequence
from pathlib import Path

from gpulab.conformance.executors import EXECUTORS, LaneRun
from gpulab.conformance.onnx_nodes import NodeCase, judge, strict_graph

FAST_LANES = ("cpu-python", "wgpu", "node-cpu")
ALL_LANES = FAST_LANES + ("node-wasm", "chromium-webgl2", "chromium-webgpu")
STRICT = "#strict"  # the verdict key of a case's strict graph, where it differs from the bound


def _graphs(cases: Sequence[NodeCase]) -> list[tuple[str, NodeCase, dict]]:
    """(verdict key, case, graph): every bound graph, and every strict graph of its own."""
    out = [(c.name, c, c.graph) for c in cases if c.graph is not None]
    out += [(c.name + STRICT, c, c.strict_graph) for c in cases if c.bound and c.strict_graph]
    return out


def strict_passed(cases: Sequence[NodeCase], verdicts: dict[str, str]) -> set[str]:
    """The cases that pass by the strict rule: their strict graph ran and matched."""
    out = set()
    for c in cases:
        if strict_graph(c) is None:
            continue
        key = c.name + STRICT if c.bound else c.name
        if verdicts.get(key) == "":
            out.add(c.name)
    return out


def run_lane(lane: str, cases: Sequence[NodeCase], **opts: object) -> tuple[dict, dict]:
    """({verdict key: '' passed, or the failure}, lane info) for the loaded graphs: a case's
    name for its bound graph, name + STRICT for a strict graph of its own."""
    loaded = _graphs(cases)
    payload = [{"name": key, "graph": graph} for key, _, graph in loaded]
    started = time.perf_counter()
    run: LaneRun = EXECUTORS[lane](payload, **opts)
    info = {
        "available": run.info.available,
        "reason": run.info.reason,
        "backend": run.info.backend,
        "adapter": run.info.adapter,
        "software": run.info.software,
        "seconds": round(time.perf_counter() - started, 1),
    }
    verdicts = {}
    for key, c, _ in loaded:
        if not run.info.available:
            verdicts[key] = f"lane unavailable: {run.info.reason}"
            continue
        r = run.results.get(key)
        if r is None:
            verdicts[key] = "no result"
        elif r.error:
            verdicts[key] = f"{r.error.get('code')}: {r.error.get('message')}"
        else:
            verdicts[key] = judge(c, r.outputs)
    return verdicts, info


def summarize(cases: Sequence[NodeCase], lanes: dict[str, dict]) -> dict:
    """Per lane and per op: passed strictly, passed bound, loaded, total (a case counts for
    each op it uses)."""
    total = len(cases)
    summary: dict = {
        "total": total,
        "loaded": sum(c.graph is not None for c in cases),
        "loaded_strict": sum(strict_graph(c) is not None for c in cases),
        "crashed": sum(c.crash is not None for c in cases),
        "lanes": {},
        "ops": {},
    }
    held = {c.name for c in cases if c.held and c.graph is not None}
    summary["held"] = len(held)
    for lane, data in lanes.items():
        verdicts = data["verdicts"]
        bound = {c.name: verdicts.get(c.name) for c in cases if c.graph is not None}
        summary["lanes"][lane] = {
            "passed_strict": len(strict_passed(cases, verdicts)),
            "passed": sum(v == "" for v in bound.values()),
            "passed_held": sum(v == "" for n, v in bound.items() if n in held),
            "loaded": len(bound),
            "total": total,
            "info": data["info"],
        }
    strict = {lane: strict_passed(cases, data["verdicts"]) for lane, data in lanes.items()}
    for c in cases:
        for op in c.ops:
            row = summary["ops"].setdefault(
                op, {"total": 0, "loaded": 0, "loaded_strict": 0, "passed": {}}
            )
            row["total"] += 1
            row["loaded"] += c.graph is not None
            row["loaded_strict"] += strict_graph(c) is not None
            for lane in lanes:
                row["passed"][lane] = row["passed"].get(lane, 0) + (c.name in strict[lane])
    return summary


def to_markdown(summary: dict, command: str) -> str:
    lanes = list(summary["lanes"])
    lines = [
        "# ONNX node tests on gpulab lanes",
        "",
        (
            f"`{command}` on {platform.node()} ({platform.machine()}), "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. Cases: onnx "
            f"{_onnx_version()}'s node tests (collect_testcases), {summary['total']} in all."
        ),
        "",
        (
            f"**strict** (the model as given, every graph input fed at run time, as ONNX's "
            f"backend tests and ONNX Runtime define it): {summary['loaded_strict']} load. "
            f"**bound** (inputs that set a shape or an attribute given as constants at load): "
            f"{summary['loaded']} load. The others are refused at load with a message "
            f"({summary['crashed']} crashed). {summary['held']} of the bound-loaded cases "
            f"use DOUBLE, FLOAT16 or 8/16-bit integer tensors, loaded with "
            f"`hold_32bit=True` (computed in float32 / held as int32: docs/onnx.md); the "
            f"column `held` counts their bound passes."
        ),
        "",
        (
            "| lane | passed strict | passed bound | of which held | loaded bound | total "
            "| seconds | adapter |"
        ),
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for lane, row in summary["lanes"].items():
        info = row["info"]
        adapter = info.get("adapter") or info.get("reason") or ""
        soft = " (software)" if info.get("software") else ""
        lines.append(
            f"| {lane} | {row['passed_strict']} | {row['passed']} | {row['passed_held']} | "
            f"{row['loaded']} | "
            f"{row['total']} | "
            f"{info.get('seconds')} | {adapter}{soft} |"
        )
    lines += [
        "",
        (
            "Per operator (a case counts for every op its model uses; the lanes' columns count "
            "strict passes):"
        ),
        "",
        "| op | total | loaded strict | loaded bound | " + " | ".join(lanes) + " |",
        "| --- | --- | --- | --- | " + " | ".join("---" for _ in lanes) + " |",
    ]
    for op, row in sorted(summary["ops"].items()):
        lines.append(
            f"| {op} | {row['total']} | {row['loaded_strict']} | {row['loaded']} | "
            + " | ".join(str(row["passed"].get(lane, 0)) for lane in lanes)
            + " |"
        )
    return "\n".join(lines) + "\n"


def _onnx_version() -> str:
    import onnx

    return onnx.__version__


def write_reports(
    out_dir: Path, cases: Sequence[NodeCase], lanes: dict[str, dict], command: str
) -> dict:
    out_dir.mkdir(parents=True, exist_ok=True)
    summary = summarize(cases, lanes)
    detail = {
        c.name: {
            "ops": c.ops,
            "refusal": c.refusal,
            "crash": c.crash,
            "held": c.held,
            "bound": c.bound,
            "strict_refusal": c.strict_refusal,
            "lanes": {lane: d["verdicts"].get(c.name) for lane, d in lanes.items()},
            "lanes_strict": {
                lane: d["verdicts"].get(c.name + (STRICT if c.bound else ""))
                for lane, d in lanes.items()
            },
        }
        for c in cases
    }
    (out_dir / "onnx_nodes.json").write_text(
        json.dumps({"summary": summary, "cases": detail}, indent=1, sort_keys=True) + "\n"
    )
    (out_dir / "onnx_nodes.md").write_text(to_markdown(summary, command))
    return summary
