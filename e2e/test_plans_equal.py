"""The two planners give equal plans: planner.mjs (browser) and gpulab.native.planner (native).

Every conformance case is validated and planned on both sides under several limit sets; the
plans must be deep-equal JSON, so the browser WebGPU backend and the wgpu-py executor dispatch
the same kernels with the same params. The limit sets cover both matmul kernels (16 and 32 KiB
of workgroup storage) and small devices (dispatches split over y/z, buffers past the limit).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from gpulab.errors import GpuLabError
from gpulab.native.planner import plan_graph
from gpulab.protocol import validate

from e2e.conformance.runner import load_cases

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = Path(__file__).with_name("plans_js.mjs")
LIMIT_SETS = [
    {"maxComputeWorkgroupStorageSize": 16384},
    {"maxComputeWorkgroupStorageSize": 32768},
    # a tiny device: every dispatch over 3 workgroups splits over y (and z); big buffers refused
    {"maxComputeWorkgroupStorageSize": 16384, "maxComputeWorkgroupsPerDimension": 3,
     "maxStorageBufferBindingSize": 4096},
]


def _python_plans(graph: dict) -> list[Any]:
    try:
        checked = validate(graph)
    except GpuLabError as err:
        return [{"error": {"code": err.code}}] * len(LIMIT_SETS)
    plans: list[Any] = []
    for limits in LIMIT_SETS:
        try:
            plans.append(plan_graph(checked, limits))
        except GpuLabError as err:
            plans.append({"error": {"code": err.code}})
    return plans


def _js_plans(cases: list[dict]) -> dict[str, list[Any]]:
    node = shutil.which("node")
    assert node, "node is needed for the JS planner"
    payload = json.dumps({"cases": [{"name": c["name"], "graph": c["graph"]} for c in cases],
                          "limits": LIMIT_SETS})
    done = subprocess.run([node, str(SCRIPT)], input=payload, capture_output=True, text=True,
                          cwd=ROOT, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    for plans in answer.values():  # messages may differ in wording; codes must agree
        for plan in plans:
            if "error" in plan:
                plan["error"] = {"code": plan["error"]["code"]}
    return answer


@pytest.fixture(scope="module")
def cases() -> list[dict]:
    found = load_cases()
    assert len(found) > 100, "the conformance corpus is missing"
    return found


def test_python_and_js_plans_are_equal_for_every_case(cases: list[dict]) -> None:
    js = _js_plans(cases)
    assert set(js) == {c["name"] for c in cases}
    differ = []
    for case in cases:
        # through JSON so tuples/lists and 1/1.0 compare as the wire sees them
        py = json.loads(json.dumps(_python_plans(case["graph"])))
        if py != js[case["name"]]:
            differ.append(case["name"])
    assert not differ, f"{len(differ)} cases plan differently, first: {differ[:10]}"


def test_the_limit_sets_exercise_every_planner_path(cases: list[dict]) -> None:
    """Guards the test above against comparing only trivial plans."""
    kernels: dict[int, set[str]] = {i: set() for i in range(len(LIMIT_SETS))}
    split = limited = 0
    for case in cases:
        for i, plan in enumerate(_python_plans(case["graph"])):
            if "error" in plan:
                limited += plan["error"]["code"] == "LIMIT"
                continue
            kernels[i] |= {s["kernel"] for s in plan["steps"]}
            split += any(s["dispatch"][1] > 1 for s in plan["steps"])
    assert "matmul" in kernels[0] and "matmul_rb" not in kernels[0]
    assert {"matmul_rb", "matmul_rb_v4"} <= kernels[1] and "matmul" not in kernels[1]
    wgsl = {p.stem for p in (ROOT / "kernels" / "wgsl").glob("*.wgsl")}
    assert kernels[0] | kernels[1] == wgsl, "a kernel no case plans, or a plan names no file"
    assert split > 0 and limited > 0


def test_a_planner_difference_would_be_caught(cases: list[dict]) -> None:
    """The comparison is not vacuous: a changed param makes the plans differ."""
    case = next(c for c in cases if c["op"] == "add")
    plans = json.loads(json.dumps(_python_plans(case["graph"])))
    js = _js_plans([case])[case["name"]]
    assert plans == js
    plans[0]["steps"][0]["params"][0][1] += 1
    assert plans != js
