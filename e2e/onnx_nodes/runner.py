"""Run the translated node tests on lanes and judge them with ONNX's tolerances.

Lanes are the conformance executors (pylib/gpulab/conformance/executors.py): cpu-python and wgpu run
the graphs through gpulab.host; node-cpu / node-wasm and chromium-* send the same protocol
graphs (JSON) to the JS runtime. A case passes on a lane when every output has the expected
shape and |out - ref| <= atol + rtol * |ref| elementwise (NaN where the reference is NaN), as
onnx.backend.test's assert_allclose; integer and bool outputs compare exactly.
"""

from __future__ import annotations

import json
import platform
import time
from collections.abc import Sequence
from pathlib import Path

from gpulab.conformance.executors import EXECUTORS, LaneRun
from gpulab.conformance.onnx_nodes import NodeCase, judge

FAST_LANES = ("cpu-python", "wgpu", "node-cpu")
ALL_LANES = FAST_LANES + ("node-wasm", "chromium-webgl2", "chromium-webgpu")


def run_lane(lane: str, cases: Sequence[NodeCase], **opts: object) -> tuple[dict, dict]:
    """({case name: '' passed, or the failure}, lane info) for the loaded cases."""
    loaded = [c for c in cases if c.graph is not None]
    payload = [{"name": c.name, "graph": c.graph} for c in loaded]
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
    for c in loaded:
        if not run.info.available:
            verdicts[c.name] = f"lane unavailable: {run.info.reason}"
            continue
        r = run.results.get(c.name)
        if r is None:
            verdicts[c.name] = "no result"
        elif r.error:
            verdicts[c.name] = f"{r.error.get('code')}: {r.error.get('message')}"
        else:
            verdicts[c.name] = judge(c, r.outputs)
    return verdicts, info


def summarize(cases: Sequence[NodeCase], lanes: dict[str, dict]) -> dict:
    """Per lane and per op: passed / loaded / total (a case counts for each op it uses)."""
    total = len(cases)
    summary: dict = {
        "total": total,
        "loaded": sum(c.graph is not None for c in cases),
        "crashed": sum(c.crash is not None for c in cases),
        "lanes": {},
        "ops": {},
    }
    held = {c.name for c in cases if c.held and c.graph is not None}
    summary["held"] = len(held)
    for lane, data in lanes.items():
        verdicts = data["verdicts"]
        summary["lanes"][lane] = {
            "passed": sum(v == "" for v in verdicts.values()),
            "passed_held": sum(v == "" for n, v in verdicts.items() if n in held),
            "loaded": len(verdicts),
            "total": total,
            "info": data["info"],
        }
    for c in cases:
        for op in c.ops:
            row = summary["ops"].setdefault(op, {"total": 0, "loaded": 0, "passed": {}})
            row["total"] += 1
            row["loaded"] += c.graph is not None
            for lane, data in lanes.items():
                ok = data["verdicts"].get(c.name) == ""
                row["passed"][lane] = row["passed"].get(lane, 0) + ok
    return summary


def to_markdown(summary: dict, command: str) -> str:
    lanes = list(summary["lanes"])
    lines = [
        "# ONNX node tests on gpulab lanes",
        "",
        (
            f"`{command}` on {platform.node()} ({platform.machine()}), "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. Cases: onnx "
            f"{_onnx_version()}'s node tests (collect_testcases), {summary['total']} in all; "
            f"{summary['loaded']} load in gpulab.onnx, the others are refused at load with a "
            f"message ({summary['crashed']} crashed). {summary['held']} of the loaded cases "
            f"use DOUBLE, FLOAT16 or 8/16-bit integer tensors, loaded with "
            f"`hold_32bit=True` (computed in float32 / held as int32: docs/onnx.md); the "
            f"column `held` counts their passes."
        ),
        "",
        "| lane | passed | of which held | loaded | total | seconds | adapter |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for lane, row in summary["lanes"].items():
        info = row["info"]
        adapter = info.get("adapter") or info.get("reason") or ""
        soft = " (software)" if info.get("software") else ""
        lines.append(
            f"| {lane} | {row['passed']} | {row['passed_held']} | {row['loaded']} | "
            f"{row['total']} | "
            f"{info.get('seconds')} | {adapter}{soft} |"
        )
    lines += [
        "",
        "Per operator (a case counts for every op its model uses):",
        "",
        "| op | total | loaded | " + " | ".join(lanes) + " |",
        "| --- | --- | --- | " + " | ".join("---" for _ in lanes) + " |",
    ]
    for op, row in sorted(summary["ops"].items()):
        lines.append(
            f"| {op} | {row['total']} | {row['loaded']} | "
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
            "lanes": {lane: d["verdicts"].get(c.name) for lane, d in lanes.items()},
        }
        for c in cases
    }
    (out_dir / "onnx_nodes.json").write_text(
        json.dumps({"summary": summary, "cases": detail}, indent=1, sort_keys=True) + "\n"
    )
    (out_dir / "onnx_nodes.md").write_text(to_markdown(summary, command))
    return summary
