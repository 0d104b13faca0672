"""The conformance corpus on the CPU lanes, and checks that the corpus and its judge are sound.

The lanes (cpu-python = gpulab's numpy evaluator, node-cpu = the JS CPU backend) must pass
every case; the judge must be able to fail (perturbed results are reported as failing).
"""

from __future__ import annotations

import base64
import json
import math
import subprocess
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from gpulab.conformance import executors, generate, reference
from gpulab.conformance.executors import LaneInfo, LaneRun, RawResult
from gpulab.conformance.runner import check_results, load_cases, run_conformance


def _corpus_ops() -> set[str]:
    """The ops the corpus must cover: all but the student kernel ops (the
    family `student`), which run a student's own WGSL and so have no float64 reference; they are
    checked lane against lane (webgpu vs wgpu) in e2e/test_student_wgsl.py."""
    ops = reference.OP_TABLE["ops"]
    return {op for op, spec in ops.items() if spec["family"] != "student"}


def test_corpus_covers_every_op_of_the_table() -> None:
    cases = load_cases()
    tested = {node["op"] for c in cases for node in c["graph"]["nodes"]}
    assert tested == _corpus_ops()
    direct = {c["op"] for c in cases}
    assert _corpus_ops() <= direct  # each op also has cases of its own
    assert set(reference.OP_TABLE["ops"]) - _corpus_ops() == {"wgsl", "wgsl_output"}


def test_cases_declare_the_lowest_version_they_need() -> None:
    cases = load_cases()
    assert {c["graph"]["version"] for c in cases} == {1, 2, 3, 4, 6, 7, 8}
    more = [
        c["name"] for c in cases if generate.required_version(c["graph"]) < c["graph"]["version"]
    ]
    assert more == ["input/explicit_dtype_declares_more_version"]
    v1_ops = {op for op, spec in reference.OP_TABLE["ops"].items() if spec["since"] == 1}
    assert v1_ops <= {c["op"] for c in cases if c["graph"]["version"] == 1}


def test_every_op_taking_int32_has_int32_cases() -> None:
    """int32 in (and argmax's int32 out) on every lane: each op whose operand types allow int32
    has cases whose input is int32 (they declare version 3, int32's `since`, or the op's own
    later version)."""
    ops = reference.OP_TABLE["ops"]

    def first_operand_types(spec: dict) -> list[str]:
        var = spec["operand_types"][spec["operands"][0]]
        return spec["types"].get(var, [var])  # a type variable, or a literal dtype (uint32)

    takes_int = {
        op for op, spec in ops.items() if spec["operands"] and "int32" in first_operand_types(spec)
    } & _corpus_ops()
    assert {"abs", "square", "clamp", "reduce_max", "reduce_min", "argmax", "argmin"} <= takes_int
    with_int = {
        c["op"]
        for c in load_cases()
        if any(n.get("dtype") == "int32" for n in c["graph"]["nodes"])
        and c["graph"]["version"] == max(3, ops.get(c["op"], {}).get("since", 3))
    }
    assert takes_int <= with_int, sorted(takes_int - with_int)


@pytest.mark.parametrize("lane", ["cpu-python", "node-cpu"])
def test_cpu_lane_passes_every_case(lane: str) -> None:
    report = run_conformance(lane)
    assert report.lane.available, report.describe_failures()
    assert len(report.results) == len(load_cases())
    assert report.passed, report.describe_failures()


@pytest.mark.slow  # Chromium
def test_browser_cpu_lane_passes_every_case(browser: object, server_url: str) -> None:
    """The page lane (page.html in headless Chromium) on the JS CPU backend: proves the browser
    plumbing every browser-* lane uses (bit-exact transfer of every output, lane info)."""
    report = run_conformance("browser-cpu", browser=browser, server_url=server_url)
    assert report.lane.available, report.describe_failures()
    assert report.lane.backend == "cpu"
    assert len(report.results) == len(load_cases())
    assert report.passed, report.describe_failures()


# ---- both validators agree with the protocol on every case ---------------------------------


def _protocol_order(graph: dict) -> list[int]:
    """docs/protocol.md: live nodes only; repeatedly the first listed node whose operands ran."""
    by_id = {n["id"]: n for n in graph["nodes"]}
    live = {n["id"] for n in reference.needed_order(graph)}
    done: list[int] = []
    pending = [n for n in graph["nodes"] if n["id"] in live]
    while pending:
        ready = next(n for n in pending if all(i in done for i in reference.operand_ids(n)))
        done.append(ready["id"])
        pending.remove(ready)
    assert set(done) <= set(by_id)
    return done


def _expected_checks(case: dict) -> tuple[int, list[int], dict[int, list[int]]]:
    graph = case["graph"]
    shapes = generate.node_shapes(graph)
    version = generate.required_version(graph, shapes)
    return (
        version,
        [int(i) for i in _protocol_order(graph)],
        {int(i): list(s) for i, s in shapes.items()},
    )


def test_python_validator_agrees_on_shapes_versions_and_order() -> None:
    from gpulab.protocol import validate

    problems = []
    for case in load_cases():
        version, order, shapes = _expected_checks(case)
        checked = validate(case["graph"])
        got = {n.id: list(n.shape) for n in checked.nodes}
        if (checked.required_version, list(checked.order), got) != (version, order, shapes):
            problems.append(
                f"{case['name']}: version {checked.required_version}/{version} "
                f"order {checked.order}/{order} shapes {got}/{shapes}"
            )
    assert not problems, "\n".join(problems[:20])


def test_js_validator_agrees_on_shapes_versions_and_order() -> None:
    cases = load_cases()
    script = Path(executors.__file__).with_name("node_validate.mjs")
    proc = subprocess.run(
        ["node", str(script)],
        input=json.dumps([{"name": c["name"], "graph": c["graph"]} for c in cases]),
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    problems = []
    for case, answer in zip(cases, json.loads(proc.stdout), strict=True):
        version, order, shapes = _expected_checks(case)
        if "error" in answer:
            problems.append(f"{case['name']}: refused {answer['error']}")
            continue
        got = {int(i): s for i, s in answer["shapes"].items()}
        if (answer["requiredVersion"], answer["order"], got) != (version, order, shapes):
            problems.append(
                f"{case['name']}: version {answer['requiredVersion']}/{version} "
                f"order {answer['order']}/{order} shapes {got}/{shapes}"
            )
    assert not problems, "\n".join(problems[:20])


# ---- the judge can fail ---------------------------------------------------------------------


def _expected32(ref: reference.NodeRef) -> np.ndarray:
    """What a perfect backend returns: the fixed-order bits of a sum, else float32(ref) (an
    integer dtype: its values as that dtype)."""
    if ref.dtype != "float32":
        return ref.value.astype(np.dtype(ref.dtype))
    if ref.bits is not None:
        return ref.bits.astype(np.float32)
    with np.errstate(over="ignore"):
        return ref.value.astype(np.float32)


def _reference_run(cases: list[dict]) -> LaneRun:
    """A perfect executor: the float32 rounding of the reference."""
    results = {}
    for case in cases:
        refs = reference.evaluate(case["graph"])
        outs = {o["name"]: _expected32(refs[o["id"]]) for o in case["graph"]["outputs"]}
        results[case["name"]] = RawResult(outputs=outs)
    return LaneRun(LaneInfo("reference"), results)


def _one_case(name: str) -> list[dict]:
    cases = load_cases(names=[name])
    assert len(cases) == 1, name
    return cases


def _perturbed(cases: list[dict], change: Callable[[np.ndarray], np.ndarray]) -> LaneRun:
    run = _reference_run(cases)
    for raw in run.results.values():
        for name, arr in raw.outputs.items():
            raw.outputs[name] = change(arr.copy())
    return run


def _bump(ulps: int, index: int = 0) -> Callable[[np.ndarray], np.ndarray]:
    def change(arr: np.ndarray) -> np.ndarray:
        flat = arr.reshape(-1)
        flat.view(np.int32)[index] += ulps
        return arr

    return change


def test_reference_executor_passes_whole_corpus() -> None:
    cases = load_cases()
    report = check_results(cases, _reference_run(cases))
    assert report.passed, report.describe_failures()


@pytest.mark.parametrize(
    ("name", "within", "beyond"),
    [
        ("add/65_65", 3, 5),  # arith: 3 ulps
        ("exp/65", 16, 20000),  # transcendental: 16 ulps + 5e-7 absolute
        ("relu/65", 0, 1),  # exact: bits
        ("matmul/17x33_33x9", 8, 1 << 16),
        ("adam_update/default_t[1]=10_65", 16, 1 << 18),
    ],
)
def test_judge_fails_results_beyond_the_tolerance(name: str, within: int, beyond: int) -> None:
    cases = _one_case(name)
    index = 7
    ok = check_results(cases, _perturbed(cases, _bump(within, index)))
    assert ok.passed, ok.describe_failures()
    bad = check_results(cases, _perturbed(cases, _bump(beyond, index)))
    assert not bad.passed
    assert f"[{index}]" in bad.describe_failures()
    assert bad.results[0].max_ulp >= beyond - 1


def test_judge_fails_int32_off_by_one_and_a_lost_dtype() -> None:
    """int32 results are judged as integers: one off fails, and the right values as float32
    (a backend that lost the dtype) fail too."""
    cases = _one_case("argmax/ties_300")
    assert check_results(cases, _reference_run(cases)).passed
    bad = check_results(cases, _perturbed(cases, lambda a: a + 1))
    assert not bad.passed and "int32 elements differ" in bad.describe_failures()
    lost = check_results(cases, _perturbed(cases, lambda a: a.astype(np.float32)))
    assert not lost.passed and "got float32 data, want int32" in lost.describe_failures()


def test_judge_fails_nan_sign_zero_shape_and_missing_outputs() -> None:
    cases = _one_case("add/65_65")
    nan = _perturbed(
        cases, lambda a: np.where(np.arange(a.size) == 3, np.nan, a).astype(np.float32)
    )
    assert not check_results(cases, nan).passed
    neg = _one_case("neg/special_values")  # exact: neg(0) must be -0, not +0
    flipped = _perturbed(neg, lambda a: np.abs(a))
    assert not check_results(neg, flipped).passed
    shape = _perturbed(cases, lambda a: a.reshape(5, 13))
    assert "shape" in check_results(cases, shape).describe_failures()
    missing = LaneRun(LaneInfo("x"), {cases[0]["name"]: RawResult(outputs={})})
    assert "missing outputs" in check_results(cases, missing).describe_failures()
    refused = LaneRun(
        LaneInfo("x"),
        {
            cases[0]["name"]: RawResult(
                error={"code": "VALIDATION", "message": "node 2 (add): nope", "node": 2}
            )
        },
    )
    report = check_results(cases, refused)
    assert not report.passed and "VALIDATION" in report.describe_failures()
    assert not check_results(cases, LaneRun(LaneInfo("x"), {})).passed


def test_judge_fails_a_sum_in_another_order() -> None:
    """A sequential float32 sum is within the reduction tolerance but not the protocol's
    64-lane order: the same bits on every backend are required, so it fails."""
    cases = _one_case("sum/all_4097")
    data = reference.evaluate(cases[0]["graph"])[0].value.astype(np.float32)
    total = np.float32(0)
    for x in data:
        total = np.float32(total + x)
    run = LaneRun(LaneInfo("x"), {cases[0]["name"]: RawResult(outputs={"y": np.array(total)})})
    report = check_results(cases, run)
    assert not report.passed
    assert "64-lane order" in report.describe_failures()
    assert report.results[0].used <= 1  # within the tolerance class: only the order is wrong


def test_a_crashed_batch_fails_its_cases_and_keeps_the_rest() -> None:
    cases = load_cases()[:250]
    good = _reference_run(cases)
    calls = []

    def run_batch(batch: list[dict]) -> dict:
        calls.append(len(batch))
        if len(calls) == 2:
            raise RuntimeError("page crashed")
        results = [
            {
                "name": c["name"],
                "outputs": {
                    n: {
                        "shape": list(a.shape),
                        "b64": base64.b64encode(a.astype("<f4").tobytes()).decode(),
                    }
                    for n, a in good.results[c["name"]].outputs.items()
                },
            }
            for c in batch
        ]
        return {"lane": {"available": True, "backend": "cpu"}, "results": results}

    run = executors._run_js_batches("x", cases, run_batch)
    assert calls == [100, 100, 50]
    report = check_results(cases, run)
    failed = [r.name for r in report.failures()]
    assert failed == [c["name"] for c in cases[100:200]]
    assert "CRASH: lane crashed: RuntimeError: page crashed" in report.describe_failures()


def test_unavailable_lane_never_passes() -> None:
    cases = _one_case("add/65_65")
    run = LaneRun(LaneInfo("wgpu", available=False, reason="no adapter"), {})
    report = check_results(cases, run)
    assert not report.passed and "UNAVAILABLE: no adapter" in report.describe_failures()


def test_chain_is_checked_node_by_node() -> None:
    """A wrong intermediate fails where it is wrong; later nodes are judged from what they got."""
    cases = _one_case("chain/mlp_forward_backward_adam")
    graph = cases[0]["graph"]
    ids = {o["name"]: o["id"] for o in graph["outputs"]}
    wrong = reference.evaluate(graph)[ids["out0"]].value * 1.001  # the first matmul, 0.1% off
    # a backend that computed everything after out0 correctly from the wrong out0
    refs = reference.evaluate(graph, {ids["out0"]: wrong})
    outs = {n: _expected32(refs[i]) for n, i in ids.items()}
    outs["out0"] = wrong.astype(np.float32)
    run = LaneRun(LaneInfo("x"), {cases[0]["name"]: RawResult(outputs=outs)})
    report = check_results(cases, run)
    failing = [o.name for o in report.results[0].outputs if not o.passed]
    assert failing == ["out0"], report.describe_failures()
    # and a downstream node inconsistent with its operand fails too
    outs["out1"] = _reference_run(cases).results[cases[0]["name"]].outputs["out1"]
    failing = [o.name for o in check_results(cases, run).results[0].outputs if not o.passed]
    assert failing[:2] == ["out0", "out1"]


# ---- the reference itself -------------------------------------------------------------------


def _ref(graph: dict) -> np.ndarray:
    return reference.evaluate(graph)[graph["outputs"][0]["id"]].value


def _unary(op: str, data: list, **attrs: object) -> np.ndarray:
    return _ref(
        {
            "version": 2,
            "nodes": [
                {"id": 0, "op": "input", "shape": [len(data)], "data": data},
                {"id": 1, "op": op, "a": 0, **attrs},
            ],
            "outputs": [{"name": "y", "id": 1}],
        }
    )


def test_reference_known_values() -> None:
    assert _unary("gelu", [1.0])[0] == pytest.approx(0.8413447460685429, rel=1e-15)
    assert _unary("gelu", [-10.0])[0] == pytest.approx(-7.619853024160527e-23, rel=1e-12)
    sm = _unary("softmax", [1.0, 2.0, 3.0])
    assert sm == pytest.approx(np.exp([1, 2, 3]) / np.exp([1, 2, 3]).sum(), rel=1e-15)
    log = _unary("log", [0.0, -1.0, "inf"])
    assert log[0] == -math.inf and math.isnan(log[1]) and log[2] == math.inf
    assert list(_unary("relu", ["nan", -0.0, 2.0])) == [0.0, 0.0, 2.0]
    assert _unary("sum", [0.1, 0.2])[()] == float(np.float32(0.1)) + float(np.float32(0.2))


def test_reference_life_moves_a_glider_across_the_edge() -> None:
    grid = generate._grid(6, 6, generate.GLIDER, 4, 4)
    graph = {
        "version": 1,
        "nodes": [{"id": 0, "op": "input", "shape": [6, 6], "data": grid.reshape(-1).tolist()}],
        "outputs": [],
    }
    for step in range(1, 5):
        graph["nodes"].append({"id": step, "op": "life", "a": step - 1})
    graph["outputs"] = [{"name": "y", "id": 4}]
    # after 4 steps a glider is itself moved one cell down and right (wrapping)
    assert np.array_equal(_ref(graph), generate._grid(6, 6, generate.GLIDER, 5, 5))
