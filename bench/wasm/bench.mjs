// The wasm benchmark page: times the MLP Adam step (backends-js/src/models/mlp.mjs) on our wasm
// and cpu backends (per execute, per single-step run of a prepared session, per step at 8 steps per
// run) and TensorFlow.js's wasm backend doing the same step from the same weights, and checks
// the losses agree. Measurements are interleaved round by round (every contender once per
// round), so a burst of load on a shared machine hits all of them alike.
// Result: window.benchResult (read by bench/wasm/run.py) and a table in the page.
import { createRuntime } from '/backends-js/src/runtime.mjs';
import { ADAM, SIZES, mlpData, mlpStepGraph } from '/backends-js/src/models/mlp.mjs';

const params = new URLSearchParams(location.search);
const ITERATIONS = Math.max(20, Number(params.get('iterations') ?? 30));
const WARMUP = 3;
const AGREEMENT_STEPS = 5;

const data = mlpData({ seed: 1, batches: 1 });

/** median and min of samples (ms), divided by `per` (steps per call). */
function summarize(samples, per = 1) {
  const sorted = samples.map((s) => s / per).sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  const median = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  return { median, min: sorted[0], samples };
}

/**
 * Our runtime on one backend: the losses of AGREEMENT_STEPS session steps, and the calls to time.
 * @returns {Promise<{name: string, adapter: object, losses: number[],
 *   calls: Record<string, {fn: () => Promise<unknown>, per: number}>, dispose: () => void}>}
 */
async function ours(backend) {
  const rt = await createRuntime({ backend });
  const stepGraph = mlpStepGraph(data).graph;
  const { graph, carry, feeds, ids } = mlpStepGraph(data, { feedXY: true });
  const feed = { [ids.x]: data.xs[0], [ids.y]: data.ys[0] };
  const open = () => rt.prepare(graph, { feeds, carry, resident: graph.outputs.map((o) => o.name)
    .filter((n) => n !== 'loss'), outputs: ['loss'] });
  const check = await open();
  const losses = [];
  for (let s = 0; s < AGREEMENT_STEPS; s++) losses.push((await check.run([feed])).outputs.loss.data[0]);
  check.dispose();
  const single = await open();
  const eight = await open();
  const steps8 = Array(8).fill(feed);
  return {
    name: `gpu-lab ${backend}`, adapter: rt.info, losses,
    calls: { execute: { fn: () => rt.execute(stepGraph), per: 1 },
      run: { fn: () => single.run([feed]), per: 1 }, run8: { fn: () => eight.run(steps8), per: 8 } },
    dispose: () => rt.dispose(),
  };
}

/** TensorFlow.js wasm: the same model, weights, batch and Adam settings. */
async function tfjs() {
  const tf = /** @type {any} */ (globalThis).tf;
  tf.wasm.setWasmPaths('/node_modules/@tensorflow/tfjs-backend-wasm/dist/');
  if (!(await tf.setBackend('wasm'))) throw new Error('tf.setBackend("wasm") failed');
  await tf.ready();
  const { batch, input, hidden, classes } = SIZES;
  const x = tf.tensor2d(data.xs[0], [batch, input]);
  const y = tf.tensor2d(data.ys[0], [batch, classes]);
  const trainer = () => {
    const v = {
      w1: tf.variable(tf.tensor2d(data.w1, [input, hidden])), b1: tf.variable(tf.tensor1d(data.b1)),
      w2: tf.variable(tf.tensor2d(data.w2, [hidden, classes])), b2: tf.variable(tf.tensor1d(data.b2)),
    };
    const opt = tf.train.adam(ADAM.lr, ADAM.beta1, ADAM.beta2, ADAM.eps);
    const loss = () => {
      const h = tf.relu(tf.add(tf.matMul(x, v.w1), v.b1));
      return tf.losses.softmaxCrossEntropy(y, tf.add(tf.matMul(h, v.w2), v.b2));
    };
    return async () => {
      const l = opt.minimize(loss, true, [v.w1, v.b1, v.w2, v.b2]);
      const value = (await l.data())[0];
      l.dispose();
      return value;
    };
  };
  const check = trainer();
  const losses = [];
  for (let s = 0; s < AGREEMENT_STEPS; s++) losses.push(await check());
  const flag = (name) => { try { return tf.env().getBool(name); } catch { return null; } };
  return {
    name: 'TF.js wasm',
    adapter: { backend: tf.getBackend(), version: tf.version.tfjs,
      threads: tf.wasm.getThreadsCount?.() ?? null, simd: flag('WASM_HAS_SIMD_SUPPORT'),
      multithread: flag('WASM_HAS_MULTITHREAD_SUPPORT') },
    losses, calls: { run: { fn: trainer(), per: 1 } }, dispose: () => {},
  };
}

const fmt = (r) => (r ? `${r.median.toFixed(2)} (min ${r.min.toFixed(2)})` : '—');

async function main() {
  const status = document.getElementById('status');
  const contenders = [];
  const errors = {};
  for (const [key, open] of [['wasm', () => ours('wasm')], ['cpu', () => ours('cpu')], ['tfjs-wasm', tfjs]]) {
    try {
      contenders.push(await open());
    } catch (err) {
      errors[key] = String(err?.stack ?? err);
    }
  }
  const samples = contenders.map((c) => Object.fromEntries(Object.keys(c.calls).map((k) => [k, []])));
  for (let round = -WARMUP; round < ITERATIONS; round++) {
    status.textContent = `round ${round + 1} of ${ITERATIONS}`;
    for (const [i, c] of contenders.entries()) {
      for (const [key, { fn }] of Object.entries(c.calls)) {
        const t0 = performance.now();
        await fn();
        if (round >= 0) samples[i][key].push(performance.now() - t0);
      }
    }
  }
  const reference = contenders.find((c) => c.name === 'TF.js wasm')?.losses;
  const rows = contenders.map((c, i) => {
    const timing = (key) => (c.calls[key] ? summarize(samples[i][key], c.calls[key].per) : null);
    c.dispose();
    return { name: c.name, adapter: c.adapter, losses: c.losses, execute: timing('execute'),
      run: timing('run'), run8: timing('run8'),
      maxLossDiffVsTfjs: reference ? Math.max(...c.losses.map((l, s) => Math.abs(l - reference[s]))) : null };
  });
  const result = { iterations: ITERATIONS, warmup: WARMUP, agreementSteps: AGREEMENT_STEPS,
    interleaved: true, userAgent: navigator.userAgent, hardwareConcurrency: navigator.hardwareConcurrency,
    crossOriginIsolated: globalThis.crossOriginIsolated, date: new Date().toISOString(), rows, errors };
  document.getElementById('table').innerHTML = '<tr><th>backend</th><th>execute ms</th>' +
    '<th>session run ms (1 step)</th><th>ms per step, 8 steps per run</th><th>loss step 1</th>' +
    '<th>max |loss diff| vs TF.js</th></tr>' + rows.map((r) =>
    `<tr><td>${r.name}</td><td>${fmt(r.execute)}</td><td>${fmt(r.run)}</td><td>${fmt(r.run8)}</td>` +
    `<td>${r.losses[0].toFixed(6)}</td><td>${r.maxLossDiffVsTfjs?.toExponential(2) ?? '—'}</td></tr>`).join('');
  status.textContent = Object.keys(errors).length ? `errors: ${JSON.stringify(errors)}` : 'done';
  /** @type {any} */ (globalThis).benchResult = result;
}

main().catch((err) => {
  /** @type {any} */ (globalThis).benchResult = { fatal: String(err?.stack ?? err) };
});
