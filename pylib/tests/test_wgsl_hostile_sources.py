"""Hostile WGSL sources against both scanners (wgsl_scan.py / wgsl-scan.mjs) and both loop-budget
rewriters (wgsl_budget.py / wgsl-budget.mjs): every WGSL line break ends a `//` comment (a
comment ended by a vertical tab hid the next line from the rewriter), and the binding scan takes
linear time (256 KB of `@group(0) var a:` took 126 s before)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from gpulab.wgsl_budget import budget_loops
from gpulab.wgsl_scan import scan_wgsl, strip_comments

ROOT = Path(__file__).resolve().parents[2]
# WGSL's line breaks (the spec's list): each ends a line comment
LINE_BREAKS = ["\n", "\r", "\v", "\f", "\u0085", "\u2028", "\u2029"]
VAR = "@group(0) @binding(0) var<storage, read_write> o: array<u32>;"
JS_SCAN = """
import { scanWgsl, stripComments } from './backends-js/src/wgsl-scan.mjs';
import { budgetLoops } from './backends-js/src/wgsl-budget.mjs';
let text = '';
for await (const chunk of process.stdin) text += chunk;
const out = JSON.parse(text).map((s) => ({ scan: scanWgsl(s), code: stripComments(s),
  loops: budgetLoops(s, 65534, 1).loops }));
process.stdout.write(JSON.stringify(out));
"""


def _js(sources: list[str], timeout: float = 120) -> list[dict]:
    proc = subprocess.run(
        ["node", "--input-type=module", "-e", JS_SCAN],
        cwd=ROOT,
        check=True,
        input=json.dumps(sources),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return json.loads(proc.stdout)


@pytest.mark.parametrize("brk", LINE_BREAKS, ids=[f"U+{ord(b):04X}" for b in LINE_BREAKS])
def test_every_wgsl_line_break_ends_a_line_comment_in_both_scanners(brk):
    """What follows a `//` comment's line break is code: the binding it declares is scanned and
    the loop on it is budgeted, by both twins alike."""
    source = f"// a comment{brk}{VAR}\nfn f() {{ // x{brk}loop {{ }} }}"
    code = strip_comments(source)
    assert VAR in code and "loop {" in code
    assert [v["name"] for v in scan_wgsl(source)["vars"]] == ["o"]
    assert budget_loops(source, 65534, 1).loops == 1
    (js,) = _js([source])
    assert js["code"] == code
    assert js["scan"] == scan_wgsl(source)
    assert js["loops"] == 1


def _scan_in_subprocess(source: str, timeout: float) -> dict:
    """scan_wgsl in a fresh interpreter, bounded by `timeout` (a superlinear scan times out)."""
    code = "import json, sys; from gpulab.wgsl_scan import scan_wgsl; " + (
        "print(json.dumps(scan_wgsl(sys.stdin.read())))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        input=source,
        capture_output=True,
        text=True,
        check=True,
        timeout=timeout,
    )
    return json.loads(proc.stdout)


# 1 MiB sources that made the scanners rescan to the end for every declaration (quadratic: 256 KB
# took 126 s of Python, 128 KB 0.93 s of node; 1 MiB would take about an hour in Python)
MIB = 1024 * 1024
HOSTILE_MIB = {
    "var-without-semicolon": ("@group(0) var a:" * (MIB // 16 + 1))[:MIB],
    "var-template-open": ("@a var<x" * (MIB // 8 + 1))[:MIB],
    "attribute-paren-open": ("@a(" * (MIB // 3 + 1))[:MIB],
    "struct-open": ("struct a{" * (MIB // 9 + 1))[:MIB],
    # n declaration heads before one `;`: each type read to that `;` was n copies of the rest
    # (quadratic in time and in the scan's size; 64 KB took seconds, 1 MiB never ended)
    "var-heads-then-one-semicolon": ("@group(0) var a:" * (MIB // 16))[: MIB - 1] + ";",
    "var-heads-in-a-function": (
        "fn main() { o[0] = " + "@group(0) var a:" * ((MIB - 30) // 16) + "1.0; }"
    ),
}


@pytest.mark.slow  # over ~10 s of CPU: make test, not test-fast
@pytest.mark.parametrize("name", list(HOSTILE_MIB))
def test_the_binding_scan_of_a_hostile_mebibyte_is_linear_in_both_scanners(name):
    """The only bound is a generous timeout (60 s per scanner for 1 MiB; linear scans take well
    under a second here): a quadratic scan would need many minutes."""
    source = HOSTILE_MIB[name]
    py = _scan_in_subprocess(source, timeout=60)
    (js,) = _js([source], timeout=60)
    assert js["scan"] == py
    if name in ("var-without-semicolon", "var-heads-then-one-semicolon"):
        assert py["vars"] == []  # no declaration ends before the next head: none is read


def test_a_column_counts_utf16_units_in_both_scanners():
    """A character past U+FFFF before a declaration is two UTF-16 units, as the page's compiler
    and the bounds' messages count: both scanners give the same column (Python counted one)."""
    source = "\U0001f600" + VAR + "\n\U0001f600\U0001f600 " + VAR.replace(" o:", " p:")
    py = scan_wgsl(source)
    assert [(v["line"], v["column"]) for v in py["vars"]] == [(1, 3), (2, 6)]
    (js,) = _js([source])
    assert js["scan"] == py
