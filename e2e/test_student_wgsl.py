"""Students' own WGSL kernels on both lanes that run them: Chromium's WebGPU
(SwiftShader) and native wgpu (lavapipe), both software adapters, allowed explicitly.

The same graphs (e2e/student_kernels.py) give integer results bit for bit and elementwise float
results within 1 ulp on both lanes (and of the numpy reference); compiler errors come back
with the line and column on both; the other lanes refuse with UNSUPPORTED naming the op; the
quotas refuse a wgsl graph with LIMIT; the per-submission deadline stops a runaway kernel in
the page (the native deadline: see test_native_deadline_*).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from gpulab import executors, host
from gpulab.dtypes import DTYPE_NUMPY
from gpulab.errors import GpuLabError

from e2e import student_kernels as sk

PAGE = "/e2e/webgpu_test.html"
CASES = [make() for make in sk.CASES]

# A graph's outputs from the page: {name: [shape, dtype, bytes as a list]} (bits survive JSON).
RUN_IN_PAGE = """async ({graph, options}) => {
  const rt = await window.wg.runtime.createRuntime({backend: 'webgpu', allowSoftware: true,
    ...(options || {})});
  try {
    const r = await rt.execute(graph);
    const out = {};
    for (const [name, o] of Object.entries(r.outputs)) {
      out[name] = [o.shape, o.dtype, Array.from(new Uint8Array(o.data.buffer, o.data.byteOffset,
        o.data.byteLength))];
    }
    return {ok: true, outputs: out, software: r.stats.software};
  } catch (e) {
    return {ok: false, code: e.code ?? null, message: String(e.message ?? e)};
  } finally {
    rt.dispose();
  }
}"""


@pytest.fixture()
def wg(page, server_url):
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(server_url + PAGE)
    page.wait_for_function("window.wgReady === true", timeout=30_000)
    yield page
    assert not errors, f"uncaught errors in the page: {errors}"


def in_page(page, graph: dict, **options) -> dict:
    r = page.evaluate(RUN_IN_PAGE, {"graph": graph, "options": options})
    if r["ok"]:
        assert r["software"] is True  # SwiftShader, labelled
        r["outputs"] = {
            k: np.frombuffer(bytes(v[2]), DTYPE_NUMPY[v[1]]).reshape(v[0])
            for k, v in r["outputs"].items()
        }
    return r


def native(graph: dict) -> dict[str, np.ndarray]:
    r = host.execute(graph, backend="wgpu", allow_software=True)
    assert r["backend"] == "wgpu" and r["stats"]["software"] is True
    return {k: np.asarray(v["array"]) for k, v in r["outputs"].items()}


def agree(a: np.ndarray, b: np.ndarray, exact_float: bool, what: str) -> None:
    if a.dtype.kind == "f" and exact_float:
        assert sk.ulps(a, b) <= 1, f"{what}: {sk.ulps(a, b)} ulp apart"
    elif a.dtype.kind == "f":  # an accumulating kernel (the matmul): a float32 dot's error
        assert np.allclose(a, b, rtol=1e-5, atol=1e-5), f"{what}: {np.max(np.abs(a - b))}"
    else:
        assert np.array_equal(a.view(np.uint8), b.view(np.uint8)), f"{what}: bits differ"


# ---- results: the same kernels, both lanes -----------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_student_kernels_agree_on_webgpu_and_wgpu(wg, case):
    page = in_page(wg, case.graph)
    assert page["ok"], page
    nat = native(case.graph)
    assert set(page["outputs"]) == set(nat) == set(case.reference)
    for name, ref in case.reference.items():
        agree(page["outputs"][name], nat[name], case.exact_float, f"{case.name}.{name} page/native")
        agree(
            nat[name],
            ref.astype(nat[name].dtype),
            case.exact_float,
            f"{case.name}.{name} native/ref",
        )


def test_heat_stencil_session_carries_state_on_both_lanes(wg):
    graph, u_id, u0 = sk.heat_graph()
    steps = 50
    want = sk.heat_reference(u0, steps)
    session = host.prepare(
        graph, backend="wgpu", allow_software=True, carry={u_id: "next"}, outputs=["next"]
    )
    try:
        session.run_steps(steps - 1)
        last = np.asarray(session.run_steps(1)["outputs"]["next"]["array"])
    finally:
        session.dispose()
    got = wg.evaluate(
        """async ({graph, uId, steps}) => {
      const rt = await window.wg.runtime.createRuntime({backend: 'webgpu', allowSoftware: true});
      const s = await rt.prepare(graph, {carry: {[uId]: 'next'}, outputs: ['next']});
      await s.run(steps - 1);
      const r = await s.run(1);
      s.dispose(); rt.dispose();
      return Array.from(new Uint32Array(r.outputs.next.data.buffer));
    }""",
        {"graph": graph, "uId": u_id, "steps": steps},
    )
    page = np.array(got, np.uint32).view(np.float32)
    assert sk.ulps(page, last) <= 1 and sk.ulps(last, want) <= 1
    assert abs(float(last.sum()) - 100.0) < 1e-3  # heat is conserved


# ---- every buffer a student's kernel can read starts zeroed --------------------------------

ZERO_N = 1024
# copies x into its result unless x[0] is the "quiet" value: then it writes nothing
COPY_UNLESS_QUIET = """@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> o: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3u) {
  if (x[0] != 12345.0 && id.x < arrayLength(&o)) { o[id.x] = x[id.x]; }
}
"""
NOTHING = """@group(0) @binding(0) var<storage, read_write> o: array<f32>;
@compute @workgroup_size(1)
fn main() { }
"""


def test_a_student_kernel_that_writes_nothing_reads_zeros_in_the_page(wg):
    """The page's twin of pylib/tests/test_student_zeroed.py: a disposed session's buffers go
    back to the pool; the next graph's kernel that writes nothing reads zeros from them; a
    session step that writes nothing reads zeros, not the step before's values."""
    from gpulab import Graph

    g = Graph()
    x = g.input((ZERO_N,), "float32")
    o = g.wgsl(
        COPY_UNLESS_QUIET,
        inputs=[x],
        outputs={"o": ((ZERO_N,), "float32")},
        workgroups=ZERO_N // 64,
    )
    copy = g.to_dict(o=o)
    g2 = Graph()
    nothing = g2.to_dict(o=g2.wgsl(NOTHING, outputs={"o": ((ZERO_N,), "float32")}, workgroups=1))
    r = wg.evaluate(
        """async ({copy, nothing, x, n}) => {
      const rt = await window.wg.runtime.createRuntime({backend: 'webgpu', allowSoftware: true});
      const secret = Float32Array.from({length: n}, (_, i) => i + 1);
      const quiet = new Float32Array(n).fill(12345);
      const s = await rt.prepare(copy, {feeds: [x], outputs: ['o']});
      const first = await s.run([{[x]: secret}]);
      const second = await s.run([{[x]: quiet}]);
      s.dispose();
      const after = [];
      for (let i = 0; i < 3; i++) after.push(Array.from((await rt.execute(nothing)).outputs.o.data));
      rt.dispose();
      return {first: Array.from(first.outputs.o.data), second: Array.from(second.outputs.o.data),
        after};
    }""",
        {"copy": copy, "nothing": nothing, "x": x.id, "n": ZERO_N},
    )
    assert r["first"] == list(range(1, ZERO_N + 1))
    assert not any(r["second"])
    for values in r["after"]:
        assert not any(values)


# ---- errors: line and column on both lanes ------------------------------------------------

LOCATED = re.compile(r"at line (\d+), column (\d+): ")


@pytest.mark.parametrize("kind", list(sk.BROKEN))
def test_compiler_and_binding_errors_name_the_line_on_both_lanes(wg, kind):
    source, line = sk.BROKEN[kind]
    graph = sk.broken_graph(source)
    page = in_page(wg, graph)
    with pytest.raises(GpuLabError) as native_err:
        native(graph)
    want_code = "VALIDATION" if kind == "binding" else "BACKEND"
    assert page["ok"] is False and page["code"] == want_code, page
    assert native_err.value.code == want_code
    for message in (page["message"], native_err.value.message):
        m = LOCATED.search(message)
        assert m, message
        assert int(m.group(1)) == line, message
        assert f"\n{line:>4} | " in message  # the offending line is quoted
    if kind == "reserved":
        assert "meta" in page["message"] and "meta" in native_err.value.message
    if kind == "binding":  # one validator rule, one message on both sides
        assert page["message"] == native_err.value.message


# ---- lanes that cannot run it ------------------------------------------------------------


@pytest.mark.parametrize("backend", ["cpu", "wasm", "webgl2"])
def test_other_page_lanes_refuse_with_unsupported(wg, backend):
    r = wg.evaluate(
        """async ({graph, backend}) => {
      const rt = await window.wg.runtime.createRuntime({backend, allowSoftware: true});
      try { await rt.execute(graph); return {ok: true}; }
      catch (e) { return {ok: false, code: e.code, message: e.message}; }
      finally { rt.dispose(); }
    }""",
        {"graph": CASES[0].graph, "backend": backend},
    )
    assert r == {
        "ok": False,
        "code": "UNSUPPORTED",
        "message": f"{backend} has no kernel for wgsl (node 2)",
    }


def test_page_auto_picks_webgpu_for_a_wgsl_graph_and_says_why(wg):
    """auto runs a wgsl graph on WebGPU; without it (software refused) every lane passed over
    is named in the UNSUPPORTED refusal, none runs it on a CPU."""
    script = """async ({graph, soft}) => {
      const rt = await window.wg.runtime.createRuntime({backend: 'auto', allowSoftware: soft});
      try {
        const r = await rt.execute(graph);
        return {backend: r.backend, attempts: r.stats.attempts};
      } catch (e) { return {code: e.code, message: e.message}; } finally { rt.dispose(); }
    }"""
    ran = wg.evaluate(script, {"graph": CASES[0].graph, "soft": True})
    assert ran["backend"] == "webgpu" and ran["attempts"][0]["backend"] == "webgpu"
    refused = wg.evaluate(script, {"graph": CASES[0].graph, "soft": False})
    assert refused["code"] == "UNSUPPORTED"
    assert refused["message"].startswith(
        "cpu has no kernel for wgsl (node 2) (passed over: "
        "webgpu: refused software adapter: SwiftShader"
    )
    assert "wasm: UNSUPPORTED: wasm has no kernel for wgsl (node 2)" in refused["message"]


def test_cpu_python_refuses_and_auto_never_falls_back_to_it():
    with pytest.raises(GpuLabError) as err:
        host.execute(CASES[0].graph, backend="cpu-python")
    assert err.value.code == "UNSUPPORTED" and "wgsl" in err.value.message
    with pytest.raises(GpuLabError) as auto:  # lavapipe is software: not allowed by default
        host.execute(CASES[0].graph)
    assert auto.value.code == "UNSUPPORTED"
    assert (
        "cpu-python has no kernel for wgsl (node 2); auto passed over wgpu: refused "
        "software adapter" in auto.value.message
    )


# ---- quotas and the deadline --------------------------------------------------------------


def test_quotas_refuse_a_wgsl_graph_before_device_work(wg):
    graph = sk.matmul_case().graph
    r = in_page(wg, graph, quotas={"pipelines": 1})
    assert r["ok"] is False and r["code"] == "LIMIT" and "quotas.pipelines" in r["message"]
    r = in_page(wg, graph, quotas={"memoryBytes": 4096})
    assert r["ok"] is False and r["code"] == "LIMIT" and "quotas.memoryBytes" in r["message"]


def test_server_quotas_refuse_a_wgsl_graph_before_work():
    """The server's quotas (gpulab serve) count a wgsl node's results and its pipeline."""
    from gpulab.protocol import validate
    from gpulab.quotas import Quotas, graph_cost

    checked = validate(sk.matmul_case().graph)
    cost = graph_cost(checked)
    assert cost["pipelines"] == 2  # the student's kernel and our matmul
    for quota, name in (
        (Quotas(pipelines=1), "pipelines"),
        (Quotas(memory_bytes=cost["memory_bytes"] - 1), "memory_bytes"),
    ):
        with pytest.raises(GpuLabError) as info:
            quota.check(checked)
        assert info.value.code == "LIMIT" and name in info.value.message
    Quotas(memory_bytes=cost["memory_bytes"]).check(checked)


# A deliberately slow kernel ("a deliberately slow graph on the software adapters"):
# n LCG steps per invocation, 64 invocations per workgroup. A loop that never ends cannot be
# used for the deadline: the loop budget stops it first (max_loop_iterations, below). Without
# the budget SwiftShader could not interrupt it and wedged WebGPU for the whole browser
# (measured: no new adapter within 100 s), and lavapipe ended every loop after 65535
# iterations. n stays within the budget; many invocations make the work long.
SLOW = """@group(0) @binding(0) var<storage, read_write> o: array<u32>;
struct P { n: u32 }
@group(0) @binding(1) var<uniform> p: P;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3u) {
  var acc = id.x;
  for (var i = 0u; i < p.n; i++) {
    acc = acc * 1664525u + 1013904223u;
  }
  o[id.x] = acc;
}
"""

ENDLESS = """@group(0) @binding(0) var<storage, read_write> o: array<u32>;
@compute @workgroup_size(1)
fn main() {
  var i = 0u;
  loop {
    i = i + 1u;
    o[0] = i;
    if (o[1] == 12345u) { break; }
  }
}
"""


def slow_graph(n: int, groups: int) -> dict:
    from gpulab import Graph

    g = Graph()
    o = g.wgsl(SLOW, outputs={"o": ((64 * groups,), "uint32")}, workgroups=groups, params={"n": n})
    return g.to_dict(o=o)


def test_deadline_poisons_the_session_in_the_page_and_a_new_runtime_works(wg):
    """About 2e9 loop steps on SwiftShader (20 s here; more than 1 s on any CPU): past deadlineMs
    (1000) the device is destroyed, the session poisoned with a message naming the deadline (the
    run did not end on its own: it would have answered); a new runtime runs once the work is
    done."""
    r = wg.evaluate(
        """async ({graph, small}) => {
      const rt = await window.wg.runtime.createRuntime({backend: 'webgpu', allowSoftware: true,
        deadlineMs: 1000});
      const s = await rt.prepare(graph, {outputs: ['o']});
      let first, second;
      try { await s.run(1); first = {ok: true}; } catch (e) { first = {code: e.code, message: e.message}; }
      try { await s.run(1); second = {ok: true}; } catch (e) { second = {code: e.code, message: e.message}; }
      s.dispose(); rt.dispose();
      const rt2 = await window.wg.runtime.createRuntime({backend: 'webgpu', allowSoftware: true});
      const again = await rt2.execute(small);
      rt2.dispose();
      return {first, second, again: Array.from(again.outputs.out.data.slice(0, 3))};
    }""",
        {"graph": slow_graph(60000, 512), "small": CASES[0].graph},
    )
    assert r["first"]["code"] == "BACKEND", r
    assert "1000 ms deadline (deadlineMs)" in r["first"]["message"]
    assert r["second"]["code"] == "STATE" and "deadline" in r["second"]["message"]
    want = CASES[0].reference["out"][:3]
    assert sk.ulps(np.array(r["again"], np.float32), want) <= 1


def test_deadline_poisons_a_native_session_and_the_host_opens_a_new_device():
    """The same on lavapipe: set_deadline(0.25) against about 8e9 loop steps (2 to 5 s here:
    llvmpipe runs 8 lanes per thread)."""
    from gpulab.native import deadline

    deadline.set_deadline(0.25)
    try:
        session = host.prepare(
            slow_graph(65000, 2048), backend="wgpu", allow_software=True, outputs=["o"]
        )
        with pytest.raises(GpuLabError) as late:
            session.run_steps(1)
        with pytest.raises(GpuLabError) as poisoned:
            session.run_steps(1)
        session.dispose()
    finally:
        deadline.set_deadline(None)
    again = native(CASES[0].graph)
    assert late.value.code == "BACKEND" and "0.25 s deadline" in late.value.message
    assert poisoned.value.code == "STATE" and "deadline" in poisoned.value.message
    assert sk.ulps(again["out"], CASES[0].reference["out"]) <= 1


# An endless kernel as far as a software adapter goes, yet within every validation bound: each
# invocation loops until the loop budget stops it (65534 iterations, max_kernel_work counts
# 4096 x 64 x 65534 = 2^34), and each iteration is 64 LCG steps, so SwiftShader needs hours
# for the whole dispatch on any CPU. `p.stop` is never 1; the compiler cannot know.
HEAVY_ENDLESS = (
    """@group(0) @binding(0) var<storage, read_write> o: array<u32>;
struct P { stop: u32 }
@group(0) @binding(1) var<uniform> p: P;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3u) {
  var acc = id.x;
  loop {
"""
    + "    acc = acc * 1664525u + 1013904223u;\n" * 64
    + """    o[id.x] = acc;
    if (p.stop == 1u) { break; }
  }
}
"""
)

# The user's path in the page: the endless kernel answers with the deadline (2 s, the default
# for a student's kernel), the backend is switched away (the runtime disposed, cpu opened and
# run, as web/worker.mjs does on a switch) and back to webgpu, and a student's kernel runs
# there. Each wait is on the product's promise; the only bound is settle's generous one, so a
# WebGPU that never comes back fails instead of hanging.
SWITCH_AWAY_AND_BACK = """async ({endless, small, cpuGraph}) => {
  const wg = window.wg;
  const open = (backend) => wg.runtime.createRuntime({backend, allowSoftware: true});
  const rt = await open('webgpu');
  const first = await wg.settle(rt.execute(endless), 120000);
  const answered = performance.now();
  rt.dispose();
  const away = await wg.settle((async () => {
    const cpu = await open('cpu');
    try { return Array.from((await cpu.execute(cpuGraph)).outputs.y.data); } finally { cpu.dispose(); }
  })(), 120000);
  const back = await wg.settle((async () => {
    const again = await open('webgpu');
    try {
      const r = await again.execute(small);
      return {out: Array.from(r.outputs.out.data.slice(0, 3)), software: r.stats.software,
        backend: r.backend, recoveryMs: performance.now() - answered};
    } finally { again.dispose(); }
  })(), 120000);
  return {first, away, back};
}"""


@pytest.mark.slow
def test_after_a_deadline_the_page_switches_backend_away_and_back_and_webgpu_runs(
    browser_for_one_test, server_url
):
    """An endless student kernel in the page: the deadline answers (BACKEND naming it), the
    backend is switched to cpu (which runs) and back to webgpu, and a normal student kernel
    runs there with the right values, labelled software. Its own browser: a WebGPU that does
    not come back blocks every page of the browser it runs in."""
    from gpulab import Graph

    g = Graph()
    o = g.wgsl(
        HEAVY_ENDLESS, outputs={"o": ((64 * 4096,), "uint32")}, workgroups=4096, params={"stop": 0}
    )
    endless = g.to_dict(o=o)
    cpu_graph = {
        "version": 2,
        "nodes": [
            {"id": 0, "op": "full", "shape": [2], "value": -3},
            {"id": 1, "op": "relu", "a": 0},
        ],
        "outputs": [{"name": "y", "id": 1}],
    }
    page = browser_for_one_test.new_page()
    page.goto(server_url + PAGE)
    page.wait_for_function("window.wgReady === true", timeout=30_000)
    r = page.evaluate(
        SWITCH_AWAY_AND_BACK,
        {"endless": endless, "small": CASES[0].graph, "cpuGraph": cpu_graph},
    )
    assert r["first"]["ok"] is False and r["first"]["code"] == "BACKEND", r["first"]
    assert "2000 ms deadline (deadlineMs)" in r["first"]["message"]
    assert r["away"] == {"ok": True, "value": [0, 0]}, r["away"]
    assert r["back"]["ok"] is True, r["back"]
    back = r["back"]["value"]
    assert back["backend"] == "webgpu" and back["software"] is True
    assert sk.ulps(np.array(back["out"], np.float32), CASES[0].reference["out"][:3]) <= 1
    # measured, not asserted: from the deadline's answer to the new device's first result
    print(f"webgpu back {back['recoveryMs']:.0f} ms after the deadline answered")


@pytest.fixture()
def browser_for_one_test(browser):
    """A Chromium of its own (closing it ends its GPU process and whatever still runs there),
    launched as the session's is."""
    from types import SimpleNamespace

    from gpulab.conformance.browser import launch

    own = launch(SimpleNamespace(chromium=browser.browser_type))
    try:
        yield own
    finally:
        own.close()


# ---- a student's dispatch in chunks (software adapters: student-chunks.mjs) ----------------

# Every invocation writes the ids it sees, at its global index: run in chunks (SwiftShader),
# each chunk must see the whole dispatch's workgroup and global ids and num_workgroups.
IDS = """@group(0) @binding(0) var<storage, read_write> o: array<u32>;
@compute @workgroup_size(4, 2)
fn main(@builtin(global_invocation_id) g: vec3u, @builtin(workgroup_id) w: vec3u,
        @builtin(num_workgroups) n: vec3u, @builtin(local_invocation_index) l: u32) {
  let i = 4u * (g.x + g.y * n.x * 4u);
  o[i] = w.x; o[i + 1u] = w.y; o[i + 2u] = n.x * 1000u + n.y; o[i + 3u] = l;
}
"""


def ids_reference(x: int, y: int) -> np.ndarray:
    out = np.zeros((y * 2, x * 4, 4), np.uint32)
    for gy in range(y * 2):
        for gx in range(x * 4):
            out[gy, gx] = (gx // 4, gy // 2, x * 1000 + y, (gy % 2) * 4 + gx % 4)
    return out.reshape(-1)


@pytest.mark.parametrize("workgroups", [(300, 1), (1, 150)], ids=["along-x", "along-y"])
def test_a_chunked_student_dispatch_sees_the_whole_dispatch(wg, workgroups):
    """On SwiftShader the dispatch goes in several submissions (counted), and every invocation
    sees the ids of the whole dispatch: the values are those of one dispatch (the reference)."""
    from gpulab import Graph

    x, y = workgroups
    g = Graph()
    o = g.wgsl(IDS, outputs={"o": ((x * y * 32,), "uint32")}, workgroups=workgroups)
    r = wg.evaluate(
        """async (graph) => {
      const hooks = {};
      const rt = await window.wg.runtime.createRuntime({backend: 'webgpu', allowSoftware: true,
        hooks});
      try {
        const before = hooks.webgpuStats().submits;
        const out = await rt.execute(graph);
        return {o: Array.from(out.outputs.o.data), software: out.stats.software,
          submits: hooks.webgpuStats().submits - before};
      } finally { rt.dispose(); }
    }""",
        g.to_dict(o=o),
    )
    assert r["software"] is True
    assert r["submits"] > 3, r["submits"]  # in chunks (one dispatch is one submission)
    got = np.array(r["o"], np.uint32)
    assert np.array_equal(got, ids_reference(x, y))


# ---- the loop budget (wgsl_budget.py, wgsl-budget.mjs) -----------------------------------

BUDGET = 65534  # the op table's max_loop_iterations
COUNT = """@group(0) @binding(0) var<storage, read_write> o: array<u32>;
struct P { n: u32, m: u32 }
@group(0) @binding(1) var<uniform> p: P;
fn count(n: u32) -> u32 {
  var c = 0u;
  var i = 0u;
  while (i < n) { c += 1u; i++; }
  return c;
}
@compute @workgroup_size(1)
fn main() {
  var total = 0u;
  for (var j = 0u; j < p.m; j++) { total += count(p.n); }
  o[0] = total;
}
"""
SINGLE = """@group(0) @binding(0) var<storage, read_write> o: array<u32>;
struct P { n: u32 }
@group(0) @binding(1) var<uniform> p: P;
@compute @workgroup_size(1)
fn main() {
  var c = 0u;
  for (var i = 0u; i < p.n; i++) { c += 1u; }
  o[0] = c;
}
"""
WHILE_TRUE = ENDLESS.replace("loop {", "while (true) {")
# attributes on the loop statement and its body: the budget goes around them
ATTRIBUTED = ENDLESS.replace(
    "loop {",
    "@diagnostic(off, derivative_uniformity) loop @diagnostic(off, derivative_uniformity) {",
)
IN_HELPER = """@group(0) @binding(0) var<storage, read_write> o: array<u32>;
fn spin(k: u32) -> u32 {
  var i = k;
  loop { i += 2u; if (i == 1u) { break; } }  // k even: never 1
  return i;
}
@compute @workgroup_size(1)
fn main() {
  for (var j = 0u; j < 2u; j++) { o[j] = spin(2u * j); }
}
"""
# an endless loop calling a helper whose loop never ends: without a barrier in the source, every
# loop also breaks on the invocation's count, so this stops at the budget too (not 65534^2)
NESTED_HELPER = IN_HELPER.replace(
    "for (var j = 0u; j < 2u; j++) { o[j] = spin(2u * j); }", "loop { o[0] = spin(0u); }"
)
SAME_RUNTIME = """async ({graph, small}) => {
  const rt = await window.wg.runtime.createRuntime({backend: 'webgpu', allowSoftware: true});
  const s = await rt.prepare(graph, {outputs: ['o']});
  let first, second;
  try { await s.run(1); first = {ok: true}; } catch (e) { first = {code: e.code, message: e.message}; }
  try { await s.run(1); second = {ok: true}; } catch (e) { second = {code: e.code, message: e.message}; }
  s.dispose();
  const same = await rt.execute(small);  // the SAME runtime
  rt.dispose();
  const rt2 = await window.wg.runtime.createRuntime({backend: 'webgpu', allowSoftware: true});
  const fresh = await rt2.execute(small);
  rt2.dispose();
  return {first, second, same: Array.from(same.outputs.out.data.slice(0, 3)),
    fresh: Array.from(fresh.outputs.out.data.slice(0, 3))};
}"""


def _graph(source: str, outputs: int = 2, **params: int) -> dict:
    from gpulab import Graph

    g = Graph()
    o = g.wgsl(source, outputs={"o": ((outputs,), "uint32")}, workgroups=1, params=params)
    return g.to_dict(o=o)


@pytest.mark.parametrize(
    "source",
    [ENDLESS, WHILE_TRUE, IN_HELPER, NESTED_HELPER],
    ids=["loop", "while", "helper", "endless-helper"],
)
def test_an_endless_loop_passes_the_budget_and_the_runtime_works_on(wg, source):
    """`loop {}` / `while (true) {}` / a loop in a helper called from a loop: BACKEND naming the
    budget, the session poisoned (STATE), and the same runtime and a new one run a graph: in
    the page (SwiftShader: without the budget this wedged WebGPU for the whole browser) and
    natively (lavapipe: without it the loop silently stopped at 65535)."""
    want = CASES[0].reference["out"][:3]
    r = wg.evaluate(SAME_RUNTIME, {"graph": _graph(source), "small": CASES[0].graph})
    # the message names the budget: the loop stopped there, not at 65534^2 iterations
    assert r["first"]["code"] == "BACKEND", r
    assert f"loop budget of {BUDGET} loop iterations per invocation" in r["first"]["message"]
    assert r["second"]["code"] == "STATE" and "loop budget" in r["second"]["message"]
    for got in (r["same"], r["fresh"]):
        assert sk.ulps(np.array(got, np.float32), want) <= 1
    session = host.prepare(_graph(source), backend="wgpu", allow_software=True, outputs=["o"])
    with pytest.raises(GpuLabError) as first:
        session.run_steps(1)
    with pytest.raises(GpuLabError) as second:
        session.run_steps(1)
    session.dispose()
    assert first.value.code == "BACKEND"
    assert f"loop budget of {BUDGET} loop iterations per invocation" in first.value.message
    assert second.value.code == "STATE" and "loop budget" in second.value.message
    assert sk.ulps(native(CASES[0].graph)["out"], CASES[0].reference["out"]) <= 1


def test_attributes_on_a_loop_keep_the_budget_in_the_page_and_their_column_natively(wg):
    """`@diagnostic(...) loop @diagnostic(...) {`: the inserted check goes before the statement's
    attributes and after the body's; Tint compiles it and the budget stops the loop. naga
    (wgpu-native here) does not implement statement attributes: its error is located at the
    student's column 3 (the budgeted line has the check before it: mapped back)."""
    r = in_page(wg, _graph(ATTRIBUTED))
    assert r["ok"] is False and r["code"] == "BACKEND", r
    assert f"loop budget of {BUDGET} loop iterations per invocation" in r["message"]
    with pytest.raises(GpuLabError) as err:
        native(_graph(ATTRIBUTED))
    assert "at line 5, column 3: `@diagnostic" in err.value.message, err.value.message


@pytest.mark.parametrize(
    ("n", "m", "want"),
    [
        # counted: 1 + 2m + mn (the outer loop's entry and m iterations, m entries of the
        # inner loop and its mn iterations)
        (BUDGET - 3, 1, BUDGET - 3),
        (BUDGET - 2, 1, None),
        (200, 200, 40000),  # 40401 counted
        (300, 300, None),  # 90601 counted (lavapipe without the budget silently gave 65101)
        (1, BUDGET, None),  # the outer loop past it
    ],
)
def test_loops_within_the_budget_give_the_result_on_both_lanes(wg, n, m, want):
    """Nested loops, the inner one in a helper: the count of the invocation's loop entries and
    iterations decides, the same on both adapters (lavapipe's own cap counts the same way and
    is never reached first)."""
    graph = _graph(COUNT, 1, n=n, m=m)
    page = in_page(wg, graph)
    if want is None:
        assert page["ok"] is False and page["code"] == "BACKEND", page
        assert "loop budget" in page["message"]
        with pytest.raises(GpuLabError) as err:
            native(graph)
        assert err.value.code == "BACKEND" and "loop budget" in err.value.message
        return
    assert page["ok"], page
    assert list(page["outputs"]["o"]) == [want]
    assert list(native(graph)["o"]) == [want]


@pytest.mark.parametrize("n", [BUDGET - 1, BUDGET])
def test_a_loop_of_b_minus_1_iterations_runs_and_b_does_not_on_both_lanes(wg, n):
    """One loop: its entry and n iterations count, so B - 1 iterations are the most."""
    graph = _graph(SINGLE, 1, n=n)
    page = in_page(wg, graph)
    if n == BUDGET:
        assert page["ok"] is False and "loop budget" in page["message"], page
        with pytest.raises(GpuLabError, match="loop budget"):
            native(graph)
        return
    assert page["ok"], page
    assert list(page["outputs"]["o"]) == [n] == list(native(graph)["o"])


def test_compile_errors_after_a_loop_keep_their_column_on_both_lanes(wg):
    """An error on the line of a loop's `{`, after the inserted check: the same line and column
    as the same error behind an `if` of the same width (no loop, nothing inserted)."""
    loop = "for (var i = 0u; i < 4u; i++) {"
    plain = "if (true) {" + " " * (len(loop) - len("if (true) {"))
    body = " let q = 1u + * 2u; }"  # a syntax error (located on both)
    base = sk.SAXPY.replace("let i = id.x;", "let i = id.x;\n  LINE")
    where = {}
    for name, head in (("loop", loop), ("plain", plain)):
        graph = sk.broken_graph(base.replace("LINE", head + body))
        page = in_page(wg, graph)
        with pytest.raises(GpuLabError) as nat:
            native(graph)
        got = []
        for message in (page["message"], nat.value.message):
            m = LOCATED.search(message)
            assert m, message
            got.append((int(m.group(1)), int(m.group(2))))
        where[name] = got
    assert where["loop"] == where["plain"], where
    assert where["loop"][0][1] > len(loop)  # the error is after the insertion point


# ---- the notebook example (Playwright) ------------------------------------------------------


@pytest.fixture(scope="module")
def playground_url():
    from gpulab.server import start, stop

    srv = start("127.0.0.1", 0)
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    stop(srv)


def test_notebook_example_runs_and_a_broken_shader_shows_the_line(browser, playground_url):
    """The 'wgsl' example (saxpy, tiled matmul timed against ours, heat session) runs on WebGPU
    (SwiftShader, software allowed in the toolbar); breaking the saxpy shader with the
    reserved word `meta` shows the compiler's error under the cell with WGSL line 12 marked."""
    from playwright.sync_api import expect

    ctx = browser.new_context(viewport={"width": 1100, "height": 900})
    page = ctx.new_page()
    page.set_default_timeout(120_000)
    try:
        page.goto(playground_url + "/?backend=webgpu&software=1")
        expect(page.locator("body")).to_have_attribute("data-ready", "true", timeout=120_000)
        page.get_by_label("Examples").select_option("wgsl")
        cells = page.locator("section.cell")
        expect(cells).to_have_count(3)
        page.get_by_role("button", name="Run all").click()
        for n in range(3):
            expect(cells.nth(n)).to_have_attribute("data-status", "done", timeout=170_000)
        outs = [
            page.get_by_role("region", name=f"Output of cell {n}", exact=True) for n in (1, 2, 3)
        ]
        expect(outs[0]).to_contain_text(
            "webgpu [1.0, 1.2000000476837158, 1.399999976158142, 1.600000023841858] [100900.0]"
        )
        expect(outs[1]).to_contain_text(re.compile(r"yours: [\d.]+ ms per run on webgpu"))
        expect(outs[1]).to_contain_text(re.compile(r"ours: [\d.]+ ms per run on webgpu"))
        expect(outs[2]).to_contain_text("total heat 1600.0")
        # cross-check: the compare view runs the same kernel natively (the server on lavapipe,
        # software allowed as `gpulab serve --allow-software` does) and judges each output
        executors.configure(allow_software=True)
        page.get_by_role("region", name="Cell 1", exact=True).get_by_role(
            "button", name="Compare with native"
        ).click()
        view = page.get_by_role("region", name="Comparison of cell 1", exact=True)
        expect(view).to_contain_text("native: wgpu", timeout=60_000)
        table = view.get_by_role("table", name="Max difference per output")
        expect(table.locator("tbody tr")).to_have_count(2)
        expect(table.locator("tbody tr").first).to_contain_text("wgsl: student")
        expect(table.locator("tbody tr").first.locator(".verdict-pass")).to_have_text("pass")
        expect(view.locator("p.verdict")).to_contain_text(
            "all 2 outputs within the protocol tolerance"
        )
        source = page.evaluate("() => globalThis.gpulabNotebook.cells[0].source()")
        broken = source.replace("out[i] = p.a * x[i] + y[i];", "out[i] = p.a * x[i] + meta;")
        assert broken != source
        page.get_by_role("region", name="Cell 1", exact=True).get_by_role("textbox").fill(broken)
        page.get_by_role("region", name="Cell 1", exact=True).get_by_role(
            "button", name="Run", exact=True
        ).click()
        alert = outs[0].get_by_role("alert")
        expect(alert).to_contain_text("WGSL compile error at line 12", timeout=120_000)
        expect(alert).to_contain_text("meta")
        marked = alert.locator(".wgsl-error mark")
        expect(marked).to_contain_text("out[i] = p.a * x[i] + meta;")
        expect(alert.locator(".wgsl-error")).to_have_attribute("data-line", "12")
    finally:
        executors.configure()
        ctx.close()
