"""`python -m e2e.onnx_nodes [--lane L ...] [--case NAME ...] [--report DIR]`: ONNX's node tests
on gpulab lanes (default: all six: cpu-python, wgpu, node-cpu, node-wasm, chromium-webgl2,
chromium-webgpu; software adapters allowed and labelled). Writes DIR/onnx_nodes.json and
DIR/onnx_nodes.md (default reports/). Counts each lane's passes by the strict rule (the model
as given, every graph input fed at run time) and, in a column of its own, with the inputs that
set a shape or attribute bound at load. Exit 0 when no case crashed the loader."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from .cases import strict_graph, translate_all
from .runner import ALL_LANES, run_lane, strict_passed, write_reports


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m e2e.onnx_nodes")
    p.add_argument("--lane", action="append", help=f"a lane (repeatable); default {ALL_LANES}")
    p.add_argument("--case", action="append", help="only this case (repeatable)")
    p.add_argument("--report", default="reports", help="the reports' folder")
    args = p.parse_args(argv)
    started = time.perf_counter()
    cases = translate_all(args.case)
    print(
        f"{len(cases)} cases, {sum(strict_graph(c) is not None for c in cases)} load strictly, "
        f"{sum(c.graph is not None for c in cases)} with inputs bound "
        f"({time.perf_counter() - started:.1f} s)",
        flush=True,
    )
    lanes = {}
    for lane in args.lane or ALL_LANES:
        verdicts, info = run_lane(lane, cases, allow_software=True)
        lanes[lane] = {"verdicts": verdicts, "info": info}
        passed = sum(verdicts.get(c.name) == "" for c in cases if c.graph is not None)
        print(
            f"{lane}: {len(strict_passed(cases, verdicts))} passed strictly, {passed} bound "
            f"({info['seconds']} s) "
            f"{info.get('reason') or ''}",
            flush=True,
        )
    command = "python -m e2e.onnx_nodes " + " ".join(argv if argv is not None else sys.argv[1:])
    summary = write_reports(Path(args.report), cases, lanes, command.strip())
    print(
        f"reports in {args.report}/onnx_nodes.{{json,md}}; {time.perf_counter() - started:.0f}"
        f" s in all",
        flush=True,
    )
    return 1 if summary["crashed"] else 0


if __name__ == "__main__":
    sys.exit(main())
