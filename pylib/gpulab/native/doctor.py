"""`gpulab doctor`: what can run here, checked by running a tiny graph on every native backend.

For each backend it prints PASS or FAIL with the adapter it used, or why it was refused or
skipped (a software adapter without GPULAB_ALLOW_SOFTWARE=1, no wgpu-py, no numpy), then how
to run the browser side. Exit status 0 when nothing FAILed (refusals are not failures).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any, TextIO

from ..errors import GpuLabError
from .adapter import describe, software_allowed, software_reason

# (a * b).relu() and a small matmul with a row sum: exact values known in advance.
TINY_GRAPH: dict[str, Any] = {
    "version": 2,
    "nodes": [
        {"id": 0, "op": "input", "shape": [3], "data": [-2, 3, 4]},
        {"id": 1, "op": "input", "shape": [3], "data": [10, 20, 30]},
        {"id": 2, "op": "mul", "a": 0, "b": 1},
        {"id": 3, "op": "relu", "a": 2},
        {"id": 4, "op": "input", "shape": [2, 3], "data": [1, 2, 3, 4, 5, 6]},
        {"id": 5, "op": "input", "shape": [3, 2], "data": [1, 0, 0, 1, 1, 1]},
        {"id": 6, "op": "matmul", "a": 4, "b": 5},
        {"id": 7, "op": "sum", "a": 6, "axis": 1},
    ],
    "outputs": [{"name": "values", "id": 3}, {"name": "rows", "id": 7}],
}
EXPECTED = {3: [0.0, 60.0, 120.0], 7: [9.0, 21.0]}  # matmul [[4, 5], [10, 11]], row sums

BROWSER_HOWTO = """Browser side (WebGPU / WebGL2 / WASM / CPU in the page):
  make serve            (or: gpulab serve --port 8000)
  then open http://127.0.0.1:8000/ in Chrome or Edge (WebGPU), or any browser with WebGL2;
  the page's notebook says which backend it landed on and why others were refused."""


def run_tiny_graph(executor: Any) -> dict[int, list[float]]:
    """Run TINY_GRAPH on an executor; its outputs as lists."""
    from ..protocol import validate

    checked = validate(TINY_GRAPH)
    program = executor.prepare(checked, feeds=[], carry={}, keep=[])
    try:
        values = program.run([{}], list(EXPECTED))
    finally:
        program.dispose()
    return {k: [float(x) for x in v.reshape(-1)] for k, v in values.items()}


def _check(name: str, open_it: Callable[[], Any], out: TextIO) -> bool | None:
    """PASS/FAIL line for one backend; None when it was refused or is not installed."""
    try:
        executor = open_it()
    except GpuLabError as err:
        print(f"SKIP {name}: {err.code}: {err.message}", file=out)
        return None
    adapter = (
        describe(executor.info)
        if "adapter_type" in executor.info
        else (executor.info.get("description", ""))
    )
    software = " (software adapter)" if executor.info.get("software") else ""
    try:
        got = run_tiny_graph(executor)
    except Exception as err:  # noqa: BLE001 - the doctor reports, it does not crash
        print(f"FAIL {name} on {adapter}{software}: {type(err).__name__}: {err}", file=out)
        return False
    finally:
        executor.dispose()
    ok = got == EXPECTED
    verdict = "PASS" if ok else f"FAIL (got {got}, want {EXPECTED})"
    print(f"{verdict} {name} on {adapter}{software}", file=out)
    return ok


def _list_adapters(out: TextIO) -> None:
    try:
        import wgpu

        from .adapter import adapter_info

        adapters = [adapter_info(a) for a in wgpu.gpu.enumerate_adapters_sync()]
    except Exception as err:  # noqa: BLE001 - no wgpu / no driver: reported, not fatal
        print(f"wgpu adapters: none listed ({type(err).__name__}: {err})", file=out)
        return
    print(f"wgpu adapters ({len(adapters)}):", file=out)
    for info in adapters:
        why = software_reason(info)
        kind = f"software: {why}" if why else "hardware"
        print(f"  - {describe(info)}  [{kind}]", file=out)


def _open_wgpu(allow_software: bool) -> Callable[[], Any]:
    def open_it() -> Any:
        from .wgpu_executor import open_executor

        executor = open_executor(allow_software)
        if not allow_software or executor.info.get("software"):
            return executor
        executor.dispose()  # a hardware adapter exists; the hardware line already ran it
        raise GpuLabError("UNAVAILABLE", "a hardware adapter exists; software not needed")

    return open_it


def _open_cpu() -> Any:
    from ..cpu import CpuExecutor

    return CpuExecutor()


def main(argv: list[str] | None = None, out: TextIO | None = None) -> int:
    """Check every native backend; print the verdicts and the browser how-to."""
    parser = argparse.ArgumentParser(prog="gpulab doctor")
    parser.add_argument(
        "--allow-software",
        action="store_true",
        default=None,
        help="also try software adapters (default: GPULAB_ALLOW_SOFTWARE)",
    )
    args = parser.parse_args([] if argv is None else argv)
    out = out or sys.stdout
    allow = software_allowed(args.allow_software)
    _list_adapters(out)
    results = [_check("wgpu (hardware)", _open_wgpu(False), out)]
    if allow:
        results.append(_check("wgpu (software)", _open_wgpu(True), out))
    else:
        print(
            "SKIP wgpu (software): software adapters are not used unless allowed "
            "(gpulab doctor --allow-software, or GPULAB_ALLOW_SOFTWARE=1)",
            file=out,
        )
    results.append(_check("cpu-python", _open_cpu, out))
    print(BROWSER_HOWTO, file=out)
    return 1 if any(r is False for r in results) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
