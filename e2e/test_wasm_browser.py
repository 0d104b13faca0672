"""The wasm backend's conformance lanes and sessions: headless Chromium and node.

The whole corpus (pylib/gpulab/conformance/cases.json) is judged against the float64 reference on
`browser-wasm` (kernels.wasm fetched from the served repo, same bytes as in node) and on
`node-wasm`. Neither lane is a software GPU: these are the CPU kernels, labelled software=False.
"""

from __future__ import annotations

from gpulab.conformance.runner import run_conformance

PAGE = "/pylib/gpulab/conformance/page.html"


def test_browser_wasm_passes_the_conformance_corpus(browser, server_url):
    report = run_conformance("browser-wasm", browser=browser, server_url=server_url)
    assert report.passed, report.describe_failures()
    assert report.lane.backend == "wasm"
    assert report.lane.software is False
    assert "wasm32+simd128" in (report.lane.adapter or "")


def test_node_wasm_passes_the_conformance_corpus():
    report = run_conformance("node-wasm")
    assert report.passed, report.describe_failures()
    assert report.lane.backend == "wasm"


SESSION_JS = """
async () => {
  const { createRuntime } = await import('/backends-js/src/runtime.mjs');
  const { mlpData, mlpStepGraph } = await import('/backends-js/src/models/mlp.mjs');
  const bits = (a) => Array.from(new Uint32Array(Float32Array.from(a).buffer));
  const rt = await createRuntime({ backend: 'wasm' });
  const data = mlpData({ seed: 5, batches: 5 });
  const names = ['w1', 'b1', 'w2', 'b2'];
  let state = { ...data }, moments, last;
  const executes = [];
  for (let s = 0; s < 5; s++) {
    last = (await rt.execute(mlpStepGraph(state, { step: s + 1, batch: s, moments }).graph)).outputs;
    executes.push(last.loss.data[0]);
    state = { ...data, ...Object.fromEntries(names.map((p) => [p, last[p + '_'].data])) };
    moments = Object.fromEntries(names.map((p) => [p, { m: last['m_' + p + '_'].data,
      v: last['v_' + p + '_'].data }]));
  }
  const { graph, carry, feeds, ids } = mlpStepGraph(data, { feedXY: true });
  const session = await rt.prepare(graph, { feeds, carry, resident: ['w1_', 'b2_'], outputs: ['loss'] });
  const steps = [];
  for (let s = 0; s < 5; s++) {
    const r = await session.run([{ [ids.x]: data.xs[s], [ids.y]: data.ys[s] }]);
    steps.push(r.outputs.loss.data[0]);
  }
  const same = bits(steps).join() === bits(executes).join()
    && bits(await session.download('w1_')).join() === bits(last.w1_.data).join()
    && bits(await session.download('b2_')).join() === bits(last.b2_.data).join();
  const bad = data.ys[0].slice(); bad[0] = NaN;
  const codes = [];
  for (const feed of [{ [ids.x]: data.xs[0], [ids.y]: bad }, { [ids.x]: data.xs[0], [ids.y]: data.ys[0] }]) {
    try { await session.run([feed]); codes.push('ok'); } catch (e) { codes.push(e.code); }
  }
  session.dispose();
  rt.dispose();
  return { same, executes, steps, codes, info: rt.info };
}
"""


def test_browser_wasm_session_steps_equal_chained_executes(page, server_url):
    """Five session steps == five chained executes (MLP Adam step); a NaN target poisons."""
    page.goto(server_url + PAGE)
    r = page.evaluate(SESSION_JS)
    assert r["info"]["architecture"] == "wasm32+simd128"
    assert r["same"], f"session losses {r['steps']} vs executes {r['executes']}"
    assert r["steps"][4] < r["steps"][0]
    assert r["codes"] == ["BACKEND", "STATE"]


WORKER_JS = """
async () => {
  const src = `
    const { createRuntime } = await import('${location.origin}/backends-js/src/runtime.mjs');
    const rt = await createRuntime({ backend: 'wasm' });
    const r = await rt.execute({ version: 1, nodes: [
      { id: 0, op: 'input', shape: [2, 3], data: [1, -2, 3, -4, 5, -6] },
      { id: 1, op: 'relu', a: 0 }, { id: 2, op: 'transpose', a: 1 }, { id: 3, op: 'matmul', a: 1, b: 2 }],
      outputs: [{ name: 'g', id: 3 }] });
    postMessage({ backend: r.backend, data: Array.from(r.outputs.g.data), info: rt.info });`;
  const url = URL.createObjectURL(new Blob([src], { type: 'text/javascript' }));
  const worker = new Worker(url, { type: 'module' });
  return await new Promise((resolve, reject) => {
    worker.onmessage = (e) => resolve(e.data);
    worker.onerror = (e) => reject(new Error(e.message));
  });
}
"""


def test_wasm_backend_runs_in_a_module_worker(page, server_url):
    """The playground runs the runtime in a Web Worker: kernels.wasm is fetched from there too."""
    page.goto(server_url + PAGE)
    r = page.evaluate(WORKER_JS)
    assert r["backend"] == "wasm"
    assert r["info"]["architecture"] == "wasm32+simd128"
    assert r["data"] == [10.0, 0.0, 0.0, 25.0]
