// The browser benchmark page: the MLP Adam step on every gpu-lab backend and every TF.js
// backend, one after another in this page, from the fixture's weights. Each lane that cannot
// run becomes a row with its reason. Result: window.benchResult (read by
// gpulab.benchmarks.browser) and a table in the page.
import { loadFixture } from './fixture.mjs';
import { benchGpuLab } from './gpulab-lane.mjs';
import { benchTfjs } from './tfjs-lane.mjs';

const FIXTURE_URL = '/bench/browser/fixture.json';

/** Page options from the query string. */
function options() {
  const q = new URLSearchParams(location.search);
  const list = (key, fallback) => (q.get(key) ?? fallback).split(',').map((s) => s.trim())
    .filter(Boolean);
  const runs = Number(q.get('runs') ?? 20);
  if (!Number.isInteger(runs) || runs < 1) throw new Error(`runs must be an integer >= 1, got ${q.get('runs')}`);
  const warmup = Number(q.get('warmup') ?? 1);
  if (!Number.isInteger(warmup) || warmup < 0) throw new Error(`warmup must be an integer >= 0, got ${q.get('warmup')}`);
  return { runs, warmup, budgetS: Number(q.get('budget_s') ?? 0),
    lossSteps: Number(q.get('loss_steps') ?? 5),
    gpulab: list('gpulab', 'cpu,wasm,webgl2,webgpu'), tfjs: list('tfjs', 'cpu,wasm,webgl,webgpu') };
}

/** "GpuLabError UNAVAILABLE: ...": the error's name, its code when it has one, its message. */
function reason(/** @type {any} */ err) {
  if (!(err instanceof Error)) return String(err);
  const code = /** @type {any} */ (err).code;
  return `${err.name}${code ? ` ${code}` : ''}: ${err.message}`;
}

/** @param {string} text */
const escape = (text) => text.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);

/** @param {{median: number, min: number, n: number}|null|undefined} s */
const cell = (s) => (s ? `${s.median.toFixed(2)} / ${s.min.toFixed(2)} (${s.n})` : '—');

/** The table so far, one row per lane. @param {any[]} rows */
function render(rows) {
  const head = '<tr><th>library</th><th>backend</th><th>adapter</th><th>execute ms</th>' +
    '<th>run (1 step) ms</th><th>run (8 steps) ms/step</th><th>loss, step 1</th></tr>';
  document.getElementById('table').innerHTML = head + rows.map((r) => `<tr><td>${r.lib}</td>` +
    `<td>${escape(r.backend)}</td>` +
    `<td>${escape(r.error ? `not run: ${r.error}` : r.adapter + (r.software ? ' (software)' : ''))}</td>` +
    `<td>${cell(r.execute)}</td><td>${cell(r.run1)}</td><td>${cell(r.run8)}</td>` +
    `<td>${r.losses?.[0]?.toFixed(6) ?? '—'}</td></tr>`).join('');
}

async function main() {
  /** @type {any} */ (globalThis).benchStarted = true;
  const opts = options();
  const status = document.getElementById('status');
  const fx = await loadFixture(FIXTURE_URL);
  const lanes = [...opts.gpulab.map((b) => ['gpu-lab', b, () => benchGpuLab(b, fx, opts)]),
    ...opts.tfjs.map((b) => ['tfjs', b, () => benchTfjs(b, fx, opts)])];
  const rows = [];
  for (const [lib, backend, run] of lanes) {
    status.textContent = `running ${lib} ${backend}…`;
    const t0 = performance.now();
    try {
      rows.push({ ...(await run()), laneS: (performance.now() - t0) / 1000 });
    } catch (err) {
      rows.push({ lib, backend, error: reason(err), laneS: (performance.now() - t0) / 1000 });
    }
    render(rows);
  }
  status.textContent = 'done';
  /** @type {any} */ (globalThis).benchResult = { runs: opts.runs, warmup: opts.warmup,
    budgetS: opts.budgetS, lossSteps: opts.lossSteps, seed: fx.seed,
    userAgent: navigator.userAgent, hardwareConcurrency: navigator.hardwareConcurrency,
    crossOriginIsolated: globalThis.crossOriginIsolated, date: new Date().toISOString(), rows };
}

main().catch((err) => {
  document.getElementById('status').textContent = `failed: ${reason(err)}`;
  /** @type {any} */ (globalThis).benchResult = { fatal: reason(err) };
});
