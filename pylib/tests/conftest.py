"""Fixtures shared by the fusion tests (map fusion, the matmul epilogue, the multi dispatches):
each compares a fused plan with an unfused one on the same executor."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="module")
def executor() -> Iterator[Any]:
    """A wgpu executor (lavapipe here: software allowed) whose plan cache is off, so a test that
    switches a fusion off gets a plan made for that setting (a module may define its own)."""
    from gpulab.native.plan_cache import PlanCache
    from gpulab.native.wgpu_executor import open_executor

    ex = open_executor(True, hooks={"plan_cache": PlanCache(0, 0)})  # plans made every time
    yield ex
    ex.dispose()


# The JS twins of the WGSL scanner, the loop-budget rewriter and the pre-compile bounds, in one
# node process that answers one JSON line per source (a fuzz example costs a pipe round trip,
# not a node start).
WGSL_TWINS_JS = """
import { createInterface } from 'node:readline';
import { scanWgsl } from './backends-js/src/wgsl-scan.mjs';
import { budgetLoops } from './backends-js/src/wgsl-budget.mjs';
import { checkBounds, refusalMessage } from './backends-js/src/wgsl-bounds.mjs';
for await (const line of createInterface({ input: process.stdin })) {
  const { source, workgroups } = JSON.parse(line);
  let answer;
  try {
    const r = checkBounds(source, workgroups);
    const where = r ? refusalMessage(source, r) : null;
    const b = budgetLoops(source, 65534, 7);
    answer = { scan: scanWgsl(source), budget: { source: b.source, loops: b.loops },
      bounds: r ? { code: r.code, message: where.message } : null };
  } catch (e) {
    answer = { crash: String(e && e.stack || e) };
  }
  process.stdout.write(JSON.stringify(answer) + '\\n');
}
"""


class WgslTwins:
    """Ask the JS twins about one source at a time (see WGSL_TWINS_JS)."""

    def __init__(self) -> None:
        import subprocess
        from pathlib import Path

        self.proc = subprocess.Popen(
            ["node", "--input-type=module", "-e", WGSL_TWINS_JS],
            cwd=Path(__file__).resolve().parents[2],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )

    def ask(self, source: str, workgroups: list[int] | None = None) -> dict[str, Any]:
        import json

        assert self.proc.stdin is not None and self.proc.stdout is not None
        line = json.dumps({"source": source, "workgroups": workgroups or [1, 1, 1]})
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


@pytest.fixture(scope="module")
def wgsl_js() -> Iterator[WgslTwins]:
    twins = WgslTwins()
    yield twins
    twins.close()


def wgsl_python(source: str, workgroups: list[int] | None = None) -> dict[str, Any]:
    """The Python twins' answer for a source, in the JS twins' form."""
    from gpulab.wgsl_bounds import check_bounds, refusal_message
    from gpulab.wgsl_budget import budget_loops
    from gpulab.wgsl_scan import scan_wgsl

    r = check_bounds(source, workgroups or [1, 1, 1])
    b = budget_loops(source, 65534, 7)
    return {
        "scan": scan_wgsl(source),
        "budget": {"source": b.source, "loops": b.loops},
        "bounds": None if r is None else {"code": r.code, "message": refusal_message(source, r)[0]},
    }
