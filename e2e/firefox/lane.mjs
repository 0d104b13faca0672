// The Firefox lane's page (e2e/firefox_lane.py opens it in firefox-esr, no WebDriver): it
// runs the conformance corpus on each backend of `?backends=` through the runtime (as
// pylib/gpulab/conformance/page.mjs does in Chromium) and the playground's examples (`?example=`) in an iframe
// (same origin, driven through its DOM), and POSTs every answer to the test server, which
// judges them with the conformance runner. A backend the browser does not offer (WebGPU on
// Linux Firefox) answers {lane: {available: false, reason}}: recorded, not a crash.
import { runCases } from '/pylib/gpulab/conformance/run_cases.mjs';

const params = new URLSearchParams(location.search);
const BACKENDS = (params.get('backends') ?? 'wasm,cpu,webgl2,webgpu').split(',').filter(Boolean);
const EXAMPLE_BACKENDS = (params.get('example') ?? 'wasm,cpu,webgl2').split(',').filter(Boolean);
const BATCH = Number(params.get('batch') ?? 100);
const LIMIT = Number(params.get('limit') ?? 0); // 0 = the whole corpus
const REPORT = '/api/lane-report';

/** An error as text (Firefox gives a fetch's NetworkError an empty stack). */
const describe = (err) => `${err?.name ?? 'Error'}: ${err?.message ?? err}\n${err?.stack ?? ''}`.trim();

function log(text) {
  const li = document.createElement('li');
  li.textContent = text;
  document.getElementById('log').append(li);
}

/** POST one report; the server answers 200 once it has it (so the order is kept). */
async function report(kind, body) {
  const res = await fetch(REPORT, { method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ kind, ...body }) });
  if (!res.ok) throw new Error(`report ${kind}: HTTP ${res.status}`);
}

/** Whether a WebGL2 context opens here, and the browser's words when it does not. */
function webgl2Probe() {
  const canvas = document.createElement('canvas');
  let why = '';
  canvas.addEventListener('webglcontextcreationerror', (e) => { why = e.statusMessage; });
  const gl = canvas.getContext('webgl2');
  const info = gl?.getExtension('WEBGL_debug_renderer_info');
  return { webgl2: Boolean(gl), webgl2Error: why,
    webgl2Renderer: gl ? String(gl.getParameter(info ? info.UNMASKED_RENDERER_WEBGL : gl.RENDERER)) : '' };
}

function browserFacts() {
  return {
    ...webgl2Probe(),
    userAgent: navigator.userAgent,
    crossOriginIsolated: globalThis.crossOriginIsolated === true,
    webgpu: 'gpu' in navigator,
    jspi: typeof WebAssembly.Suspending === 'function',
  };
}

async function runCorpus(createRuntime, cases) {
  for (const backend of BACKENDS) {
    const t0 = performance.now();
    for (let start = 0; start < cases.length; start += BATCH) {
      const batch = cases.slice(start, start + BATCH);
      let answer;
      try {
        answer = await runCases(createRuntime, { backend, allowSoftware: true, withoutKernels: [] }, batch);
      } catch (err) {
        answer = { lane: { available: false, reason: `crashed: ${describe(err)}` }, results: [] };
      }
      await report('conformance', { backend, start, count: batch.length, answer })
        .catch((err) => { throw new Error(`${backend} cases ${start}..: ${describe(err)}`); });
      if (!answer.lane?.available) break; // the refusal is the lane's result (WebGPU on Linux)
    }
    log(`${backend}: corpus in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    await report('corpus-time', { backend, seconds: (performance.now() - t0) / 1000 });
  }
}

const sleep = (ms) => new Promise((resolve) => { setTimeout(resolve, ms); });

async function until(what, test, timeoutMs) {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = test();
    if (value) return value;
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

/** What a cell's figures show: the Life canvas's caption, a plot's points and series. */
function figuresOf(cell) {
  return [...cell.querySelectorAll('figure.drawing')].map((f) => ({
    key: f.dataset.key,
    caption: f.querySelector('figcaption')?.textContent ?? '',
    points: f.querySelector('.plot-root')?.dataset.points ?? null,
  }));
}

/** An example of the playground's menu (`first`, `life`, `mlp`) on `backend`: Run all, then
 * each cell's status, output text and figures. */
async function runExample(id, backend) {
  const frame = /** @type {HTMLIFrameElement} */ (document.getElementById('playground'));
  const t0 = performance.now();
  // the new document's load, not a fixed wait: the old one is ready too until it unloads
  const loaded = new Promise((resolve) => { frame.addEventListener('load', resolve, { once: true }); });
  frame.src = `/?backend=${backend}&software=1`;
  await loaded;
  const doc = () => frame.contentDocument;
  await until('the playground', () => doc()?.body?.dataset.ready === 'true', 120_000);
  const readyS = (performance.now() - t0) / 1000;
  const status = doc().getElementById('backend-status')?.textContent ?? '';
  const before = doc().body.dataset.notebook;
  const examples = doc().getElementById('examples');
  examples.value = id;
  examples.dispatchEvent(new Event('change'));
  const cells = () => [...doc().querySelectorAll('section.cell')];
  await until('the example', () => doc().body.dataset.notebook !== before && cells().length > 0, 10_000);
  await until('Run all', () => !doc().getElementById('run-all').disabled, 10_000);
  doc().getElementById('run-all').click();
  // every cell ran, or one failed and Run all stopped there (the Stop button goes idle)
  const idle = () => doc().getElementById('stop').disabled;
  await until('the cells', () => idle() && (cells().every((c) => c.dataset.status) ||
    cells().some((c) => c.dataset.status === 'error')), 170_000);
  return {
    example: id, backend, readyS, status, seconds: (performance.now() - t0) / 1000,
    cells: cells().map((c) => ({ status: c.dataset.status, figures: figuresOf(c),
      output: c.querySelector('[aria-label^="Output of cell"]')?.innerText ?? '' })),
  };
}

async function main() {
  const facts = browserFacts();
  await report('hello', facts);
  log(facts.userAgent);
  const all = await (await fetch(params.get('cases') ?? '/pylib/gpulab/conformance/cases.json')).json();
  const cases = (LIMIT > 0 ? all.slice(0, LIMIT) : all).map((c) => ({ name: c.name, graph: c.graph }));
  const { createRuntime } = await import('/backends-js/src/runtime.mjs');
  await runCorpus(createRuntime, cases);
  for (const entry of EXAMPLE_BACKENDS) { // "wasm" (the first example) or "life:wasm"
    const [id, backend] = entry.includes(':') ? entry.split(':') : ['first', entry];
    let answer;
    try {
      answer = await runExample(id, backend);
    } catch (err) {
      answer = { example: id, backend, error: describe(err) };
    }
    log(`${id} on ${backend}: ${answer.error ?? answer.cells.map((c) => c.status).join(', ')}`);
    await report('example', answer);
  }
  await report('done', {});
}

main().catch((err) => report('error', { error: describe(err) }));
