// The wasm benchmark page: times the MLP Adam step (bench/wasm/mlp.mjs) on our wasm and cpu
// backends (per execute, and per single-step run of a prepared session) and TensorFlow.js's
// wasm backend doing the same step from the same weights; checks the losses agree.
// Result: window.benchResult (read by bench/wasm/run.py) and a table in the page.
import { createRuntime } from '/backends-js/src/runtime.mjs';
import { ADAM, SIZES, mlpData, mlpStepGraph } from './mlp.mjs';

const params = new URLSearchParams(location.search);
const ITERATIONS = Math.max(20, Number(params.get('iterations') ?? 30));
const WARMUP = 3;
const AGREEMENT_STEPS = 5;

/** Times `fn` WARMUP + ITERATIONS times; ms per call (median, min, all samples). */
async function time(fn) {
  for (let i = 0; i < WARMUP; i++) await fn(i);
  const samples = [];
  for (let i = 0; i < ITERATIONS; i++) {
    const t0 = performance.now();
    await fn(i);
    samples.push(performance.now() - t0);
  }
  const sorted = [...samples].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  const median = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  return { median, min: sorted[0], samples };
}

const data = mlpData({ seed: 1, batches: 1 });

/** Our runtime on one backend: losses of AGREEMENT_STEPS session steps, then the timings. */
async function benchOurs(backend) {
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
  const execute = await time(() => rt.execute(stepGraph));
  const session = await open();
  const run = await time(() => session.run([feed]));
  const eight = await time(() => session.run(Array(8).fill(feed)));
  session.dispose();
  const run8 = { median: eight.median / 8, min: eight.min / 8, samples: eight.samples };
  const info = rt.info;
  rt.dispose();
  return { name: `gpu-lab ${backend}`, adapter: info, losses, execute, run, run8 };
}

/** TensorFlow.js wasm: the same model, weights, batch and Adam settings. */
async function benchTfjs() {
  const tf = /** @type {any} */ (globalThis).tf;
  tf.wasm.setWasmPaths('/node_modules/@tensorflow/tfjs-backend-wasm/dist/');
  if (!(await tf.setBackend('wasm'))) throw new Error('tf.setBackend("wasm") failed');
  await tf.ready();
  const { batch, input, hidden, classes } = SIZES;
  const make = () => ({
    w1: tf.variable(tf.tensor2d(data.w1, [input, hidden])), b1: tf.variable(tf.tensor1d(data.b1)),
    w2: tf.variable(tf.tensor2d(data.w2, [hidden, classes])), b2: tf.variable(tf.tensor1d(data.b2)),
  });
  const x = tf.tensor2d(data.xs[0], [batch, input]);
  const y = tf.tensor2d(data.ys[0], [batch, classes]);
  const trainer = () => {
    const v = make();
    const opt = tf.train.adam(ADAM.lr, ADAM.beta1, ADAM.beta2, ADAM.eps);
    const loss = () => {
      const h = tf.relu(tf.add(tf.matMul(x, v.w1), v.b1));
      return tf.losses.softmaxCrossEntropy(y, tf.add(tf.matMul(h, v.w2), v.b2));
    };
    const step = async () => {
      const l = opt.minimize(loss, true, [v.w1, v.b1, v.w2, v.b2]);
      const value = (await l.data())[0];
      l.dispose();
      return value;
    };
    const dispose = () => { opt.dispose(); Object.values(v).forEach((t) => t.dispose()); };
    return { step, dispose };
  };
  const check = trainer();
  const losses = [];
  for (let s = 0; s < AGREEMENT_STEPS; s++) losses.push(await check.step());
  check.dispose();
  const t = trainer();
  const run = await time(() => t.step());
  t.dispose();
  const flag = (name) => { try { return tf.env().getBool(name); } catch { return null; } };
  return { name: 'TF.js wasm', adapter: { backend: tf.getBackend(), version: tf.version.tfjs,
    threads: tf.wasm.getThreadsCount?.() ?? null, simd: flag('WASM_HAS_SIMD_SUPPORT'),
    multithread: flag('WASM_HAS_MULTITHREAD_SUPPORT') }, losses, execute: null, run, run8: null };
}

const fmt = (r) => (r ? `${r.median.toFixed(2)} (min ${r.min.toFixed(2)})` : '—');

async function main() {
  const status = document.getElementById('status');
  const rows = [];
  const errors = {};
  for (const [key, fn] of [['wasm', () => benchOurs('wasm')], ['cpu', () => benchOurs('cpu')],
    ['tfjs-wasm', benchTfjs]]) {
    status.textContent = `running ${key}…`;
    try {
      rows.push(await fn());
    } catch (err) {
      errors[key] = String(err?.stack ?? err);
    }
  }
  const reference = rows.find((r) => r.name === 'TF.js wasm')?.losses;
  for (const r of rows) {
    r.maxLossDiffVsTfjs = reference
      ? Math.max(...r.losses.map((l, i) => Math.abs(l - reference[i]))) : null;
  }
  const result = { iterations: ITERATIONS, warmup: WARMUP, agreementSteps: AGREEMENT_STEPS,
    userAgent: navigator.userAgent, hardwareConcurrency: navigator.hardwareConcurrency,
    crossOriginIsolated: globalThis.crossOriginIsolated, date: new Date().toISOString(), rows, errors };
  const table = document.getElementById('table');
  table.innerHTML = '<tr><th>backend</th><th>execute ms</th><th>session run ms (1 step)</th>' +
    '<th>ms per step, 8 steps per run</th>' +
    '<th>loss step 1</th><th>max |loss diff| vs TF.js</th></tr>' + rows.map((r) =>
    `<tr><td>${r.name}</td><td>${fmt(r.execute)}</td><td>${fmt(r.run)}</td><td>${fmt(r.run8)}</td>` +
    `<td>${r.losses[0].toFixed(6)}</td><td>${r.maxLossDiffVsTfjs?.toExponential(2) ?? '—'}</td></tr>`).join('');
  status.textContent = Object.keys(errors).length ? `errors: ${JSON.stringify(errors)}` : 'done';
  /** @type {any} */ (globalThis).benchResult = result;
}

main().catch((err) => {
  /** @type {any} */ (globalThis).benchResult = { fatal: String(err?.stack ?? err) };
});
