"""The browser WebGPU backend in headless Chromium (SwiftShader: a SOFTWARE adapter).

Every test that runs graphs passes allowSoftware and checks the result is labelled software;
the policy tests check SwiftShader is refused without it. Page helpers live in
e2e/webgpu_test.html (`window.wg`).
"""

from __future__ import annotations

import pytest
from gpulab.conformance.executors import _js_lane
from gpulab.conformance.runner import check_results, load_cases

PAGE = "/e2e/webgpu_test.html"


def open_runtime(extra: str = "") -> str:
    """JS that opens a WebGPU runtime with software allowed (SwiftShader here)."""
    return (
        "const hooks = {" + extra + "};"
        "const rt = await wg.runtime.createRuntime({backend: 'webgpu', allowSoftware: true, hooks});"
    )


# ---- adapter policy ----


def test_software_adapter_refused_without_allow_software(wg):
    r = wg("return await wg.settle(wg.runtime.createRuntime({backend: 'webgpu'}));")
    assert r["ok"] is False
    assert r["code"] == "UNAVAILABLE"
    # The reason names the adapter: the renderer and the adapter's own vendor/architecture.
    assert "refused software adapter: SwiftShader" in r["message"]
    assert "google" in r["message"] and "allowSoftware" in r["message"]


def test_auto_falls_back_and_records_the_webgpu_refusal(wg):
    r = wg(
        "const rt = await wg.runtime.createRuntime({backend: 'auto'});"
        "const out = {backend: rt.backend, attempts: rt.attempts};"
        "rt.dispose(); return out;"
    )
    assert r["backend"] != "webgpu"
    first = r["attempts"][0]
    assert first["backend"] == "webgpu" and first["ok"] is False
    assert "SwiftShader" in first["reason"]
    assert r["attempts"][-1]["backend"] == r["backend"] and r["attempts"][-1]["ok"] is True


def test_missing_webgpu_api_is_unavailable(page, server_url):
    page.add_init_script(
        "Object.defineProperty(Navigator.prototype, 'gpu', {get: () => undefined});"
    )
    page.goto(server_url + PAGE)
    page.wait_for_function("window.wgReady === true", timeout=30_000)
    r = page.evaluate(
        "async () => window.wg.settle(window.wg.runtime.createRuntime("
        "{backend: 'webgpu', allowSoftware: true}))"
    )
    assert r["ok"] is False and r["code"] == "UNAVAILABLE"
    assert "WebGPU API not present" in r["message"]


def test_policy_on_named_adapters(wg):
    """Each software renderer is refused by name; a hardware adapter passes; allowSoftware
    accepts a software one and says so. Fake adapters: only the policy is under test."""
    r = wg(
        """
        const fake = (info) => ({requestAdapter: async () => ({info, limits: {}})});
        const cases = {
          swiftshader: {vendor: 'google', architecture: 'swiftshader'},
          llvmpipe: {vendor: 'mesa', description: 'llvmpipe (LLVM 15.0.6, 256 bits)'},
          lavapipe: {vendor: 'mesa', device: 'Lavapipe'},
          softpipe: {description: 'softpipe'},
          basic: {vendor: 'microsoft', description: 'Microsoft Basic Render Driver'},
          fallback: {vendor: 'acme', architecture: 'x', isFallbackAdapter: true},
          nvidia: {vendor: 'nvidia', architecture: 'hopper', description: 'NVIDIA H200'},
        };
        const out = {};
        for (const [k, info] of Object.entries(cases)) {
          const refused = await wg.settle(wg.adapter.acquireAdapter({gpu: fake(info)}));
          const allowed = await wg.settle(
            wg.adapter.acquireAdapter({gpu: fake(info), allowSoftware: true}));
          out[k] = {refused, software: allowed.ok ? allowed.value.software : null};
        }
        out.none = await wg.settle(wg.adapter.acquireAdapter({gpu: {requestAdapter: async () => null}}));
        return out;
        """
    )
    names = {
        "swiftshader": "SwiftShader",
        "llvmpipe": "llvmpipe",
        "lavapipe": "lavapipe",
        "softpipe": "softpipe",
        "basic": "Microsoft Basic Render",
        "fallback": "fallback adapter",
    }
    for key, label in names.items():
        refused = r[key]["refused"]
        assert refused["ok"] is False and refused["code"] == "UNAVAILABLE", key
        assert f"refused software adapter: {label}" in refused["message"], refused
        assert r[key]["software"] is True, key
    assert r["nvidia"]["refused"]["ok"] is True
    assert r["nvidia"]["software"] is False
    assert r["none"]["ok"] is False and r["none"]["code"] == "UNAVAILABLE"


def test_allow_software_runs_and_labels_software(wg):
    r = wg(
        open_runtime() + "const res = await rt.execute(wg.seedGraph());"
        "const out = {backend: res.backend, data: Array.from(res.outputs.values.data),"
        " stats: res.stats, info: rt.info}; rt.dispose(); return out;"
    )
    assert r["backend"] == "webgpu"
    assert r["data"] == [0, 60, 120]
    assert r["info"]["software"] is True and r["stats"]["software"] is True
    assert r["info"]["vendor"] == "google" and r["info"]["architecture"] == "swiftshader"


def test_runs_in_a_module_worker(wg):
    """The playground runs the runtime in a Web Worker: WebGPU, kernel fetches and the buffer
    usage constants must work there too."""
    r = wg(
        """
        const src = `
          const rtmod = await import('${location.origin}/backends-js/src/runtime.mjs');
          try {
            const rt = await rtmod.createRuntime({backend: 'webgpu', allowSoftware: true});
            const g = {version: 1, nodes: [
              {id: 0, op: 'input', shape: [3], data: [-2, 3, 4]},
              {id: 1, op: 'input', shape: [3], data: [10, 20, 30]},
              {id: 2, op: 'mul', a: 0, b: 1}, {id: 3, op: 'relu', a: 2}],
              outputs: [{name: 'values', id: 3}]};
            const res = await rt.execute(g);
            postMessage({backend: res.backend, software: res.stats.software,
                         data: Array.from(res.outputs.values.data)});
          } catch (e) { postMessage({error: String(e.message)}); }`;
        const url = URL.createObjectURL(new Blob([src], {type: 'text/javascript'}));
        const worker = new Worker(url, {type: 'module'});
        const msg = await wg.settle(new Promise((resolve, reject) => {
          worker.onmessage = (ev) => resolve(ev.data);
          worker.onerror = (ev) => reject(new Error(ev.message || 'worker error'));
        }));
        worker.terminate();
        return msg;
        """
    )
    assert r["ok"], r
    assert r["value"] == {"backend": "webgpu", "software": True, "data": [0, 60, 120]}


def test_binding_layout_read_from_wgsl_declarations(wg):
    """Bind group layouts come from the kernels' declarations (access modes, either attribute
    order, comments ignored), and pooled sizes never shrink below the request."""
    r = wg(
        """
        const k = await import('/backends-js/src/backends/webgpu/kernels.mjs');
        const pool = await import('/backends-js/src/backends/webgpu/pool.mjs');
        const src = `
          struct P { n: u32 }
          @group(0) @binding(0) var<uniform> p: P;
          @binding(1) @group(0) var<storage, read> a: array<f32>;
          @group(0)
          @binding(2) var<storage> b: array<f32>;   // default access: read
          // @group(0) @binding(5) var<storage, read_write> commented: array<f32>;
          /* @group(0) @binding(6) var<storage, read_write> block: array<f32>; */
          @group(1) @binding(3) var<storage, read_write> other_group: array<f32>;
          @group(0) @binding(4) var<storage, read_write> out: array<f32>;`;
        const sizes = [1, 4, 255, 256, 257, 65536, 65537, 1e6, 123456789].map(
          (n) => [n, pool.sizeClass(n)]);
        return {bindings: Object.fromEntries(k.declaredBindings(src)), sizes};
        """
    )
    assert r["bindings"] == {
        "0": "uniform",
        "1": "read-only-storage",
        "2": "read-only-storage",
        "4": "storage",
    }
    for n, size in r["sizes"]:
        assert n <= size <= max(n + 255, n * 1.125), (n, size)  # 256-byte steps, then 12.5%
        assert size % 4 == 0


def test_tensor_past_the_device_buffer_limit_is_limit(wg):
    """A tensor larger than the device can bind is refused with LIMIT at prepare, naming the
    node, before any device work (the limit is lowered through the test hook)."""
    r = wg(
        open_runtime("limits: {maxStorageBufferBindingSize: 256}")
        + """
        const g = {version: 1, nodes: [
          {id: 0, op: 'input', shape: [8, 8], data: new Float32Array(64)},
          {id: 5, op: 'relu', a: 0},
          {id: 6, op: 'input', shape: [8, 9], data: new Float32Array(72)},
          {id: 7, op: 'matmul', a: 5, b: 6}],
          outputs: [{name: 'y', id: 7}]};
        const res = await wg.settle(rt.execute(g));
        const small = await rt.execute(wg.seedGraph());
        rt.dispose();
        return {res, small: Array.from(small.outputs.values.data)};
        """
    )
    assert r["res"]["code"] == "LIMIT", r["res"]
    assert "node 6 (input)" in r["res"]["message"]  # 72 floats = 288 bytes > 256
    assert r["small"] == [0, 60, 120]


# ---- errors and device loss ----


def test_device_loss_becomes_backend_without_hanging(wg):
    r = wg(
        open_runtime()
        + """
        const g = wg.seedGraph();
        const s = await rt.prepare(g, {});
        const before = await wg.settle(s.run(1));
        hooks.loseDevice();
        const during = await wg.settle(s.run(1), 20000);
        const after = await wg.settle(s.run(1), 20000);
        const execute = await wg.settle(rt.execute(g), 20000);
        s.dispose(); rt.dispose();
        return {before: before.ok, during, after, execute};
        """
    )
    assert r["before"] is True
    assert r["during"]["code"] == "BACKEND", r["during"]
    assert "device lost" in r["during"]["message"].lower()
    assert "TIMEOUT" not in r["during"]["message"]
    assert r["after"]["code"] == "STATE"  # the session is poisoned
    assert r["execute"]["code"] == "BACKEND" and "device lost" in r["execute"]["message"].lower()


def test_device_lost_while_reading_back_rejects(wg):
    """Loss right after the submit, while the read-back map is pending: the run rejects with
    BACKEND (the map races the device's loss) instead of hanging."""
    r = wg(
        open_runtime()
        + """
        const s = await rt.prepare(wg.seedGraph(), {});
        const ok = await wg.settle(s.run(1));
        let armed = true;
        hooks.onSubmit = () => { if (armed) { armed = false; hooks.loseDevice(); } };
        const res = await wg.settle(s.run(1), 20000);
        rt.dispose();
        return {ok: ok.ok, res, fired: !armed};
        """
    )
    assert r["ok"] is True and r["fired"] is True
    assert r["res"]["ok"] is False and r["res"]["code"] == "BACKEND", r["res"]
    assert "TIMEOUT" not in r["res"]["message"]
    assert "lost" in r["res"]["message"].lower() or "destroyed" in r["res"]["message"].lower()


def test_wgsl_compile_error_is_backend_with_browser_message(wg):
    r = wg(
        open_runtime("transformWgsl: (k, src) => src + '\\nfn broken( -> {'")
        + "const res = await wg.settle(rt.execute(wg.seedGraph())); rt.dispose(); return res;"
    )
    assert r["ok"] is False and r["code"] == "BACKEND"
    assert "WGSL" in r["message"]
    assert "error" in r["message"].lower() and "broken" in r["message"]  # Tint's own words


def test_validation_error_is_backend_with_browser_message(wg):
    """A dispatch past maxComputeWorkgroupsPerDimension is a WebGPU validation error."""
    r = wg(
        open_runtime(
            "transformPlan: (plan) => { plan.steps[0].dispatch = [70000, 1, 1]; return plan; }"
        )
        + "const res = await wg.settle(rt.execute(wg.seedGraph())); rt.dispose(); return res;"
    )
    assert r["ok"] is False and r["code"] == "BACKEND"
    assert "validation error" in r["message"]
    assert "70000" in r["message"]  # the browser's message names the bad count


# ---- sessions ----


def test_session_feeds_carry_and_download(wg):
    """acc <- acc + x each step: carry and feeds, checked against plain float32 sums."""
    r = wg(
        open_runtime()
        + """
        const g = {version: 1, nodes: [
          {id: 0, op: 'input', shape: [4]},
          {id: 1, op: 'input', shape: [4], data: [0, 0, 0, 0]},
          {id: 2, op: 'add', a: 1, b: 0},
          {id: 3, op: 'mul', a: 2, b: 2}],
          outputs: [{name: 'acc', id: 2}, {name: 'sq', id: 3}]};
        const s = await rt.prepare(g, {feeds: [0], carry: {1: 'acc'}, resident: ['acc'],
                                       outputs: ['sq']});
        const steps = [1, 2, 3].map((k) => ({0: [k, 10 * k, 0.5 * k, -k]}));
        const r1 = await s.run(steps);
        const acc = await s.download('acc');
        const carried = await s.download(1);
        const r2 = await s.run([{0: [1, 1, 1, 1]}]);
        s.dispose(); rt.dispose();
        return {sq: Array.from(r1.outputs.sq.data), names: Object.keys(r1.outputs),
                acc: Array.from(acc), carried: Array.from(carried),
                sq2: Array.from(r2.outputs.sq.data)};
        """
    )
    acc = [6.0, 60.0, 3.0, -6.0]
    assert r["names"] == ["sq"]  # resident outputs are not read back
    assert r["acc"] == acc and r["carried"] == acc
    assert r["sq"] == [v * v for v in acc]
    assert r["sq2"] == [(v + 1) * (v + 1) for v in acc]


def test_carry_swap_acts_simultaneously(wg):
    """carry a <- b's value and b <- a's value: outputs that are inputs swap each step."""
    r = wg(
        open_runtime()
        + """
        const g = {version: 1, nodes: [
          {id: 0, op: 'input', shape: [2], data: [1, 2]},
          {id: 1, op: 'input', shape: [2], data: [3, 4]},
          {id: 2, op: 'add', a: 0, b: 1}],
          outputs: [{name: 'a', id: 0}, {name: 'b', id: 1}, {name: 'sum', id: 2}]};
        const s = await rt.prepare(g, {carry: {0: 'b', 1: 'a'}, outputs: ['sum']});
        await s.run(3);
        const out = {a: Array.from(await s.download(0)), b: Array.from(await s.download(1))};
        s.dispose(); rt.dispose(); return out;
        """
    )
    assert r == {"a": [3, 4], "b": [1, 2]}  # three swaps


def test_carried_input_that_no_output_reads_still_holds_state(wg):
    """state <- y each step although nothing reads `state`: download sees the carried value."""
    r = wg(
        open_runtime()
        + """
        const g = {version: 1, nodes: [
          {id: 0, op: 'input', shape: [2], data: [7, 8]},
          {id: 1, op: 'input', shape: [2]},
          {id: 2, op: 'add', a: 1, b: 1}],
          outputs: [{name: 'y', id: 2}]};
        const s = await rt.prepare(g, {feeds: [1], carry: {0: 'y'}});
        const before = Array.from(await s.download(0));
        await s.run([{1: [1, 2]}, {1: [3, 4]}]);
        const after = Array.from(await s.download(0));
        s.dispose(); rt.dispose();
        return {before, after};
        """
    )
    assert r == {"before": [7, 8], "after": [6, 8]}


def test_run_of_eight_steps_is_one_submission_and_equals_eight_runs(wg):
    r = wg(
        open_runtime()
        + """
        const init = wg.mlpInitialState();
        const opts = {feeds: [0, 1], carry: wg.MLP_CARRY, resident: ['W1', 'W2'],
                      outputs: ['loss']};
        const steps = Array.from({length: 8}, (_, s) => wg.mlpFeeds(s));
        const a = await rt.prepare(wg.mlpGraph(init), opts);
        const submits0 = hooks.webgpuStats().submits;
        const ra = await a.run(steps);
        const submits = hooks.webgpuStats().submits - submits0;
        const wa = await a.download('W1');
        const b = await rt.prepare(wg.mlpGraph(init), opts);
        let rb;
        for (const step of steps) rb = await b.run([step]);
        const wb = await b.download('W1');
        a.dispose(); b.dispose(); rt.dispose();
        return {submits, lossA: wg.bits(ra.outputs.loss.data), lossB: wg.bits(rb.outputs.loss.data),
                wA: wg.bits(wa), wB: wg.bits(wb), stats: ra.stats};
        """
    )
    assert r["submits"] == 1
    assert r["lossA"] == r["lossB"]
    assert r["wA"] == r["wB"]
    assert r["stats"]["software"] is True and r["stats"]["steps"] == 8


def test_five_session_steps_equal_five_chained_executes(wg):
    """An MLP training step with Adam: the session (one submission for five steps, state on the
    device) and five executes (state through the host) give the same bits."""
    r = wg(
        open_runtime()
        + """
        let state = wg.mlpInitialState();
        const names = ['W1', 'W2', 'm1', 'v1', 'm2', 'v2', 't'];
        const s = await rt.prepare(wg.mlpGraph(state), {feeds: [0, 1], carry: wg.MLP_CARRY,
                                   resident: names, outputs: ['loss']});
        const steps = Array.from({length: 5}, (_, k) => wg.mlpFeeds(k));
        const rs = await s.run(steps);
        const session = {loss: wg.bits(rs.outputs.loss.data)};
        for (const n of names) session[n] = wg.bits(await s.download(n));
        const losses = [];
        let res;
        for (let k = 0; k < 5; k++) {
          const f = steps[k];
          res = await rt.execute(wg.mlpGraph(state, f[0], f[1]));
          losses.push(res.outputs.loss.data[0]);
          state = Object.fromEntries(names.map((n) => [n, res.outputs[n].data]));
        }
        const chained = {loss: wg.bits(res.outputs.loss.data)};
        for (const n of names) chained[n] = wg.bits(res.outputs[n].data);
        s.dispose(); rt.dispose();
        return {session, chained, losses, t: Array.from(state.t)};
        """
    )
    assert r["t"] == [6.0]  # five steps counted on the device
    assert r["losses"][-1] < r["losses"][0]  # it trains
    assert r["session"] == r["chained"]


def test_poisoned_by_forced_nan_then_state(wg):
    r = wg(
        open_runtime()
        + """
        const g = {version: 2, nodes: [
          {id: 0, op: 'input', shape: [2]},
          {id: 1, op: 'log', a: 0}],
          outputs: [{name: 'y', id: 1}]};
        const s = await rt.prepare(g, {feeds: [0]});
        const ok = await wg.settle(s.run([{0: [1, 2]}]));
        const bad = await wg.settle(s.run([{0: [-1, 2]}]));   // log(-1) = NaN
        const later = await wg.settle(s.run([{0: [1, 2]}]));
        const dispose = await wg.settle(Promise.resolve(s.dispose()));
        const after = await wg.settle(s.run([{0: [1, 2]}]));
        rt.dispose();
        return {ok: ok.ok, bad, later, dispose: dispose.ok, after};
        """
    )
    assert r["ok"] is True
    assert r["bad"]["code"] == "BACKEND" and "non-finite" in r["bad"]["message"]
    assert r["later"]["code"] == "STATE"
    assert r["dispose"] is True
    assert r["after"]["code"] == "DISPOSED"


def test_poisoned_by_backend_error_then_state(wg):
    """A real WebGPU validation error inside a session run (a plan edited to dispatch past the
    device's limit) poisons the session; so does the runtime's injected failure (failNextRun)."""
    r = wg(
        open_runtime(
            "transformPlan: (plan) => { plan.steps[0].dispatch = [70000, 1, 1]; return plan; }"
        )
        + """
        const s = await rt.prepare(wg.seedGraph(), {});
        const real = await wg.settle(s.run(1));
        const realLater = await wg.settle(s.run(1));
        const download = await wg.settle(s.download('values'));
        s.dispose();
        delete hooks.transformPlan;
        const t = await rt.prepare(wg.seedGraph(), {});
        const fine = await wg.settle(t.run(1));
        hooks.failNextRun = 'injected';
        const injected = await wg.settle(t.run(1));
        const injectedLater = await wg.settle(t.run(1));
        t.dispose(); rt.dispose();
        return {real, realLater, download, fine: fine.ok, injected, injectedLater};
        """
    )
    assert r["real"]["code"] == "BACKEND" and "validation error" in r["real"]["message"]
    assert r["realLater"]["code"] == "STATE"
    assert r["download"]["code"] == "STATE"  # refused as poisoned before anything else
    assert r["fine"] is True
    assert r["injected"]["code"] == "BACKEND" and "injected" in r["injected"]["message"]
    assert r["injectedLater"]["code"] == "STATE"


# ---- caches ----


def test_buffers_and_pipelines_reused_across_executes(wg):
    r = wg(
        open_runtime()
        + """
        const g = wg.mlpGraph(wg.mlpInitialState(), wg.mlpFeeds(0)[0], wg.mlpFeeds(0)[1]);
        await rt.execute(g);
        const first = hooks.webgpuStats();
        for (let i = 0; i < 20; i++) await rt.execute(g);
        const last = hooks.webgpuStats();
        rt.dispose();
        return {first, last};
        """
    )
    first, last = r["first"], r["last"]
    assert first["live"] > 0
    assert last["live"] == first["live"], (first, last)  # no growth in live buffers
    assert last["created"] == first["created"]
    # every acquisition of the 20 executes came from the pool
    assert last["reused"] - first["reused"] == 20 * (first["created"] + first["reused"])
    assert last["pipelines"] == first["pipelines"]  # pipelines built once per device
    assert last["submits"] == first["submits"] + 20  # one submission per execute
    assert last["uncapturedErrors"] == []


def test_concurrent_executes_share_the_device_correctly(wg):
    """Executes in flight together (shared pool, pipelines and error scopes) each get their own
    right answer."""
    r = wg(
        open_runtime()
        + """
        const graph = (k) => ({version: 2, nodes: [
          {id: 0, op: 'input', shape: [3, 65], data: wg.randoms(195, k)},
          {id: 1, op: 'full', shape: [1], value: k},
          {id: 2, op: 'mul', a: 0, b: 1},
          {id: 3, op: 'sum', a: 2, axis: 1}],
          outputs: [{name: 'x', id: 2}, {name: 's', id: 3}]});
        const ks = [1, 2, 3, 4, 5, 6];
        const res = await Promise.all(ks.map((k) => rt.execute(graph(k))));
        const out = ks.map((k, i) => ({
          k, want: Array.from(wg.randoms(195, k).map((v) => Math.fround(v * k))),
          got: Array.from(res[i].outputs.x.data), sums: res[i].outputs.s.data.length}));
        rt.dispose();
        return out;
        """
    )
    for case in r:
        assert case["got"] == case["want"], case["k"]
        assert case["sums"] == 3


# ---- conformance ----


def test_conformance_corpus_on_webgpu_software(browser, server_url):
    """The whole corpus on WebGPU (SwiftShader, labelled software): exact ops bit-equal to the
    reference, the others within their tolerance class."""
    from gpulab.conformance.runner import run_conformance

    report = run_conformance(
        "browser-webgpu", allow_software=True, browser=browser, server_url=server_url
    )
    assert report.lane.available, report.describe_failures()
    assert report.lane.backend == "webgpu"
    assert report.lane.software is True  # SwiftShader: the report says software
    assert report.passed, report.describe_failures()


def test_matmul_64_tile_path_on_webgpu(wg):
    """With workgroup storage lowered to 16 KiB (WebGPU's default; SwiftShader offers 32 KiB)
    the matmul cases and the chains pass the same conformance check. Every matmul kernel fits
    16 KiB and the planner picks one by the work (docs/plan.md), so the kernels are the same."""
    cases = [c for c in load_cases() if c["op"] in ("matmul", "chain")]
    assert len(cases) >= 10
    payload = wg(
        """
        const { runCases } = await import('/pylib/gpulab/conformance/run_cases.mjs');
        const kernels = new Set();
        const hooks = {
          limits: {maxComputeWorkgroupStorageSize: 16384},
          transformPlan: (plan) => { plan.steps.forEach((s) => kernels.add(s.kernel)); return plan; },
        };
        const create = (opts) => wg.runtime.createRuntime({...opts, hooks});
        const out = await runCases(create, {backend: 'webgpu', allowSoftware: true}, arg);
        out.kernels = [...kernels];
        // the same device without the lowered limit takes the register-blocked kernel
        const seen = new Set();
        const rt = await wg.runtime.createRuntime({backend: 'webgpu', allowSoftware: true, hooks: {
          transformPlan: (plan) => { plan.steps.forEach((s) => seen.add(s.kernel)); return plan; }}});
        await rt.execute(arg[0].graph);
        rt.dispose();
        out.defaultKernels = [...seen];
        return out;
        """,
        [{"name": c["name"], "graph": c["graph"]} for c in cases],
    )
    assert "matmul_small" in payload["kernels"]
    assert set(payload["defaultKernels"]) <= set(payload["kernels"])
    report = check_results(cases, _js_lane("browser-webgpu-16k", payload))
    assert report.lane.software is True
    assert report.passed, report.describe_failures()


# ---- dtypes ----


def test_every_dtype_round_trips_bit_for_bit(wg):
    """float32/int32/uint32/bool inputs that are outputs (given by value, fed, carried, swapped)
    come back as typed arrays of their dtype with the same bits (bool stored as u32 words)."""
    problems = wg(
        open_runtime()
        + "const { typedRoundTrips } = await import('/backends-js/test/typed-roundtrip.mjs');"
        "try { return await typedRoundTrips(rt); } finally { rt.dispose(); }"
    )
    assert problems == []


# ---- quotas ----


def test_quotas_refuse_with_limit_before_device_work(wg):
    """The runtime's quotas on WebGPU: memory, buffers and pipelines refused with LIMIT naming
    the quota before any device work; an open session holds its share until disposed."""
    r = wg(
        "const rt = await wg.runtime.createRuntime({backend: 'webgpu', allowSoftware: true, "
        "quotas: {memoryBytes: 1000, buffers: 3, pipelines: 1}});"
        + """
        const chain = (n, ops) => ({version: 2, nodes: [{id: 0, op: 'full', shape: [n], value: 2},
          ...ops.map((op, i) => ({id: i + 1, op, a: i}))], outputs: [{name: 'y', id: ops.length}]});
        const memory = await wg.settle(rt.execute(chain(200, ['relu'])));
        const buffers = await wg.settle(rt.execute(chain(2, ['relu', 'relu', 'relu'])));
        const pipelines = await wg.settle(rt.execute(chain(2, ['relu', 'exp'])));
        const s = await rt.prepare(chain(100, ['relu']));
        const held = await wg.settle(rt.execute(chain(50, ['relu'])));
        s.dispose();
        const after = await rt.execute(chain(50, ['relu']));
        rt.dispose();
        return {memory, buffers, pipelines, held, after: Array.from(after.outputs.y.data).slice(0, 2)};
        """
    )
    for key, quota in (
        ("memory", "memoryBytes"),
        ("buffers", "buffers"),
        ("pipelines", "pipelines"),
        ("held", "memoryBytes"),
    ):
        assert r[key]["code"] == "LIMIT" and f"quotas.{quota}" in r[key]["message"], r[key]
    assert "held by open sessions" in r["held"]["message"]
    assert r["after"] == [2, 2]


def test_defect5_run_past_max_buffer_size_is_split_not_poisoned(wg):
    """Hostile-input defect 5 (`issues show 11`): a valid run whose steps' feeds together pass the
    device's maxBufferSize (17 x 64 MiB) poisoned the session. With the limit lowered to 3 steps'
    feeds (hooks.maxBufferSize, enforced by the pool as the device would), 10 steps run as 3+3+3+1
    submissions, the carry persists across them, and the result is the cpu backend's."""
    r = wg(
        open_runtime("maxBufferSize: 3 * 4096 + 100")
        + """
        const n = 1024;
        const graph = {version: 2, nodes: [{id: 0, op: 'input', shape: [n]},
          {id: 1, op: 'input', shape: [n], data: new Array(n).fill(0)},
          {id: 2, op: 'add', a: 0, b: 1}, {id: 3, op: 'sum', a: 2}],
          outputs: [{name: 'w', id: 2}, {name: 's', id: 3}]};
        const opts = {feeds: [0], carry: {1: 'w'}, outputs: ['s', 'w']};
        const steps = Array.from({length: 10}, (_, s) =>
          ({0: Float32Array.from({length: n}, (_, i) => (i % 7) * 0.25 + s)}));
        const cpu = await wg.runtime.createRuntime({backend: 'cpu'});
        const want = await (await cpu.prepare(graph, opts)).run(steps);
        const session = await rt.prepare(graph, opts);
        const submits = () => hooks.webgpuStats().submits;
        const s0 = submits();
        const settled = await wg.settle(session.run(steps));
        const got = settled.ok ? settled.value : settled;
        const split = submits() - s0;
        const s1 = submits();
        const three = await session.run(steps.slice(0, 3));
        const whole = submits() - s1;
        const state = session.state;
        session.dispose(); rt.dispose(); cpu.dispose();
        return {split, whole, state, error: settled.ok ? null : settled,
          got: got.outputs && [wg.bits(got.outputs.s.data), wg.bits(got.outputs.w.data)],
          want: [wg.bits(want.outputs.s.data), wg.bits(want.outputs.w.data)],
          three: Array.from(three.outputs.w.data.slice(0, 2))};
        """
    )
    assert r["error"] is None, r["error"]
    assert r["split"] == 4 and r["whole"] == 1, r
    assert r["got"] == r["want"]
    assert r["state"] == "ready"
    # the carry went on: element 0 gained 0+1+...+9 then 0+1+2; element 1 a quarter more per step
    assert r["three"] == [45 + 3, 45 + 2.5 + 3 + 0.75]


@pytest.mark.slow
def test_sixteen_steps_of_64_mib_feeds_keep_the_session_usable(wg):
    """A session run of 16 steps, each feeding a 64 MiB tensor (1 GiB of feeds), on the real
    device limits (SwiftShader: maxBufferSize 256 MiB, which it cannot allocate in one buffer):
    split into parts of 4 steps (256 MiB of staging) it poisoned the session. The run either
    gives every element exactly (a carry that sums the feeds) or is refused with LIMIT naming
    the size, and the same session then runs one more step with the right values."""
    r = wg(
        open_runtime()
        + """
        const n = 16 * 1024 * 1024;  // 64 MiB of float32 per feed
        const graph = {version: 2, nodes: [{id: 0, op: 'input', shape: [n]},
          {id: 1, op: 'input', shape: [n], data: new Float32Array(n)},
          {id: 2, op: 'add', a: 0, b: 1}], outputs: [{name: 'w', id: 2}]};
        const session = await rt.prepare(graph, {feeds: [0], carry: {1: 'w'}, outputs: ['w']});
        // feed s holds (i % 7) + s: small integers, so every sum is exact in float32
        const feed = (s) => { const f = new Float32Array(n); for (let i = 0; i < n; i++) f[i] = (i % 7) + s; return f; };
        const steps = Array.from({length: 16}, (_, s) => ({0: feed(s)}));
        const wrong = (w, k, extra) => {  // elements of w that are not the sum of k steps
          let bad = 0, first = -1;
          for (let i = 0; i < n; i++) {
            if (w[i] !== k * (i % 7) + (k * (k - 1)) / 2 + extra) { bad++; if (first < 0) first = i; }
          }
          return {bad, first, at: first < 0 ? null : w[first]};
        };
        const big = await wg.settle(session.run(steps), 600000);
        const bigCheck = big.ok ? wrong(big.value.outputs.w.data, 16, 0) : null;
        const afterBig = session.state;
        steps.length = 0;
        const one = await wg.settle(session.run([{0: feed(16)}]), 600000);
        // one more step adds (i % 7) + 16 to what the session held (nothing if refused)
        const oneCheck = one.ok ? wrong(one.value.outputs.w.data, big.ok ? 17 : 1, big.ok ? 0 : 16) : null;
        const state = session.state;
        session.dispose(); rt.dispose();
        return {big: big.ok ? {ok: true, check: bigCheck} : big, afterBig,
          one: one.ok ? {ok: true, check: oneCheck} : one, state};
        """
    )
    if r["big"]["ok"]:
        assert r["big"]["check"]["bad"] == 0, r["big"]
    else:  # a refusal names the limit and the size it refused
        assert r["big"]["code"] == "LIMIT" and "MiB" in r["big"]["message"], r["big"]
    assert r["afterBig"] == "ready", r
    assert r["one"]["ok"] is True, r["one"]
    assert r["one"]["check"]["bad"] == 0, r["one"]
    assert r["state"] == "ready"


def test_fed_index_out_of_range_is_backend_then_state(wg):
    """Protocol v4: an index fed at run time outside 0..n-1 is never read through (the kernel
    clamps the read and records the position in the check word): BACKEND naming the node and
    the first bad position, then the session is poisoned (STATE). In range, the right rows."""
    r = wg(
        open_runtime()
        + """
        const g = {version: 4, nodes: [
          {id: 0, op: 'input', shape: [3, 2], data: [0, 1, 2, 3, 4, 5]},
          {id: 1, op: 'input', shape: [3], dtype: 'int32'},
          {id: 2, op: 'index_select', a: 0, idx: 1, axis: 0}],
          outputs: [{name: 'y', id: 2}]};
        const s = await rt.prepare(g, {feeds: [1]});
        const ok = await s.run([{1: [2, 0, 2]}]);
        const bad = await wg.settle(s.run([{1: [1, 7, -1]}]));
        const later = await wg.settle(s.run([{1: [0, 0, 0]}]));
        s.dispose();
        rt.dispose();
        return {ok: Array.from(ok.outputs.y.data), bad, later};
        """
    )
    assert r["ok"] == [4, 5, 0, 1, 4, 5]
    assert r["bad"]["code"] == "BACKEND", r["bad"]
    assert (
        "node 2 (index_select): operand idx holds an index at idx[1] out of range for "
        "axis 0 of a [3, 2] (valid 0..2)" in r["bad"]["message"]
    )
    assert r["later"]["code"] == "STATE"
