"""The WebGL2 backend in headless Chromium (ANGLE on SwiftShader: a software renderer, so every
run here passes allowSoftware and the lane is labelled software), on the main thread and in a
module Web Worker (OffscreenCanvas). The scenarios live in e2e/webgl2_harness.mjs and return raw
data (float32 bits as base64); the judging happens here.
"""

from __future__ import annotations

import base64
import math
from typing import Any

import numpy as np
import pytest
from gpulab.conformance import reference
from gpulab.conformance.executors import _js_lane
from gpulab.conformance.lanes import load_lanes
from gpulab.conformance.runner import check_results, load_cases, run_conformance

PAGE = "/e2e/webgl2_test.html"
WHERE = ["main", "worker"]
SCOPE = {"main": "Window", "worker": "DedicatedWorkerGlobalScope"}


@pytest.fixture()
def gl_page(page: Any, server_url: str) -> Any:
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(server_url + PAGE)
    page.wait_for_function("window.webgl2Test !== undefined")
    yield page
    assert not errors, f"page errors: {errors}"


def scenario(page: Any, name: str, where: str, args: dict | None = None) -> dict:
    """Run a harness scenario on the main thread or in the worker; check where it ran."""
    method = "call" if where == "main" else "callInWorker"
    result = page.evaluate(
        f"([name, args]) => window.webgl2Test.{method}(name, args)", [name, args or {}]
    )
    assert result["scope"] == SCOPE[where]
    return result


def f32(b64: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(b64), dtype="<f4")


def _webgl2_lanes(name: str) -> dict:
    """lanes.json's webgl2 entries for a harness run named `name` (its refusals are expected,
    as in the runner's own browser-webgl2 lane; unnamed lanes would count them as failures)."""
    return {name: load_lanes().get("webgl2", {})}


def _assert_corpus_passed(report: Any, cases: list[dict]) -> None:
    assert report.lane.available, report.describe_failures()
    assert report.lane.backend == "webgl2"
    assert report.lane.software is True  # SwiftShader: labelled as the software renderer it is
    assert "swiftshader" in (report.lane.adapter or "").lower()
    assert len(report.results) == len(cases)
    assert report.passed, report.describe_failures()


def test_conformance_corpus_passes_on_the_main_thread(browser: Any, server_url: str) -> None:
    # The conformance runner's own browser-webgl2 lane (pylib/gpulab/conformance/page.html).
    report = run_conformance(
        "browser-webgl2", allow_software=True, browser=browser, server_url=server_url
    )
    _assert_corpus_passed(report, load_cases())


def test_conformance_corpus_passes_in_a_worker(gl_page: Any) -> None:
    # The same cases through run_cases.mjs, in a module worker on an OffscreenCanvas, with
    # matmul blocks of 4 rows (the main-thread run uses 8: SwiftShader has 8 draw buffers).
    cases = load_cases()
    payload = scenario(gl_page, "conformance", "worker", {"cases": cases, "blockRows": 4})
    run = _js_lane("browser-webgl2-worker", payload)
    _assert_corpus_passed(check_results(cases, run, _webgl2_lanes(run.info.executor)), cases)


@pytest.mark.parametrize("where", WHERE)
def test_software_renderer_refused_unless_allowed(gl_page: Any, where: str) -> None:
    r = scenario(gl_page, "refusal", where)
    renderer = r["allowed"]["info"]["description"]
    assert "swiftshader" in renderer.lower()
    assert r["allowed"]["info"]["software"] is True
    assert r["allowed"]["info"]["architecture"] == "webgl2"
    assert r["explicit"]["code"] == "UNAVAILABLE"
    assert renderer in r["explicit"]["message"]
    attempt = next(a for a in r["auto"]["attempts"] if a["backend"] == "webgl2")
    assert attempt["ok"] is False
    assert renderer in attempt["reason"]
    assert r["auto"]["backend"] != "webgl2"


@pytest.mark.parametrize("where", WHERE)
def test_bad_input_refused_before_any_gl_work(gl_page: Any, where: str) -> None:
    r = scenario(gl_page, "badInput", where)
    expected = {
        "unknown_op": ("VALIDATION", 1),
        "dangling_operand": ("VALIDATION", 1),
        "shape_mismatch": ("VALIDATION", 2),
        "wrong_data_length": ("VALIDATION", 0),
        "v1_softmax": ("UNSUPPORTED_VERSION", 1),
        "too_many_elements": ("LIMIT", 0),
    }
    for name, (code, node) in expected.items():
        got = r["refused"][name]
        assert got["error"] is not None, f"{name} was not refused"
        assert (got["error"]["code"], got["error"]["node"]) == (code, node), (name, got)
        assert f"node {node} (" in got["error"]["message"], (name, got)
        assert got["created"] == 0, f"{name}: a texture was created before the refusal"
    # The spy does count: the good graph that follows creates textures.
    assert r["good"]["created"] > 0
    assert r["good"]["values"] == [0, 60, 120]


def test_glsl_compile_error_is_backend_and_leaks_nothing(gl_page: Any) -> None:
    r = scenario(gl_page, "shaderError", "main")
    assert r["relu"]["code"] == "BACKEND", r["relu"]
    assert "GLSL compile error in unary.glsl" in r["relu"]["message"]
    stats = r["afterError"]
    assert stats["livePrograms"] == 0  # the failed program was disposed
    assert stats["liveTextures"] > 0 and stats["free"] == stats["liveTextures"]  # all pooled
    assert r["other"] == [2, 4]  # the backend still runs graphs that avoid the broken shader


def test_free_textures_stay_within_the_pool_budget(gl_page: Any) -> None:
    r = scenario(gl_page, "poolBudget", "main")
    for step in r["0"]:
        assert step["allNine"] and step["liveTextures"] == 0 and step["freeBytes"] == 0, step
    assert r["0"][-1]["created"] == 2 * len(r["0"])  # nothing reused: the budget is 0
    for step in r["65536"]:
        assert step["allNine"] and 0 < step["freeBytes"] <= 65536, step
    assert r["65536"][-1]["liveTextures"] < r["65536"][-1]["created"]  # some were deleted


def test_tensor_past_the_texture_limit_is_refused_with_limit(gl_page: Any) -> None:
    r = scenario(gl_page, "textureLimit", "main")
    assert r["fits"] == [2.0] * 16  # 16 elements fill the 4x4 texture exactly
    assert r["tooBig"]["code"] == "LIMIT", r["tooBig"]
    assert "17 elements" in r["tooBig"]["message"] and "4x4" in r["tooBig"]["message"]
    assert r["stats"]["livePrograms"] == 0 and r["stats"]["free"] == r["stats"]["liveTextures"]


@pytest.mark.parametrize("where", WHERE)
def test_repeated_executes_reuse_textures_and_dispose_frees_them(gl_page: Any, where: str) -> None:
    r = scenario(gl_page, "pooling", where)
    live = r["live"]
    assert len(live) == 30 and live[0] > 0
    assert live == [live[0]] * 30, f"live textures grew: {live}"
    # Intermediates share textures once their consumers have run: a chain of 20 ops on one
    # shape needs the input, the output and two textures that alternate.
    chain = r["chain"]
    assert chain["nodes"] == 21 and chain["created"] <= 4, chain
    np.testing.assert_allclose(f32(chain["y"]), f32(chain["cpu"]), rtol=1e-5, atol=1e-6)
    assert r["distinctLosses"] == 1  # reused textures give the same bits
    assert r["withSession"]["livePrograms"] == 1
    assert r["afterSession"]["livePrograms"] == 0
    assert r["afterSession"]["liveTextures"] == r["withSession"]["liveTextures"]  # back in the pool
    assert r["afterDispose"]["liveTextures"] == 0
    assert r["afterDispose"]["free"] == 0


def test_overlapping_executes_give_the_results_of_sequential_ones(gl_page: Any) -> None:
    r = scenario(gl_page, "concurrent", "main")
    assert len(set(r["alone"])) == 8  # eight different graphs, eight different results
    assert r["together"] == r["alone"]


@pytest.mark.parametrize("where", WHERE)
def test_context_loss_becomes_backend_error(gl_page: Any, where: str) -> None:
    r = scenario(gl_page, "contextLoss", where)
    assert r["before"] == 3
    for key in ("after", "later", "inFlight", "sessionLost"):
        assert r[key].get("code") == "BACKEND", (key, r[key])
        assert "lost" in r[key]["message"], (key, r[key])
    assert r["sessionFirst"] == {"ok": True}
    assert r["sessionAfter"]["code"] == "STATE"


@pytest.mark.parametrize("where", WHERE)
def test_sessions_equal_chained_executes_bit_for_bit(gl_page: Any, where: str) -> None:
    r = scenario(gl_page, "sessions", where)
    losses = [float(f32(b)[0]) for b in r["executeLosses"]]
    assert all(math.isfinite(v) for v in losses)
    assert len(set(losses)) == 5, f"the MLP is not training: {losses}"
    assert r["sessionLosses"] == r["executeLosses"]
    assert r["sessionState"] == r["executeState"]
    assert f32(r["sessionState"]["t"]).tolist() == [6.0]  # five adam steps carried t
    assert r["eight"]["steps"] == 8
    assert r["eight"]["loss"] == r["single"]["loss"]
    assert r["eight"]["state"] == r["single"]["state"]
    assert f32(r["eight"]["state"]["t"]).tolist() == [9.0]

    p = r["poisoning"]
    np.testing.assert_allclose(p["ok"], np.log([1, 2, 4, 8]), rtol=1e-6)
    assert p["poisoned"]["code"] == "BACKEND" and "non-finite" in p["poisoned"]["message"]
    assert p["afterRun"]["code"] == "STATE"
    assert p["afterDownload"]["code"] == "STATE"
    assert p["afterDispose"]["code"] == "DISPOSED"


@pytest.mark.parametrize("hidden", [16, 20, 18])
def test_packed_parameters_give_the_bits_of_unpacked_ones(gl_page: Any, hidden: int) -> None:
    """Tensors stored packed (RGBA32F, 4 values of a row per texel) give the bits of the R32F
    program: losses of 5 session steps, every carried tensor, an execute's outputs. w1
    [12, hidden] packs where hidden is a multiple of 4, w2 [hidden, 4] always, x [8, 12] too:
    each packed weight is updated in one 4-wide Adam pass and never packed again for the
    forward matmul, x is uploaded packed; the transposes x^T, w2^T pack from packed sources."""
    dims = {"B": 8, "I": 12, "H": hidden, "O": 4}
    r = scenario(gl_page, "packedParameters", "main", {"dims": dims})
    packed, plain = r["packed"], r["plain"]
    assert packed["losses"] == plain["losses"]
    assert packed["state"] == plain["state"]
    assert packed["execute"] == plain["execute"]
    assert len(set(packed["losses"])) == 5, "the MLP is not training"
    wide = [p for p in packed["passes"] if p.startswith("adam_update") and "A_PACKED=1" in p]
    assert len(wide) == (2 if hidden % 4 == 0 else 1), packed["passes"]
    assert not any("A_PACKED" in p for p in plain["passes"]), plain["passes"]
    packs = sum(p.startswith("pack.glsl") for p in packed["passes"])
    assert packs == sum(p.startswith("pack.glsl") for p in plain["passes"]) - len(wide) - 1
    assert sum("TRANSPOSED=1,A_PACKED=1" in p for p in packed["passes"]) == 2, packed["passes"]
    # both updates read one bias texel of the step (k.shared)
    assert sum("STAGE_BIAS=1" in p for p in packed["passes"]) == 1, packed["passes"]


@pytest.mark.parametrize("where", WHERE)
def test_carry_by_swap_and_by_copy(gl_page: Any, where: str) -> None:
    r = scenario(gl_page, "carryPaths", where)
    a, b, c, e = [1.0, 2, 3], [10.0, 20, 30], [0.0, 0, 0], [0.0, 0, 0]
    d, five = [7.0, 8, 9], [5.0] * 3
    for got in r["steps"]:  # the same session simulated here, step by step
        s = [x + y for x, y in zip(a, b, strict=True)]
        ce = [x + y for x, y in zip(c, e, strict=True)]
        a, b, c, e = s, s, five, d
        assert got["s"] == s and got["ce"] == ce, got
        assert got["carried"] == {"0": a, "1": b, "2": c, "4": e}, got


def test_transposes_feeding_matmuls_are_read_in_place(gl_page: Any) -> None:
    r = scenario(gl_page, "transposeFolding", "main")
    x = {
        int(k): f32(v["data"]).astype(np.float64).reshape(v["shape"])
        for k, v in r["inputs"].items()
    }
    t = lambda m: np.swapaxes(m, -1, -2)
    expected = {
        "tA_B": (t(x[0]), x[1]),
        "tB_A": (t(x[1]), x[0]),
        "E_tF": (x[2], t(x[3])),
        "tX_X": (t(x[4]), x[4]),
    }
    eps = np.finfo(np.float32).eps
    for lane in ("blocks", "blocks4", "flat"):
        got = r[lane]["values"]
        for name, (a, b) in expected.items():
            # The matmul class: FMA contraction allowed, bound against |A| @ |B|.
            err = np.abs(f32(got[name]) - (a @ b).ravel())
            assert np.all(err <= 4 * eps * (np.abs(a) @ np.abs(b)).ravel()), (lane, name, err.max())
        assert got["relu_tB"] == r["cpu"]["values"]["relu_tB"], lane  # exact op, same bits
        # Three transposes are read by the matmul's packing in place; the one a relu also
        # reads is computed (one strided pass).
        passes = r[lane]["passes"]
        assert sum("TRANSPOSED=1" in p for p in passes) == 3, (lane, passes)
        assert sum(p.startswith("strided.glsl") for p in passes) == 1, (lane, passes)
    # SwiftShader offers 8 draw buffers: blocks of 8 rows unless the hook asks for 4.
    assert sum("BLOCK_ROWS=8" in p for p in r["blocks"]["passes"]) == 4
    assert sum("BLOCK_ROWS=4" in p for p in r["blocks4"]["passes"]) == 4


def _adam_case(
    rng: np.random.Generator, shape: list[int], shared_consumer: bool, matmul_gradient: bool = False
) -> dict:
    """adam_m and adam_v feeding adam_update, every result an output (judged node by node from
    the values the backend fed the next node). With shared_consumer, a relu also reads m, so
    the moments cannot be computed inside the update's pass. With matmul_gradient the gradient
    is a matmul of small integers (exact in float32, so the reference's gradient is the
    backend's) that is not an output: the update's pass reads the product unpacked."""
    n = int(np.prod(shape))

    def data(scale: float, positive: bool = False) -> list[float]:
        x = rng.standard_normal(n) * scale
        return (np.abs(x) if positive else x).astype(np.float32).tolist()

    def ints(dims: list[int]) -> dict:
        return {
            "op": "input",
            "shape": dims,
            "data": rng.integers(-3, 4, int(np.prod(dims))).astype(float).tolist(),
        }

    gradient = {"id": 3, "op": "input", "shape": shape, "data": data(1.0)}
    extra = []
    if matmul_gradient:
        gradient = {"id": 3, "op": "matmul", "a": 9, "b": 10}
        extra = [{"id": 9, **ints([*shape[:-1], 5])}, {"id": 10, **ints([5, shape[-1]])}]
    nodes = [
        *extra,
        {"id": 0, "op": "input", "shape": shape, "data": data(1.0)},  # parameters
        {"id": 1, "op": "input", "shape": shape, "data": data(0.1)},  # m
        {"id": 2, "op": "input", "shape": shape, "data": data(0.01, True)},  # v
        gradient,
        {"id": 4, "op": "input", "shape": [1], "data": [3.0]},
        {"id": 5, "op": "adam_m", "a": 1, "b": 3, "beta1": 0.8},
        {"id": 6, "op": "adam_v", "a": 2, "b": 3, "beta2": 0.99},
        {"id": 7, "op": "adam_update", "a": 0, "b": 5, "c": 6, "t": 4, "lr": 0.01, "eps": 1e-6},
    ]
    outputs = [{"name": "m", "id": 5}, {"name": "v", "id": 6}, {"name": "p", "id": 7}]
    if shared_consumer:
        nodes.append({"id": 8, "op": "relu", "a": 5})
        outputs.append({"name": "relu_m", "id": 8})
    name = (
        f"adam_fusion/{'x'.join(map(str, shape))}{'_shared' if shared_consumer else ''}"
        f"{'_matmul' if matmul_gradient else ''}"
    )
    return {
        "name": name,
        "op": "adam_update",
        "graph": {"version": 2, "nodes": nodes, "outputs": outputs},
    }


def test_adam_nodes_wired_into_each_other_are_not_fused(gl_page: Any) -> None:
    # m feeds adam_v as its v and adam_update as its parameter: a fused pass would read the
    # texture it writes. Each node then runs on its own, and the results are still right.
    rng = np.random.default_rng(6)
    n = 40

    def data(lo: float, hi: float) -> list[float]:
        return rng.uniform(lo, hi, n).astype(np.float32).tolist()

    nodes = [
        {"id": 0, "op": "input", "shape": [n], "data": data(0.5, 1.0)},  # m0
        {"id": 1, "op": "input", "shape": [n], "data": data(-0.1, 0.1)},  # gradient
        {"id": 2, "op": "input", "shape": [1], "data": [2.0]},
        {"id": 3, "op": "adam_m", "a": 0, "b": 1},
        {"id": 4, "op": "adam_v", "a": 3, "b": 1},
        {"id": 5, "op": "adam_update", "a": 3, "b": 3, "c": 4, "t": 2},
    ]
    outputs = [{"name": "m", "id": 3}, {"name": "v", "id": 4}, {"name": "p", "id": 5}]
    cases = [
        {
            "name": "adam_fusion/wired",
            "op": "adam_update",
            "graph": {"version": 2, "nodes": nodes, "outputs": outputs},
        }
    ]
    payload = scenario(gl_page, "conformance", "main", {"cases": cases, "profile": True})
    report = check_results(cases, _js_lane("browser-webgl2-adam", payload))
    assert report.passed and len(report.results) == 1, report.describe_failures()
    assert not any("STAGE_FUSED" in p for p in payload["passes"]), payload["passes"]
    assert sum(p.startswith("binary.glsl|OP_adam_") for p in payload["passes"]) == 2


@pytest.mark.parametrize("flat", [False, True])
def test_adam_moments_computed_inside_the_update_pass(gl_page: Any, flat: bool) -> None:
    # (flat: the matmul gradient is read from the flat packing; else from the blocks' layers)
    rng = np.random.default_rng(5)
    cases = [
        _adam_case(rng, shape, shared) for shape in ([300, 7], [5]) for shared in (False, True)
    ]
    cases += [
        _adam_case(rng, shape, False, matmul_gradient=True) for shape in ([300, 7], [2, 9, 6])
    ]
    args = {"cases": cases, "profile": True, "flatMatmul": flat}
    payload = scenario(gl_page, "conformance", "main", args)
    report = check_results(cases, _js_lane("browser-webgl2-adam", payload))
    assert report.passed and len(report.results) == 6, report.describe_failures()
    # The four unshared cases take one fused pass each, the two with a matmul gradient reading
    # the product in its packed form (no unpack pass); the shared ones compute the moments in
    # their own passes (binary.glsl) and then the plain update.
    passes = payload["passes"]
    assert sum("STAGE_FUSED=1" in p for p in passes) == 4, passes
    layout = "RESULT_FLAT=1" if flat else "RESULT_LAYERS=1"
    assert sum(p.startswith("adam_update.glsl") and layout in p for p in passes) == 2, passes
    assert not any(p.startswith("unpack.glsl") for p in passes), passes
    assert sum(p.startswith("binary.glsl|OP_adam_m=1") for p in passes) == 2, passes


WRAP_LIMIT = 97  # a prime texture limit: rows break at odd places


def _largest_tensor(case: dict) -> int:
    from gpulab.protocol import validate

    return max(math.prod(node.shape) for node in validate(case["graph"]).nodes)


def test_conformance_corpus_passes_with_tensors_wrapped_across_texture_rows(gl_page: Any) -> None:
    # With a 97-texel texture limit nearly every tensor spans several texture rows that break
    # at odd places, so the row-crossing paths of the addressing run on the corpus. Cases with
    # a tensor past 97 * 97 elements cannot run under that limit; at the real limit (8192)
    # those wrap anyway, in the main corpus test. Every matmul here takes the general path
    # (flat packed operands, 4 outputs per fragment; the main corpus runs take the 4x4 blocks).
    cases = [c for c in load_cases() if _largest_tensor(c) <= WRAP_LIMIT * WRAP_LIMIT]
    assert len(cases) >= 0.9 * len(load_cases())
    # every op with corpus cases (the student wgsl ops have none yet) has some here
    with_cases = {c["op"] for c in load_cases()} & set(reference.OP_TABLE["ops"])
    assert {c["op"] for c in cases} >= with_cases
    args = {"cases": cases, "maxTextureSize": WRAP_LIMIT, "flatMatmul": True}
    payload = scenario(gl_page, "conformance", "main", args)
    report = check_results(
        cases, _js_lane("browser-webgl2-wrapped", payload), _webgl2_lanes("browser-webgl2-wrapped")
    )
    assert report.lane.available, report.describe_failures()
    assert len(report.results) == len(cases)
    assert report.passed, report.describe_failures()


def test_matmul_epilogue_gives_the_bits_of_the_unfused_passes(gl_page: Any) -> None:
    """add / sub / mul reading a matmul product nothing else reads take it into their own pass
    (read packed, never unpacked): the same bits as the matmul's unpack pass and then the
    elementwise pass, on the block and the flat path; a product that is an output or read
    twice is unpacked as before."""
    r = scenario(gl_page, "epilogue", "main")
    assert r["fused"]["values"] == r["plain"]["values"]
    assert r["fusedFlat"]["values"] == r["plain"]["values"]
    assert r["plainFlat"]["values"] == r["plain"]["values"]
    for lane, layout in (("fused", "RESULT_LAYERS=1"), ("fusedFlat", "RESULT_FLAT=1")):
        passes = r[lane]["passes"]
        fused = [p for p in passes if p.startswith("binary.glsl") and layout in p]
        assert sum("A_RESULT=1" in p for p in fused) == 3, passes
        assert sum("B_RESULT=1" in p for p in fused) == 2, passes  # sub(c, a @ b), add(bias, ..)
        assert sum(p.startswith("unpack.glsl") for p in passes) == 2, passes  # 18, 20
    for lane in ("plain", "plainFlat"):
        assert sum(p.startswith("unpack.glsl") for p in r[lane]["passes"]) == 7
        assert not any("_RESULT=1" in p for p in r[lane]["passes"] if p.startswith("binary"))


def test_short_rows_reduce_to_the_bits_of_the_cpu_reference(gl_page: Any) -> None:
    """Rows of 1 to 64 elements take reduce.glsl's spelled-out tree (SHORT_LEN): sums, means,
    the softmax family and cross_entropy give the bits of the general 64-lane loop, and sums
    and means the CPU reference's, with -0, infinities and NaN in some rows."""
    r = scenario(gl_page, "shortRows", "main")
    gl, loop, cpu = r["webgl2"], r["loop"], r["cpu"]
    assert len(gl) == 40 and gl.keys() == cpu.keys() == loop.keys()

    def same(x: str, y: str) -> bool:  # the same bits, any NaN for a NaN (its sign is free)
        a, b = f32(x), f32(y)
        return bool(np.all((a.view("<u4") == b.view("<u4")) | (np.isnan(a) & np.isnan(b))))

    # every output: the bits of the general loop (the softmax family's exp and log are the
    # shaders' own, so only the sums and means are the CPU's bits too)
    assert [k for k in gl if not same(gl[k], loop[k])] == []
    assert [k for k in gl if k.startswith(("sum", "mean")) and not same(gl[k], cpu[k])] == []
    assert sum("SHORT_LEN" in p for p in r["webgl2Passes"]) >= 25, r["webgl2Passes"]
    assert not any("SHORT_LEN" in p for p in r["loopPasses"])
    # softmax, log_softmax, cross_entropy and its gradient along axis 1 of one tensor compute its
    # rows' max and sum of exp once (k.shared), softmax along axis 0 its own: 2 per length
    assert sum("COMBINE_MAX=1" in p for p in r["webgl2Passes"]) == 10, r["webgl2Passes"]


def test_tensors_larger_than_a_texture_row_match_the_cpu_reference(gl_page: Any) -> None:
    r = scenario(gl_page, "largeLayout", "main")
    gl, cpu = r["webgl2"], r["cpu"]
    # Exact ops, and sums in the protocol's fixed order (no contraction): the same bits.
    for name in (
        "transpose",
        "permute",
        "reshape",
        "neg",
        "life",
        "relu",
        "sum_all",
        "sum_axis1",
        "sum_axis0",
        "sum_strided",
    ):
        assert gl[name] == cpu[name], f"{name} differs from the CPU reference"
    np.testing.assert_allclose(f32(gl["mean_axis1"]), f32(cpu["mean_axis1"]), rtol=2.5e-7, atol=0)
    # log_softmax = (a - m) - log(s) cancels near 0: the error is an ulp of log(s), not of the
    # result, so allow eps32 * |log s| (|log s| < 10 here) besides the relative part.
    for name in ("softmax", "log_softmax"):
        np.testing.assert_allclose(f32(gl[name]), f32(cpu[name]), rtol=2e-6, atol=1.2e-6)
    # matmul: FMA contraction allowed; bound by the matmul class against |A| @ |B|.
    a = f32(r["inputs"]["0"]).reshape(3, 8200).astype(np.float64)
    b = f32(r["inputs"]["1"]).reshape(8200, 5).astype(np.float64)
    scale = (np.abs(a) @ np.abs(b)).ravel()
    err = np.abs(f32(gl["matmul"]).astype(np.float64) - a.dot(b).ravel())
    assert np.all(err <= 4 * np.finfo(np.float32).eps * scale), err.max()


if __name__ == "__main__":
    # Timing for docs/webgl2.md (not a test): python -m e2e.test_webgl2 [main|worker|profile]
    # (profile: ms per pass of one MLP session step, on the main thread)
    import json
    import os
    import sys

    from gpulab.conformance.browser import launch
    from gpulab.static_server import start_server
    from playwright.sync_api import sync_playwright

    from e2e.conftest import ROOT

    where = sys.argv[1] if len(sys.argv) > 1 else "main"
    os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
    srv = start_server(ROOT, host="127.0.0.1", port=0)
    with sync_playwright() as pw:
        browser = launch(pw)
        pg = browser.new_page()
        pg.set_default_timeout(600_000)
        pg.goto(f"http://127.0.0.1:{srv.server_address[1]}{PAGE}")
        pg.wait_for_function("window.webgl2Test !== undefined")
        if where == "profile":
            r = scenario(pg, "profile", "main")
            print(f"sum of passes {r['totalMs']:.2f} ms ({r['dims']}, min of {r['repeats']})")
            for p in r["passes"]:
                print(f"{p['ms']:8.2f}  {p['key']}  ({p['n']} texels)")
        else:
            print(json.dumps(scenario(pg, "timing", where), indent=1))
        browser.close()
    srv.shutdown()


@pytest.mark.parametrize("where", WHERE)
def test_every_dtype_round_trips_bit_for_bit(gl_page: Any, where: str) -> None:
    """int32 in R32I, uint32 and bool (0/1 words) in R32UI, float32 in R32F: inputs that are
    outputs, given by value, fed, carried by blit or copy, swapped, come back with their bits."""
    assert scenario(gl_page, "typedRoundTrips", where)["problems"] == []


# ---- quotas ----


@pytest.mark.parametrize("where", WHERE)
def test_quotas_refuse_with_limit_before_any_gl_work(gl_page: Any, where: str) -> None:
    """The runtime's quotas on WebGL2: device memory, textures and shader programs
    past the quota, and a graph beside an open session's share, are LIMIT naming the quota, and
    the backend made no texture or program for them."""
    r = scenario(gl_page, "quotas", where)
    assert r["fits"] == [2.0, 2.0]
    for key, quota in (
        ("memory", "memoryBytes"),
        ("textures", "buffers"),
        ("programs", "pipelines"),
        ("held", "memoryBytes"),
    ):
        got = r[key]
        assert got["code"] == "LIMIT" and f"quotas.{quota}" in got["message"], got
        for counter in ("created", "programs", "livePrograms"):
            assert got["after"][counter] == got["before"][counter], (key, counter, got)
    assert "held by open sessions" in r["held"]["message"]
    assert r["used"] == {"memoryBytes": 800, "buffers": 2, "pipelines": 1}
    assert r["after"] == [2.0, 2.0]


@pytest.mark.parametrize("where", WHERE)
def test_dispose_stops_a_long_run_between_steps(gl_page: Any, where: str) -> None:
    """Cancellation between steps (hostile-input defect 14, `issues show 11`): runtime.dispose()
    or session.dispose(), arriving at the run's first turn to the event loop, stops a session run
    of about 20 s of steps right there (DISPOSED; no turn after it: it ran all 20 s before), and
    the session stays disposed, not poisoned."""
    r = scenario(gl_page, "cancelBetweenSteps", where)
    for how in ("runtime", "session"):
        got = r[how]
        assert got["error"] and got["error"]["code"] == "DISPOSED", got
        assert got["yields"] == 1, got
        assert got["state"] == "disposed", got


# ---- protocol v4: the index ops' run-time check ----


def test_fed_index_out_of_range_is_backend_then_state(gl_page: Any) -> None:
    """No atomics in a fragment shader: the check pass records the smallest bad position,
    which the program reads back after the step (BACKEND, then a poisoned session)."""
    r = scenario(gl_page, "indexChecks", "main")
    assert r["index_select"]["ok"] == [4, 5, 0, 1, 4, 5]
    assert r["index_add"]["ok"] == [1, 2, 2, 3, 6, 7]
    for op in ("index_select", "index_add"):
        bad = r[op]["bad"]
        assert bad["code"] == "BACKEND", bad
        assert (
            f"node 3 ({op}): operand idx holds an index at idx[1] out of range for axis 0 "
            "of a [3, 2] (valid 0..2)" in bad["message"]
        )
        assert r[op]["later"]["code"] == "STATE"
