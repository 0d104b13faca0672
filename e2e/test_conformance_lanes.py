"""lanes.json, the per-lane expectation list: a listed op must be refused with UNSUPPORTED (that
is the expected result), and a listed lane that runs the op, or fails it another way, fails.

The end-to-end tests hide a kernel with the runtime's test hook (hooks.withoutKernels, passed
by the node executor as --without-kernels), so the JS backend really refuses before any device
work, and the judge sees the refusal as an executor result.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
from gpulab.conformance import executors, machine
from gpulab.conformance.baseline import load_baseline
from gpulab.conformance.executors import LaneInfo, LaneRun, RawResult, lane_of
from gpulab.conformance.lanes import LANES_PATH, kernel_dtype, listed_entry, load_lanes, node_dtypes
from gpulab.conformance.reference import OP_TABLE, evaluate
from gpulab.conformance.report import to_markdown
from gpulab.conformance.runner import check_results, load_cases, run_conformance
from gpulab.conformance.verdict import judge_run

NODE_KERNEL_DTYPES = Path(__file__).parents[1] / "pylib/gpulab/conformance/node_kernel_dtypes.mjs"
RELU_LISTED = {"cpu": {"relu": "test: the relu kernel is hidden"}}


def _relu_cases() -> list[dict]:
    """Every relu case, a chain that uses relu, and cases of another op (add)."""
    cases = load_cases()
    chain = next(
        c
        for c in cases
        if c["op"] == "chain" and any(n["op"] == "relu" for n in c["graph"]["nodes"])
    )
    return (
        [c for c in cases if c["op"] == "relu"]
        + [chain]
        + [c for c in cases if c["op"] == "add"][:4]
    )


def _uses_relu(case: dict) -> bool:
    """A case whose relu kernel runs: a zero-size relu is answered without it (lanes.py)."""
    return listed_entry(case["graph"], RELU_LISTED["cpu"]) is not None


def test_lanes_json_names_every_backend_lane_and_only_ops_with_reasons(tmp_path: Path) -> None:
    lanes = load_lanes()
    assert set(lanes) == {lane_of(name) for name in executors.EXECUTORS}
    bad = tmp_path / "lanes.json"
    for content, says in [
        ({"cpu": {"nope": "x"}}, "not an op"),
        ({"cpu": {"relu": ""}}, "reason"),
        ({"cpu": {"relu:int8": "x"}}, "unknown dtype"),
        ({"cpu": []}, "map"),
    ]:
        bad.write_text(json.dumps(content))
        with pytest.raises((ValueError, TypeError), match=says):
            load_lanes(bad)
    assert LANES_PATH.name == "lanes.json"


def test_an_entry_covers_an_op_or_one_dtype_of_it() -> None:
    graph = {
        "version": 3,
        "nodes": [
            {"id": 0, "op": "input", "shape": [2], "dtype": "int32", "data": [1, -2]},
            {"id": 1, "op": "relu", "a": 0},
            {"id": 2, "op": "input", "shape": [2], "data": [1, 2]},
            {"id": 3, "op": "add", "a": 2, "b": 2},
        ],
        "outputs": [{"name": "y", "id": 1}, {"name": "z", "id": 3}],
    }
    dtypes = node_dtypes(graph)
    assert dtypes == {0: "int32", 1: "int32", 2: "float32", 3: "float32"}
    assert kernel_dtype(graph["nodes"][1], dtypes) == "int32"
    assert listed_entry(graph, {"relu:int32": "no int32"}) == ("relu:int32", "no int32")
    assert listed_entry(graph, {"add:int32": "no int32"}) is None
    assert listed_entry(graph, {"add": "no add"}) == ("add", "no add")
    assert listed_entry(graph, {}) is None


def _fake_run(
    cases: list[dict], result: dict[str, RawResult], executor: str = "node-cpu"
) -> LaneRun:
    return LaneRun(LaneInfo(executor, backend="cpu", software=False), result)


def _correct(case: dict) -> RawResult:
    """The reference's answer (the protocol's fixed-order bits where it has them)."""
    refs = evaluate(case["graph"])
    pick = {o["id"]: refs[o["id"]] for o in case["graph"]["outputs"]}
    return RawResult(
        outputs={
            o["name"]: (
                pick[o["id"]].value if pick[o["id"]].bits is None else pick[o["id"]].bits
            ).astype(np.float32)
            for o in case["graph"]["outputs"]
        }
    )


UNSUPPORTED = RawResult(
    error={"code": "UNSUPPORTED", "message": "cpu has no kernel for relu (node 1)", "node": 1}
)


def test_the_judge_counts_a_listed_refusal_and_fails_everything_else_on_a_listed_op() -> None:
    cases = _relu_cases()
    listed = [c for c in cases if _uses_relu(c)]
    plain = [c for c in cases if not _uses_relu(c)]
    refused = {c["name"]: UNSUPPORTED for c in listed} | {c["name"]: _correct(c) for c in plain}
    report = check_results(cases, _fake_run(cases, refused), RELU_LISTED)
    assert report.passed, report.describe_failures()
    assert {r.name for r in report.results if r.refused} == {c["name"] for c in listed}
    assert report.by_op()["relu"].unsupported == len([c for c in listed if c["op"] == "relu"])
    verdict = judge_run(cases, [report], {}, load_baseline(None))
    md = to_markdown("corpus", [report], verdict, machine.summary([report], ["test"]))
    runs = sum(c["op"] == "relu" for c in listed)  # the relu cases with elements
    assert runs >= 8 and len(listed) == runs + 1  # and a chain
    # the zero-size relu runs no kernel (lanes.py): it is judged, and passes, as any case
    assert sum(c["op"] == "relu" for c in plain) == 1
    row = f"| relu | exact | pass {runs + 1} (max 0 ulp, 0% of tol, {runs} UNSUPPORTED as listed) |"
    assert row in md, md
    hidden = f"| node-cpu | relu | test: the relu kernel is hidden | {runs + 1} of {runs + 1} |"
    assert hidden in md, md
    assert report.to_dict()["listed"] == RELU_LISTED["cpu"]

    # The same refusals where lanes.json does not list relu: every one fails.
    unlisted = check_results(cases, _fake_run(cases, refused), {"cpu": {}})
    assert {r.name for r in unlisted.failures()} == {c["name"] for c in listed}

    # A listed lane that runs relu correctly fails: the entry is stale.
    ran = {c["name"]: _correct(c) for c in cases}
    stale = check_results(cases, _fake_run(cases, ran), RELU_LISTED)
    assert {r.name for r in stale.failures()} == {c["name"] for c in listed}
    assert all(
        "unexpectedly supported: remove 'relu' from lanes.json" in r.error for r in stale.failures()
    )

    # A listed lane that fails relu some other way fails too.
    other = dict(refused) | {
        listed[0]["name"]: RawResult(error={"code": "BACKEND", "message": "boom", "node": None})
    }
    broken = check_results(cases, _fake_run(cases, other), RELU_LISTED)
    assert [r.name for r in broken.failures()] == [listed[0]["name"]]
    assert "expected UNSUPPORTED (lanes.json lists 'relu'" in broken.failures()[0].error

    # Entries of one lane do not apply to another.
    webgl2 = check_results(cases, _fake_run(cases, ran, "browser-webgl2"), RELU_LISTED)
    assert webgl2.passed


def test_node_cpu_lane_refuses_a_hidden_kernel_with_unsupported_as_lanes_json_expects() -> None:
    cases = _relu_cases()
    report = run_conformance("node-cpu", cases, lanes=RELU_LISTED, without_kernels=["relu"])
    assert report.passed, report.describe_failures()
    refused = [r for r in report.results if r.refused]
    assert len(refused) == sum(_uses_relu(c) for c in cases)
    assert all(r.refused.startswith("cpu has no kernel for relu (node ") for r in refused)

    # Not listed: the real refusals fail the lane.
    unlisted = run_conformance("node-cpu", cases, lanes={"cpu": {}}, without_kernels=["relu"])
    assert len(unlisted.failures()) == len(refused)
    assert all(
        r.error.startswith("UNSUPPORTED: cpu has no kernel for relu") for r in unlisted.failures()
    )

    # Listed but the kernel is there: unexpectedly supported.
    stale = run_conformance("node-cpu", cases, lanes=RELU_LISTED)
    assert len(stale.failures()) == len(refused)
    assert "remove 'relu' from lanes.json" in stale.describe_failures()


def test_an_int32_graph_on_a_lane_listing_input_int32_is_refused_as_expected() -> None:
    """The dtype half: node-cpu with its int32 input kernel hidden refuses an int32 graph with
    UNSUPPORTED naming the dtype; lanes.json's "input:int32" makes that the expected result,
    and float32 cases on the same lane still run and pass."""
    int32 = {
        "name": "input/int32_hidden",
        "op": "input",
        "tolerance": "exact",
        "graph": {
            "version": 3,
            "nodes": [{"id": 0, "op": "input", "shape": [2], "dtype": "int32", "data": [1, -2]}],
            "outputs": [{"name": "y", "id": 0}],
        },
    }
    cases = [int32] + [c for c in load_cases() if c["op"] == "add"][:3]
    lanes = {"cpu": {"input:int32": "test: int32 input kernel hidden"}}
    report = run_conformance("node-cpu", cases, lanes=lanes, without_kernels=["input:int32"])
    assert report.passed, report.describe_failures()
    [refused] = [r for r in report.results if r.refused]
    assert refused.name == "input/int32_hidden"
    assert refused.refused == "cpu has no kernel for input at int32 (node 0)"
    unlisted = run_conformance(
        "node-cpu", cases, lanes={"cpu": {}}, without_kernels=["input:int32"]
    )
    assert [r.name for r in unlisted.failures()] == ["input/int32_hidden"]


def test_node_wasm_lane_honours_lanes_json() -> None:
    cases = [c for c in _relu_cases() if c["op"] in {"relu", "add"}]
    report = run_conformance(
        "node-wasm", cases, lanes={"wasm": {"relu": "test"}}, without_kernels=["relu"]
    )
    assert report.passed, report.describe_failures()
    assert sum(1 for r in report.results if r.refused) == sum(map(_uses_relu, cases))


def test_python_lanes_honour_lanes_json(monkeypatch: pytest.MonkeyPatch) -> None:
    """cpu-python (and wgpu, through the same host path) are judged by lanes.json too: a listed
    op that runs fails, and an UNSUPPORTED refusal from the host passes."""
    cases = [c for c in _relu_cases() if c["op"] in {"relu", "add"}]
    stale = run_conformance("cpu-python", cases, lanes={"cpu-python": {"relu": "test"}})
    assert len(stale.failures()) == sum(map(_uses_relu, cases))
    assert "unexpectedly supported" in stale.describe_failures()

    from gpulab import host
    from gpulab.errors import GpuLabError

    real = host.execute

    def refusing(graph: dict, **kwargs: object) -> dict:
        if listed_entry(graph, {"relu": "refused"}):  # as a backend without relu's kernel
            raise GpuLabError("UNSUPPORTED", "cpu-python has no kernel for relu (node 1)", 1)
        return real(graph, **kwargs)

    monkeypatch.setattr(host, "execute", refusing)
    report = run_conformance("cpu-python", cases, lanes={"cpu-python": {"relu": "test"}})
    assert report.passed, report.describe_failures()
    assert sum(1 for r in report.results if r.refused) == sum(map(_uses_relu, cases))


def _int32_graphs() -> list[dict]:
    """Graphs with non-float32 nodes, whatever ops of the table take them today."""
    table = OP_TABLE["ops"]
    graphs = [
        {
            "name": "input/int32",
            "graph": {
                "version": 3,
                "nodes": [
                    {"id": 0, "op": "input", "shape": [2], "dtype": "int32", "data": [1, -2]}
                ],
                "outputs": [{"name": "y", "id": 0}],
            },
        }
    ]
    for op, spec in table.items():
        variables = {spec["operand_types"][o] for o in spec["operands"]}
        if len(spec["operands"]) != 1 or len(variables) != 1 or spec["attrs"]:
            continue
        allowed = spec.get("types", {}).get(next(iter(variables)), [])
        if "int32" in allowed:
            graphs.append(
                {
                    "name": f"{op}/int32",
                    "graph": {
                        "version": 3,
                        "nodes": [
                            {
                                "id": 0,
                                "op": "input",
                                "shape": [2],
                                "dtype": "int32",
                                "data": [1, -2],
                            },
                            {"id": 1, "op": op, "a": 0},
                        ],
                        "outputs": [{"name": "y", "id": 1}],
                    },
                }
            )
    return graphs


def test_kernel_dtype_twins_agree_on_every_case() -> None:
    """lanes.py's kernel_dtype (which "op:dtype" entry a case falls under) is the JS registry's
    kernelDtype, node for node, on the corpus and on int32 graphs; its result dtypes are the
    Python validator's."""
    from gpulab.protocol import validate

    graphs = [{"name": c["name"], "graph": c["graph"]} for c in load_cases()] + _int32_graphs()
    proc = subprocess.run(
        ["node", str(NODE_KERNEL_DTYPES)],
        input=json.dumps(graphs),
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    js = {a["name"]: a for a in json.loads(proc.stdout)}
    checked_int32 = 0
    for g in graphs:
        answer = js[g["name"]]
        assert "error" not in answer, answer
        dtypes = node_dtypes(g["graph"])
        py = {str(int(n["id"])): kernel_dtype(n, dtypes) for n in g["graph"]["nodes"]}
        assert py == answer["dtypes"], g["name"]
        checked = validate(g["graph"])
        assert {n.id: n.dtype for n in checked.nodes} == dtypes, g["name"]
        checked_int32 += "int32" in py.values()
    assert checked_int32 >= 1


DEVICE_WORK_JS = """async ([backend, graphs, plain]) => {
  const { createRuntime } = await import('/backends-js/src/runtime.mjs');
  const hooks = { withoutKernels: ['relu', 'input:int32'] };
  let rt;
  try {
    rt = await createRuntime({ backend, allowSoftware: true, hooks });
  } catch (err) {
    return { unavailable: `${err.code}: ${err.message}` };
  }
  const stats = () => JSON.stringify(backend === 'webgpu' ? hooks.webgpuStats()
    : hooks.webgl2Stats());
  const before = stats();
  const refusals = [];
  for (const graph of graphs) {
    for (const attempt of [() => rt.execute(graph), () => rt.prepare(graph)]) {
      try { await attempt(); refusals.push(null); } catch (err) { refusals.push([err.code, err.message]); }
    }
  }
  const after = stats();
  const ran = await rt.execute(plain);
  const moved = stats();
  rt.dispose();
  return { before, after, moved, refusals, ranOn: ran.backend };
}"""


@pytest.mark.parametrize("backend", ["webgl2", "webgpu"])
def test_browser_gpu_backends_refuse_before_any_device_work(
    backend: str, browser: object, server_url: str
) -> None:
    """In Chromium (software adapters allowed): an UNSUPPORTED graph (an op whose kernel the
    hook hides, and an int32 graph where the hook hides the int32 input kernel, as a lane
    without int32 would be) leaves the backend's own counters (textures/buffers created,
    pipelines/programs, submits) untouched, for execute and prepare; a supported graph
    afterwards moves them, so the counters do see device work."""
    graph = {
        "version": 1,
        "nodes": [
            {"id": 0, "op": "input", "shape": [3], "data": [-1, 0, 2]},
            {"id": 1, "op": "relu", "a": 0},
        ],
        "outputs": [{"name": "y", "id": 1}],
    }
    int32 = {
        "version": 3,
        "nodes": [{"id": 0, "op": "input", "shape": [2], "dtype": "int32", "data": [1, -2]}],
        "outputs": [{"name": "y", "id": 0}],
    }
    plain = {
        "version": 2,
        "nodes": [
            {"id": 0, "op": "input", "shape": [3], "data": [-1, 0, 2]},
            {"id": 1, "op": "neg", "a": 0},
        ],
        "outputs": [{"name": "y", "id": 1}],
    }
    ctx = browser.new_context()  # type: ignore[attr-defined]
    try:
        page = ctx.new_page()
        page.goto(server_url + executors.PAGE_PATH)
        page.wait_for_function("window.gpulabConformance !== undefined")
        got = page.evaluate(DEVICE_WORK_JS, [backend, [graph, int32], plain])
    finally:
        ctx.close()
    assert "unavailable" not in got, got
    want = f"{backend} has no kernel for relu (node 1)"
    at_int32 = f"{backend} has no kernel for input at int32 (node 0)"
    assert got["refusals"] == [["UNSUPPORTED", want]] * 2 + [["UNSUPPORTED", at_int32]] * 2
    assert got["after"] == got["before"]
    assert got["moved"] != got["before"]
    assert got["ranOn"] == backend


def test_browser_lane_honours_lanes_json(browser: object, server_url: str) -> None:
    cases = [c for c in _relu_cases() if c["op"] in {"relu", "add"}]
    report = run_conformance(
        "browser-webgl2",
        cases,
        lanes={"webgl2": {"relu": "test"}},
        without_kernels=["relu"],
        allow_software=True,
        browser=browser,
        server_url=server_url,
    )
    assert report.lane.available, report.describe_failures()
    assert report.passed, report.describe_failures()
    assert sum(1 for r in report.results if r.refused) == sum(map(_uses_relu, cases))


AUTO_JS = """async ([graph]) => {
  const { createRuntime } = await import('/backends-js/src/runtime.mjs');
  const rt = await createRuntime({ allowSoftware: true,
    hooks: { withoutKernels: { webgpu: ['relu'], webgl2: ['relu'] } } });
  try {
    const res = await rt.execute(graph);
    return { primary: rt.backend, ran: res.backend, data: Array.from(res.outputs.y.data),
             attempts: res.stats.attempts, fallback: res.stats.fallback };
  } finally {
    rt.dispose();
  }
}"""


def test_browser_auto_passes_over_gpu_backends_without_the_kernel(
    browser: object, server_url: str
) -> None:
    """In Chromium, auto opens webgpu (software allowed); a graph webgpu and webgl2 have no
    kernel for (hidden by the hook) runs on wasm, and the result says why each was passed over."""
    graph = {
        "version": 1,
        "nodes": [
            {"id": 0, "op": "input", "shape": [3], "data": [-1, 0, 2]},
            {"id": 1, "op": "relu", "a": 0},
        ],
        "outputs": [{"name": "y", "id": 1}],
    }
    ctx = browser.new_context()  # type: ignore[attr-defined]
    try:
        page = ctx.new_page()
        page.goto(server_url + executors.PAGE_PATH)
        page.wait_for_function("window.gpulabConformance !== undefined")
        got = page.evaluate(AUTO_JS, [graph])
    finally:
        ctx.close()
    assert got["primary"] == "webgpu", got
    assert got["ran"] == "wasm"
    assert got["data"] == [0, 0, 2]
    assert [(a["backend"], a["ok"], a.get("reason")) for a in got["attempts"]] == [
        ("webgpu", False, "UNSUPPORTED: webgpu has no kernel for relu (node 1)"),
        ("webgl2", False, "UNSUPPORTED: webgl2 has no kernel for relu (node 1)"),
        ("wasm", True, None),
    ]
    assert got["fallback"] == "webgpu has no kernel for relu (node 1); ran on wasm"
