// SGEMM through the JS WebGPU backend under node + Dawn (Tint compiles the WGSL, not naga):
// for each n, a session runs `reps` steps of s = sum(a @ b) for n x n float32 a, b (uniform
// [0, 1), as data) in one run; ms per step is the matmul plus a reduction of n*n values.
// Checks s against sum_k colsum(a)[k] * rowsum(b)[k] in float64.
//   GPULAB_DAWN=<webgpu package>/index.js node --import ./pylib/gpulab/conformance/dawn_setup.mjs \
//     bench/dawn/sgemm.mjs [--sizes 4096,4000] [--reps 20]
import { parseArgs } from 'node:util';
import { createRuntime } from '/backends-js/src/runtime.mjs';
import { random } from '/backends-js/src/models/mlp.mjs';

const { values } = parseArgs({ options: {
  sizes: { type: 'string', default: '4096,4000' },
  reps: { type: 'string', default: '20' },
  backend: { type: 'string', default: 'webgpu' },
} });

/** @param {number} n @param {() => number} rnd */
const matrix = (n, rnd) => Float32Array.from({ length: n * n }, rnd);

/** sum(a @ b) in float64 from column sums of a and row sums of b. */
function expectedSum(/** @type {Float32Array} */ a, /** @type {Float32Array} */ b, n) {
  let total = 0;
  for (let k = 0; k < n; k++) {
    let col = 0;
    let row = 0;
    for (let i = 0; i < n; i++) {
      col += a[i * n + k];
      row += b[k * n + i];
    }
    total += col * row;
  }
  return total;
}

async function one(rt, n, reps) {
  const rnd = random(n);
  const a = matrix(n, rnd);
  const b = matrix(n, rnd);
  const graph = { version: 2, nodes: [
    { id: 0, op: 'input', shape: [n, n], data: a }, { id: 1, op: 'input', shape: [n, n], data: b },
    { id: 2, op: 'matmul', a: 0, b: 1 }, { id: 3, op: 'sum', a: 2 }],
  outputs: [{ name: 's', id: 3 }] };
  const plan = await rt.plan(graph);
  const kernel = plan.steps.find((s) => s.node === 2)?.kernel ?? plan.steps[0]?.kernel;
  const session = await rt.prepare(graph, { outputs: ['s'] });
  try {
    const warm = await session.run(2);
    const t0 = performance.now();
    await session.run(reps);
    const ms = (performance.now() - t0) / reps;
    const got = warm.outputs.s.data[0];
    const want = expectedSum(a, b, n);
    console.log(`| ${n}^3 | ${kernel} | ${ms.toFixed(3)} | ${(2 * n ** 3 / ms / 1e9).toFixed(1)} | ` +
      `${Math.abs(got - want) / want} |`);
  } finally {
    session.dispose();
  }
}

async function main() {
  const rt = await createRuntime({ backend: values.backend });
  try {
    console.log(`adapter: ${rt.info.description ?? rt.info.vendor} (software: ${rt.info.software})`);
    console.log('| size | kernel | ms per step (matmul + sum) | TFLOP/s | rel. error of the sum |');
    console.log('| --- | --- | --- | --- | --- |');
    for (const n of values.sizes.split(',').map(Number)) await one(rt, n, Number(values.reps));
  } finally {
    rt.dispose();
  }
}

main().then(() => process.exit(0), (err) => {
  console.error(err?.stack ?? err);
  process.exit(2);
});
