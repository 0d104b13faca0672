// A Firefox lane of `gpulab conformance` (pylib/gpulab/conformance/firefox.py opens this page in a plain
// Firefox, no WebDriver): GET the cases batch by batch, run each batch on `?backend=` through
// page.mjs (the Chromium lanes' page code, so both browsers answer alike), POST every answer,
// then "done". A backend the browser does not offer (WebGPU on Linux Firefox) answers
// {lane: {available: false, reason}}: the lane's result, not a crash.
import './page.mjs';

const params = new URLSearchParams(location.search);
const BACKEND = params.get('backend') ?? 'wasm';
const SOFTWARE = params.get('software') === '1';
const list = (/** @type {string} */ key) => (params.get(key) ?? '').split(',').filter(Boolean);
const WITHOUT = list('without');
const BREAK = list('break');

/** An error as text (Firefox gives a fetch's NetworkError an empty stack). */
const describe = (/** @type {any} */ err) =>
  `${err?.name ?? 'Error'}: ${err?.message ?? err}\n${err?.stack ?? ''}`.trim();

function log(/** @type {string} */ text) {
  const li = document.createElement('li');
  li.textContent = text;
  document.getElementById('log')?.append(li);
}

/** POST one report; the server answers 200 once it has it (so the order is kept). */
async function report(/** @type {string} */ kind, /** @type {object} */ body) {
  const res = await fetch('/api/lane-report', { method: 'POST',
    headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ kind, ...body }) });
  if (!res.ok) throw new Error(`report ${kind}: HTTP ${res.status}`);
}

async function main() {
  const lab = /** @type {any} */ (window).gpulabConformance;
  await report('machine', { machine: await lab.machine() });
  for (let batch = 0; ; batch += 1) {
    const res = await fetch(`/api/lane-cases?batch=${batch}`);
    if (res.status === 204) break;
    const cases = await res.json();
    let answer;
    try {
      answer = await lab.run(BACKEND, SOFTWARE, cases, WITHOUT, BREAK);
    } catch (err) {
      answer = { lane: { available: false, reason: `crashed: ${describe(err)}` }, results: [] };
    }
    await report('batch', { batch, answer });
    log(`batch ${batch}: ${cases.length} cases${answer.lane?.available ? '' : `, ${answer.lane?.reason}`}`);
    if (!answer.lane?.available && batch === 0) break; // the lane's refusal is its result
  }
  await report('done', {});
}

main().catch((err) => report('error', { error: describe(err) }));
