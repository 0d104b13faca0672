"""The product layer of the conformance runner, mostly judged on fabricated lane results: the
cross-lane bitwise check, the baseline, the verdict and exit status, the three report formats
(JSON, markdown, JUnit XML); and on real lanes, a few cases each: the broken-kernel hooks
(cpu-python's kernel swap, a browser lane's) and a node lane running a given gpu-lab package."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from gpulab.conformance import cli, report
from gpulab.conformance.baseline import load_baseline
from gpulab.conformance.bitwise import compare_lanes, first_difference
from gpulab.conformance.executors import JsRuntime, LaneInfo, LaneRun, RawResult
from gpulab.conformance.reference import evaluate
from gpulab.conformance.runner import break_hook, check_results, load_cases, run_conformance
from gpulab.conformance.verdict import judge_run

MACHINE = {
    "date": "2026-12-01T00:00:00Z",
    "command": "gpulab conformance",
    "os": "test",
    "cpu": "x",
    "python": "3",
    "adapters": [],
    "browsers": [],
}


def _cases(*ops: str) -> list[dict]:
    """The cases of these ops with an output "y" to corrupt (the zero-size group's are named
    out0, out1, .. and hold no element)."""
    cases = load_cases()
    return [
        c for c in cases if c["op"] in ops and any(o["name"] == "y" for o in c["graph"]["outputs"])
    ]


def _correct(case: dict) -> RawResult:
    """The reference's answer (the protocol's fixed-order bits where it has them)."""
    with np.errstate(over="ignore"):  # references past float32's range round to infinity
        refs = evaluate(case["graph"])
    outs = {}
    for o in case["graph"]["outputs"]:
        ref = refs[o["id"]]
        value = ref.value if ref.bits is None else ref.bits
        with np.errstate(over="ignore"):
            outs[o["name"]] = value.astype(np.float32 if ref.dtype == "float32" else np.int32)
    return RawResult(outputs=outs)


def _run(executor: str, cases: list[dict], results: dict | None = None) -> LaneRun:
    results = results if results is not None else {c["name"]: _correct(c) for c in cases}
    return LaneRun(LaneInfo(executor, backend="cpu", adapter="test", software=False), results)


def _judge(cases: list[dict], runs: list[LaneRun], baseline=None):
    reports = [check_results(cases, run, {}) for run in runs]
    bits = compare_lanes(cases, {r.lane.executor: r.raw for r in reports})
    return reports, judge_run(cases, reports, bits, baseline or load_baseline(None))


def _flip(result: RawResult, name: str, index: int = 0, delta: int = 1) -> RawResult:
    outs = {k: v.copy() for k, v in result.outputs.items()}
    flat = outs[name].reshape(-1)
    flat.view(np.uint32)[index] ^= delta
    return RawResult(outputs=outs)


def test_bits_compare_as_the_exact_class_says() -> None:
    nan1 = np.array([np.nan], dtype=np.float32)
    nan2 = np.array([0x7FC00001], dtype=np.uint32).view(np.float32)
    assert first_difference(nan1, nan2) is None, "any NaN equals any NaN"
    zero, negzero = np.array([0.0], np.float32), np.array([-0.0], np.float32)
    index, a, b = first_difference(zero, negzero)
    assert (index, a, b) == (0, "0x00000000 (0.0)", "0x80000000 (-0.0)")
    assert first_difference(zero, zero.astype(np.int32))[0] == -1, "dtype differs"
    assert first_difference(np.zeros(3, np.int32), np.array([0, 0, 5], np.int32))[0] == 2


def test_lanes_that_agree_are_bit_identical_and_pass() -> None:
    cases = _cases("relu", "add")
    _, verdict = _judge(cases, [_run("a", cases), _run("b", cases), _run("c", cases)])
    assert verdict.exit_code == 0, verdict.regressions
    assert verdict.bitwise["relu"].summary() == "bit-identical (3 lanes)"
    assert verdict.bitwise_status == {"relu": "pass", "add": "ungated"}


def test_an_exact_output_that_differs_on_one_lane_fails_naming_op_lanes_and_element() -> None:
    cases = _cases("relu")
    case = cases[3]
    bad = {c["name"]: _correct(c) for c in cases}
    bad[case["name"]] = _flip(bad[case["name"]], "y", index=0)
    # the judge is told nothing is wrong (lanes.json of another kind of lane would not know):
    # only the bitwise check sees it, so it must fail the verdict on its own
    reports = [
        check_results(cases, _run("a", cases), {}),
        check_results(cases, _run("b", cases, bad), {}),
    ]
    reports[1].results = [r.__class__(**{**r.__dict__, "passed": True}) for r in reports[1].results]
    bits = compare_lanes(cases, {r.lane.executor: r.raw for r in reports})
    verdict = judge_run(cases, reports, bits, load_baseline(None))
    assert verdict.exit_code == 1
    first = bits["relu"].first
    assert (first.case, first.output, first.lanes, first.index) == (
        case["name"],
        "y",
        ("a", "b"),
        0,
    )
    assert any(r.startswith("bitwise relu: DIFFER") for r in verdict.regressions)


def test_non_exact_outputs_that_differ_are_reported_not_gated() -> None:
    cases = _cases("add")
    other = {c["name"]: _correct(c) for c in cases}
    other[cases[0]["name"]] = _flip(other[cases[0]["name"]], "y")
    _, verdict = _judge(cases, [_run("a", cases), _run("b", cases, other)])
    assert verdict.bitwise_status["add"] == "ungated"
    assert "not bit-identical" in verdict.bitwise["add"].summary()


def test_an_exact_chain_node_fed_by_differing_values_is_not_gated_but_one_fed_alike_is() -> None:
    graph = {
        "version": 2,
        "nodes": [
            {"id": 0, "op": "input", "shape": [2], "data": [1.5, -2]},
            {"id": 1, "op": "add", "a": 0, "b": 0},  # arith: lanes may differ within tolerance
            {"id": 2, "op": "relu", "a": 1},  # exact, fed by the add: each lane's own values
            {"id": 3, "op": "neg", "a": 0},
        ],  # exact, fed by an input: must agree
        "outputs": [{"name": "s", "id": 1}, {"name": "r", "id": 2}, {"name": "n", "id": 3}],
    }
    case = {"name": "chain/t", "op": "chain", "graph": graph}
    a = {
        "s": np.array([3, -4], np.float32),
        "r": np.array([3, 0], np.float32),
        "n": np.array([-1.5, 2], np.float32),
    }
    b = {**a, "s": np.array([3.0000002, -4], np.float32), "r": np.array([3.0000002, 0], np.float32)}
    runs = {"a": {"chain/t": RawResult(a)}, "b": {"chain/t": RawResult(b)}}
    bits = compare_lanes([case], runs)["chain"]
    assert (bits.exact_outputs, bits.exact_differing, bits.other_outputs) == (1, 0, 2)
    runs["b"]["chain/t"] = RawResult({**b, "n": np.array([-1.5, -2], np.float32)})
    bits = compare_lanes([case], runs)["chain"]
    assert bits.exact_differing == 1 and bits.first.output == "n"


def test_a_lane_that_errs_or_is_refused_takes_no_part() -> None:
    cases = _cases("relu")
    err = {
        c["name"]: RawResult(error={"code": "UNSUPPORTED", "message": "x", "node": 1})
        for c in cases
    }
    bits = compare_lanes(cases, {"a": {c["name"]: _correct(c) for c in cases}, "b": err})
    assert not bits["relu"].gated and bits["relu"].lanes == []


def test_the_baseline_excuses_listed_failures_only(tmp_path: Path) -> None:
    cases = _cases("relu", "neg")
    broken = {
        c["name"]: (_flip(_correct(c), "y") if c["op"] == "relu" else _correct(c)) for c in cases
    }
    runs = [_run("cpu-python", cases), _run("node-wasm", cases, broken)]
    _, verdict = _judge(cases, runs)
    assert verdict.exit_code == 1 and verdict.cells["node-wasm", "relu"].status == "fail"
    path = tmp_path / "baseline.json"
    path.write_text(
        json.dumps(
            {"node-wasm": {"relu": "test: a known wrong kernel"}, "bitwise": {"relu": "test"}}
        )
    )
    reports, verdict = _judge(cases, runs, load_baseline(path))
    assert verdict.exit_code == 0, verdict.regressions
    assert verdict.cells["node-wasm", "relu"].status == "known"
    assert verdict.bitwise_status["relu"] == "known"
    xml = report.to_junit("corpus", reports, verdict, MACHINE)
    relu = xml.find("testsuite[@name='corpus.node-wasm']/testcase[@name='relu']")
    assert relu.find("skipped") is not None and relu.find("failure") is None
    # a baseline listing only the op of the other lane does not excuse this one
    path.write_text(json.dumps({"cpu-python": {"relu": "x"}}))
    assert _judge(cases, runs, load_baseline(path))[1].exit_code == 1


def test_an_earlier_report_is_a_baseline_and_fixed_entries_are_reported(tmp_path: Path) -> None:
    cases = _cases("relu")
    broken = {c["name"]: _flip(_correct(c), "y") for c in cases}
    reports, verdict = _judge(cases, [_run("cpu-python", cases), _run("node-wasm", cases, broken)])
    earlier = tmp_path / "conformance.json"
    earlier.write_text(json.dumps(report.to_json("corpus", reports, verdict, MACHINE)))
    baseline = load_baseline(earlier)
    assert set(baseline.known) == {"node-wasm", "bitwise"}
    _, again = _judge(
        cases, [_run("cpu-python", cases), _run("node-wasm", cases, broken)], baseline
    )
    assert again.exit_code == 0
    _, healed = _judge(cases, [_run("cpu-python", cases), _run("node-wasm", cases)], baseline)
    assert healed.exit_code == 0 and "bitwise relu" in healed.fixed
    assert f"node-wasm {cases[0]['name']}" in healed.fixed


def test_an_unavailable_lane_exits_2_unless_the_baseline_lists_the_whole_lane(tmp_path) -> None:
    cases = _cases("relu")
    gone = LaneRun(LaneInfo("wgpu", available=False, reason="no adapter"), {})
    _, verdict = _judge(cases, [_run("cpu-python", cases), gone])
    assert verdict.exit_code == 2 and verdict.unavailable == ["wgpu"]
    path = tmp_path / "b.json"
    path.write_text(json.dumps({"wgpu": {"*": "no GPU on this runner"}}))
    assert _judge(cases, [_run("cpu-python", cases), gone], load_baseline(path))[1].exit_code == 0


def test_reports_in_three_formats_say_the_same(tmp_path: Path) -> None:
    cases = _cases("relu", "add", "sum")
    broken = {
        c["name"]: (_flip(_correct(c), "y", delta=1 << 23) if c["op"] == "add" else _correct(c))
        for c in cases
    }  # an exponent bit: past any bound
    reports, verdict = _judge(cases, [_run("cpu-python", cases), _run("node-cpu", cases, broken)])
    paths = report.write_all("corpus", reports, verdict, MACHINE, tmp_path)
    root = ET.parse(paths["junit"]).getroot()
    assert root.get("tests") == str(3 * (2 + 1)), "N ops x (L lanes + bit-identical)"
    assert root.get("failures") == "1"
    failing = root.findall(".//testcase[failure]")
    assert [(c.get("classname"), c.get("name")) for c in failing] == [("corpus.node-cpu", "add")]
    payload = json.loads(paths["json"].read_text())
    assert payload["verdict"]["exit_code"] == 1
    assert [c["op"] for c in payload["cells"] if c["status"] == "fail"] == ["add"]
    md = paths["markdown"].read_text()
    add_row = next(line for line in md.splitlines() if line.startswith("| add |"))
    assert "FAIL" in add_row.split("|")[4] and "pass" in add_row.split("|")[3]
    assert "bit-identical (2 lanes)" in next(
        line for line in md.splitlines() if line.startswith("| relu |")
    )


def test_cpu_python_break_hook_swaps_the_kernel_and_restores_it() -> None:
    from gpulab.cpu import kernels

    before = kernels.KERNELS["relu"]
    cases = _cases("relu", "neg")
    report_ = run_conformance("cpu-python", cases, break_ops=["relu"])
    assert kernels.KERNELS["relu"] is before
    assert {r.op for r in report_.failures()} == {"relu"}
    assert run_conformance("cpu-python", cases).passed
    assert break_hook("node-wasm:relu,browser-webgpu:abs") == {
        "node-wasm": ["relu"],
        "chromium-webgpu": ["abs"],
    }
    with pytest.raises(ValueError, match="GPULAB_CONFORMANCE_BREAK"):
        break_hook("node-wasm:nope")


def test_usage_errors_exit_2(capsys, monkeypatch, tmp_path) -> None:
    assert cli.main(["--suite", "nope", "--report", str(tmp_path)]) == 2
    assert cli.main(["--lane", "safari-webgpu", "--report", str(tmp_path)]) == 2
    assert "unknown lanes" in capsys.readouterr().err
    assert (
        cli.main(["--lane", "cpu-python", "--cases", "no_such_op", "--report", str(tmp_path)]) == 2
    )


def test_the_js_break_hook_corrupts_one_op_on_a_browser_lane(browser, server_url) -> None:
    cases = _cases("relu", "neg")
    broken = run_conformance(
        "chromium-webgpu",
        cases,
        browser=browser,
        server_url=server_url,
        allow_software=True,
        break_ops=["neg"],
    )
    assert {r.op for r in broken.failures()} == {"neg"}, broken.describe_failures()
    assert broken.lane.extra["machine"]["webgpu"]["available"] is True


def _package_copy(tmp_path: Path) -> Path:
    """The runtime laid out as the installed gpu-lab npm package: src/ beside kernels/."""
    root = Path(__file__).resolve().parents[1]
    package = tmp_path / "node_modules" / "gpu-lab"
    shutil.copytree(root / "backends-js" / "src", package / "src")
    for name in ("ops.json", "kernels.wasm", "wgsl", "glsl"):
        source = root / "kernels" / name
        if source.is_dir():
            shutil.copytree(source, package / "kernels" / name)
        else:
            (package / "kernels").mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, package / "kernels" / name)
    return package


def test_node_lanes_run_a_given_gpu_lab_package(tmp_path: Path) -> None:
    package = _package_copy(tmp_path)
    cases = _cases("relu", "sum")[:6]
    report_ = run_conformance("node-wasm", cases, runtime=JsRuntime.at(package))
    assert report_.passed, report_.describe_failures()
    # it is that package that runs: a runtime.mjs that throws makes the lane unavailable
    (package / "src" / "runtime.mjs").write_text("throw new Error('the given package ran');\n")
    gone = run_conformance("node-wasm", cases, runtime=JsRuntime.at(package))
    assert not gone.lane.available and "the given package ran" in gone.lane.reason
    (package / "kernels" / "kernels.wasm").unlink()
    with pytest.raises(FileNotFoundError, match="kernels.wasm"):
        JsRuntime.at(package)


def test_the_command_gates_on_regressions_only_with_a_baseline(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("GPULAB_CONFORMANCE_BREAK", "cpu-python:relu")
    args = ["--lane", "cpu-python", "--cases", "relu,neg", "--report", str(tmp_path / "r")]
    assert cli.main(args) == 1
    xml = ET.parse(tmp_path / "r" / "conformance.xml").getroot()
    assert (
        xml.find("testsuite[@name='corpus.cpu-python']/testcase[@name='relu']/failure") is not None
    )
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps({"cpu-python": {"relu": "test: known broken"}}))
    assert cli.main([*args, "--baseline", str(baseline)]) == 0
    md = (tmp_path / "r" / "conformance.md").read_text()
    assert "## Known failures" in md and "test: known broken" in md
    monkeypatch.delenv("GPULAB_CONFORMANCE_BREAK")
    assert cli.main([*args, "--baseline", str(baseline)]) == 0
    assert "- cpu-python relu" in (tmp_path / "r" / "conformance.md").read_text(), "fixed"


def test_the_bad_graph_suite_runs_through_a_lane(tmp_path: Path) -> None:
    assert (
        cli.main(["--suite", "bad-graphs", "--lane", "cpu-python", "--report", str(tmp_path)]) == 0
    )
    payload = json.loads((tmp_path / "conformance.json").read_text())
    rows = json.loads(
        (Path(__file__).parents[1] / "pylib/gpulab/conformance/bad_graphs.json").read_text()
    )
    assert payload["lanes"][0]["cases"] == len(rows) and payload["bitwise"] == {}
    groups = {r["name"].split("/")[0] for r in rows}
    assert ET.parse(tmp_path / "conformance.xml").getroot().get("tests") == str(len(groups))


def test_the_onnx_node_suite_runs_through_the_command(tmp_path) -> None:
    """`--suite onnx-node` judges ONNX's node tests against their expected outputs."""
    cases = "Relu,test_conv_with_strides_padding,test_attention_3d"
    assert (
        cli.main(
            [
                "--suite",
                "onnx-node",
                "--lane",
                "cpu-python",
                "--cases",
                cases,
                "--report",
                str(tmp_path),
            ]
        )
        == 0
    )
    text = (tmp_path / "conformance.md").read_text()
    assert "| Conv | onnx: rtol 1e-3, atol 1e-7 | pass 1 (match ONNX)" in text, text
    assert "| Attention |" in text and "| Relu |" in text
