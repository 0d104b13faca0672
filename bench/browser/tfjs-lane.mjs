// The TensorFlow.js peer: the same MLP Adam step (tf.variable weights from the fixture,
// tf.train.adam with the same settings, softmax cross-entropy on the one-hot batch) on one
// TF.js backend. ms per step with the loss read back by dataSync every step, and per step at
// 8 minimize calls per read-back (the analogue of our 8 steps per run).
// TF.js is the UMD build loaded by index.html (globalThis.tf), served from node_modules.
import { paramData } from './fixture.mjs';
import { MIN_RUNS_8, time } from './timing.mjs';
import { probeAdapter } from './adapters.mjs';

const WASM_PATHS = '/node_modules/@tensorflow/tfjs-backend-wasm/dist/';

/** @returns {any} the tf global, or throw naming the missing script */
function tfGlobal() {
  const tf = /** @type {any} */ (globalThis).tf;
  if (!tf) throw new Error('TensorFlow.js is not loaded (node_modules/@tensorflow/tfjs missing? npm install)');
  return tf;
}

/** Switch TF.js to `backend`, or throw why it cannot. @param {any} tf @param {string} backend */
async function useBackend(tf, backend) {
  if (!tf.findBackendFactory(backend)) {
    throw new Error(`TF.js backend "${backend}" is not registered (its script is not loaded)`);
  }
  if (backend === 'wasm' && !useBackend.wasmPathsSet) {
    tf.wasm.setWasmPaths(WASM_PATHS);
    useBackend.wasmPathsSet = true;
  }
  if (!(await tf.setBackend(backend))) {
    throw new Error(`tf.setBackend("${backend}") failed (the backend did not initialize)`);
  }
  await tf.ready();
}
useBackend.wasmPathsSet = false;

/**
 * A trainer from the fixture's initial weights: `step(read)` runs one minimize and, when
 * `read`, returns the loss by dataSync.
 * @param {any} tf @param {import('./fixture.mjs').Fixture} fx
 */
function trainer(tf, fx) {
  const { batch, inputs, hidden, classes } = fx.sizes;
  // tidy disposes the initial tensors; the variables (their copies) survive it
  const v = tf.tidy(() => ({
    w1: tf.variable(tf.tensor2d(paramData(fx, 'w1'), [inputs, hidden])),
    b1: tf.variable(tf.tensor1d(paramData(fx, 'b1'))),
    w2: tf.variable(tf.tensor2d(paramData(fx, 'w2'), [hidden, classes])),
    b2: tf.variable(tf.tensor1d(paramData(fx, 'b2'))),
  }));
  const x = tf.tensor2d(fx.batch.x, [batch, inputs]);
  const y = tf.tensor2d(fx.batch.y, [batch, classes]);
  const { lr, beta1, beta2, eps } = fx.adam;
  const opt = tf.train.adam(lr, beta1, beta2, eps);
  const lossFn = () => {
    const h = tf.relu(tf.add(tf.matMul(x, v.w1), v.b1));
    return tf.losses.softmaxCrossEntropy(y, tf.add(tf.matMul(h, v.w2), v.b2));
  };
  const vars = [v.w1, v.b1, v.w2, v.b2];
  return {
    /** @param {boolean} read */
    step(read) {
      const loss = opt.minimize(lossFn, true, vars);
      const value = read ? loss.dataSync()[0] : NaN;
      loss.dispose();
      return value;
    },
    dispose() {
      opt.dispose();
      for (const t of [...vars, x, y]) t.dispose();
    },
  };
}

/**
 * @param {string} backend cpu, wasm, webgl or webgpu
 * @param {import('./fixture.mjs').Fixture} fx
 * @param {{runs: number, warmup: number, budgetS: number, lossSteps: number}} options
 */
export async function benchTfjs(backend, fx, options) {
  const tf = tfGlobal();
  await useBackend(tf, backend);
  const probe = await probeAdapter(backend === 'webgl' ? 'webgl2' : backend);
  // The time budget applies to software renderers (too slow for every run) and to the 8-step
  // mode, an extra next to the per-step figure (63 s for 20 runs on TF.js cpu here).
  const opts = { ...options, budgetS: probe.software ? options.budgetS : 0 };
  const before = tf.memory().numTensors;
  const check = trainer(tf, fx);
  const losses = [];
  try {
    for (let s = 0; s < opts.lossSteps; s++) losses.push(check.step(true));
  } finally {
    check.dispose();
  }
  const t = trainer(tf, fx);
  let run1;
  let run8;
  try {
    run1 = await time(async () => t.step(true), opts);
    run8 = await time(async () => {
      for (let s = 0; s < 7; s++) t.step(false);
      t.step(true);
    }, { ...opts, budgetS: options.budgetS, per: 8, minRuns: MIN_RUNS_8 });
  } finally {
    t.dispose();
  }
  const leaked = tf.memory().numTensors - before;
  return { lib: 'tfjs', backend, adapter: probe.description, software: probe.software,
    info: { tfjs: tf.version.tfjs, backend: tf.getBackend(), probe, leakedTensors: leaked,
      ...(backend === 'wasm' ? wasmFlags(tf) : {}) },
    losses, execute: null, run1, run8 };
}

/** @param {any} tf */
function wasmFlags(tf) {
  const flag = (name) => { try { return tf.env().getBool(name); } catch { return null; } };
  return { threads: tf.wasm.getThreadsCount?.() ?? null, simd: flag('WASM_HAS_SIMD_SUPPORT'),
    multithread: flag('WASM_HAS_MULTITHREAD_SUPPORT') };
}
